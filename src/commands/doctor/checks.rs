//! The checks `doctor` runs, in order. Each reads the [`Context`] and returns its findings; none
//! prints, and only [`state`] touches the disk (whether the state root is writable is the
//! question it answers).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{Context, Finding, Status};
use crate::client::{AutoCompactWindow, Origin, Problem, Scope, Window};
use crate::config::Config;
use crate::files;
use crate::settings::{self, HOOKS};
use crate::usage::Policy;

pub type Check = fn(&Context) -> Vec<Finding>;

/// Every check, in the order of the report.
pub const ALL: &[Check] = &[
    settings_files,
    hooks,
    binaries,
    state,
    config,
    status_line,
    auto_compaction,
    autocompact_pct,
    autocompact_window,
];

fn finding(check: &'static str, status: Status, message: String, fix: Option<&str>) -> Finding {
    Finding {
        check,
        status,
        message,
        fix: fix.map(str::to_string),
    }
}

/// A settings file Claude Code cannot read.
pub fn settings_files(ctx: &Context) -> Vec<Finding> {
    ctx.client
        .files
        .iter()
        .filter_map(|f| {
            let problem = f.contents.as_ref().err()?;
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

/// Each hook event runs its ctxguard subcommand exactly once (settings files and plugin together).
pub fn hooks(ctx: &Context) -> Vec<Finding> {
    let commands = ctx.client.hook_commands();
    let plugin: Vec<String> = ctx
        .client
        .enabled_plugins()
        .into_iter()
        .filter(|(name, _)| name.split('@').next() == Some("ctxguard"))
        .map(|(_, f)| format!("the ctxguard plugin (enabled in {})", f.path.display()))
        .collect();
    HOOKS
        .iter()
        .map(|(event, _, sub)| {
            let mut places: Vec<String> = commands
                .iter()
                .filter(|c| c.event == *event && settings::runs_ctxguard(&c.line, sub))
                .map(|c| c.file.path.display().to_string())
                .collect();
            places.extend(plugin.iter().cloned());
            match places.len() {
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
                    format!("{event} runs `ctxguard {sub}` {n} times: {}", places.join("; ")),
                    Some("keep one: `ctxguard uninstall --settings PATH` for the extra settings file, or disable the plugin"),
                ),
            }
        })
        .collect()
}

/// Where a program named in a command would be found, if anywhere.
fn resolve_program(program: &str, ctx: &Context) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.exists().then_some(p);
    }
    ctx.search_path
        .as_ref()
        .map(|path| {
            std::env::split_paths(path)
                .map(|d| d.join(program))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.is_file())
}

fn executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The program of every registered hook command exists and is executable.
pub fn binaries(ctx: &Context) -> Vec<Finding> {
    let mut programs: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for c in ctx.client.hook_commands() {
        let ours = HOOKS
            .iter()
            .any(|(event, _, sub)| c.event == *event && settings::runs_ctxguard(&c.line, sub));
        if let Some(words) = settings::shell_words(&c.line).filter(|_| ours) {
            programs.entry(words[0].clone()).or_default().push(c.event);
        }
    }
    programs
        .iter()
        .map(|(program, events)| match resolve_program(program, ctx) {
            Some(p) if executable(&p) => finding(
                "binary",
                Status::Ok,
                format!("{} exists ({})", p.display(), events.join(", ")),
                None,
            ),
            _ => finding(
                "binary",
                Status::Fail,
                format!(
                    "`{program}` in the {} hook command(s) does not exist or is not executable",
                    events.join(", ")
                ),
                Some("run `ctxguard install` to point the hooks at this binary"),
            ),
        })
        .collect()
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

/// The status line that runs (the most specific file that sets one) is ctxguard's.
pub fn status_line(ctx: &Context) -> Vec<Finding> {
    let late = "usage comes from the transcript, and a nudge can come a tool call late";
    vec![match ctx.client.status_lines().pop() {
        Some(c) if settings::runs_ctxguard(&c.line, "statusline") => finding(
            "statusline",
            Status::Ok,
            format!("the status line runs ctxguard ({})", c.file.path.display()),
            None,
        ),
        Some(c) => finding(
            "statusline",
            Status::Warn,
            format!(
                "the status line runs `{}` ({}), not ctxguard: {late}",
                c.line,
                c.file.path.display()
            ),
            Some("`ctxguard install` (wraps your command), or pipe its input to `ctxguard statusline --quiet`"),
        ),
        None => finding(
            "statusline",
            Status::Warn,
            format!("no status line: {late}"),
            Some("run `ctxguard install`"),
        ),
    }]
}

/// Whether Claude Code compacts on its own at all.
pub fn auto_compaction(ctx: &Context) -> Vec<Finding> {
    vec![match ctx.client.auto_compact_off() {
        Some(origin) => finding(
            "autocompact",
            Status::Warn,
            format!("auto-compaction is off ({origin}): the nudge still comes at the trigger, but nothing compacts until you run /compact, and the context can fill up"),
            Some("compact by hand when nudged, or turn auto-compaction back on"),
        ),
        None => finding(
            "autocompact",
            Status::Ok,
            "auto-compaction is on".into(),
            None,
        ),
    }]
}

/// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`, if set: what it does, or that it is unusable.
pub fn autocompact_pct(ctx: &Context) -> Vec<Finding> {
    let Some(pct) = ctx.client.autocompact_pct() else {
        return Vec::new();
    };
    vec![match pct.value {
        Some(p) => finding(
            "autocompact",
            Status::Info,
            format!("{}={}: compaction comes at {p}% of the window (if earlier than usual); the thresholds below include it", pct.origin, pct.raw),
            None,
        ),
        None => finding(
            "autocompact",
            Status::Warn,
            format!("{}={:?} is not a percent", pct.origin, pct.raw),
            Some("use a number from 1 to 100"),
        ),
    }]
}

/// The auto-compaction window, if set, in any of its forms.
pub fn autocompact_window(ctx: &Context) -> Vec<Finding> {
    let Some(reading) = ctx.client.auto_compact_window() else {
        return Vec::new();
    };
    let origin = &reading.origin;
    let model_window = "the thresholds below use the model's own window";
    vec![match &reading.value {
        Some(AutoCompactWindow::Every(Window::Tokens(w))) => finding(
            "autocompact",
            Status::Info,
            format!("the auto-compact window is {w} tokens: compaction comes earlier on larger windows; the thresholds below include it"),
            None,
        ),
        Some(AutoCompactWindow::Every(Window::Auto)) => finding(
            "autocompact",
            Status::Info,
            format!("the auto-compact window is \"auto\" ({origin}): Claude Code picks it; {model_window}"),
            None,
        ),
        Some(AutoCompactWindow::PerModel(models)) => {
            let list: Vec<String> = models.iter().map(|(m, w)| format!("{m} {w}")).collect();
            finding(
                "autocompact",
                Status::Info,
                format!(
                    "the auto-compact window is set per model ({origin}): {}; {model_window}, so on a model listed here compaction can come earlier",
                    if list.is_empty() { "none listed".to_string() } else { list.join(", ") }
                ),
                None,
            )
        }
        None => match origin {
            Origin::Variable(_) => finding(
                "autocompact",
                Status::Warn,
                format!("the auto-compact window {:?} ({origin}) is not a token count", reading.raw),
                Some("use a whole number of tokens"),
            ),
            Origin::Setting { .. } => finding(
                "autocompact",
                Status::Warn,
                format!("the auto-compact window {} ({origin}) is not a token count, \"auto\", or a map of model ids to those", reading.raw),
                Some("use a whole number of tokens, \"auto\", or {\"<model id>\": tokens or \"auto\"}"),
            ),
        },
    }]
}

/// The policy the thresholds are computed with: ctxguard's configuration (the defaults if it
/// does not load) with Claude Code's overrides as its settings set them.
pub fn policy(ctx: &Context) -> Policy {
    let mut policy = match &ctx.config {
        Some(Ok(loaded)) => loaded.config.policy(),
        _ => Config::default().policy(),
    };
    if let Some(p) = ctx.client.autocompact_pct().and_then(|r| r.value) {
        policy.autocompact_pct = Some(p);
    }
    if let Some(AutoCompactWindow::Every(Window::Tokens(w))) =
        ctx.client.auto_compact_window().and_then(|r| r.value)
    {
        policy.autocompact_window = Some(w);
    }
    policy
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{Settings, AUTOCOMPACT_PCT, AUTO_COMPACT_WINDOW};
    use crate::config::Loaded;
    use crate::paths::Paths;

    fn ctx(files: &[(Scope, &str)]) -> Context {
        ctx_env(files, &[])
    }

    fn ctx_env(files: &[(Scope, &str)], env: &[(&'static str, &str)]) -> Context {
        Context {
            client: Settings::literal(files, env),
            search_path: None,
            paths: Err("cannot find the home directory: set CTXGUARD_HOME".into()),
            config: None,
        }
    }

    /// Each finding as `status: message`.
    fn lines(findings: &[Finding]) -> Vec<String> {
        findings
            .iter()
            .map(|f| {
                let status = serde_json::to_value(f.status).unwrap();
                format!("{}: {}", status.as_str().unwrap(), f.message)
            })
            .collect()
    }

    fn hooks_json(commands: &[(&str, &str)]) -> String {
        let mut hooks = serde_json::Map::new();
        for (event, command) in commands {
            hooks
                .entry(event.to_string())
                .or_insert_with(|| serde_json::json!([]))
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({"hooks": [{"type": "command", "command": command}]}));
        }
        serde_json::json!({ "hooks": hooks }).to_string()
    }

    #[test]
    fn unreadable_settings_files_fail_with_a_fix_for_their_kind() {
        let c = ctx(&[
            (Scope::User, "{oops"),
            (Scope::Project, "{}"),
            (Scope::Local, "[1]"),
            (Scope::Managed, "{"),
        ]);
        let found = settings_files(&c);
        assert_eq!(found.len(), 3);
        assert!(found.iter().all(|f| f.status == Status::Fail));
        assert!(found[0]
            .message
            .starts_with("/home/u/.claude/settings.json is not valid JSON ("));
        assert!(found[0]
            .message
            .ends_with("Claude Code cannot read it either"));
        assert!(found[0].fix.as_deref().unwrap().contains("backup"));
        assert!(found[1].message.contains("is not a JSON object"));
        assert!(found[2]
            .fix
            .as_deref()
            .unwrap()
            .contains("manages Claude Code"));
        assert!(settings_files(&ctx(&[(Scope::User, "{}")])).is_empty());
    }

    #[test]
    fn each_hook_must_run_once() {
        let none = hooks(&ctx(&[]));
        assert_eq!(
            lines(&none),
            [
                "fail: PreToolUse does not run `ctxguard pretooluse`",
                "fail: PreCompact does not run `ctxguard precompact`",
                "fail: SessionStart does not run `ctxguard sessionstart`",
            ]
        );
        assert!(none[0].fix.as_deref().unwrap().contains("ctxguard install"));

        let user = hooks_json(&[
            ("PreToolUse", "/bin/ctxguard pretooluse"),
            ("PreCompact", "/bin/ctxguard precompact"),
            ("SessionStart", "/bin/ctxguard sessionstart"),
        ]);
        let once = hooks(&ctx(&[(Scope::User, &user)]));
        assert!(once.iter().all(|f| f.status == Status::Ok), "{once:?}");
        assert_eq!(
            once[0].message,
            "PreToolUse runs `ctxguard pretooluse` (/home/u/.claude/settings.json)"
        );

        // The exec form counts too, and so does the plugin.
        let project = r#"{"hooks": {"PreToolUse": [{"hooks": [
            {"type": "command", "command": "/opt/ctxguard", "args": ["pretooluse"]}]}]},
            "enabledPlugins": {"ctxguard@tools": true}}"#;
        let twice = hooks(&ctx(&[(Scope::User, &user), (Scope::Project, project)]));
        assert_eq!(
            lines(&twice)[0],
            "warn: PreToolUse runs `ctxguard pretooluse` 3 times: /home/u/.claude/settings.json; \
             /p/.claude/settings.json; the ctxguard plugin (enabled in /p/.claude/settings.json)"
        );
        assert!(lines(&twice)[1].starts_with("warn: PreCompact runs `ctxguard precompact` 2 times"));

        // A plugin turned off in a more specific file does not run.
        let off = r#"{"enabledPlugins": {"ctxguard@tools": false}}"#;
        let plugin_off = hooks(&ctx(&[(Scope::Project, project), (Scope::Local, off)]));
        assert_eq!(plugin_off[0].status, Status::Ok);
        assert_eq!(plugin_off[1].status, Status::Fail);
    }

    #[test]
    fn binaries_must_exist_and_be_executable() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        fs::create_dir(&bin).unwrap();
        let exe = bin.join("ctxguard");
        fs::write(&exe, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
        let plain = dir.path().join("ctxguard");
        fs::write(&plain, "").unwrap();
        let user = hooks_json(&[
            ("PreToolUse", &format!("{} pretooluse", exe.display())),
            ("PreCompact", "ctxguard precompact"),
            ("SessionStart", &format!("{} sessionstart", plain.display())),
        ]);
        let mut c = ctx(&[(Scope::User, &user)]);
        c.search_path = Some(bin.clone().into_os_string());
        let found = lines(&binaries(&c));
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(
            found[0],
            format!("ok: {} exists (PreToolUse)", exe.display())
        );
        assert_eq!(found[1], format!("fail: `{}` in the SessionStart hook command(s) does not exist or is not executable", plain.display()));
        assert_eq!(
            found[2],
            format!("ok: {} exists (PreCompact)", exe.display())
        );
        c.search_path = None;
        assert!(lines(&binaries(&c))[2].starts_with("fail: `ctxguard`"));
    }

    #[test]
    fn the_state_root_must_be_writable() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx(&[]);
        assert_eq!(
            lines(&state(&c)),
            ["fail: cannot find the home directory: set CTXGUARD_HOME"]
        );
        c.paths = Ok(Paths::new(dir.path().join("state")));
        assert_eq!(
            lines(&state(&c)),
            [format!(
                "ok: {} is writable",
                dir.path().join("state").display()
            )]
        );
        assert!(!dir.path().join("state/.doctor-probe").exists());
        fs::write(dir.path().join("file"), "").unwrap();
        c.paths = Ok(Paths::new(dir.path().join("file/state")));
        let found = state(&c);
        assert_eq!(found[0].status, Status::Fail);
        assert!(found[0].fix.as_deref().unwrap().contains("CTXGUARD_HOME"));
    }

    #[test]
    fn configuration_warnings_and_errors() {
        let mut c = ctx(&[]);
        assert!(config(&c).is_empty(), "no state root: reported by `state`");
        c.config = Some(Ok(Loaded {
            config: Config::default(),
            warnings: vec!["unknown key `x` ignored".into()],
        }));
        assert_eq!(lines(&config(&c)), ["warn: unknown key `x` ignored"]);
        c.config = Some(Err(
            "config /s/config.json: `headroom_tokens` must be ...".into()
        ));
        let found = config(&c);
        assert_eq!(found[0].status, Status::Fail);
        assert!(found[0].message.contains("`headroom_tokens` must be"));
    }

    #[test]
    fn the_status_line_that_runs_is_the_most_specific() {
        let ours = r#"{"statusLine": {"type": "command", "command": "/bin/ctxguard statusline --then 'x'"}}"#;
        let theirs = r#"{"statusLine": {"type": "command", "command": "~/mine.sh"}}"#;
        assert_eq!(
            lines(&status_line(&ctx(&[(Scope::User, ours)]))),
            ["ok: the status line runs ctxguard (/home/u/.claude/settings.json)"]
        );
        let shadowed = lines(&status_line(&ctx(&[
            (Scope::User, ours),
            (Scope::Local, theirs),
        ])));
        assert!(
            shadowed[0].starts_with(
                "warn: the status line runs `~/mine.sh` (/p/.claude/settings.local.json), not ctxguard"
            ),
            "{shadowed:?}"
        );
        assert!(lines(&status_line(&ctx(&[])))[0].starts_with("warn: no status line"));
    }

    #[test]
    fn auto_compaction_on_or_off() {
        assert_eq!(
            lines(&auto_compaction(&ctx(&[]))),
            ["ok: auto-compaction is on"]
        );
        let off = ctx(&[(Scope::Project, r#"{"autoCompactEnabled": false}"#)]);
        assert!(lines(&auto_compaction(&off))[0].starts_with(
            "warn: auto-compaction is off (autoCompactEnabled in /p/.claude/settings.json)"
        ));
        let off = ctx(&[(Scope::User, r#"{"env": {"DISABLE_AUTO_COMPACT": "1"}}"#)]);
        assert!(lines(&auto_compaction(&off))[0]
            .starts_with("warn: auto-compaction is off (DISABLE_AUTO_COMPACT)"));
    }

    #[test]
    fn the_percent_override() {
        assert!(autocompact_pct(&ctx(&[])).is_empty());
        let set = ctx(&[(
            Scope::User,
            r#"{"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}}"#,
        )]);
        assert!(lines(&autocompact_pct(&set))[0]
            .starts_with("info: CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=50: compaction comes at 50%"));
        assert_eq!(policy(&set).autocompact_pct, Some(50.0));
        let bad = ctx_env(&[], &[(AUTOCOMPACT_PCT, "most")]);
        assert_eq!(
            lines(&autocompact_pct(&bad)),
            ["warn: CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=\"most\" is not a percent"]
        );
        assert_eq!(policy(&bad).autocompact_pct, None);
    }

    #[test]
    fn the_window_in_every_form() {
        let window = |json: &str| {
            let c = ctx(&[(Scope::User, &format!(r#"{{"autoCompactWindow": {json}}}"#))]);
            (
                lines(&autocompact_window(&c)).remove(0),
                policy(&c).autocompact_window,
            )
        };
        let (line, applied) = window("400000");
        assert!(line.starts_with("info: the auto-compact window is 400000 tokens"));
        assert_eq!(applied, Some(400_000));
        let (line, applied) = window(r#""auto""#);
        assert!(
            line.starts_with("info: the auto-compact window is \"auto\" (autoCompactWindow in /home/u/.claude/settings.json)"),
            "{line}"
        );
        assert_eq!(applied, None);
        let (line, applied) = window(r#"{"claude-opus-5-5": 400000, "claude-haiku-5-5": "auto"}"#);
        assert!(
            line.starts_with("info: the auto-compact window is set per model (autoCompactWindow in /home/u/.claude/settings.json): claude-opus-5-5 400000, claude-haiku-5-5 auto;"),
            "{line}"
        );
        assert_eq!(applied, None);
        let (line, applied) = window(r#""lots""#);
        assert!(
            line.starts_with("warn: the auto-compact window \"lots\" (autoCompactWindow in"),
            "{line}"
        );
        assert_eq!(applied, None);

        let var = ctx_env(&[], &[(AUTO_COMPACT_WINDOW, "100000")]);
        assert_eq!(policy(&var).autocompact_window, Some(100_000));
        let bad = ctx_env(&[], &[(AUTO_COMPACT_WINDOW, "auto")]);
        assert_eq!(
            lines(&autocompact_window(&bad)),
            ["warn: the auto-compact window \"auto\" (CLAUDE_CODE_AUTO_COMPACT_WINDOW) is not a token count"]
        );
        assert!(autocompact_window(&ctx(&[])).is_empty());
    }
}
