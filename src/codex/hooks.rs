//! Codex CLI's `hooks.json` and the trust it asks of each hook there, as pure edits (the file I/O
//! is `commands::install`'s and `doctor`'s). Codex groups hooks by event as Claude Code does
//! (`{"hooks": {"PreToolUse": [{"matcher"?: …, "hooks": [{"type": "command", "command": …}]}]}}`)
//! and runs a hook of the user's layer only once it is trusted: `config.toml` then holds
//! `[hooks.state."<hooks.json>:<snake_case event>:<group>:<handler>"]` with `trusted_hash`, the
//! SHA-256 of the handler as Codex normalises it ([`trust_hash`]). The key names the handler's
//! place, so an edit that moves a hook of the user's carries its trust along ([`Edit::moved`]).
//!
//! An entry is ctxguard's when the caller's `sub_of` says its command runs a ctxguard hook
//! subcommand; everything else, and the order of every key and hook, is left as it was.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use toml_edit::{DocumentMut, Item, Table};

/// A `hooks.json` larger than this is not read (a real one is a few kilobytes).
pub const MAX_HOOKS_BYTES: u64 = 1024 * 1024;

/// `hooks.json` in Codex's state directory.
pub fn hooks_path(codex_home: &Path) -> PathBuf {
    codex_home.join("hooks.json")
}

/// What a command line runs, as the caller recognises it: the ctxguard hook subcommand, or
/// `None` for anything that is not ctxguard's.
pub type SubOf<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Where a handler sits in `hooks.json`: the event (as the file names it), the matcher group's
/// index in the event's list, the handler's index in the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub event: String,
    pub group: usize,
    pub index: usize,
}

impl Position {
    /// The key of this handler's `[hooks.state."…"]` table; `file` is `hooks.json`'s path as
    /// Codex names it (its canonical `CODEX_HOME`, then `/hooks.json`).
    pub fn key(&self, file: &str) -> String {
        format!(
            "{file}:{}:{}:{}",
            snake_case(&self.event),
            self.group,
            self.index
        )
    }
}

/// One handler of `hooks.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    pub at: Position,
    /// A command handler's command line.
    pub command: Option<String>,
    /// `sha256:<hex>` as Codex computes it, for a command handler.
    pub hash: Option<String>,
}

/// `PreToolUse` → `pre_tool_use`: an event as trust keys and hashes name it.
pub fn snake_case(event: &str) -> String {
    let mut out = String::with_capacity(event.len() + 4);
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Events whose matcher Codex 0.169.0 drops (it never filters them): their hash leaves it out.
const WITHOUT_MATCHER: &[&str] = &["UserPromptSubmit", "Stop", "PreModelRequest", "Interrupt"];

/// Events whose timeout Codex clamps to 1–3 s (default 1); every other's is at least 1, default
/// 600.
const SHORT_TIMEOUT: &[&str] = &["SessionEnd", "Interrupt"];

/// The timeout ctxguard's `SessionEnd` hook asks of Codex: its cap for that event.
const SESSION_END_TIMEOUT: u64 = 3;

/// The timeout Codex gives a handler of `event`, in seconds.
fn timeout(event: &str, handler: &Map<String, Value>) -> u64 {
    let given = handler.get("timeout").and_then(Value::as_u64);
    if SHORT_TIMEOUT.contains(&event) {
        given.unwrap_or(1).clamp(1, 3)
    } else {
        given.unwrap_or(600).max(1)
    }
}

/// Compact JSON with every object's keys sorted, recursively: what Codex hashes.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::from(k.as_str()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

/// The hash Codex trusts a command handler of `event` by (`sha256:<hex>`): of the canonical
/// JSON `{"event_name", "matcher"?, "hooks": [{"type", "command", "timeout", "async",
/// "statusMessage"?, "additionalContextLimit"?}]}`, with the timeout as Codex clamps it and the matcher only for an event
/// that takes one. Checked against the real 0.169.0 (`hooks/list`'s `currentHash`).
fn trust_hash(event: &str, matcher: Option<&Value>, handler: &Map<String, Value>) -> String {
    let mut normal = Map::new();
    normal.insert("type".into(), json!("command"));
    normal.insert(
        "command".into(),
        handler.get("command").cloned().unwrap_or(Value::Null),
    );
    normal.insert("timeout".into(), json!(timeout(event, handler)));
    normal.insert(
        "async".into(),
        json!(handler
            .get("async")
            .and_then(Value::as_bool)
            .unwrap_or(false)),
    );
    for key in ["statusMessage", "additionalContextLimit"] {
        if let Some(v) = handler.get(key).filter(|v| !v.is_null()) {
            normal.insert(key.into(), v.clone());
        }
    }
    let mut whole = Map::new();
    whole.insert("event_name".into(), json!(snake_case(event)));
    if let Some(m) = matcher.filter(|m| !m.is_null() && !WITHOUT_MATCHER.contains(&event)) {
        whole.insert("matcher".into(), m.clone());
    }
    whole.insert("hooks".into(), json!([normal]));
    let digest = Sha256::digest(canonical(&Value::Object(whole)).as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Every handler of `hooks.json`, in the file's order (events, groups, handlers).
pub fn handlers(doc: &Value) -> Vec<Handler> {
    let mut out = Vec::new();
    let Some(hooks) = doc.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, groups) in hooks {
        let Some(groups) = groups.as_array() else {
            continue;
        };
        for (g, group) in groups.iter().enumerate() {
            let Some(list) = group.get("hooks").and_then(Value::as_array) else {
                continue;
            };
            for (h, handler) in list.iter().enumerate() {
                let command = handler
                    .as_object()
                    .filter(|o| o.get("type").and_then(Value::as_str) == Some("command"))
                    .and_then(|o| Some((o, o.get("command")?.as_str()?.to_string())));
                out.push(Handler {
                    at: Position {
                        event: event.clone(),
                        group: g,
                        index: h,
                    },
                    hash: command
                        .as_ref()
                        .map(|(o, _)| trust_hash(event, group.get("matcher"), o)),
                    command: command.map(|(_, c)| c),
                });
            }
        }
    }
    out
}

/// ctxguard's handlers in `doc`, each with the subcommand it runs.
pub fn ours(doc: &Value, sub_of: SubOf) -> Vec<(Handler, String)> {
    handlers(doc)
        .into_iter()
        .filter_map(|h| {
            let sub = sub_of(h.command.as_deref()?)?;
            Some((h, sub))
        })
        .collect()
}

/// What an edit of `hooks.json` did.
#[derive(Debug, Default, PartialEq)]
pub struct Edit {
    /// What changed, one line each; empty when the file already had exactly this.
    pub changes: Vec<String>,
    /// ctxguard's handlers taken out, where they were, with the hash they had.
    pub removed: Vec<Handler>,
    /// The user's handlers the edit moved (from, to), in the file's order: their trust moves
    /// with them.
    pub moved: Vec<(Position, Position)>,
}

/// The user's handlers (not ctxguard's) of each event, in order.
fn theirs(doc: &Value, sub_of: SubOf) -> Vec<Position> {
    handlers(doc)
        .into_iter()
        .filter(|h| h.command.as_deref().and_then(sub_of).is_none())
        .map(|h| h.at)
        .collect()
}

/// The user's handlers that moved between `before` and `after`: an edit only adds or takes out
/// ctxguard's, so each event's handlers of the user's keep their order.
fn moves(before: &[Position], after: &[Position]) -> Vec<(Position, Position)> {
    let mut out = Vec::new();
    let mut events: Vec<&str> = before.iter().map(|p| p.event.as_str()).collect();
    events.dedup();
    for event in events {
        let old = before.iter().filter(|p| p.event == event);
        let new = after.iter().filter(|p| p.event == event);
        out.extend(
            old.zip(new)
                .filter(|(o, n)| o != n)
                .map(|(o, n)| (o.clone(), n.clone())),
        );
    }
    out
}

fn root(doc: &mut Value) -> Result<&mut Map<String, Value>, String> {
    if doc.is_null() {
        *doc = json!({});
    }
    doc.as_object_mut()
        .ok_or_else(|| "the file is not a JSON object".to_string())
}

/// Takes out the handlers `gone` picks from `groups`, then the groups that leaves empty; returns
/// the handlers taken out.
fn take_out(
    groups: &mut Vec<Value>,
    gone: &mut dyn FnMut(&Value) -> bool,
) -> Vec<(usize, usize, Value)> {
    let mut taken = Vec::new();
    let mut emptied = Vec::new();
    for (g, group) in groups.iter_mut().enumerate() {
        let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            continue;
        };
        let before = list.len();
        let mut h = 0;
        list.retain(|handler| {
            let go = gone(handler);
            if go {
                taken.push((g, h, handler.clone()));
            }
            h += 1;
            !go
        });
        if list.is_empty() && before > 0 {
            emptied.push(g);
        }
    }
    for g in emptied.into_iter().rev() {
        groups.remove(g);
    }
    taken
}

/// Registers each `(event, subcommand, command line)` of `wanted` once: a handler that already
/// runs that subcommand for the event gets the command line (a different binary path, say);
/// further copies go; a missing one is appended in a group of its own, so no hook of the user's
/// moves. A hook's trust holds only while its handler is unchanged: a changed command line is
/// said to need trusting again.
pub fn install(
    doc: &mut Value,
    wanted: &[(&str, &str, &str)],
    sub_of: SubOf,
) -> Result<Edit, String> {
    let before = theirs(doc, sub_of);
    let mut edit = Edit::default();
    let root = root(doc)?;
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("`hooks` is not a JSON object")?;
    for &(event, sub, command) in wanted {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or_else(|| format!("`hooks.{event}` is not a JSON array"))?;
        let runs_sub = |handler: &Value| {
            handler
                .get("command")
                .and_then(Value::as_str)
                .and_then(sub_of)
                .is_some_and(|s| s == sub)
        };
        let mut first = None;
        for (g, group) in groups.iter().enumerate() {
            if let Some(list) = group.get("hooks").and_then(Value::as_array) {
                if let Some(h) = list.iter().position(runs_sub) {
                    first = Some((g, h));
                    break;
                }
            }
        }
        // Codex gives SessionEnd 1 s unless told (at most 3): a checkpoint of a long rollout
        // gets the 3.
        let wanted_timeout = (event == "SessionEnd").then_some(SESSION_END_TIMEOUT);
        let Some((g, h)) = first else {
            let mut handler = json!({"type": "command", "command": command});
            if let Some(t) = wanted_timeout {
                handler["timeout"] = json!(t);
            }
            groups.push(json!({ "hooks": [handler] }));
            edit.changes.push(format!("{event}: added `{command}`"));
            continue;
        };
        let handler = &mut groups[g]["hooks"][h];
        if let Some(t) = wanted_timeout {
            if handler.get("timeout").and_then(Value::as_u64) != Some(t) {
                handler["timeout"] = json!(t);
                edit.changes.push(format!(
                    "{event}: timeout {t} s for `{command}` (Codex asks to trust it again)"
                ));
            }
        }
        if handler.get("command").and_then(Value::as_str) != Some(command) {
            let old = handler["command"].as_str().unwrap_or_default().to_string();
            handler["command"] = json!(command);
            edit.changes.push(format!(
                "{event}: `{old}` became `{command}` (Codex asks to trust it again)"
            ));
        }
        // Copies an older install (or a hand) added, after the first.
        let mut seen = false;
        let copies = take_out(groups, &mut |handler| {
            if !runs_sub(handler) {
                return false;
            }
            let copy = seen;
            seen = true;
            copy
        });
        for (_, _, copy) in copies {
            let line = copy["command"].as_str().unwrap_or_default();
            edit.changes
                .push(format!("{event}: removed the duplicate `{line}`"));
        }
    }
    edit.moved = moves(&before, &theirs(doc, sub_of));
    Ok(edit)
}

/// Takes out every handler that runs a ctxguard hook subcommand, in any event, and the groups,
/// event lists and `hooks` object that leaves empty (a `hooks` that was empty before stays).
pub fn uninstall(doc: &mut Value, sub_of: SubOf) -> Result<Edit, String> {
    let before = theirs(doc, sub_of);
    let mut edit = Edit {
        removed: ours(doc, sub_of).into_iter().map(|(h, _)| h).collect(),
        ..Edit::default()
    };
    if edit.removed.is_empty() {
        return Ok(edit);
    }
    let root = root(doc)?;
    if let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) {
        let mut emptied = Vec::new();
        for (event, groups) in hooks.iter_mut() {
            let Some(list) = groups.as_array_mut() else {
                continue;
            };
            let mut is_ours = |handler: &Value| {
                handler.get("type").and_then(Value::as_str) == Some("command")
                    && handler
                        .get("command")
                        .and_then(Value::as_str)
                        .and_then(sub_of)
                        .is_some()
            };
            for (_, _, handler) in take_out(list, &mut is_ours) {
                let line = handler["command"].as_str().unwrap_or_default();
                edit.changes.push(format!("{event}: removed `{line}`"));
            }
            if list.is_empty() {
                emptied.push(event.clone());
            }
        }
        let had = hooks.len();
        for event in emptied {
            hooks.shift_remove(&event);
        }
        if hooks.is_empty() && had > 0 {
            root.shift_remove("hooks");
        }
    }
    edit.moved = moves(&before, &theirs(doc, sub_of));
    Ok(edit)
}

/// What `config.toml` records for one handler's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// No `trusted_hash`: Codex skips the hook until someone trusts it.
    Untrusted,
    /// Trusted as it is now.
    Trusted,
    /// Trusted once, but the handler changed since (a different hash): Codex skips it.
    Modified,
    /// `enabled = false`: turned off, trusted or not.
    Disabled,
}

/// `hooks.state` in `doc`, if it is a table.
fn state(doc: &DocumentMut) -> Option<&Table> {
    doc.get("hooks")?.as_table()?.get("state")?.as_table()
}

/// What `doc` records for the handler at `key`, whose hash is now `hash`.
pub fn trust(doc: &DocumentMut, key: &str, hash: &str) -> Trust {
    let Some(entry) = state(doc)
        .and_then(|s| s.get(key))
        .and_then(Item::as_table_like)
    else {
        return Trust::Untrusted;
    };
    if entry.get("enabled").and_then(Item::as_bool) == Some(false) {
        return Trust::Disabled;
    }
    match entry.get("trusted_hash").and_then(Item::as_str) {
        Some(h) if h == hash => Trust::Trusted,
        Some(_) => Trust::Modified,
        None => Trust::Untrusted,
    }
}

/// `hooks.state` in `doc`, made (as implicit tables, which leave no header of their own) when
/// missing.
fn state_mut(doc: &mut DocumentMut) -> Result<&mut Table, String> {
    let mut implicit = Table::new();
    implicit.set_implicit(true);
    let hooks = doc
        .entry("hooks")
        .or_insert_with(|| Item::Table(implicit.clone()))
        .as_table_mut()
        .ok_or("`hooks` in config.toml is not a table")?;
    hooks
        .entry("state")
        .or_insert_with(|| Item::Table(implicit))
        .as_table_mut()
        .ok_or_else(|| "`hooks.state` in config.toml is not a table".to_string())
}

/// Records `hash` as trusted for the handler at `key`; whether that changed anything.
pub fn set_trusted(doc: &mut DocumentMut, key: &str, hash: &str) -> Result<bool, String> {
    let entry = state_mut(doc)?
        .entry(key)
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_mut()
        .ok_or_else(|| format!("`hooks.state.\"{key}\"` in config.toml is not a table"))?;
    if entry.get("trusted_hash").and_then(Item::as_str) == Some(hash) {
        return Ok(false);
    }
    entry.insert("trusted_hash", toml_edit::value(hash));
    Ok(true)
}

/// Takes the table at `key` out of `hooks.state`, then `state` and `hooks` if that leaves them
/// empty and they have no header of their own.
pub fn take_state(doc: &mut DocumentMut, key: &str) -> Option<Item> {
    let hooks = doc.get_mut("hooks")?.as_table_mut()?;
    let state = hooks.get_mut("state")?.as_table_mut()?;
    let taken = state.remove(key)?;
    if state.is_empty() && state.is_implicit() {
        hooks.remove("state");
    }
    if hooks.is_empty() && hooks.is_implicit() {
        doc.remove("hooks");
    }
    Some(taken)
}

/// Moves what `doc` records for a handler from one key to another (what was at `to` goes).
pub fn move_state(doc: &mut DocumentMut, from: &str, to: &str) -> Result<bool, String> {
    let taken = take_state(doc, from);
    let dropped = take_state(doc, to);
    let changed = taken.is_some() || dropped.is_some();
    if let Some(item) = taken {
        state_mut(doc)?.insert(to, item);
    }
    Ok(changed)
}

#[cfg(test)]
mod tests;
