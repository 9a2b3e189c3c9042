//! Registering ctxguard in Claude Code's settings.json, as pure edits of the parsed JSON (I/O is
//! in `commands::install`). An entry is ctxguard's when its command runs a program named
//! `ctxguard` with one of the hook subcommands; everything else, and the order of every key and
//! hook, is left as it was. serde_json's `preserve_order` keeps the keys in the user's order.

use serde_json::{json, Map, Value};

use crate::registry::STATUSLINE;

/// Hook events ctxguard registers, with their matcher and subcommand (from the registry).
pub fn hook_events() -> impl Iterator<Item = (&'static str, Option<&'static str>, &'static str)> {
    crate::registry::events().filter_map(|h| Some((h.event?, h.matcher, h.name)))
}

/// How to treat a status line that is already configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusLineMode {
    /// Run theirs and append the gauge (`ctxguard statusline --then '<theirs>'`).
    Wrap,
    Replace,
    Skip,
}

/// Quotes a word for `sh` (single quotes; a quote inside becomes `'\''`), unless it is plain.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:=,@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Splits a command line into words, for the quoting `sh` understands in the commands we write
/// and the simple ones people write (plain words, single and double quotes, backslashes).
/// `None` for anything with unbalanced quotes.
pub fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        ch => word.push(ch),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => word.push(chars.next()?),
                        ch => word.push(ch),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next()?);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

/// The subcommand (and the rest of the words) when `command` runs ctxguard.
fn ctxguard_call(command: &str) -> Option<Vec<String>> {
    let words = shell_words(command)?;
    let program = words.first()?;
    let name = program.rsplit('/').next()?;
    (name == "ctxguard").then(|| words[1..].to_vec())
}

/// Does this hook command run `ctxguard SUBCOMMAND`?
pub fn runs_ctxguard(command: &str, subcommand: &str) -> bool {
    ctxguard_call(command).is_some_and(|rest| rest.first().is_some_and(|s| s == subcommand))
}

/// The user's own command inside `ctxguard statusline --then '<theirs>'`, if this is one.
pub fn wrapped_statusline(command: &str) -> Option<String> {
    let rest = ctxguard_call(command)?;
    match rest.as_slice() {
        [sub, then, theirs] if sub == STATUSLINE.name && then == "--then" => Some(theirs.clone()),
        _ => None,
    }
}

fn hook_command(bin: &str, sub: &str) -> String {
    format!("{} {sub}", shell_quote(bin))
}

/// The status-line command ctxguard sets, wrapping `theirs` if given.
pub fn statusline_command(bin: &str, theirs: Option<&str>) -> String {
    match theirs {
        Some(t) => format!(
            "{} {} --then {}",
            shell_quote(bin),
            STATUSLINE.name,
            shell_quote(t)
        ),
        None => hook_command(bin, STATUSLINE.name),
    }
}

/// Each hook command of an event's matcher groups, as (group index, hook index, command).
fn commands(groups: &[Value]) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        if let Some(hooks) = group.get("hooks").and_then(Value::as_array) {
            for (h, hook) in hooks.iter().enumerate() {
                if let Some(cmd) = hook.get("command").and_then(Value::as_str) {
                    out.push((g, h, cmd.to_string()));
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

/// Adds (or updates) ctxguard's hooks and status line. Returns what changed, one line each; an
/// empty list means the settings already had exactly this.
pub fn install(
    settings: &mut Value,
    bin: &str,
    mode: StatusLineMode,
) -> Result<Vec<String>, String> {
    let root = settings
        .as_object_mut()
        .ok_or("the settings file is not a JSON object")?;
    let mut changes = Vec::new();
    let hooks = object(root, "hooks")?;
    for (event, matcher, sub) in hook_events() {
        let groups = hooks
            .entry(event.to_string())
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or_else(|| format!("`hooks.{event}` is not a JSON array"))?;
        let wanted = hook_command(bin, sub);
        let ours: Vec<(usize, usize, String)> = commands(groups)
            .into_iter()
            .filter(|(_, _, cmd)| runs_ctxguard(cmd, sub))
            .collect();
        match ours.first() {
            Some((g, h, cmd)) => {
                if *cmd != wanted {
                    groups[*g]["hooks"][*h]["command"] = json!(wanted);
                    changes.push(format!("{event}: updated the command to `{wanted}`"));
                }
            }
            None => {
                let mut group = Map::new();
                if let Some(m) = matcher {
                    group.insert("matcher".into(), json!(m));
                }
                group.insert(
                    "hooks".into(),
                    json!([{"type": "command", "command": wanted}]),
                );
                groups.push(Value::Object(group));
                changes.push(format!("{event}: added `{wanted}`"));
            }
        }
    }
    let current = root
        .get("statusLine")
        .and_then(|s| s.get("command"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let target = match (&current, mode) {
        (None, StatusLineMode::Skip) => None,
        (None, _) => Some(statusline_command(bin, None)),
        (Some(cmd), _) if runs_ctxguard(cmd, STATUSLINE.name) => {
            // Ours already; keep a wrapped command wrapped, but point it at this binary.
            Some(statusline_command(bin, wrapped_statusline(cmd).as_deref()))
        }
        (Some(_), StatusLineMode::Skip) => None,
        (Some(_), StatusLineMode::Replace) => Some(statusline_command(bin, None)),
        (Some(theirs), StatusLineMode::Wrap) => Some(statusline_command(bin, Some(theirs))),
    };
    if let Some(target) = target {
        if current.as_deref() != Some(target.as_str()) {
            let line = object(root, "statusLine")?;
            line.insert("type".into(), json!("command"));
            line.insert("command".into(), json!(target));
            changes.push(match current {
                None => format!("statusLine: set to `{target}`"),
                Some(old) => format!("statusLine: `{old}` became `{target}`"),
            });
        }
    }
    Ok(changes)
}

/// Removes exactly what [`install`] adds: ctxguard's hook entries (and the matcher groups, event
/// lists and `hooks` object they leave empty) and its status line (restoring a wrapped one).
pub fn uninstall(settings: &mut Value) -> Result<Vec<String>, String> {
    let root = settings
        .as_object_mut()
        .ok_or("the settings file is not a JSON object")?;
    let mut changes = Vec::new();
    if let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) {
        for (event, _, sub) in hook_events() {
            let Some(groups) = hooks.get_mut(event).and_then(Value::as_array_mut) else {
                continue;
            };
            for group in groups.iter_mut() {
                if let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                    let before = list.len();
                    list.retain(|h| {
                        !h.get("command")
                            .and_then(Value::as_str)
                            .is_some_and(|c| runs_ctxguard(c, sub))
                    });
                    for _ in list.len()..before {
                        changes.push(format!("{event}: removed ctxguard {sub}"));
                    }
                }
            }
            groups.retain(|g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .is_none_or(|l| !l.is_empty())
            });
            if groups.is_empty() {
                hooks.remove(event);
            }
        }
        if hooks.is_empty() {
            root.remove("hooks");
        }
    }
    let current = root
        .get("statusLine")
        .and_then(|s| s.get("command"))
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(cmd) = current.filter(|c| runs_ctxguard(c, STATUSLINE.name)) {
        match wrapped_statusline(&cmd) {
            Some(theirs) => {
                root["statusLine"]["command"] = json!(theirs);
                changes.push(format!("statusLine: restored `{theirs}`"));
            }
            None => {
                root.remove("statusLine");
                changes.push("statusLine: removed".to_string());
            }
        }
    }
    Ok(changes)
}

/// A line diff of two texts (`-` removed, `+` added, two lines of context), for `--dry-run`.
pub fn diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    // Longest common subsequence table, from the end.
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let near = |k: usize| {
        ops[k.saturating_sub(2)..(k + 3).min(ops.len())]
            .iter()
            .any(|(op, _)| *op != ' ')
    };
    let mut out = String::new();
    let mut skipped = false;
    for (k, (op, line)) in ops.iter().enumerate() {
        if *op != ' ' || near(k) {
            if skipped {
                out.push_str("  ...\n");
                skipped = false;
            }
            out.push_str(&format!("{op} {line}\n"));
        } else {
            skipped = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIN: &str = "/home/u/.local/bin/ctxguard";

    fn their_settings() -> Value {
        serde_json::from_str(
            r#"{
  "model": "opus",
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/guard.sh"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  },
  "statusLine": {"type": "command", "command": "~/.claude/statusline.sh --fancy", "padding": 0},
  "env": {"FOO": "1"}
}"#,
        )
        .unwrap()
    }

    #[test]
    fn quoting_round_trips() {
        for word in [
            "plain",
            "/a b/c",
            "it's",
            "",
            "$(rm -rf /)",
            "a\"b\\c",
            "~/x.sh --y 'z'",
        ] {
            let line = format!("prog {}", shell_quote(word));
            assert_eq!(shell_words(&line).unwrap(), ["prog", word], "{line}");
        }
        assert_eq!(
            shell_words(r#"a "b c" d\ e 'f'"#).unwrap(),
            ["a", "b c", "d e", "f"]
        );
        assert_eq!(shell_words("a 'open"), None);
    }

    #[test]
    fn recognises_ctxguard_commands_only() {
        assert!(runs_ctxguard("/x/ctxguard pretooluse", "pretooluse"));
        assert!(runs_ctxguard("'/my dir/ctxguard' precompact", "precompact"));
        assert!(runs_ctxguard(
            "ctxguard statusline --then 'x'",
            "statusline"
        ));
        assert!(!runs_ctxguard("/x/ctxguard-old pretooluse", "pretooluse"));
        assert!(!runs_ctxguard("echo ctxguard pretooluse", "pretooluse"));
        assert!(!runs_ctxguard("/x/ctxguard status", "statusline"));
        assert_eq!(
            wrapped_statusline("ctxguard statusline --then 'a b'").as_deref(),
            Some("a b")
        );
        assert_eq!(wrapped_statusline("ctxguard statusline"), None);
    }

    #[test]
    fn install_keeps_everything_else_in_order_and_is_idempotent() {
        let mut s = their_settings();
        let changes = install(&mut s, BIN, StatusLineMode::Wrap).unwrap();
        assert_eq!(changes.len(), 4, "{changes:?}");
        let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["model", "hooks", "statusLine", "env"]);
        let hook_keys: Vec<&String> = s["hooks"].as_object().unwrap().keys().collect();
        assert_eq!(
            hook_keys,
            ["PreToolUse", "Stop", "PreCompact", "SessionStart"]
        );
        // Theirs first, ours appended.
        assert_eq!(
            s["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "~/guard.sh"
        );
        assert_eq!(s["hooks"]["PreToolUse"][1]["matcher"], "*");
        assert_eq!(
            s["hooks"]["PreToolUse"][1]["hooks"][0]["command"],
            format!("{BIN} pretooluse")
        );
        assert_eq!(s["hooks"]["PreCompact"][0]["matcher"], "auto|manual");
        assert!(s["hooks"]["SessionStart"][0].get("matcher").is_none());
        assert_eq!(
            s["statusLine"]["command"],
            format!("{BIN} statusline --then '~/.claude/statusline.sh --fancy'")
        );
        assert_eq!(s["statusLine"]["padding"], 0);
        let once = s.clone();
        assert!(install(&mut s, BIN, StatusLineMode::Wrap)
            .unwrap()
            .is_empty());
        assert_eq!(s, once);
        // A moved binary is updated in place, not added twice.
        let changes = install(&mut s, "/opt/ctxguard", StatusLineMode::Wrap).unwrap();
        assert_eq!(changes.len(), 4, "{changes:?}");
        assert_eq!(s["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert!(s["statusLine"]["command"]
            .as_str()
            .unwrap()
            .starts_with("/opt/ctxguard statusline --then"));
    }

    #[test]
    fn statusline_modes() {
        let mut s = their_settings();
        install(&mut s, BIN, StatusLineMode::Skip).unwrap();
        assert_eq!(
            s["statusLine"]["command"],
            "~/.claude/statusline.sh --fancy"
        );
        let mut s = their_settings();
        install(&mut s, BIN, StatusLineMode::Replace).unwrap();
        assert_eq!(s["statusLine"]["command"], format!("{BIN} statusline"));
        let mut empty = json!({});
        install(&mut empty, "/a b/ctxguard", StatusLineMode::Wrap).unwrap();
        assert_eq!(
            empty["statusLine"],
            json!({"type": "command", "command": "'/a b/ctxguard' statusline"})
        );
        let mut empty = json!({});
        install(&mut empty, BIN, StatusLineMode::Skip).unwrap();
        assert!(empty.get("statusLine").is_none());
    }

    #[test]
    fn uninstall_removes_exactly_what_install_added() {
        let original = their_settings();
        let mut s = original.clone();
        install(&mut s, BIN, StatusLineMode::Wrap).unwrap();
        let changes = uninstall(&mut s).unwrap();
        assert_eq!(changes.len(), 4, "{changes:?}");
        assert_eq!(s, original);
        let mut fresh = json!({"theme": "dark"});
        install(&mut fresh, BIN, StatusLineMode::Wrap).unwrap();
        uninstall(&mut fresh).unwrap();
        assert_eq!(fresh, json!({"theme": "dark"}));
        assert!(uninstall(&mut fresh).unwrap().is_empty());
    }

    #[test]
    fn wrong_shapes_are_refused() {
        assert!(install(&mut json!([]), BIN, StatusLineMode::Wrap).is_err());
        assert!(install(&mut json!({"hooks": []}), BIN, StatusLineMode::Wrap).is_err());
        assert!(install(
            &mut json!({"hooks": {"PreToolUse": {}}}),
            BIN,
            StatusLineMode::Wrap
        )
        .is_err());
    }

    #[test]
    fn diff_shows_changes_with_context() {
        let d = diff("a\nb\nc\nd\ne\nf\ng\n", "a\nb\nc\nX\ne\nf\ng\n");
        assert_eq!(d, "  ...\n  b\n  c\n- d\n+ X\n  e\n  f\n");
        assert_eq!(diff("same\n", "same\n"), "");
    }
}
