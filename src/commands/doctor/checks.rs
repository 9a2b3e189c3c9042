//! The checks about ctxguard's own setup: Claude Code's settings files can be read, every hook
//! runs ctxguard once, every registered binary can run, the state root is writable, the
//! configuration loads, and the status line is ctxguard's. Only [`state`] touches the disk
//! (whether the state root is writable is the question it answers).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::Result;

use super::{finding, Context, Finding, Status};
use crate::client::{self, Problem, Scope, SettingsFile};
use crate::files;
use crate::hook_list::STATUSLINE;
use crate::program::Program;
use crate::settings::{self, hook_events};

/// A settings file Claude Code cannot read.
pub fn settings_files(ctx: &Context) -> Vec<Finding> {
    ctx.client
        .files
        .iter()
        .filter_map(|f| {
            let problem = f.contents.as_ref().err()?;
            if let Problem::Refused(_) = problem {
                // The client may read what ctxguard refuses (it follows a FIFO, or a device):
                // ctxguard then works without it, which is worth knowing, not a failure.
                return Some(finding(
                    "settings",
                    Status::Warn,
                    format!("{} {problem}", f.path.display()),
                    Some(&format!(
                        "make it a regular file (or a link to one) of at most {} bytes",
                        client::MAX_SETTINGS
                    )),
                ));
            }
            let fix = match (f.scope, problem) {
                (Scope::Managed, _) => "ask whoever manages Claude Code on this machine to fix it",
                (_, Problem::Unreadable(_)) => "make it readable (check its owner and permissions)",
                _ => "fix the JSON (a backup made by `ctxguard install` sits beside it)",
            };
            Some(finding(
                "settings",
                Status::Fail,
                format!(
                    "{} {problem}: Claude Code cannot read it either",
                    f.path.display()
                ),
                Some(fix),
            ))
        })
        .collect()
}

/// Each hook event runs its ctxguard subcommand exactly once (settings files and plugin together),
/// and a hook in a settings file that runs it in shell form (as earlier versions registered it)
/// is pointed out: the exec form starts no shell.
/// "Claude Code 2.1.14", or "this Claude Code" when its version is unknown.
fn client_name(ctx: &Context) -> String {
    match &ctx.claude {
        super::version::Client::Version(_, v) => format!("Claude Code {v}"),
        _ => "this Claude Code".to_string(),
    }
}

/// How to run `install` on this file.
fn install_fix(file: &SettingsFile) -> String {
    match file.scope {
        Scope::User => "run `ctxguard install` (it registers what this client accepts)".into(),
        _ => format!(
            "run `ctxguard install --settings {}` (it registers what this client accepts)",
            file.path.display()
        ),
    }
}

/// What an older client cannot take, one finding per settings file: an event it does not know
/// (it ignores the whole file, whoever's hook it is), ctxguard's hooks in exec form (it runs the
/// program without its arguments), and the plugin (its hooks.json names such an event).
fn unaccepted(ctx: &Context, commands: &[client::Command<'_>]) -> Vec<Finding> {
    let accepts = ctx.accepts();
    let client = client_name(ctx);
    let mut out = Vec::new();
    let version = match &ctx.claude {
        super::version::Client::Version(_, v) => Some(v.as_str()),
        _ => None,
    };
    for file in &ctx.client.files {
        let named: Vec<&str> = file
            .get("hooks")
            .and_then(serde_json::Value::as_object)
            .map(|h| h.keys().map(String::as_str).collect())
            .unwrap_or_default();
        // ctxguard's own events this client lacks, then any other event (the user's own, such
        // as 2.1.332's PreSkillShellCommand) that makes it ignore the whole file.
        let mut unknown: Vec<&str> = hook_events()
            .map(|(event, _, _)| event)
            .filter(|e| !accepts.event(e))
            .filter(|e| named.contains(e))
            .collect();
        for e in &named {
            if !unknown.contains(e)
                && client::event_use(version, e) == client::EventUse::FileIgnored
            {
                unknown.push(e);
            }
        }
        let dropped: Vec<&str> = named
            .iter()
            .copied()
            .filter(|e| client::event_use(version, e) == client::EventUse::EntryIgnored)
            .collect();
        if !dropped.is_empty() {
            out.push(finding(
                "hooks",
                Status::Info,
                format!(
                    "{} names {}, which {client} does not know: it ignores that entry and reads \
                     the rest of the file (a newer client runs it)",
                    file.path.display(),
                    dropped.join(", ")
                ),
                None,
            ));
        }
        if !unknown.is_empty() {
            out.push(finding(
                "hooks",
                Status::Fail,
                format!(
                    "{} names {}, which {client} does not know: it ignores this whole settings \
                     file (every hook, permission and setting in it)",
                    file.path.display(),
                    unknown.join(", ")
                ),
                Some(&format!(
                    "{}; hooks of your own under {} must move to a file a newer client reads",
                    install_fix(file),
                    unknown.join(", ")
                )),
            ));
        }
        let exec: Vec<String> = commands
            .iter()
            .filter(|c| c.exec && std::ptr::eq(c.file, file))
            .filter_map(|c| {
                let (event, _, sub) = hook_events().find(|(e, _, _)| *e == c.event)?;
                settings::runs_ctxguard(&c.line, sub).then(|| event.to_string())
            })
            .collect();
        if !accepts.exec_form && !exec.is_empty() {
            out.push(finding(
                "hooks",
                Status::Fail,
                format!(
                    "{} registers ctxguard in exec form ({}), which {client} does not have: it \
                     runs the program without its arguments",
                    file.path.display(),
                    exec.join(", ")
                ),
                Some(&install_fix(file)),
            ));
        }
    }
    if !accepts.late_events && !plugins(ctx).is_empty() {
        out.push(finding(
            "hooks",
            Status::Fail,
            format!(
                "the ctxguard plugin registers PostCompact, which {client} does not know: it \
                 loads none of the plugin's hooks"
            ),
            Some(
                "disable the plugin and run `ctxguard install` (the plugin needs Claude Code \
                 2.1.330 or later)",
            ),
        ));
    }
    out
}

/// Where the enabled ctxguard plugin is turned on.
fn plugins(ctx: &Context) -> Vec<String> {
    ctx.client
        .enabled_plugins()
        .into_iter()
        .filter(|(name, _)| name.split('@').next() == Some("ctxguard"))
        .map(|(_, f)| format!("the ctxguard plugin (enabled in {})", f.path.display()))
        .collect()
}

/// Where the client has `onFailure`, ctxguard's hooks without `"continue"`, one finding per
/// settings file: such a hook blocks the action when the client refuses to start it (2.1.332
/// refuses a command or argument too long to pass on Windows, and counts that as a block on
/// `PreToolUse` and `UserPromptSubmit`: its `OXo`, status 2 unless `e.onFailure==="continue"`).
fn blocking(ctx: &Context, commands: &[client::Command<'_>]) -> Vec<Finding> {
    let accepts = ctx.accepts();
    ctx.client
        .files
        .iter()
        .filter(|f| accepts.on_failure && f.scope != Scope::Managed)
        .filter_map(|file| {
            let events: Vec<&str> = commands
                .iter()
                .filter(|c| std::ptr::eq(c.file, file))
                .filter(|c| c.on_failure.as_deref() != Some("continue"))
                .filter_map(|c| {
                    let (event, _, sub) = hook_events().find(|(e, _, _)| *e == c.event)?;
                    settings::runs_ctxguard(&c.line, sub).then_some(event)
                })
                .collect();
            (!events.is_empty()).then(|| {
                finding(
                    "hooks",
                    Status::Info,
                    format!(
                        "ctxguard's hooks in {} have no onFailure \"continue\" ({}): a client \
                         that refuses to start one (2.1.332 does for a command too long for \
                         Windows) counts a refused PreToolUse or UserPromptSubmit as a block",
                        file.path.display(),
                        events.join(", ")
                    ),
                    Some(&install_fix(file)),
                )
            })
        })
        .collect()
}

pub fn hooks(ctx: &Context) -> Vec<Finding> {
    let commands = ctx.client.hook_commands();
    let accepts = ctx.accepts();
    let unaccepted = unaccepted(ctx, &commands);
    let client = client_name(ctx);
    let shell_form: Vec<Finding> = commands
        .iter()
        .filter(|c| accepts.exec_form && !c.exec && c.file.scope != Scope::Managed)
        .filter_map(|c| {
            let (event, _, sub) = hook_events().find(|(e, _, _)| *e == c.event)?;
            settings::runs_ctxguard(&c.line, sub).then(|| {
                finding(
                    "hooks",
                    Status::Info,
                    format!(
                        "{event} runs `ctxguard {sub}` in shell form ({}): a shell starts on \
                         every call",
                        c.file.path.display()
                    ),
                    Some(&match c.file.scope {
                        Scope::User => "run `ctxguard install` (it turns it into the exec form, \
                                        in place)"
                            .to_string(),
                        _ => format!(
                            "run `ctxguard install --settings {}` (it turns it into the exec \
                             form, in place)",
                            c.file.path.display()
                        ),
                    }),
                )
            })
        })
        .collect();
    let blocking = blocking(ctx, &commands);
    // An older client loads none of the plugin's hooks (see `unaccepted`).
    let plugin: Vec<String> = if accepts.late_events {
        plugins(ctx)
    } else {
        Vec::new()
    };
    hook_events()
        .map(|(event, _, sub)| {
            let mut places: Vec<String> = commands
                .iter()
                .filter(|c| c.event == event && settings::runs_ctxguard(&c.line, sub))
                .map(|c| c.file.path.display().to_string())
                .collect();
            places.extend(plugin.iter().cloned());
            match places.len() {
                0 if !accepts.event(event) => finding(
                    "hooks",
                    Status::Ok,
                    format!("{event} is not registered: {client} does not know it"),
                    None,
                ),
                0 => finding(
                    "hooks",
                    Status::Fail,
                    format!("{event} does not run `ctxguard {sub}`"),
                    Some("run `ctxguard install` (or install the plugin)"),
                ),
                1 => finding(
                    "hooks",
                    Status::Ok,
                    format!("{event} runs `ctxguard {sub}` ({})", places[0]),
                    None,
                ),
                n => finding(
                    "hooks",
                    Status::Warn,
                    format!(
                        "{event} runs `ctxguard {sub}` {n} times: {}",
                        places.join("; ")
                    ),
                    Some(if plugin.is_empty() {
                        "keep one: `ctxguard uninstall --settings PATH` for the extra settings file"
                    } else {
                        // The plugin's hooks are ctxguard's: the settings' copies go, the status
                        // line stays.
                        "keep the plugin's: `ctxguard install --statusline-only` (with \
                         --settings PATH for another settings file) takes ctxguard's hooks out \
                         of the settings and keeps the status line"
                    }),
                ),
            }
        })
        .chain(unaccepted)
        .chain(shell_form)
        .chain(blocking)
        .collect()
}

/// Finds a registered command's program ([`crate::program::locate`]) with doctor's context.
fn locate(program: &str, ctx: &Context) -> Program {
    crate::program::locate(program, ctx.home.as_deref(), ctx.search_path.as_deref())
}

/// The program of a command line that runs ctxguard (any subcommand), as written.
fn ctxguard_program(line: &str) -> Option<String> {
    let words = crate::shell::shell_words(line)?;
    let sub = words.get(1)?;
    settings::runs_ctxguard(line, sub).then(|| words[0].clone())
}

/// The program of every registered ctxguard command (each hook, in any event, and the status
/// line, in every settings file) exists and is executable: a dangling one runs whatever is
/// created at that path later.
pub fn binaries(ctx: &Context) -> Vec<Finding> {
    let commands = ctx
        .client
        .hook_commands()
        .into_iter()
        .chain(ctx.client.status_lines());
    let mut programs: BTreeMap<String, Vec<(&str, &SettingsFile)>> = BTreeMap::new();
    for c in commands {
        if let Some(program) = ctxguard_program(&c.line) {
            programs.entry(program).or_default().push((c.event, c.file));
        }
    }
    programs
        .iter()
        .map(|(program, uses)| {
            let place = places(uses);
            match locate(program, ctx) {
                Program::Executable(p) => {
                    let mut events: Vec<&str> = Vec::new();
                    for (event, _) in uses {
                        if !events.contains(event) {
                            events.push(event);
                        }
                    }
                    finding(
                        "binary",
                        Status::Ok,
                        format!("{} exists ({})", p.display(), events.join(", ")),
                        None,
                    )
                }
                Program::NotExecutable(_) => finding(
                    "binary",
                    Status::Fail,
                    format!("`{program}` ({place}) is not executable"),
                    Some(&reinstall(uses)),
                ),
                Program::Missing => finding(
                    "binary",
                    Status::Fail,
                    format!("`{program}` ({place}) does not exist: Claude Code would run whatever is put there"),
                    Some(&reinstall(uses)),
                ),
                Program::Unknown => finding(
                    "binary",
                    Status::Warn,
                    format!("`{program}` ({place}) is expanded by the shell: doctor cannot check it exists"),
                    Some("name the binary by its full path, as `ctxguard install` does"),
                ),
            }
        })
        .collect()
}

/// "`PreToolUse`, statusLine in FILE; `PreCompact` in FILE2", in order of appearance.
fn places(uses: &[(&str, &SettingsFile)]) -> String {
    let mut by_file: Vec<(&Path, Vec<&str>)> = Vec::new();
    for (event, file) in uses {
        match by_file.iter_mut().find(|(p, _)| *p == file.path) {
            Some((_, events)) => events.push(event),
            None => by_file.push((&file.path, vec![event])),
        }
    }
    by_file
        .iter()
        .map(|(path, events)| format!("{} in {}", events.join(", "), path.display()))
        .collect::<Vec<_>>()
        .join("; ")
}

/// How to point the commands of these files at the running binary.
fn reinstall(uses: &[(&str, &SettingsFile)]) -> String {
    let mut steps: Vec<String> = Vec::new();
    for (_, file) in uses {
        let step = match file.scope {
            Scope::User => "run `ctxguard install`".to_string(),
            Scope::Managed => format!(
                "ask whoever manages Claude Code on this machine to fix {}",
                file.path.display()
            ),
            _ => format!("run `ctxguard install --settings {}`", file.path.display()),
        };
        if !steps.contains(&step) {
            steps.push(step);
        }
    }
    format!(
        "{}, to point them at this binary (or remove them)",
        steps.join("; ")
    )
}

/// The state root can be created and written.
pub fn state(ctx: &Context) -> Vec<Finding> {
    let paths = match &ctx.paths {
        Ok(paths) => paths,
        Err(e) => {
            return vec![finding(
                "state",
                Status::Fail,
                e.clone(),
                Some("set CTXGUARD_HOME"),
            )]
        }
    };
    let probe = (|| -> Result<()> {
        let file = paths.root().join(".doctor-probe");
        files::ensure_state_dir(paths.root(), paths.root())?;
        files::write_atomic(&file, b"ok", false)?;
        fs::remove_file(&file)?;
        Ok(())
    })();
    vec![match probe {
        Ok(()) => finding(
            "state",
            Status::Ok,
            format!("{} is writable", paths.root().display()),
            None,
        ),
        Err(e) => finding(
            "state",
            Status::Fail,
            format!("{e:#}"),
            Some("set CTXGUARD_HOME to a writable directory you own"),
        ),
    }]
}

/// ctxguard's own configuration loads (its warnings, or why not).
pub fn config(ctx: &Context) -> Vec<Finding> {
    match &ctx.config {
        None => Vec::new(),
        Some(Ok(loaded)) => loaded
            .warnings
            .iter()
            .map(|w| {
                finding(
                    "config",
                    Status::Warn,
                    w.clone(),
                    Some("see docs/configuration.md"),
                )
            })
            .collect(),
        Some(Err(e)) => vec![finding(
            "config",
            Status::Fail,
            e.clone(),
            Some("fix the value (hooks fall back to the defaults meanwhile)"),
        )],
    }
}

/// The status line that runs (the most specific file that sets one) is ctxguard's, and can run.
pub fn status_line(ctx: &Context) -> Vec<Finding> {
    let late = "usage comes from the transcript, and a nudge can come a tool call late";
    // Beside the plugin, which sets no status line, only the status line is registered.
    let beside_plugin = !crate::commands::plugin::enabled(&ctx.client).is_empty();
    let install = if beside_plugin {
        "run `ctxguard install --statusline-only` (the plugin registers the hooks)"
    } else {
        "run `ctxguard install`"
    };
    let wrap = if beside_plugin {
        "`ctxguard install --statusline-only` (wraps your command; the plugin registers the \
         hooks), or pipe its input to `ctxguard statusline --quiet`"
    } else {
        "`ctxguard install` (wraps your command), or pipe its input to `ctxguard statusline --quiet`"
    };
    let cannot_run = |line: &str| {
        ctxguard_program(line)
            .filter(|p| matches!(locate(p, ctx), Program::Missing | Program::NotExecutable(_)))
    };
    vec![match ctx.client.status_lines().pop() {
        Some(c) if settings::runs_ctxguard(&c.line, STATUSLINE.name) => match cannot_run(&c.line) {
            Some(program) => finding(
                STATUSLINE.name,
                Status::Warn,
                format!(
                    "the status line is ctxguard's ({}), but `{program}` cannot run (see binary): {late}",
                    c.file.path.display()
                ),
                Some(&reinstall(&[(c.event, c.file)])),
            ),
            None => finding(
                STATUSLINE.name,
                Status::Ok,
                format!("the status line runs ctxguard ({})", c.file.path.display()),
                None,
            ),
        },
        Some(c) => finding(
            STATUSLINE.name,
            Status::Warn,
            format!(
                "the status line runs `{}` ({}), not ctxguard: {late}",
                c.line,
                c.file.path.display()
            ),
            Some(wrap),
        ),
        None => finding(
            STATUSLINE.name,
            Status::Warn,
            format!("no status line: {late}"),
            Some(install),
        ),
    }]
}

#[cfg(test)]
mod tests;
