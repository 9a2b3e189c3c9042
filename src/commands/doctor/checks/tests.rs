//! Tests of `src/commands/doctor/checks.rs`: each doctor check on literal settings and files.

use super::*;
use crate::commands::doctor::tests::{ctx, lines};
use crate::config::{Config, Loaded};
use crate::paths::Paths;
use std::path::PathBuf;

/// A program file this platform runs: `name` made executable on Unix, `name.exe` on
/// Windows.
fn program(dir: &Path, name: &str) -> PathBuf {
    let path = dir
        .join(name)
        .with_extension(std::env::consts::EXE_EXTENSION);
    fs::write(&path, "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

/// `path` as a shell word.
fn word(path: &Path) -> String {
    crate::shell::shell_quote(&path.display().to_string())
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
    let expected: Vec<String> = hook_events()
        .map(|(event, _, sub)| format!("fail: {event} does not run `ctxguard {sub}`"))
        .collect();
    assert_eq!(lines(&none), expected);
    assert_eq!(
        none[0].message,
        "PreToolUse does not run `ctxguard pretooluse`"
    );
    assert!(none[0].fix.as_deref().unwrap().contains("ctxguard install"));

    let lines_of_all: Vec<(&str, String)> = hook_events()
        .map(|(event, _, sub)| (event, format!("/bin/ctxguard {sub}")))
        .collect();
    let pairs: Vec<(&str, &str)> = lines_of_all.iter().map(|(e, c)| (*e, c.as_str())).collect();
    let user = hooks_json(&pairs);
    let once = hooks(&ctx(&[(Scope::User, &user)]));
    let n = hook_events().count();
    assert!(once[..n].iter().all(|f| f.status == Status::Ok), "{once:?}");
    assert_eq!(
        once[0].message,
        "PreToolUse runs `ctxguard pretooluse` (/home/u/.claude/settings.json)"
    );
    // Shell form, as earlier versions registered it: said, with the way to the exec form.
    // And, without onFailure "continue", one line for the file.
    assert_eq!(once.len(), 2 * n + 1, "{once:?}");
    assert!(
        lines(&once)[2 * n].starts_with(
            "info: ctxguard's hooks in /home/u/.claude/settings.json have no onFailure \"continue\""
        ),
        "{once:?}"
    );
    assert_eq!(
        lines(&once[n..=n]),
        ["info: PreToolUse runs `ctxguard pretooluse` in shell form \
              (/home/u/.claude/settings.json): a shell starts on every call"]
    );
    assert!(once[n]
        .fix
        .as_deref()
        .unwrap()
        .starts_with("run `ctxguard install`"));
    let mut events = serde_json::Map::new();
    for (event, _, sub) in hook_events() {
        events.insert(
            event.to_string(),
            serde_json::json!([{"hooks": [
                    {"type": "command", "command": "/bin/ctxguard", "args": [sub],
                     "onFailure": "continue"}]}]),
        );
    }
    let exec_form = serde_json::json!({ "hooks": events }).to_string();
    let exec_only = hooks(&ctx(&[(Scope::Project, &exec_form)]));
    assert_eq!(exec_only.len(), n, "{exec_only:?}");
    assert!(exec_only.iter().all(|f| f.status == Status::Ok));

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
    assert!(lines(&twice)[2].starts_with("warn: PreCompact runs `ctxguard precompact` 2 times"));

    // A plugin turned off in a more specific file does not run.
    let off = r#"{"enabledPlugins": {"ctxguard@tools": false}}"#;
    let plugin_off = hooks(&ctx(&[(Scope::Project, project), (Scope::Local, off)]));
    assert_eq!(plugin_off[0].status, Status::Ok);
    assert_eq!(plugin_off[2].status, Status::Fail);
}

#[test]
fn every_registered_program_must_exist_and_be_executable() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    fs::create_dir(&bin).unwrap();
    let exe = program(&bin, "ctxguard");
    let plain = dir.path().join("ctxguard");
    fs::write(&plain, "").unwrap();
    let user = hooks_json(&[
        ("PreToolUse", &format!("{} pretooluse", word(&exe))),
        ("PreCompact", "ctxguard precompact"),
        ("SessionStart", &format!("{} sessionstart", word(&plain))),
        ("Stop", "notify-send done"),
    ]);
    let project = r#"{"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "/gone/ctxguard", "args": ["pretooluse"]}]}]},
            "statusLine": {"type": "command", "command": "/gone/ctxguard statusline --then 'x'"}}"#;
    let local = r#"{"statusLine": {"command": "${TOOLS}/ctxguard statusline"}}"#;
    let mut c = ctx(&[
        (Scope::User, &user),
        (Scope::Project, project),
        (Scope::Local, local),
    ]);
    c.search_path = Some(bin.clone().into_os_string());
    let found = binaries(&c);
    let text = lines(&found);
    assert_eq!(
            text,
            [
                "fail: `/gone/ctxguard` (Stop, statusLine in /p/.claude/settings.json) does not exist: Claude Code would run whatever is put there".to_string(),
                format!("ok: {} exists (PreToolUse)", exe.display()),
                format!("fail: `{}` (SessionStart in /home/u/.claude/settings.json) is not executable", plain.display()),
                format!("ok: {} exists (PreCompact)", exe.display()),
            ]
        );
    assert_eq!(
            found[0].fix.as_deref(),
            Some("run `ctxguard install --settings /p/.claude/settings.json`, to point them at this binary (or remove them)")
        );
    assert!(found[2]
        .fix
        .as_deref()
        .unwrap()
        .starts_with("run `ctxguard install`,"));

    // One line per program, each event named once.
    let line = format!("{} pretooluse", word(&exe));
    let again = ctx(&[
        (
            Scope::User,
            &hooks_json(&[("PreToolUse", &line), ("Stop", &line)]),
        ),
        (Scope::Project, &hooks_json(&[("PreToolUse", &line)])),
    ]);
    assert_eq!(
        lines(&binaries(&again)),
        [format!("ok: {} exists (PreToolUse, Stop)", exe.display())]
    );

    // Without PATH the bare name is not found.
    c.search_path = None;
    assert!(lines(&binaries(&c))[3].starts_with("fail: `ctxguard` (PreCompact in"));
}

#[test]
fn programs_are_located_as_sh_would() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    fs::create_dir_all(home.join("bin")).unwrap();
    let exe = program(&home.join("bin"), "ctxguard");
    let mut c = ctx(&[]);
    c.home = Some(home.clone());
    for written in [
        "~/bin/ctxguard",
        "$HOME/bin/ctxguard",
        "${HOME}/bin/ctxguard",
    ] {
        assert_eq!(
            locate(written, &c),
            Program::Executable(exe.clone()),
            "{written}"
        );
    }
    assert_eq!(locate("~/bin/other", &c), Program::Missing);
    assert_eq!(locate("`which ctxguard`", &c), Program::Unknown);
    assert_eq!(
        locate(&home.join("bin").display().to_string(), &c),
        Program::NotExecutable(home.join("bin"))
    );
    c.search_path = Some(std::env::join_paths([dir.path(), &home.join("bin")]).unwrap());
    assert_eq!(locate("ctxguard", &c), Program::Executable(exe.clone()));
    c.home = None;
    assert_eq!(locate("~/bin/ctxguard", &c), Program::Unknown);
    assert_eq!(
        ctxguard_program("'/a b/ctxguard' statusline --then x").as_deref(),
        Some("/a b/ctxguard")
    );
    assert_eq!(ctxguard_program("/a/ctxguard"), None, "no subcommand");
    // A renamed binary (`ctxguard-0.1.0`, `ctxguard-old`) is still ctxguard's, as install
    // and uninstall recognise it; a line with an expansion is never claimed.
    assert_eq!(
        ctxguard_program("/a/ctxguard-old pretooluse").as_deref(),
        Some("/a/ctxguard-old")
    );
    assert_eq!(ctxguard_program("${TOOLS}/ctxguard statusline"), None);
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
    let dir = tempfile::tempdir().unwrap();
    let exe = program(dir.path(), "ctxguard");
    let ours = serde_json::json!({"statusLine": {"type": "command",
            "command": format!("{} statusline --then 'x'", word(&exe))}})
    .to_string();
    let ours = ours.as_str();
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
    let gone = r#"{"statusLine": {"command": "/gone/ctxguard statusline"}}"#;
    let found = status_line(&ctx(&[(Scope::Project, gone)]));
    assert_eq!(
        lines(&found),
        [
            "warn: the status line is ctxguard's (/p/.claude/settings.json), but `/gone/ctxguard` \
              cannot run (see binary): usage comes from the transcript, and a nudge can come a \
              tool call late"
        ]
    );
    assert!(found[0]
        .fix
        .as_deref()
        .unwrap()
        .starts_with("run `ctxguard install --settings /p/.claude/settings.json`"));
}

#[test]
fn what_an_older_client_cannot_take_fails_once_per_file() {
    let old = |files: &[(Scope, &str)]| {
        let mut c = ctx(files);
        c.claude = crate::commands::doctor::version::Client::Version(
            PathBuf::from("/bin/claude"),
            "2.1.14".into(),
        );
        c
    };
    // The user's own PostCompact hook: the client ignores the file all the same.
    let theirs =
        r#"{"hooks": {"PostCompact": [{"hooks": [{"type": "command", "command": "echo mine"}]}]}}"#;
    let found = hooks(&old(&[(Scope::Project, theirs)]));
    let fails: Vec<&Finding> = found.iter().filter(|f| f.status == Status::Fail).collect();
    let names = fails
        .iter()
        .find(|f| f.message.contains("names PostCompact"))
        .unwrap_or_else(|| panic!("{found:?}"));
    assert!(
        names.message.contains("Claude Code 2.1.14 does not know"),
        "{names:?}"
    );
    // The fix names the file: `install` alone edits the user's.
    assert!(
        names
            .fix
            .as_deref()
            .is_some_and(|f| f.contains("--settings")),
        "{names:?}"
    );
    // Missing PostCompact is fine there; the rest must be registered.
    assert!(lines(&found)
        .iter()
        .any(|l| l == "ok: PostCompact is not registered: Claude Code 2.1.14 does not know it"));

    // ctxguard in exec form, and the plugin: one failure each.
    let exec = r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "/x/ctxguard", "args": ["pretooluse"]}]}]},
                  "enabledPlugins": {"ctxguard@market": true}}"#;
    let found = hooks(&old(&[(Scope::User, exec)]));
    let fails: Vec<String> = lines(&found)
        .into_iter()
        .filter(|l| l.starts_with("fail:"))
        .collect();
    assert!(
        fails
            .iter()
            .any(|l| l.contains("registers ctxguard in exec form (PreToolUse)")),
        "{fails:?}"
    );
    assert!(
        fails
            .iter()
            .any(|l| l.contains("the ctxguard plugin registers PostCompact")),
        "{fails:?}"
    );
    // The plugin does not count as running the hooks there.
    assert!(
        fails
            .iter()
            .any(|l| l.contains("SessionStart does not run `ctxguard sessionstart`")),
        "{fails:?}"
    );
    // A current client takes all of it.
    let found = hooks(&ctx(&[(Scope::User, exec)]));
    assert!(
        !lines(&found).iter().any(|l| l.contains("does not know")),
        "{found:?}"
    );
}

#[test]
fn a_skill_shell_command_event_is_named_only_where_the_client_does_not_run_it() {
    use super::super::version::Client;
    let file = r#"{"hooks": {"PreSkillShellCommand": [{"hooks": [
            {"type": "command", "command": "~/check.sh"}]}]}}"#;
    let at = |v: &str| {
        let mut c = ctx(&[(Scope::User, file)]);
        c.claude = Client::Version(std::path::PathBuf::from("/bin/claude"), v.into());
        lines(&hooks(&c))
            .into_iter()
            .filter(|l| l.contains("PreSkillShellCommand"))
            .collect::<Vec<_>>()
    };
    assert!(at("2.1.332").is_empty());
    let on_330 = at("2.1.330");
    assert_eq!(on_330.len(), 1, "{on_330:?}");
    assert!(on_330[0].starts_with("info: ") && on_330[0].contains("ignores that entry"));
    let on_14 = at("2.1.14");
    assert_eq!(on_14.len(), 1, "{on_14:?}");
    assert!(
        on_14[0].starts_with("fail: ") && on_14[0].contains("ignores this whole settings file")
    );
}
