//! Claude Code's settings as a project sees them: every file that exists, merged key by key (a
//! later file wins) with their `env` blocks, and the typed questions `doctor` and `config` ask.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::env::{
    read_pct, window_size, window_tokens, ClientEnv, Origin, Reading, Window, AUTOCOMPACT_PCT,
    AUTO_COMPACT_WINDOW, DISABLE_AUTO_COMPACT, DISABLE_AUTO_MEMORY, DISABLE_COMPACT,
    IDLE_COMPACT_MIN_TOKENS, MIN_COMPACT_WINDOW,
};
#[cfg(test)]
use super::files::MANAGED_SETTINGS;
use super::files::{Scope, SettingsFile};
use crate::shell::shell_quote;

/// A command in a settings file, as `sh` would see it.
#[derive(Debug, Clone)]
pub struct Command<'a> {
    pub file: &'a SettingsFile,
    /// The hook event, or `statusLine`.
    pub event: &'a str,
    /// The command line; an exec-form entry (`command` plus an `args` list, run without a shell)
    /// is quoted into the line `sh` would need to run the same, so one parser reads both.
    pub line: String,
    /// Written in exec form (the client runs it with no shell).
    pub exec: bool,
    /// The entry's `onFailure` (`"continue"` lets the action go ahead when the hook cannot
    /// run), when it has one.
    pub on_failure: Option<String>,
}

/// The command line of a hook entry or status line: `command`, plus `args` when present.
fn command_line(entry: &Value) -> Option<String> {
    let command = entry.get("command")?.as_str()?;
    match entry.get("args").and_then(Value::as_array) {
        None => Some(command.to_string()),
        Some(args) => {
            let mut words = vec![shell_quote(command)];
            for arg in args {
                words.push(shell_quote(arg.as_str()?));
            }
            Some(words.join(" "))
        }
    }
}

/// Claude Code's settings as a project sees them, plus its variables from the process.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The files that exist, lowest precedence first.
    pub files: Vec<SettingsFile>,
    pub env: ClientEnv,
}

impl Settings {
    /// Settings from literals: one file per scope (at a made-up path) and the process variables.
    #[cfg(test)]
    pub fn literal(files: &[(Scope, &str)], env: &[(&'static str, &str)]) -> Settings {
        let path = |scope| match scope {
            Scope::User => "/home/u/.claude/settings.json",
            Scope::Project => "/p/.claude/settings.json",
            Scope::Local => "/p/.claude/settings.local.json",
            Scope::Managed => MANAGED_SETTINGS,
        };
        Settings {
            files: files
                .iter()
                .map(|(scope, text)| SettingsFile::literal(*scope, path(*scope), text))
                .collect(),
            env: ClientEnv::read(|name| {
                env.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }),
        }
    }

    /// Reads the files of `locations` that exist.
    pub fn read(locations: Vec<(Scope, PathBuf)>, env: ClientEnv) -> Settings {
        let files = locations
            .into_iter()
            .filter_map(|(scope, path)| SettingsFile::read(scope, path))
            .collect();
        Settings { files, env }
    }

    /// The value of a top-level key, from the file that wins, with that file.
    pub fn get(&self, key: &str) -> Option<(&SettingsFile, &Value)> {
        self.files
            .iter()
            .rev()
            .find_map(|f| f.get(key).map(|v| (f, v)))
    }

    /// The merged `env` blocks (a later file wins per variable); numbers and booleans as text.
    fn env_block(&self) -> BTreeMap<String, String> {
        let mut merged = BTreeMap::new();
        for f in &self.files {
            if let Some(Value::Object(block)) = f.get("env") {
                for (name, value) in block {
                    let text = match value {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        _ => continue,
                    };
                    merged.insert(name.clone(), text);
                }
            }
        }
        merged
    }

    /// A variable as the client's processes see it: the `env` blocks (which the client applies
    /// over its own environment), else the process environment. Blank counts as unset.
    pub fn var(&self, name: &str) -> Option<String> {
        self.env_block()
            .remove(name)
            .or_else(|| self.env.get(name).map(str::to_string))
            .filter(|v| !v.trim().is_empty())
    }

    /// Every hook command of every event in every file (hooks from all files run).
    pub fn hook_commands(&self) -> Vec<Command<'_>> {
        let mut out = Vec::new();
        for f in &self.files {
            let Some(Value::Object(events)) = f.get("hooks") else {
                continue;
            };
            for (event, groups) in events {
                let entries = groups
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|g| g.get("hooks")?.as_array())
                    .flatten();
                for entry in entries {
                    if let Some(line) = command_line(entry) {
                        out.push(Command {
                            file: f,
                            event,
                            line,
                            exec: entry.get("args").is_some(),
                            on_failure: entry
                                .get("onFailure")
                                .and_then(Value::as_str)
                                .map(str::to_string),
                        });
                    }
                }
            }
        }
        out
    }

    /// Each file's status-line command, lowest precedence first; the last one is the one that runs.
    pub fn status_lines(&self) -> Vec<Command<'_>> {
        self.files
            .iter()
            .filter_map(|f| {
                Some(Command {
                    file: f,
                    event: "statusLine",
                    // The client drops `args` here and runs `command` with `sh -c`.
                    line: f.get("statusLine")?.get("command")?.as_str()?.to_string(),
                    exec: false,
                    on_failure: None,
                })
            })
            .collect()
    }

    /// Plugins turned on in `enabledPlugins` (merged: the file that wins for a plugin decides),
    /// with that file.
    pub fn enabled_plugins(&self) -> Vec<(&str, &SettingsFile)> {
        let mut winner: Vec<(&str, &SettingsFile, bool)> = Vec::new();
        for f in &self.files {
            let Some(Value::Object(plugins)) = f.get("enabledPlugins") else {
                continue;
            };
            for (name, on) in plugins {
                let on = on.as_bool() == Some(true);
                match winner.iter_mut().find(|(n, _, _)| n == name) {
                    Some(w) => *w = (name, f, on),
                    None => winner.push((name, f, on)),
                }
            }
        }
        winner
            .into_iter()
            .filter(|(_, _, on)| *on)
            .map(|(name, f, _)| (name, f))
            .collect()
    }

    /// Is this variable set to a true value (`1`, `true`, `yes`, `on`, any case), as the client
    /// reads its switches?
    pub fn flag(&self, name: &str) -> bool {
        self.var(name).is_some_and(|v| truthy(&v))
    }

    /// What turns auto-compaction off, if anything: `DISABLE_COMPACT` (all compaction),
    /// `DISABLE_AUTO_COMPACT`, or `autoCompactEnabled: false` in the file that wins.
    pub fn auto_compact_off(&self) -> Option<Origin> {
        for name in [DISABLE_COMPACT, DISABLE_AUTO_COMPACT] {
            if self.flag(name) {
                return Some(Origin::Variable(name));
            }
        }
        if let Some((f, Value::Bool(false))) = self.get("autoCompactEnabled") {
            return Some(Origin::Setting {
                key: "autoCompactEnabled".into(),
                file: f.path.clone(),
            });
        }
        None
    }

    /// Is `/compact` itself turned off (`DISABLE_COMPACT`)?
    pub fn compact_off(&self) -> bool {
        self.flag(DISABLE_COMPACT)
    }

    /// Is the client's auto memory off? `CLAUDE_CODE_DISABLE_AUTO_MEMORY` decides either way
    /// when set (a true value turns it off; `0`, `false`, `no` or `off` keep it on whatever the
    /// settings say), else `autoMemoryEnabled: false` turns it off, as the client reads them.
    pub fn auto_memory_off(&self) -> Option<Origin> {
        if let Some(v) = self.var(DISABLE_AUTO_MEMORY) {
            if truthy(&v) {
                return Some(Origin::Variable(DISABLE_AUTO_MEMORY));
            }
            if matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "0" | "false" | "no" | "off"
            ) {
                return None;
            }
        }
        match self.get("autoMemoryEnabled") {
            Some((f, Value::Bool(false))) => Some(Origin::Setting {
                key: "autoMemoryEnabled".into(),
                file: f.path.clone(),
            }),
            _ => None,
        }
    }

    /// Idle compaction: off with `idleCompaction: false` or with auto-compaction off; else the
    /// tokens from which it takes a session (`CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS`, else
    /// `default`; never below 100k, as the client has it).
    pub fn idle_compaction(&self, default: u64) -> Option<u64> {
        if matches!(self.get("idleCompaction"), Some((_, Value::Bool(false))))
            || self.auto_compact_off().is_some()
        {
            return None;
        }
        Some(
            self.var(IDLE_COMPACT_MIN_TOKENS)
                .and_then(|v| window_tokens(&v))
                .unwrap_or(default)
                .max(100_000),
        )
    }

    /// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`, from an `env` block or the process.
    pub fn autocompact_pct(&self) -> Option<Reading<f64>> {
        self.var(AUTOCOMPACT_PCT).as_deref().map(read_pct)
    }

    /// `CLAUDE_CODE_AUTO_COMPACT_WINDOW` as the client reads it: a whole number of tokens, or
    /// `200k`, `1m`; anything below 100k raised to 100k.
    pub fn compact_window_var(&self) -> Option<Reading<u64>> {
        self.var(AUTO_COMPACT_WINDOW).map(|raw| Reading {
            origin: Origin::Variable(AUTO_COMPACT_WINDOW),
            value: window_size(&raw).map(|w| w.max(MIN_COMPACT_WINDOW)),
            raw,
        })
    }

    /// The top-level `autoCompactWindow` of the file that wins for it.
    pub fn compact_window(&self) -> Option<Reading<Window>> {
        self.files
            .iter()
            .rev()
            .find(|f| f.get("autoCompactWindow").is_some())?
            .compact_window()
    }

    /// Every `modelSettings.<model>.autoCompactWindow` (what `/autocompact` writes) the client
    /// applies, merged across files as it merges them (2.1.330): from the lowest precedence file
    /// up, a file's entries go over the ones before, and a file that sets a usable top-level
    /// `autoCompactWindow` drops every per-model entry of the files below it. The entries of the
    /// higher file come first, so the first that names a model is the one that applies; a key
    /// may come again from a lower file (the hooks pass over an entry they cannot use).
    pub fn model_compact_windows(&self) -> Vec<(String, Reading<Window>)> {
        let mut out: Vec<(String, Reading<Window>)> = Vec::new();
        for f in &self.files {
            let mut own = f.model_compact_windows();
            let top_set = f.compact_window().is_some_and(|r| r.value.is_some());
            if !top_set {
                own.append(&mut out);
            }
            out = own;
        }
        out
    }

    /// The top-level `autoCompactWindow` the hooks apply: that of the highest file that sets a
    /// usable one.
    pub fn usable_compact_window(&self) -> Option<Reading<Window>> {
        self.files
            .iter()
            .rev()
            .filter_map(SettingsFile::compact_window)
            .find(|r| r.value.is_some())
    }
}

/// A switch's value as the client reads it: `1`, `true`, `yes` or `on`, in any case.
fn truthy(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::client::{percent, Problem, AUTO_COMPACT_WINDOW};

    fn settings(files: &[(Scope, &str)], env: &[(&'static str, &str)]) -> Settings {
        Settings::literal(files, env)
    }

    #[test]
    fn files_are_read_if_present_and_problems_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = |name: &str| dir.path().join(name);
        fs::write(p("good.json"), r#"{"model": "opus"}"#).unwrap();
        fs::write(p("broken.json"), "{oops").unwrap();
        fs::write(p("list.json"), "[1]").unwrap();
        fs::create_dir(p("dir.json")).unwrap();
        let s = Settings::read(
            ["good", "broken", "list", "dir", "absent"]
                .iter()
                .map(|n| (Scope::User, p(&format!("{n}.json"))))
                .collect(),
            ClientEnv::default(),
        );
        assert_eq!(s.files.len(), 4, "an absent file is not listed");
        assert_eq!(s.get("model").unwrap().1, "opus");
        assert!(matches!(s.files[1].contents, Err(Problem::NotJson(_))));
        assert_eq!(s.files[2].contents, Err(Problem::NotObject));
        // A directory is no settings file: refused (Windows does not even open one).
        #[cfg(unix)]
        assert_eq!(
            s.files[3].contents,
            Err(Problem::Refused("not a regular file (a directory)".into()))
        );
        #[cfg(windows)]
        assert!(matches!(s.files[3].contents, Err(Problem::Unreadable(_))));
        assert!(Problem::NotJson("x".into())
            .to_string()
            .starts_with("is not valid JSON"));
    }

    #[test]
    fn a_later_file_wins_key_by_key_and_env_blocks_merge() {
        let s = settings(
            &[
                (
                    Scope::User,
                    r#"{"autoCompactEnabled": false, "env": {"A": "user", "B": 7}}"#,
                ),
                (Scope::Project, r#"{"env": {"A": "project", "C": true}}"#),
                (
                    Scope::Local,
                    r#"{"autoCompactEnabled": true, "env": {"D": " "}}"#,
                ),
            ],
            &[(DISABLE_AUTO_COMPACT, "1")],
        );
        assert_eq!(s.get("autoCompactEnabled").unwrap().1, true);
        assert_eq!(s.get("autoCompactEnabled").unwrap().0.scope, Scope::Local);
        assert_eq!(s.var("A").as_deref(), Some("project"));
        assert_eq!(s.var("B").as_deref(), Some("7"));
        assert_eq!(s.var("C").as_deref(), Some("true"));
        assert_eq!(s.var("D"), None, "blank is unset");
        assert_eq!(s.var(DISABLE_AUTO_COMPACT).as_deref(), Some("1"));
        assert_eq!(
            s.auto_compact_off(),
            Some(Origin::Variable(DISABLE_AUTO_COMPACT))
        );
    }

    #[test]
    fn auto_compaction_off_by_setting_or_variable() {
        let off = settings(&[(Scope::Project, r#"{"autoCompactEnabled": false}"#)], &[]);
        assert_eq!(
            off.auto_compact_off().unwrap().to_string(),
            "autoCompactEnabled in /p/.claude/settings.json"
        );
        for (value, is_off) in [
            ("0", false),
            ("false", false),
            ("FALSE", false),
            ("1", true),
        ] {
            let s = settings(
                &[(
                    Scope::User,
                    &format!(r#"{{"env": {{"DISABLE_AUTO_COMPACT": "{value}"}}}}"#),
                )],
                &[],
            );
            assert_eq!(s.auto_compact_off().is_some(), is_off, "{value}");
        }
        assert_eq!(settings(&[], &[]).auto_compact_off(), None);
    }

    #[test]
    fn the_env_block_beats_the_process_for_the_percent() {
        let s = settings(
            &[(
                Scope::User,
                r#"{"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}}"#,
            )],
            &[(AUTOCOMPACT_PCT, "80")],
        );
        let pct = s.autocompact_pct().unwrap();
        assert_eq!((pct.raw.as_str(), pct.value), ("50", Some(50.0)));
        let bad = settings(&[], &[(AUTOCOMPACT_PCT, "150")]);
        assert_eq!(bad.autocompact_pct().unwrap().value, None);
        assert_eq!(percent(" 0.5 "), Some(0.5));
        assert_eq!(percent("0"), None);
    }

    #[test]
    fn the_compaction_window_per_model_then_top_level_and_the_variable_first() {
        use crate::facts::ClientCompaction;
        use crate::window::CompactSource;
        let s = settings(
            &[
                (
                    Scope::User,
                    r#"{"autoCompactWindow": 500000,
                        "modelSettings": {"claude-opus-5-5": {"autoCompactWindow": 300000},
                                          "claude-sonnet-5": {"autoCompactWindow": "auto"},
                                          "claude-haiku-5": {"effortLevel": "high"}}}"#,
                ),
                (
                    Scope::Local,
                    r#"{"modelSettings": {"claude-opus-5-5": {"autoCompactWindow": 400000}}}"#,
                ),
            ],
            &[],
        );
        let c = ClientCompaction::from_settings(&s);
        let local =
            "modelSettings.claude-opus-5-5.autoCompactWindow in /p/.claude/settings.local.json";
        // The file that wins for the model key, in every spelling of the model.
        for id in [
            "claude-opus-5-5",
            "claude-opus-5-5-20261001",
            "claude-opus-5-5[1m]",
            "us.anthropic.claude-opus-5-5-20261001-v1:0",
            "claude-opus-5-5@20261001",
        ] {
            assert_eq!(
                c.window_for(Some(id), None),
                Some((400_000, CompactSource::Setting(local.into()))),
                "{id}"
            );
        }
        let top = Some((
            500_000,
            CompactSource::Setting("autoCompactWindow in /home/u/.claude/settings.json".into()),
        ));
        // Another model (or a prefix of this one), or a model entry without the key: top-level.
        assert_eq!(c.window_for(Some("claude-opus-5"), None), top);
        assert_eq!(c.window_for(Some("claude-haiku-5"), None), top);
        assert_eq!(c.window_for(None, None), top);
        // "auto" for a model: its own window, whatever the top-level says.
        assert_eq!(c.window_for(Some("claude-sonnet-5"), None), None);
        // The variable beats every setting.
        let var = settings(
            &[(
                Scope::User,
                r#"{"modelSettings": {"m": {"autoCompactWindow": 300000}}}"#,
            )],
            &[(AUTO_COMPACT_WINDOW, "250000")],
        );
        assert_eq!(
            ClientCompaction::from_settings(&var).window_for(Some("m"), Some(400_000)),
            Some((250_000, CompactSource::Env))
        );
    }

    #[test]
    fn the_compaction_window_across_files_and_in_the_variables_forms() {
        use crate::facts::ClientCompaction;
        use crate::window::CompactSource;
        // Across files, as the client merges them: a higher file's top-level value drops the
        // per-model entries below it; a higher file's per-model entry beats a lower top-level.
        let wiped = settings(
            &[
                (
                    Scope::User,
                    r#"{"modelSettings": {"claude-opus-5-5": {"autoCompactWindow": 300000}}}"#,
                ),
                (Scope::Project, r#"{"autoCompactWindow": 600000}"#),
            ],
            &[],
        );
        assert_eq!(
            ClientCompaction::from_settings(&wiped)
                .window_for(Some("claude-opus-5-5"), None)
                .map(|(w, _)| w),
            Some(600_000)
        );
        let kept = settings(
            &[
                (Scope::User, r#"{"autoCompactWindow": 600000}"#),
                (
                    Scope::Local,
                    r#"{"modelSettings": {"claude-opus-5-5": {"autoCompactWindow": 300000}}}"#,
                ),
            ],
            &[],
        );
        let kept = ClientCompaction::from_settings(&kept);
        assert_eq!(
            kept.window_for(Some("claude-opus-5-5"), None)
                .map(|(w, _)| w),
            Some(300_000)
        );
        assert_eq!(kept.window_for(None, None).map(|(w, _)| w), Some(600_000));
        // The variable reads "200k" and "1m", and raises a smaller window to 100k.
        for (raw, w) in [("200k", 200_000), ("1m", 1_000_000), ("5000", 100_000)] {
            let v = settings(&[], &[(AUTO_COMPACT_WINDOW, raw)]);
            assert_eq!(
                ClientCompaction::from_settings(&v).window_for(None, None),
                Some((w, CompactSource::Env)),
                "{raw}"
            );
        }
    }

    #[test]
    fn a_map_under_auto_compact_window_is_ignored() {
        use crate::facts::ClientCompaction;
        // A map under autoCompactWindow is no form the client knows.
        let map = settings(
            &[(
                Scope::User,
                r#"{"autoCompactWindow": {"claude-opus-5-5": 300000}}"#,
            )],
            &[],
        );
        assert_eq!(
            ClientCompaction::from_settings(&map).window_for(Some("claude-opus-5-5"), None),
            None
        );
    }

    #[test]
    fn switches_from_the_process_or_an_env_block() {
        let memory_off = settings(&[], &[(DISABLE_AUTO_MEMORY, "1")]);
        assert_eq!(
            memory_off.auto_memory_off(),
            Some(Origin::Variable(DISABLE_AUTO_MEMORY))
        );
        let block = settings(
            &[(Scope::User, r#"{"env": {"DISABLE_COMPACT": "true"}}"#)],
            &[],
        );
        assert!(block.compact_off());
        assert_eq!(
            block.auto_compact_off(),
            Some(Origin::Variable(DISABLE_COMPACT))
        );
        assert_eq!(
            settings(&[(Scope::User, r#"{"autoMemoryEnabled": false}"#)], &[])
                .auto_memory_off()
                .unwrap()
                .to_string(),
            "autoMemoryEnabled in /home/u/.claude/settings.json"
        );
        for on in ["0", "false", "no", ""] {
            assert_eq!(
                settings(&[], &[(DISABLE_AUTO_MEMORY, on)]).auto_memory_off(),
                None,
                "{on:?}"
            );
        }
        // An explicit false keeps it on over the setting; anything else leaves the setting.
        let setting = r#"{"autoMemoryEnabled": false}"#;
        let forced_on = settings(&[(Scope::User, setting)], &[(DISABLE_AUTO_MEMORY, "off")]);
        assert_eq!(forced_on.auto_memory_off(), None);
        let unclear = settings(&[(Scope::User, setting)], &[(DISABLE_AUTO_MEMORY, "maybe")]);
        assert!(unclear.auto_memory_off().is_some());
        let idle = settings(&[], &[(IDLE_COMPACT_MIN_TOKENS, "300000")]);
        assert_eq!(idle.idle_compaction(200_000), Some(300_000));
        assert_eq!(settings(&[], &[]).idle_compaction(200_000), Some(200_000));
        let no_idle = settings(&[(Scope::User, r#"{"idleCompaction": false}"#)], &[]);
        assert_eq!(no_idle.idle_compaction(200_000), None);
        // Auto-compaction off turns idle compaction off too; 100k is the floor.
        let no_auto = settings(&[], &[(DISABLE_AUTO_COMPACT, "1")]);
        assert_eq!(no_auto.idle_compaction(200_000), None);
        let low = settings(&[], &[(IDLE_COMPACT_MIN_TOKENS, "5000")]);
        assert_eq!(low.idle_compaction(200_000), Some(100_000));
    }

    #[test]
    fn hook_commands_status_lines_and_plugins() {
        let s = settings(
            &[
                (
                    Scope::User,
                    r#"{
                    "hooks": {
                        "PreToolUse": [{"matcher": "*", "hooks": [
                            {"type": "command", "command": "/bin/ctxguard pretooluse"},
                            {"type": "command", "command": "/my dir/ctxguard", "args": ["precompact", "it's"]}
                        ]}],
                        "Stop": [{"hooks": [{"type": "command", "command": "notify"}, {"type": "prompt"}]}],
                        "Broken": {"hooks": []}
                    },
                    "statusLine": {"type": "command", "command": "mine.sh"},
                    "enabledPlugins": {"ctxguard@tools": true, "other@x": true}
                }"#,
                ),
                (
                    Scope::Project,
                    r#"{"hooks": 3, "statusLine": {"command": "ctxguard statusline"}}"#,
                ),
                (
                    Scope::Local,
                    r#"{"enabledPlugins": {"other@x": false},
                        "statusLine": {"command": "/x/ctxguard", "args": ["statusline"]}}"#,
                ),
            ],
            &[],
        );
        let hooks: Vec<String> = s
            .hook_commands()
            .into_iter()
            .map(|c| format!("{}: {} ({})", c.event, c.line, c.exec))
            .collect();
        assert_eq!(
            hooks,
            [
                "PreToolUse: /bin/ctxguard pretooluse (false)",
                r"PreToolUse: '/my dir/ctxguard' precompact 'it'\''s' (true)",
                "Stop: notify (false)",
            ]
        );
        let lines: Vec<(Scope, String)> = s
            .status_lines()
            .into_iter()
            .map(|c| (c.file.scope, c.line))
            .collect();
        assert_eq!(
            lines,
            [
                (Scope::User, "mine.sh".to_string()),
                (Scope::Project, "ctxguard statusline".to_string()),
                // The status line has no exec form: the client drops `args` and runs `command`.
                (Scope::Local, "/x/ctxguard".to_string()),
            ]
        );
        let plugins: Vec<(&str, Scope)> = s
            .enabled_plugins()
            .into_iter()
            .map(|(n, f)| (n, f.scope))
            .collect();
        assert_eq!(plugins, [("ctxguard@tools", Scope::User)]);
    }
}
