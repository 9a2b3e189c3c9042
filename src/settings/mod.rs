//! Registering ctxguard in Claude Code's settings.json, as pure edits of the parsed JSON (I/O is
//! in `commands::install`). An entry is ctxguard's when its command runs ctxguard with one of the
//! hook subcommands (`call` says what counts as ctxguard: not an exact file name); everything
//! else, and the order of every key and hook, is left as it was. `serde_json`'s `preserve_order`
//! keeps the keys in the user's order.
//!
//! Hooks are registered in exec form, `{"command": "<binary>", "args": ["pretooluse"]}`: the
//! client starts the binary directly, with no shell per call and no quoting of its path (which
//! Git Bash on Windows would mangle). A shell-form entry an earlier version wrote is turned into
//! the exec form in place; one that needs its shell (a redirection, an expansion) keeps it, with
//! only its program changed. The status line has no exec form (the client drops `args` there
//! and always runs `command` with `sh -c`), so it stays a quoted shell line.

mod call;
mod diff;

use serde_json::{json, Map, Value};

pub use call::runs_ctxguard;
use call::{hook_call, innermost, statusline, HookCommand, Ours, Wrapped};
pub use diff::diff;

use crate::client::Accepts;
use crate::hook_list::STATUSLINE;
use crate::shell::shell_quote;

/// Hook events ctxguard registers, with their matcher and subcommand (from the registry).
pub fn hook_events() -> impl Iterator<Item = (&'static str, Option<&'static str>, &'static str)> {
    crate::hook_list::events().filter_map(|h| Some((h.event?, h.matcher, h.name)))
}

/// How to treat a status line that is already configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusLineMode {
    /// Run theirs and append the gauge (`ctxguard statusline --then '<theirs>'`).
    Wrap,
    /// Show only the gauge; theirs is kept in the [`Note`] for `uninstall`.
    Replace,
    Skip,
}

/// What an edit did.
#[derive(Debug, Default, PartialEq)]
pub struct Edit {
    /// What changed, one line each; empty when the settings already had exactly this.
    pub changes: Vec<String>,
    /// What was left alone that the user should know about, one line each.
    pub notices: Vec<String>,
    /// What becomes of the note that keeps a replaced status line.
    pub note: Note,
}

/// The note kept beside the settings with the status line `--statusline replace` replaced, so
/// that `uninstall` can put it back.
#[derive(Debug, Default, PartialEq)]
pub enum Note {
    #[default]
    Keep,
    /// Keep this (the whole `statusLine` value that was replaced).
    Save(Value),
    /// It has been restored, or no longer applies.
    Remove,
}

/// The ctxguard hook subcommand this command runs, if it runs one.
fn hook_subcommand(command: &HookCommand, ours: Ours) -> Option<&'static str> {
    let c = hook_call(command, ours)?;
    let sub = c.subcommand()?;
    hook_events().map(|(_, _, s)| s).find(|s| *s == sub)
}

/// What an entry that runs ctxguard becomes when installing `bin`: the exec form with the same
/// arguments, or, for a shell line that needs its shell, the same line with `bin` as its program
/// (and a notice why). `None` for no change.
fn upgraded(
    event: &str,
    command: &HookCommand,
    bin: &str,
    ours: Ours,
    exec_form: bool,
) -> (Option<HookCommand>, Option<String>) {
    let Some(c) = hook_call(command, ours) else {
        return (None, None);
    };
    match (c.exec_args(), command) {
        // A client without the exec form: the same words as a shell line.
        (Some(args), _) if !exec_form => {
            let line = HookCommand::Shell(HookCommand::exec(bin, &args).to_string());
            ((line != *command).then_some(line), None)
        }
        (Some(args), _) => {
            let exec = HookCommand::exec(bin, &args);
            ((exec != *command).then_some(exec), None)
        }
        (None, HookCommand::Shell(line)) => (
            c.with_program(bin).map(HookCommand::Shell),
            Some(format!(
                "{event}: `{line}` stays a shell line (it needs the shell: an expansion, a \
                 redirection or another command); the exec form runs without one"
            )),
        ),
        (None, HookCommand::Exec { .. }) => (None, None),
    }
}

/// A matcher group running `ctxguard sub` for `event`, in exec form or (for a client without
/// it) as a shell line, with `onFailure: "continue"` where the client has the field, and the
/// change it makes.
fn new_group(
    event: &str,
    matcher: Option<&str>,
    sub: &str,
    bin: &str,
    accepts: Accepts,
) -> (Value, String) {
    let (wanted, form) = if accepts.exec_form {
        (HookCommand::exec(bin, &[sub]), "exec form")
    } else {
        (
            HookCommand::Shell(HookCommand::exec(bin, &[sub]).to_string()),
            "a shell line: this Claude Code has no exec form",
        )
    };
    let mut group = Map::new();
    if let Some(m) = matcher {
        group.insert("matcher".into(), json!(m));
    }
    let mut entry = wanted.entry();
    if accepts.on_failure {
        entry[ON_FAILURE] = json!(CONTINUE);
    }
    group.insert("hooks".into(), json!([entry]));
    (
        Value::Object(group),
        format!("{event}: added `{wanted}` ({form})"),
    )
}

/// The key of a hook entry that says what a failure of the hook does, and the value ctxguard's
/// own hooks always have where the client takes it: a hook that cannot run lets the action go
/// ahead (see `client::accepts`).
const ON_FAILURE: &str = "onFailure";
const CONTINUE: &str = "continue";

/// Sets `onFailure: "continue"` on each of ctxguard's `sub` entries of `event` that lacks it (a
/// `"block"` included: ctxguard never blocks), and says so; for a client without the field
/// (`has_field` false), takes out the `"continue"` an install for a newer client wrote.
fn continue_on_failure(
    hooks: &mut Map<String, Value>,
    event: &str,
    sub: &str,
    ours: Ours,
    has_field: bool,
    edit: &mut Edit,
) {
    let Some(groups) = hooks.get_mut(event).and_then(Value::as_array_mut) else {
        return;
    };
    for group in groups.iter_mut() {
        let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            continue;
        };
        for hook in list.iter_mut() {
            let ours = HookCommand::of(hook).and_then(|c| hook_subcommand(&c, ours)) == Some(sub);
            let Some(entry) = hook.as_object_mut().filter(|_| ours) else {
                continue;
            };
            let is_continue = entry.get(ON_FAILURE).and_then(Value::as_str) == Some(CONTINUE);
            if !has_field {
                if is_continue {
                    entry.shift_remove(ON_FAILURE);
                    edit.changes.push(format!(
                        "{event}: removed onFailure \"continue\" (this Claude Code has no such \
                         field)"
                    ));
                }
                continue;
            }
            if is_continue {
                continue;
            }
            let was = entry.insert(ON_FAILURE.into(), json!(CONTINUE));
            edit.changes.push(match was {
                Some(old) => format!(
                    "{event}: onFailure {old} became \"continue\" (a ctxguard hook that cannot \
                     run never blocks)"
                ),
                None => format!(
                    "{event}: added onFailure \"continue\" (a ctxguard hook the client cannot \
                     run never blocks a tool call)"
                ),
            });
        }
    }
}

/// For a client that does not know `event` (it would reject the whole file for naming it):
/// ctxguard's entries go, and the event's list if that leaves it empty.
fn drop_unknown_event(
    hooks: &mut Map<String, Value>,
    event: &str,
    sub: &str,
    ours: Ours,
    edit: &mut Edit,
) {
    for cmd in remove_ours(hooks, event, sub, ours) {
        edit.changes.push(format!(
            "{event}: removed `{cmd}` (this Claude Code does not know the event, and would ignore \
             the whole settings file for it)"
        ));
    }
    match hooks.get(event).and_then(Value::as_array) {
        Some(list) if list.is_empty() => {
            hooks.shift_remove(event);
            edit.changes.push(format!(
                "{event}: removed the empty list (this Claude Code would ignore the whole \
                 settings file for naming the event)"
            ));
        }
        // The user's own: theirs to move, but the client will not read this file while it is
        // there.
        Some(_) => edit.notices.push(format!(
            "{event} still holds hooks of yours: this Claude Code does not know the event and \
             ignores this whole settings file (ctxguard's hooks, your permissions and other \
             hooks included) while it is there; move them to a file a newer client reads, or \
             upgrade the client"
        )),
        None => {}
    }
}

/// Removes ctxguard's `sub` entries from `event`'s matcher groups (and the groups they leave
/// empty); returns what was removed.
fn remove_ours(hooks: &mut Map<String, Value>, event: &str, sub: &str, ours: Ours) -> Vec<String> {
    let Some(groups) = hooks.get_mut(event).and_then(Value::as_array_mut) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for group in groups.iter_mut() {
        if let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) {
            list.retain(|hook| match HookCommand::of(hook) {
                Some(cmd) if hook_subcommand(&cmd, ours) == Some(sub) => {
                    removed.push(cmd.to_string());
                    false
                }
                _ => true,
            });
        }
    }
    if !removed.is_empty() {
        groups.retain(|g| {
            !g.get("hooks")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty)
        });
    }
    removed
}

/// The status-line command ctxguard sets, wrapping `theirs` if given.
fn statusline_command(bin: &str, theirs: Option<&str>) -> String {
    match theirs {
        Some(t) => format!(
            "{} {} --then {}",
            shell_quote(bin),
            STATUSLINE.name,
            shell_quote(t)
        ),
        None => format!("{} {}", shell_quote(bin), STATUSLINE.name),
    }
}

/// Each hook command of an event's matcher groups, as (group index, hook index, command).
fn commands(groups: &[Value]) -> Vec<(usize, usize, HookCommand)> {
    let mut out = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        if let Some(hooks) = group.get("hooks").and_then(Value::as_array) {
            for (h, hook) in hooks.iter().enumerate() {
                if let Some(cmd) = HookCommand::of(hook) {
                    out.push((g, h, cmd));
                }
            }
        }
    }
    out
}

fn object<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
) -> Result<&'a mut Map<String, Value>, String> {
    parent
        .entry(key.to_string())
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| format!("`{key}` is not a JSON object"))
}

fn statusline_command_of(root: &Map<String, Value>) -> Option<String> {
    root.get("statusLine")?
        .get("command")?
        .as_str()
        .map(str::to_string)
}

/// Other events of the user's that make an older client ignore the whole file (2.1.332's
/// `PreSkillShellCommand` on 2.1.14, say): left as they are, and named.
fn unknown_to_older_client(root: &Map<String, Value>, accepts: Accepts) -> Vec<String> {
    let ours: Vec<&str> = hook_events().map(|(e, _, _)| e).collect();
    root.get("hooks")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|hooks| hooks.keys())
        .filter(|event| !ours.contains(&event.as_str()) && accepts.ignores_file_for(event))
        .map(|event| {
            format!(
                "{event} holds hooks of yours that this Claude Code does not know: it ignores \
                 this whole settings file (ctxguard's hooks, your permissions and other hooks \
                 included) while it is there; move them to a file a newer client reads, or \
                 upgrade the client"
            )
        })
        .collect()
}

/// Adds (or updates) ctxguard's hooks and status line, for the binary at `bin` (`same_binary`
/// tells whether another path is this binary too). Hooks are added in exec form; an entry that
/// already runs ctxguard is pointed at `bin` and turned into the exec form, its arguments kept
/// (see [`upgraded`]); further copies of it are removed.
pub fn install(
    settings: &mut Value,
    bin: &str,
    same_binary: &dyn Fn(&str) -> bool,
    mode: StatusLineMode,
    accepts: Accepts,
) -> Result<Edit, String> {
    let ours = Ours {
        bin: Some(bin),
        same_binary,
    };
    let root = settings
        .as_object_mut()
        .ok_or("the settings file is not a JSON object")?;
    let mut edit = Edit::default();
    let hooks = object(root, "hooks")?;
    for (event, matcher, sub) in hook_events() {
        if !accepts.event(event) {
            drop_unknown_event(hooks, event, sub, ours, &mut edit);
            continue;
        }
        let groups = hooks
            .entry(event.to_string())
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or_else(|| format!("`hooks.{event}` is not a JSON array"))?;
        let found: Vec<(usize, usize, HookCommand)> = commands(groups)
            .into_iter()
            .filter(|(_, _, cmd)| hook_subcommand(cmd, ours) == Some(sub))
            .collect();
        let Some(((g, h, cmd), copies)) = found.split_first() else {
            let (group, change) = new_group(event, matcher, sub, bin, accepts);
            groups.push(group);
            edit.changes.push(change);
            continue;
        };
        let (new, notice) = upgraded(event, cmd, bin, ours, accepts.exec_form);
        if let Some(new) = new {
            if let Some(entry) = groups[*g]["hooks"][*h].as_object_mut() {
                new.write_to(entry);
            }
            edit.changes.push(match (cmd, &new) {
                (HookCommand::Shell(_), HookCommand::Exec { .. }) => {
                    format!("{event}: the shell line `{cmd}` became the exec form `{new}`")
                }
                (HookCommand::Exec { .. }, HookCommand::Shell(_)) => format!(
                    "{event}: the exec form `{cmd}` became the shell line `{new}` (this Claude \
                     Code has no exec form)"
                ),
                _ => format!("{event}: updated the command to `{new}`"),
            });
        }
        edit.notices.extend(notice);
        // Copies an older install added: the last first, so the indices stay right.
        for (cg, ch, cmd) in copies.iter().rev() {
            if let Some(list) = groups[*cg]["hooks"].as_array_mut() {
                list.remove(*ch);
            }
            edit.changes
                .push(format!("{event}: removed the duplicate `{cmd}`"));
        }
        let mut emptied: Vec<usize> = copies.iter().map(|(cg, _, _)| *cg).collect();
        emptied.dedup();
        for cg in emptied.into_iter().rev() {
            if groups[cg]["hooks"].as_array().is_some_and(Vec::is_empty) {
                groups.remove(cg);
            }
        }
        continue_on_failure(hooks, event, sub, ours, accepts.on_failure, &mut edit);
    }

    edit.notices.extend(unknown_to_older_client(root, accepts));
    set_statusline(root, bin, ours, mode, &mut edit)?;
    Ok(edit)
}

/// Sets ctxguard's status line as `mode` says (see [`install`]); an older one of ctxguard's is
/// pointed at `bin`, never wrapped again.
fn set_statusline(
    root: &mut Map<String, Value>,
    bin: &str,
    ours: Ours,
    mode: StatusLineMode,
    edit: &mut Edit,
) -> Result<(), String> {
    let current = statusline_command_of(root);
    let present = root.get("statusLine").is_some_and(|v| !v.is_null());
    let target = match current.as_deref().and_then(|c| innermost(c, ours)) {
        // Ours already, perhaps wrapped in itself by an older install: never wrapped again; its
        // flags and what it wraps are kept, pointed at this binary.
        Some(layer) => Some(
            statusline(&layer, ours)
                .and_then(|(c, _)| c.with_program(bin))
                .unwrap_or(layer),
        ),
        None if !present => {
            if mode == StatusLineMode::Skip {
                None
            } else {
                // Nothing to restore later: a note from an earlier install no longer applies.
                edit.note = Note::Remove;
                Some(statusline_command(bin, None))
            }
        }
        None => match (mode, current.as_deref()) {
            (StatusLineMode::Skip, _) => None,
            (StatusLineMode::Wrap, Some(theirs)) => Some(statusline_command(bin, Some(theirs))),
            // Replaced (or not a command, so nothing to wrap): kept for uninstall.
            (_, _) => {
                edit.note = Note::Save(root["statusLine"].clone());
                Some(statusline_command(bin, None))
            }
        },
    };
    if let Some(target) = target {
        if current.as_deref() != Some(target.as_str()) {
            let line = object(root, "statusLine")?;
            line.insert("type".into(), json!("command"));
            line.insert("command".into(), json!(target));
            edit.changes.push(match current {
                None => format!("statusLine: set to `{target}`"),
                Some(old) => format!("statusLine: `{old}` became `{target}`"),
            });
        }
    }
    Ok(())
}

/// Registers only the status line (as [`install`] does, by `mode`) and no hook: for the plugin,
/// which registers the hooks itself. ctxguard's hooks already in the file are taken out, so that
/// none runs twice.
pub fn install_statusline(
    settings: &mut Value,
    bin: &str,
    same_binary: &dyn Fn(&str) -> bool,
    mode: StatusLineMode,
) -> Result<Edit, String> {
    let ours = Ours {
        bin: Some(bin),
        same_binary,
    };
    let root = settings
        .as_object_mut()
        .ok_or("the settings file is not a JSON object")?;
    let mut edit = Edit::default();
    remove_hooks(root, ours, &mut edit);
    set_statusline(root, bin, ours, mode, &mut edit)?;
    Ok(edit)
}

/// Removes what [`install`] adds: every hook entry that runs a ctxguard hook subcommand, in any
/// event (and the matcher groups, event lists and `hooks` object this empties), and its status
/// line: a wrapped one gives back the user's command, a replaced one the `replaced` value (from
/// the note), and one it cannot read back exactly is left as it is, with a notice.
pub fn uninstall(
    settings: &mut Value,
    bin: &str,
    same_binary: &dyn Fn(&str) -> bool,
    replaced: Option<&Value>,
) -> Result<Edit, String> {
    let ours = Ours {
        bin: Some(bin),
        same_binary,
    };
    let root = settings
        .as_object_mut()
        .ok_or("the settings file is not a JSON object")?;
    let mut edit = Edit {
        note: Note::Remove,
        ..Edit::default()
    };
    remove_hooks(root, ours, &mut edit);

    let current = statusline_command_of(root);
    if let Some(layer) = current.as_deref().and_then(|c| innermost(c, ours)) {
        match statusline(&layer, ours).map(|(_, w)| w) {
            Some(Wrapped::Known(Some(theirs))) => {
                root["statusLine"]["command"] = json!(theirs);
                edit.changes
                    .push(format!("statusLine: restored `{theirs}`"));
            }
            Some(Wrapped::Known(None)) => {
                if let Some(line) = replaced {
                    let theirs = line.get("command").and_then(Value::as_str).unwrap_or("");
                    edit.changes.push(format!(
                        "statusLine: restored `{theirs}` (from before `install --statusline \
                     replace`)"
                    ));
                    root.insert("statusLine".into(), line.clone());
                } else {
                    root.shift_remove("statusLine");
                    edit.changes.push("statusLine: removed".to_string());
                }
            }
            _ => {
                edit.notices.push(format!(
                    "the status line `{}` runs ctxguard in a way uninstall cannot undo exactly; \
                     left as it is (edit it by hand)",
                    current.as_deref().unwrap_or_default()
                ));
                edit.note = Note::Keep;
            }
        }
    }
    Ok(edit)
}

/// Takes out every hook entry that runs a ctxguard hook subcommand, in any event, and the
/// matcher groups, event lists and `hooks` object this empties.
fn remove_hooks(root: &mut Map<String, Value>, ours: Ours, edit: &mut Edit) {
    if let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) {
        let mut emptied_events = Vec::new();
        for (event, groups) in hooks.iter_mut() {
            let Some(groups) = groups.as_array_mut() else {
                continue;
            };
            let mut emptied_groups = Vec::new();
            for (g, group) in groups.iter_mut().enumerate() {
                let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                    continue;
                };
                let before = list.len();
                list.retain(|hook| {
                    let sub = HookCommand::of(hook).and_then(|c| hook_subcommand(&c, ours));
                    if let Some(sub) = sub {
                        edit.changes
                            .push(format!("{event}: removed ctxguard {sub}"));
                    }
                    sub.is_none()
                });
                if list.is_empty() && before > 0 {
                    emptied_groups.push(g);
                }
            }
            let had = groups.len();
            for g in emptied_groups.into_iter().rev() {
                groups.remove(g);
            }
            if groups.is_empty() && had > 0 {
                emptied_events.push(event.clone());
            }
        }
        let had = hooks.len();
        for event in emptied_events {
            hooks.shift_remove(&event);
        }
        if hooks.is_empty() && had > 0 {
            root.shift_remove("hooks");
        }
    }
}

#[cfg(test)]
mod tests;
