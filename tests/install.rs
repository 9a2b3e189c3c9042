//! `install`, `uninstall` and the wrapped status line, on real settings files.

use std::fs;
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::*;

fn settings(env: &TestEnv) -> PathBuf {
    env.home().join(".claude").join("settings.json")
}

/// The path install writes for `path`: canonical, without Windows' `\\?\` prefix.
fn canonical(path: &Path) -> String {
    let c = fs::canonicalize(path).unwrap();
    let c = c.to_str().unwrap();
    c.strip_prefix(r"\\?\").unwrap_or(c).to_string()
}

/// The binary's path as install writes it.
fn bin() -> String {
    canonical(Path::new(env!("CARGO_BIN_EXE_ctxguard")))
}

/// A word as install quotes it for `sh` (single quotes, unless it is plain).
fn sh(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A hook entry in exec form, as install writes it.
/// A hook entry as `install` writes it for a current client: exec form, and `onFailure:
/// "continue"` (a hook the client cannot start never blocks).
fn exec(bin: &str, sub: &str) -> Value {
    json!({"type": "command", "command": bin, "args": [sub], "onFailure": "continue"})
}

/// Sets a file's permissions (Unix; Windows has none to set).
fn chmod(path: &Path, mode: u32) {
    #[cfg(unix)]
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    #[cfg(not(unix))]
    let _ = (path, mode);
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

fn backups(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".ctxguard-backup-"))
        .collect()
}

const THEIRS: &str = r#"{
  "model": "opus",
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/guard.sh"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  },
  "statusLine": {"type": "command", "command": "printf 'mine'", "padding": 0},
  "env": {"FOO": "1"}
}
"#;

#[test]
fn install_into_a_fresh_home_then_again_changes_nothing() {
    let env = TestEnv::new();
    let run = env.run(&["install"], "");
    assert_eq!(run.code, 0, "{run:?}");
    // First, what it registered for: no `claude` on PATH here.
    assert!(
        run.stdout.starts_with("No Claude Code version found"),
        "{run:?}"
    );
    assert!(
        after_client_line(&run.stdout)
            .starts_with(&format!("updated {}:", settings(&env).display())),
        "{}",
        run.stdout
    );
    let s = read(&settings(&env));
    let bin = bin();
    // Hooks in exec form (no shell); the status line, which has none, as a quoted shell line.
    assert_eq!(
        s["hooks"]["PreToolUse"][0],
        json!({"matcher": "*", "hooks": [exec(&bin, "pretooluse")]})
    );
    assert_eq!(s["hooks"]["PreCompact"][0]["matcher"], "auto|manual");
    assert_eq!(
        s["hooks"]["SessionStart"][0]["hooks"][0],
        exec(&bin, "sessionstart")
    );
    assert_eq!(
        s["statusLine"],
        json!({"type": "command", "command": format!("{} statusline", sh(&bin))})
    );
    let before = fs::read(settings(&env)).unwrap();
    let again = env.run(&["install"], "");
    assert_eq!(again.code, 0);
    assert!(
        again.stdout.contains("already installed") && again.stdout.contains("nothing changed"),
        "{again:?}"
    );
    assert_eq!(fs::read(settings(&env)).unwrap(), before);
    assert!(
        backups(&env.home().join(".claude")).is_empty(),
        "nothing to back up the first time"
    );
}

#[test]
fn install_keeps_their_settings_backs_up_and_uninstall_restores() {
    let env = TestEnv::new();
    fs::create_dir_all(env.home().join(".claude")).unwrap();
    fs::write(settings(&env), THEIRS).unwrap();
    chmod(&settings(&env), 0o600);
    let run = env.run(&["install"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let s = read(&settings(&env));
    let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "hooks", "statusLine", "env"], "order kept");
    assert_eq!(
        s["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "~/guard.sh",
        "theirs first"
    );
    assert_eq!(
        s["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send done"
    );
    assert!(
        s["statusLine"]["command"]
            .as_str()
            .unwrap()
            .ends_with("statusline --then 'printf '\\''mine'\\'''"),
        "{}",
        s["statusLine"]
    );
    assert_eq!(s["statusLine"]["padding"], 0);
    #[cfg(unix)]
    assert_eq!(
        fs::metadata(settings(&env)).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let b = backups(&env.home().join(".claude"));
    assert_eq!(b.len(), 1);
    assert_eq!(fs::read_to_string(&b[0]).unwrap(), THEIRS);
    assert!(run.stdout.contains(&format!("backup: {}", b[0].display())));

    // The wrapped status line runs theirs (with `sh`) and appends the gauge.
    #[cfg(unix)]
    {
        let cmd = s["statusLine"]["command"].as_str().unwrap().to_string();
        let words: Vec<&str> = vec!["statusline", "--no-color", "--then", "printf 'mine'"];
        let out = env.run(
            &words,
            statusline_payload(SESSION, Some(128_000), Some(200_000)).to_string(),
        );
        assert_eq!(
            out.stdout, "mine · ctx 64% · 128k/200k · compacts in 39k\n",
            "{cmd}"
        );
    }

    let un = env.run(&["uninstall"], "");
    assert_eq!(un.code, 0, "{un:?}");
    assert!(
        un.stdout.contains("statusLine: restored `printf 'mine'`"),
        "{}",
        un.stdout
    );
    assert_eq!(
        read(&settings(&env)),
        serde_json::from_str::<Value>(THEIRS).unwrap()
    );
    let again = env.run(&["uninstall"], "");
    assert!(again.stdout.contains("not registered"), "{again:?}");
}

#[test]
fn a_settings_file_kept_with_crlf_line_endings_keeps_them() {
    let env = TestEnv::new();
    fs::create_dir_all(env.home().join(".claude")).unwrap();
    fs::write(settings(&env), THEIRS.replace('\n', "\r\n")).unwrap();
    assert_eq!(env.run(&["install"], "").code, 0);
    let text = fs::read_to_string(settings(&env)).unwrap();
    assert!(text.contains("pretooluse"), "{text}");
    assert_eq!(
        text.matches('\n').count(),
        text.matches("\r\n").count(),
        "{text:?}"
    );
    assert_eq!(env.run(&["uninstall"], "").code, 0);
    let text = fs::read_to_string(settings(&env)).unwrap();
    assert!(
        !text.contains("pretooluse") && text.contains("\r\n"),
        "{text:?}"
    );
    assert_eq!(
        text.matches('\n').count(),
        text.matches("\r\n").count(),
        "{text:?}"
    );
}

#[test]
fn an_unparsable_settings_file_is_refused_and_left_untouched() {
    let env = TestEnv::new();
    fs::create_dir_all(env.home().join(".claude")).unwrap();
    let broken = "{\"model\": \"opus\",, }";
    fs::write(settings(&env), broken).unwrap();
    for args in [&["install"][..], &["uninstall"], &["install", "--dry-run"]] {
        let run = env.run(args, "");
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(
            run.stderr.contains("not valid JSON") && run.stderr.contains("settings.json"),
            "{run:?}"
        );
        assert!(run.stderr.contains("left it untouched"), "{run:?}");
    }
    assert_eq!(fs::read_to_string(settings(&env)).unwrap(), broken);
    assert!(backups(&env.home().join(".claude")).is_empty());
    fs::write(settings(&env), "[1, 2]").unwrap();
    let run = env.run(&["install"], "");
    assert!(
        run.code == 1 && run.stderr.contains("not a JSON object"),
        "{run:?}"
    );
}

#[test]
fn dry_run_prints_the_diff_and_writes_nothing() {
    let env = TestEnv::new();
    fs::create_dir_all(env.home().join(".claude")).unwrap();
    fs::write(settings(&env), THEIRS).unwrap();
    let run = env.run(&["install", "--dry-run", "--statusline", "skip"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        after_client_line(&run.stdout).starts_with("would change "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("+ ") && run.stdout.contains("pretooluse"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("statusline\""),
        "skip leaves the status line: {}",
        run.stdout
    );
    assert!(run.stdout.ends_with("(dry run: nothing written)\n"));
    assert_eq!(
        read(&settings(&env)),
        serde_json::from_str::<Value>(THEIRS).unwrap()
    );
}

#[test]
fn project_settings_and_replace() {
    let env = TestEnv::new();
    let project = env.dir.path().join("proj");
    fs::create_dir_all(project.join(".claude")).unwrap();
    fs::write(project.join(".claude/settings.json"), THEIRS).unwrap();
    let out = env
        .command(&["install", "--project", "--statusline", "replace"])
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = read(&project.join(".claude/settings.json"));
    assert_eq!(
        s["statusLine"]["command"],
        format!("{} statusline", sh(&bin()))
    );
    assert!(
        !settings(&env).exists(),
        "the user's settings were not touched"
    );
}

/// A cloned repository's `.claude/settings.json` (or `.claude`) that links out of the project
/// would turn a project install into a user-wide one: refused, with nothing written anywhere;
/// a link that stays in the project is followed.
#[cfg(unix)]
#[test]
fn a_project_settings_link_out_of_the_project_is_refused() {
    use std::os::unix::fs::symlink;
    let env = TestEnv::new();
    fs::create_dir_all(env.home().join(".claude")).unwrap();
    fs::write(settings(&env), THEIRS).unwrap();
    let before = env.snapshot();
    for how in ["file", "dir"] {
        let project = env.dir.path().join(format!("proj-{how}"));
        if how == "file" {
            fs::create_dir_all(project.join(".claude")).unwrap();
            symlink(
                "../../home/.claude/settings.json",
                project.join(".claude/settings.json"),
            )
            .unwrap();
        } else {
            fs::create_dir_all(&project).unwrap();
            symlink(env.home().join(".claude"), project.join(".claude")).unwrap();
        }
        for verb in ["install", "uninstall"] {
            let out = env
                .command(&[verb, "--project"])
                .current_dir(&project)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{how} {verb}: {stderr}");
            assert!(stderr.contains("leads out of the project"), "{stderr}");
            assert!(stderr.contains("without --project"), "{stderr}");
        }
        assert_eq!(
            read(&settings(&env)),
            serde_json::from_str::<Value>(THEIRS).unwrap()
        );
    }
    assert_eq!(env.snapshot(), before, "nothing written");
    // A link inside the project is the project's own choice: followed.
    let project = env.dir.path().join("proj-inside");
    fs::create_dir_all(project.join("config")).unwrap();
    fs::create_dir_all(project.join(".claude")).unwrap();
    fs::write(project.join("config/claude.json"), "{}\n").unwrap();
    symlink(
        "../config/claude.json",
        project.join(".claude/settings.json"),
    )
    .unwrap();
    let out = env
        .command(&["install", "--project"])
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(read(&project.join("config/claude.json"))["hooks"].is_object());
}

#[cfg(unix)]
#[test]
fn a_hanging_wrapped_status_line_is_cut_off() {
    let env = TestEnv::new();
    let run = env.run_within(
        &["statusline", "--no-color", "--then", "sleep 30"],
        statusline_payload(SESSION, Some(128_000), Some(200_000)).to_string(),
        std::time::Duration::from_secs(15),
        u64::MAX,
    );
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout, "ctx 64% · 128k/200k · compacts in 39k\n");
    assert!(run.stderr.contains("killed"), "{run:?}");
}

/// `install`'s output after its first line, which says which client it registered for.
fn after_client_line(stdout: &str) -> &str {
    stdout.split_once('\n').map_or("", |(_, rest)| rest)
}

fn doctor(env: &TestEnv, cwd: &Path) -> (i32, Value) {
    let out = env
        .command(&["doctor", "--json"])
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        serde_json::from_slice(&out.stdout).unwrap(),
    )
}

fn statuses(report: &Value, check: &str) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == check)
        .map(|f| {
            format!(
                "{}: {}",
                f["status"].as_str().unwrap(),
                f["message"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn doctor_fails_until_installed_then_passes() {
    let env = TestEnv::new();
    let cwd = env.dir.path().to_path_buf();
    let (code, report) = doctor(&env, &cwd);
    assert_eq!(code, 1);
    assert_eq!(report["ok"], false);
    let hooks = statuses(&report, "hooks");
    assert_eq!(hooks.len(), 8, "{hooks:?}");
    assert!(hooks.iter().all(|h| h.starts_with("fail:")), "{hooks:?}");
    let fixes: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "fail")
        .map(|f| &f["fix"])
        .collect();
    assert!(
        fixes
            .iter()
            .all(|f| f.as_str().is_some_and(|s| s.contains("ctxguard install"))),
        "{fixes:?}"
    );
    let human = env.command(&["doctor"]).current_dir(&cwd).output().unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("FAIL hooks") && text.contains("fix: run `ctxguard install`"),
        "{text}"
    );

    assert_eq!(env.run(&["install"], "").code, 0);
    let (code, report) = doctor(&env, &cwd);
    assert_eq!(code, 0, "{report:#}");
    assert!(statuses(&report, "hooks")
        .iter()
        .all(|h| h.starts_with("ok:")));
    assert!(statuses(&report, "binary")[0].starts_with("ok:"));
    assert!(statuses(&report, "statusline")[0].starts_with("ok:"));
    assert!(statuses(&report, "state")[0].starts_with("ok:"));
    // Every finding in columns: its tag, a one-word check within the width, then its message.
    let human = env.command(&["doctor"]).current_dir(&cwd).output().unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    let findings: Vec<&str> = text
        .lines()
        .filter(|l| {
            ["ok   ", "info ", "warn ", "FAIL "]
                .iter()
                .any(|t| l.starts_with(t))
        })
        .collect();
    assert!(findings.len() > 10, "{text}");
    for line in findings {
        let (check, message) = (&line[5..16], &line[16..]);
        assert!(
            !check.trim_end().contains(' ')
                && message.starts_with(' ')
                && !message.starts_with("  "),
            "out of its columns: {line:?}"
        );
    }
    assert!(
        text.contains("\ninfo facts       PreCompact prints"),
        "{text}"
    );
    assert_eq!(
        report["thresholds"],
        json!([{"window": 200000, "compact_at": 167000, "trigger_at": 127000, "critical_at": 152000},
               {"window": 1000000, "compact_at": 967000, "trigger_at": 927000, "critical_at": 952000}])
    );
}

#[test]
fn doctor_run_from_the_home_directory_reads_the_user_settings_once() {
    // There the project's `.claude/settings.json` is the user's: one registration, not two.
    let env = TestEnv::new();
    assert_eq!(env.run(&["install"], "").code, 0);
    let home = env.home();
    let out = env
        .command(&["doctor", "--json"])
        .current_dir(&home)
        .env("CLAUDE_PROJECT_DIR", &home)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hooks = statuses(&report, "hooks");
    assert_eq!(hooks.len(), 8, "{hooks:?}");
    assert!(hooks.iter().all(|h| h.starts_with("ok:")), "{hooks:?}");
    assert_eq!(out.status.code(), Some(0), "{report:#}");
}

#[test]
fn doctor_finds_duplicates_missing_binaries_and_compaction_settings() {
    let env = TestEnv::new();
    let project = env.dir.path().join("proj");
    fs::create_dir_all(project.join(".claude")).unwrap();
    assert_eq!(env.run(&["install"], "").code, 0);
    // Registered again in the project, with a binary that does not exist, and the plugin too.
    let gone = |sub: &str| json!([{"hooks": [{"type": "command", "command": format!("/gone/ctxguard {sub}")}]}]);
    let project_settings = json!({
        "hooks": {"PreToolUse": gone("pretooluse")},
        "autoCompactEnabled": false,
        "env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"},
        "enabledPlugins": {"ctxguard@tools": true},
        "statusLine": {"type": "command", "command": "~/mine.sh"}
    });
    fs::write(
        project.join(".claude/settings.json"),
        project_settings.to_string(),
    )
    .unwrap();
    let (code, report) = doctor(&env, &project);
    assert_eq!(code, 1, "{report:#}");
    let hooks = statuses(&report, "hooks");
    assert!(
        hooks[0].starts_with("warn: PreToolUse runs `ctxguard pretooluse` 3 times"),
        "{hooks:?}"
    );
    assert!(
        hooks[2].starts_with("warn: PreCompact runs `ctxguard precompact` 2 times"),
        "{hooks:?}"
    );
    let binary = statuses(&report, "binary");
    assert!(
        binary
            .iter()
            .any(|b| b.starts_with("fail: `/gone/ctxguard`")),
        "{binary:?}"
    );
    assert!(
        statuses(&report, "statusline")[0].starts_with("warn: the status line runs `~/mine.sh`")
    );
    let auto = statuses(&report, "autocompact");
    assert!(
        auto.iter()
            .any(|a| a.starts_with("info: auto-compaction is off")),
        "{auto:?}"
    );
    assert!(
        auto.iter()
            .any(|a| a.starts_with("info: CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=50")),
        "{auto:?}"
    );
    // Auto-compaction off: where the client stops accepting requests is the point (its
    // blocking limit, 23k before the window's end), whatever the percent says.
    assert_eq!(report["thresholds"][0]["compact_at"], 177_000);
    assert_eq!(report["thresholds"][0]["trigger_at"], 137_000);
    assert_eq!(report["thresholds"][0]["stops"], true);
}

#[test]
fn doctor_reports_unparsable_settings_and_config() {
    let env = TestEnv::new();
    fs::create_dir_all(env.home().join(".claude")).unwrap();
    fs::write(settings(&env), "{oops").unwrap();
    fs::create_dir_all(env.state()).unwrap();
    fs::write(
        env.state().join("config.json"),
        r#"{"headroom_tokens": "x"}"#,
    )
    .unwrap();
    let (code, report) = doctor(&env, env.dir.path());
    assert_eq!(code, 1);
    assert!(statuses(&report, "settings")[0].contains("is not valid JSON"));
    assert!(statuses(&report, "config")[0].contains("`headroom_tokens` must be"));
}

#[test]
fn completions_for_each_shell() {
    let env = TestEnv::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = env.run(&["completions", shell], "");
        assert_eq!(run.code, 0, "{shell}");
        for sub in ["pretooluse", "install", "doctor", "checkpoint"] {
            assert!(run.stdout.contains(sub), "{shell} completes {sub}");
        }
    }
    assert_eq!(env.run(&["completions", "tcsh"], "").code, 1);
}

#[cfg(unix)]
#[test]
fn a_symlinked_settings_file_stays_a_link_and_its_target_is_edited() {
    let env = TestEnv::new();
    let dotfiles = env.dir.path().join("dotfiles");
    fs::create_dir_all(&dotfiles).unwrap();
    fs::write(dotfiles.join("claude-settings.json"), THEIRS).unwrap();
    fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::os::unix::fs::symlink(dotfiles.join("claude-settings.json"), settings(&env)).unwrap();
    let run = env.run(&["install"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        fs::symlink_metadata(settings(&env))
            .unwrap()
            .file_type()
            .is_symlink(),
        "still a link"
    );
    let edited = read(&dotfiles.join("claude-settings.json"));
    assert!(edited["hooks"]["PreCompact"].is_array());
    assert_eq!(
        backups(&dotfiles).len(),
        1,
        "the backup sits beside the real file"
    );
    assert_eq!(env.run(&["uninstall"], "").code, 0);
    assert!(fs::symlink_metadata(settings(&env))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        read(&dotfiles.join("claude-settings.json")),
        serde_json::from_str::<Value>(THEIRS).unwrap()
    );
}

#[test]
fn doctor_fails_for_a_registered_binary_that_is_gone_or_not_executable() {
    let env = TestEnv::new();
    let project = env.dir.path().join("proj");
    fs::create_dir_all(project.join(".claude")).unwrap();
    assert_eq!(env.run(&["install"], "").code, 0);
    // The status line points at a binary that was moved away, and the project's local settings
    // register a hook (exec form) with another that is gone.
    let old = env.dir.path().join("old").join("ctxguard");
    let mut s = read(&settings(&env));
    s["statusLine"]["command"] = json!(format!(
        "{} statusline --then 'printf mine'",
        sh(&old.display().to_string())
    ));
    fs::write(settings(&env), s.to_string()).unwrap();
    let local = project.join(".claude").join("settings.local.json");
    fs::write(
        &local,
        json!({"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "/gone/ctxguard", "args": ["pretooluse"]}]}]}})
        .to_string(),
    )
    .unwrap();

    let (code, report) = doctor(&env, &project);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["ok"], false);
    let failed: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "binary" && f["status"] == "fail")
        .map(|f| {
            (
                f["message"].as_str().unwrap().to_string(),
                f["fix"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(
        failed[0].0.starts_with(&format!(
            "`/gone/ctxguard` (Stop in {}) does not exist",
            local.display()
        )),
        "{failed:?}"
    );
    assert!(
        failed[0]
            .1
            .contains(&format!("ctxguard install --settings {}", local.display())),
        "{failed:?}"
    );
    assert!(
        failed[1].0.starts_with(&format!(
            "`{}` (statusLine in {}) does not exist",
            old.display(),
            settings(&env).display()
        )),
        "{failed:?}"
    );
    assert!(
        failed[1].1.starts_with("run `ctxguard install`"),
        "{failed:?}"
    );
    assert!(
        statuses(&report, "statusline")[0].starts_with("warn: the status line is ctxguard's"),
        "not ok: {report:#}"
    );
    let human = env
        .command(&["doctor"])
        .current_dir(&project)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains(&format!("FAIL binary      `{}` (statusLine", old.display())),
        "{text}"
    );

    // A file that is there but cannot run is no better.
    fs::create_dir_all(old.parent().unwrap()).unwrap();
    fs::write(&old, "#!/bin/sh\n").unwrap();
    chmod(&old, 0o644);
    fs::remove_file(&local).unwrap();
    let (code, report) = doctor(&env, &project);
    assert_eq!(code, 1);
    assert!(
        statuses(&report, "binary").iter().any(|b| b
            == &format!(
                "fail: `{}` (statusLine in {}) is not executable",
                old.display(),
                settings(&env).display()
            )),
        "{report:#}"
    );

    // Installing again points the status line back at this binary, and it stays wrapped.
    assert_eq!(env.run(&["install"], "").code, 0);
    let (code, report) = doctor(&env, &project);
    assert_eq!(code, 0, "{report:#}");
    assert!(statuses(&report, "binary")
        .iter()
        .all(|b| b.starts_with("ok:")));
    assert!(read(&settings(&env))["statusLine"]["command"]
        .as_str()
        .unwrap()
        .ends_with("statusline --then 'printf mine'"));
}

/// Runs `program` (a copy of, or a link to, the binary under another name) as `env.command`
/// runs the binary.
fn run_as(env: &TestEnv, program: &Path, args: &[&str]) -> Run {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    for (key, _) in std::env::vars() {
        if key.starts_with("CTXGUARD_") || key.starts_with("CLAUDE_") {
            cmd.env_remove(key);
        }
    }
    let out = cmd
        .env("HOME", env.home())
        .env("USERPROFILE", env.home())
        .env("CTXGUARD_HOME", env.state())
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn their_settings_in(env: &TestEnv, statusline: Option<&str>) -> String {
    let mut theirs: Value = serde_json::from_str(THEIRS).unwrap();
    if let Some(cmd) = statusline {
        theirs["statusLine"]["command"] = json!(cmd);
    }
    let text = serde_json::to_string_pretty(&theirs).unwrap() + "\n";
    fs::create_dir_all(env.home().join(".claude")).unwrap();
    fs::write(settings(env), &text).unwrap();
    text
}

#[cfg(unix)]
fn mode_of(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

/// Issue 10, item 7: the backup of a 0600 settings file was created 0644 (the umask) and
/// chmod-ed afterwards; anyone could read it while it was written. A watcher stats the backup
/// over and over while a large one is written.
#[cfg(unix)]
#[test]
fn a_backup_is_never_readable_by_others_not_even_while_it_is_written() {
    use std::os::unix::process::CommandExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let env = TestEnv::new();
    let dir = env.home().join(".claude");
    fs::create_dir_all(&dir).unwrap();
    // Big enough that writing the backup takes a while.
    let secret = format!(
        "{{\"env\": {{\"ANTHROPIC_API_KEY\": \"sk-{}\"}}}}\n",
        "x".repeat(8 << 20)
    );
    fs::write(settings(&env), &secret).unwrap();
    fs::set_permissions(settings(&env), fs::Permissions::from_mode(0o600)).unwrap();

    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (dir, done) = (dir.clone(), done.clone());
        std::thread::spawn(move || {
            let (mut seen, mut exposed) = (0u64, Vec::new());
            while !done.load(Ordering::Relaxed) {
                for b in backups(&dir) {
                    if let Ok(m) = fs::symlink_metadata(&b) {
                        seen += 1;
                        if m.permissions().mode() & 0o077 != 0 && exposed.len() < 3 {
                            exposed.push(format!("{:o}", m.permissions().mode() & 0o777));
                        }
                    }
                }
            }
            (seen, exposed)
        })
    };
    let mut cmd = env.command(&["install", "--statusline", "skip"]);
    // SAFETY: umask is async-signal-safe and only changes the child.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    done.store(true, Ordering::Relaxed);
    let (seen, exposed) = watcher.join().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(seen > 0, "the watcher saw the backup");
    assert_eq!(
        exposed,
        Vec::<String>::new(),
        "modes seen while it was written"
    );
    let b = backups(&dir);
    assert_eq!(b.len(), 1);
    assert_eq!(mode_of(&b[0]), 0o600);
    assert_eq!(fs::read_to_string(&b[0]).unwrap(), secret);
}

/// Issue 10, item 8: backup names had one-second resolution, so `install && uninstall` in one
/// second overwrote the backup of the pristine file with the installed one.
#[test]
fn backups_made_in_the_same_second_are_all_kept() {
    let env = TestEnv::new();
    their_settings_in(&env, None);
    fs::write(settings(&env), THEIRS).unwrap();
    let mut contents = Vec::new();
    for args in [["install"], ["uninstall"]] {
        contents.push(fs::read_to_string(settings(&env)).unwrap());
        let run = env.run(&args, "");
        assert_eq!(run.code, 0, "{run:?}");
    }
    let mut b = backups(&env.home().join(".claude"));
    b.sort();
    assert_eq!(b.len(), 2, "one backup per write, none overwritten: {b:?}");
    let kept: Vec<String> = b.iter().map(|p| fs::read_to_string(p).unwrap()).collect();
    assert_eq!(
        kept, contents,
        "each backup holds the file as it was, oldest first"
    );
    assert_eq!(kept[0], THEIRS, "the pristine file");
}

/// Issue 20, item 4: every install and uninstall left one more backup (eight after four
/// cycles). Now at most two are kept: the settings before ctxguard first changed them, and the
/// newest; a user's own files beside them are never touched.
#[test]
fn repeated_install_uninstall_cycles_keep_two_backups() {
    let env = TestEnv::new();
    their_settings_in(&env, None);
    fs::write(settings(&env), THEIRS).unwrap();
    let dir = env.home().join(".claude");
    fs::write(dir.join("settings.json.bak"), "mine").unwrap();
    let mut before_last = String::new();
    for cycle in 0..4 {
        for args in [["install"], ["uninstall"]] {
            before_last = fs::read_to_string(settings(&env)).unwrap();
            let run = env.run(&args, "");
            assert_eq!(run.code, 0, "{run:?}");
            if cycle > 0 {
                assert!(
                    run.stdout
                        .contains("removed 1 older backup (kept the first"),
                    "{run:?}"
                );
            }
        }
    }
    let mut b = backups(&dir);
    b.sort();
    assert_eq!(b.len(), 2, "{b:?}");
    assert_eq!(
        fs::read_to_string(&b[0]).unwrap(),
        THEIRS,
        "the pristine file"
    );
    assert_eq!(
        fs::read_to_string(&b[1]).unwrap(),
        before_last,
        "the newest"
    );
    assert_eq!(
        fs::read_to_string(dir.join("settings.json.bak")).unwrap(),
        "mine"
    );
    assert_eq!(
        read(&settings(&env)),
        serde_json::from_str::<Value>(THEIRS).unwrap()
    );
}

/// Two copies under different names (`cg` and `ctxguard`, not links to one file): what one
/// installed, the other recognises by what the program is (a ctxguard binary, known by the
/// signature every build holds), so it is replaced in place, never added twice, and uninstall
/// removes it.
#[test]
fn another_copy_under_another_name_is_recognised_by_what_it_runs() {
    let env = TestEnv::new();
    let bins = env.dir.path().join("bins");
    fs::create_dir_all(&bins).unwrap();
    let original = fs::canonicalize(env!("CARGO_BIN_EXE_ctxguard")).unwrap();
    let named = |name: &str| bins.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let (cg, ours) = (named("cg"), named("ctxguard"));
    for copy in [&cg, &ours] {
        fs::copy(&original, copy).unwrap();
    }
    let theirs = their_settings_in(&env, None);
    assert_eq!(run_as(&env, &cg, &["install"]).code, 0);
    for _ in 0..2 {
        let run = run_as(&env, &ours, &["install"]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    let s = read(&settings(&env));
    let ours_path = canonical(&ours);
    for (event, sub) in [
        ("PreCompact", "precompact"),
        ("SessionStart", "sessionstart"),
    ] {
        let entries = s["hooks"][event].as_array().unwrap();
        assert_eq!(entries.len(), 1, "{event}: {entries:?}");
        assert_eq!(entries[0]["hooks"][0], exec(&ours_path, sub));
    }
    let line = s["statusLine"]["command"].as_str().unwrap();
    assert_eq!(
        line.matches("statusline").count(),
        1,
        "wrapped once: {line}"
    );
    assert!(!line.contains("/cg"), "{line}");
    let un = run_as(&env, &ours, &["uninstall"]);
    assert_eq!(un.code, 0, "{un:?}");
    assert_eq!(fs::read_to_string(settings(&env)).unwrap(), theirs);

    // A user's own program that takes an argument of the same name is not ctxguard's.
    let notify = bins.join("notify");
    fs::write(&notify, "#!/bin/sh\necho \"$@\"\n").unwrap();
    let notify = notify.to_str().unwrap();
    let mut s: Value = serde_json::from_str(&theirs).unwrap();
    s["hooks"]["Stop"] = json!([{"hooks": [
        {"type": "command", "command": format!("{notify} precompact")},
        {"type": "command", "command": notify, "args": ["sessionstart"]}
    ]}]);
    let mine = serde_json::to_string_pretty(&s).unwrap() + "\n";
    fs::write(settings(&env), &mine).unwrap();
    assert_eq!(run_as(&env, &ours, &["install"]).code, 0);
    assert_eq!(run_as(&env, &ours, &["uninstall"]).code, 0);
    assert_eq!(fs::read_to_string(settings(&env)).unwrap(), mine);
}

/// Issue 10, item 9: entries were recognised only when the program was named exactly
/// `ctxguard`, so with `ctxguard-0.1.0` (or a `ctxguard` link to `ctxguard-bin`, or any other
/// name) every install added the hooks again and wrapped the status line in itself, and
/// uninstall removed nothing.
#[test]
fn a_binary_under_another_name_installs_once_and_uninstalls_everything() {
    let env = TestEnv::new();
    let bins = env.dir.path().join("bins");
    fs::create_dir_all(&bins).unwrap();
    let original = fs::canonicalize(env!("CARGO_BIN_EXE_ctxguard")).unwrap();
    let named = |name: &str| bins.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let versioned = named("ctxguard-0.1.0");
    let renamed = named("cg");
    let target = named("ctxguard-bin");
    for copy in [&versioned, &renamed, &target] {
        fs::copy(&original, copy).unwrap();
    }
    #[allow(unused_mut)]
    let mut programs = vec![
        (versioned.clone(), versioned.clone()),
        (renamed.clone(), renamed.clone()),
    ];
    #[cfg(unix)]
    {
        let link = bins.join("ctxguard");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        programs.push((link, target.clone()));
    }
    let mine = "printf 'mine'";
    let wrapped = |bin: &str| format!("{} statusline --then 'printf '\\''mine'\\'''", sh(bin));
    for (program, installed) in &programs {
        let theirs = their_settings_in(&env, None);
        let installed = canonical(installed);
        for round in 0..3 {
            let run = run_as(&env, program, &["install"]);
            assert_eq!(run.code, 0, "{run:?}");
            assert_eq!(
                run.stdout.contains("nothing changed"),
                round > 0,
                "{program:?}: {run:?}"
            );
        }
        let s = read(&settings(&env));
        assert_eq!(s["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert_eq!(s["hooks"]["PreCompact"].as_array().unwrap().len(), 1);
        assert_eq!(
            s["hooks"]["SessionStart"][0]["hooks"][0],
            exec(&installed, "sessionstart")
        );
        assert_eq!(
            s["statusLine"]["command"],
            wrapped(&installed),
            "wrapped once"
        );
        let un = run_as(&env, program, &["uninstall"]);
        assert_eq!(un.code, 0, "{un:?}");
        assert!(
            un.stdout
                .contains(&format!("statusLine: restored `{mine}`")),
            "{un:?}"
        );
        assert_eq!(fs::read_to_string(settings(&env)).unwrap(), theirs);
    }

    // What the old install left after three runs as `ctxguard-0.1.0`: three copies of each
    // hook (in shell form, as it wrote them) and the status line wrapped in itself three times.
    // Any ctxguard cleans it up.
    let v = sh(&canonical(&versioned));
    let mut line = mine.to_string();
    for _ in 0..3 {
        line = format!("{v} statusline --then '{}'", line.replace('\'', r"'\''"));
    }
    let theirs = their_settings_in(&env, None);
    let mut s: Value = serde_json::from_str(&theirs).unwrap();
    let hook = |sub: &str| json!({"hooks": [{"type": "command", "command": format!("{v} {sub}")}]});
    for (event, sub) in [
        ("PreToolUse", "pretooluse"),
        ("PreCompact", "precompact"),
        ("SessionStart", "sessionstart"),
    ] {
        let list = s["hooks"]
            .as_object_mut()
            .unwrap()
            .entry(event)
            .or_insert(json!([]));
        for _ in 0..3 {
            list.as_array_mut().unwrap().push(hook(sub));
        }
    }
    s["statusLine"]["command"] = json!(line);
    let left = serde_json::to_string_pretty(&s).unwrap() + "\n";
    fs::write(settings(&env), &left).unwrap();
    let un = env.run(&["uninstall"], "");
    assert_eq!(un.code, 0, "{un:?}");
    assert_eq!(un.stdout.matches("removed ctxguard").count(), 9, "{un:?}");
    assert_eq!(fs::read_to_string(settings(&env)).unwrap(), theirs);
    fs::write(settings(&env), &left).unwrap();
    let run = env.run(&["install"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout.matches("removed the duplicate").count(),
        6,
        "{run:?}"
    );
    let s = read(&settings(&env));
    let bin = bin();
    assert_eq!(s["statusLine"]["command"], wrapped(&bin));
    assert_eq!(
        s["hooks"]["PreCompact"],
        json!([{"hooks": [exec(&bin, "precompact")]}])
    );
}

/// Issue 10, item 10: a wrapped status line with another flag (`--no-color`) was not seen as
/// wrapped: uninstall deleted the user's command and a re-install unwrapped it.
#[test]
fn a_wrapped_status_line_with_flags_comes_back_exactly() {
    let env = TestEnv::new();
    let bin = sh(&bin());
    let theirs = their_settings_in(&env, None);
    for flags in [
        "--no-color --then 'printf '\\''mine'\\'''",
        "--then 'printf '\\''mine'\\''' --no-color",
        "--quiet --then 'printf '\\''mine'\\''' --no-color",
        "--then='printf '\\''mine'\\'''",
    ] {
        let wrapped = format!("{bin} statusline {flags}");
        let with_flags = their_settings_in(&env, Some(&wrapped));
        let run = env.run(&["install"], "");
        assert_eq!(run.code, 0, "{run:?}");
        assert!(!run.stdout.contains("statusLine"), "{flags}: {run:?}");
        assert_eq!(read(&settings(&env))["statusLine"]["command"], wrapped);
        let un = env.run(&["uninstall"], "");
        assert_eq!(un.code, 0, "{un:?}");
        assert!(
            un.stdout.contains("statusLine: restored `printf 'mine'`"),
            "{flags}: {un:?}"
        );
        assert_eq!(
            fs::read_to_string(settings(&env)).unwrap(),
            theirs,
            "{flags}"
        );
        // Uninstalling it alone gives the same.
        fs::write(settings(&env), &with_flags).unwrap();
        assert_eq!(env.run(&["uninstall"], "").code, 0);
        assert_eq!(
            fs::read_to_string(settings(&env)).unwrap(),
            theirs,
            "{flags}"
        );
    }
}

/// Issue 10, item 11: uninstall read double quotes unlike `sh` (`printf '%s\n' x` in double
/// quotes came back as `printf '%sn' x`). Each command below goes through install and
/// uninstall unchanged, and one quoted by hand comes back as `sh` reads it.
#[test]
fn status_line_commands_round_trip_exactly_through_install_and_uninstall() {
    let env = TestEnv::new();
    for mine in [
        r"printf '%s\n' x",
        r#"printf "%s\n" "$HOME" 'it'\''s'"#,
        "echo $(date +%H:%M) `id -u`",
        r"a\b\\c\",
        "line one\nline two\n",
        "tab\there",
        "''",
        "\"\"",
        "ünïcödé ✓ ~/x *",
    ] {
        let theirs = their_settings_in(&env, Some(mine));
        assert_eq!(env.run(&["install"], "").code, 0, "{mine}");
        let un = env.run(&["uninstall"], "");
        assert_eq!(un.code, 0, "{un:?}");
        assert_eq!(
            fs::read_to_string(settings(&env)).unwrap(),
            theirs,
            "{mine:?}"
        );
    }
    let by_hand = format!(r#"{} statusline --then "printf '%s\n' x""#, sh(&bin()));
    their_settings_in(&env, Some(&by_hand));
    let un = env.run(&["uninstall"], "");
    assert_eq!(un.code, 0, "{un:?}");
    assert_eq!(
        read(&settings(&env))["statusLine"]["command"],
        r"printf '%s\n' x"
    );
}

/// Issue 10, item 12: `install --statusline replace` then `uninstall` lost the user's status
/// line. It is kept in a note beside the settings (and in the backup), and put back.
#[test]
fn a_replaced_status_line_is_given_back_by_uninstall() {
    let env = TestEnv::new();
    fs::create_dir_all(env.home().join(".claude")).unwrap();
    fs::write(settings(&env), THEIRS).unwrap();
    chmod(&settings(&env), 0o600);
    let note = env
        .home()
        .join(".claude")
        .join("settings.json.ctxguard-note.json");
    let run = env.run(&["install", "--statusline", "replace"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let s = read(&settings(&env));
    assert_eq!(
        s["statusLine"]["command"],
        format!("{} statusline", sh(&bin()))
    );
    assert_eq!(
        fs::read_to_string(&backups(&env.home().join(".claude"))[0]).unwrap(),
        THEIRS
    );
    let un = env.run(&["uninstall"], "");
    assert_eq!(un.code, 0, "{un:?}");
    assert_eq!(
        fs::read_to_string(settings(&env)).unwrap(),
        THEIRS,
        "their status line is back, padding and all, and the file byte for byte"
    );
    assert!(
        un.stdout.contains("statusLine: restored `printf 'mine'`")
            && un.stdout.contains("removed the note"),
        "{un:?}"
    );
    assert!(!note.exists(), "the note is gone once used");

    // Where it is kept, and how it is said.
    let dry = env.run(&["install", "--statusline", "replace", "--dry-run"], "");
    assert!(
        dry.stdout.contains(&format!(
            "would keep the replaced status line in {}",
            note.display()
        )),
        "{dry:?}"
    );
    assert!(!note.exists());
    let run = env.run(&["install", "--statusline", "replace"], "");
    assert!(
        run.stdout
            .contains(&format!("replaced status line kept in {}", note.display())),
        "{run:?}"
    );
    assert_eq!(
        read(&note)["statusLine"],
        json!({"type": "command", "command": "printf 'mine'", "padding": 0})
    );
    #[cfg(unix)]
    assert_eq!(mode_of(&note), 0o600, "as private as the settings");
    // Installing again (any mode) keeps the note and changes nothing.
    assert!(env.run(&["install"], "").stdout.contains("nothing changed"));
    assert!(note.exists());

    let un = env.run(&["uninstall"], "");
    assert!(un.stdout.contains("removed the note"), "{un:?}");
    assert_eq!(fs::read_to_string(settings(&env)).unwrap(), THEIRS);

    // A broken note stops uninstall before anything is touched.
    fs::write(settings(&env), THEIRS).unwrap();
    assert_eq!(env.run(&["install", "--statusline", "replace"], "").code, 0);
    let installed = fs::read_to_string(settings(&env)).unwrap();
    fs::write(&note, "{oops").unwrap();
    let un = env.run(&["uninstall"], "");
    assert_eq!(un.code, 1, "{un:?}");
    assert!(un.stderr.contains("not valid JSON"), "{un:?}");
    assert_eq!(fs::read_to_string(settings(&env)).unwrap(), installed);
}

/// What the previous version of `install` wrote: every hook as a shell line (`<bin> <sub>`), in
/// a file that also holds the user's own hooks.
fn shell_form_settings(bin: &str) -> Value {
    let b = sh(bin);
    let hook =
        |sub: &str| json!({"type": "command", "command": format!("{b} {sub}"), "timeout": 30});
    json!({
        "model": "opus",
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/guard.sh"}]},
                {"matcher": "*", "hooks": [hook("pretooluse")]}
            ],
            "UserPromptSubmit": [{"hooks": [hook("userpromptsubmit")]}],
            "PreCompact": [{"matcher": "auto|manual", "hooks": [hook("precompact")]}],
            "SessionStart": [{"hooks": [
                {"type": "command", "command": "echo hi"},
                hook("sessionstart")
            ]}]
        },
        "statusLine": {"type": "command", "command": format!("{b} statusline --then 'printf mine'")}
    })
}

/// A shell-form registration left by an earlier version is turned into the exec form in place
/// (same groups, same positions, its other keys kept), and `uninstall` removes it in either form.
#[test]
fn a_shell_form_registration_is_upgraded_in_place_and_uninstalled_in_either_form() {
    let env = TestEnv::new();
    let bin = bin();
    let old = shell_form_settings(&bin);
    let text = serde_json::to_string_pretty(&old).unwrap() + "\n";
    fs::create_dir_all(env.home().join(".claude")).unwrap();

    // Uninstalling the old registration directly removes it all.
    fs::write(settings(&env), &text).unwrap();
    let un = env.run(&["uninstall"], "");
    assert_eq!(un.code, 0, "{un:?}");
    assert_eq!(un.stdout.matches("removed ctxguard").count(), 4, "{un:?}");
    assert_eq!(
        read(&settings(&env)),
        json!({
            "model": "opus",
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/guard.sh"}]}],
                "SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]
            },
            "statusLine": {"type": "command", "command": "printf mine"}
        })
    );

    // Installing over it upgrades each entry where it is.
    fs::write(settings(&env), &text).unwrap();
    let run = env.run(&["install"], "");
    assert_eq!(run.code, 0, "{run:?}");
    // Four upgraded where they were; the hooks added since come in exec form too.
    assert_eq!(
        run.stdout.matches("became the exec form").count(),
        4,
        "{run:?}"
    );
    assert_eq!(run.stdout.matches("(exec form)").count(), 4, "{run:?}");
    assert!(
        run.stdout.contains(&format!(
            "PreToolUse: the shell line `{} pretooluse` became the exec form `{} pretooluse`",
            sh(&bin),
            sh(&bin)
        )),
        "{run:?}"
    );
    let mut expected = old.clone();
    for (event, group, hook, sub) in [
        ("PreToolUse", 1, 0, "pretooluse"),
        ("UserPromptSubmit", 0, 0, "userpromptsubmit"),
        ("PreCompact", 0, 0, "precompact"),
        ("SessionStart", 0, 1, "sessionstart"),
    ] {
        expected["hooks"][event][group]["hooks"][hook] = json!({"type": "command", "command": bin, "args": [sub], "timeout": 30,
                   "onFailure": "continue"});
    }
    expected["hooks"]["PostCompact"] =
        json!([{"matcher": "auto|manual", "hooks": [exec(&bin, "postcompact")]}]);
    expected["hooks"]["SessionEnd"] = json!([{"hooks": [exec(&bin, "sessionend")]}]);
    expected["hooks"]["PostToolBatch"] = json!([{"hooks": [exec(&bin, "posttoolbatch")]}]);
    expected["hooks"]["Stop"] = json!([{"hooks": [exec(&bin, "stop")]}]);
    let upgraded = fs::read_to_string(settings(&env)).unwrap();
    assert_eq!(
        upgraded,
        serde_json::to_string_pretty(&expected).unwrap() + "\n",
        "in place, key order and all"
    );
    // Then it is current: nothing more to do; and uninstall gives back the same as before.
    assert!(env.run(&["install"], "").stdout.contains("nothing changed"));
    let un = env.run(&["uninstall"], "");
    assert_eq!(un.stdout.matches("removed ctxguard").count(), 8, "{un:?}");
    assert_eq!(
        read(&settings(&env))["hooks"]["SessionStart"],
        json!([{"hooks": [{"type": "command", "command": "echo hi"}]}])
    );
}

/// On Windows the user's settings are `%USERPROFILE%\.claude\settings.json` (HOME, which Git
/// Bash sets, is not what Claude Code reads), and the hooks name `ctxguard.exe` by its full path
/// with drive letter and backslashes, with no shell to mangle them.
#[cfg(windows)]
#[test]
fn on_windows_install_uses_the_user_profile_and_a_path_with_backslashes() {
    let env = TestEnv::new();
    let elsewhere = env.dir.path().join("msys-home");
    fs::create_dir_all(&elsewhere).unwrap();
    let out = env
        .command(&["install"])
        .env("HOME", &elsewhere)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!elsewhere.join(".claude").exists());
    let s = read(&settings(&env));
    let command = s["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        command.as_bytes()[1] == b':'
            && command.contains('\\')
            && command.ends_with("ctxguard.exe"),
        "{command}"
    );
    assert_eq!(
        s["hooks"]["PreToolUse"][0]["hooks"][0]["args"],
        json!(["pretooluse"])
    );
    // The status line is a shell line: the path is single-quoted, which Git Bash keeps as is.
    assert_eq!(
        s["statusLine"]["command"],
        format!("'{command}' statusline")
    );
    // doctor finds it all, and uninstall takes it out again.
    let doctor = env.run(&["doctor", "--json"], "");
    let report: Value = serde_json::from_str(&doctor.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report:#}");
    // Install created the settings file: uninstall leaves none behind.
    assert_eq!(env.run(&["uninstall"], "").code, 0);
    assert!(!settings(&env).exists());
}

/// The "by hand" JSON of docs/usage.md is exactly what `install` writes for a current client:
/// every hook (PostCompact and SessionEnd included), in the same order, and the status line.
#[test]
fn the_by_hand_json_of_the_usage_page_is_what_install_writes() {
    let usage = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/usage.md");
    let readme = fs::read_to_string(usage).unwrap();
    let after = readme
        .split_once("**By hand**, the equivalent of `install`")
        .expect("docs/usage.md's by-hand section")
        .1;
    let block = after
        .split_once("```json\n")
        .unwrap()
        .1
        .split_once("```")
        .unwrap()
        .0;
    let bin = bin();
    // JSON-escaped, as a Windows path would be in the file.
    let escaped = serde_json::to_string(&bin).unwrap();
    let by_hand: Value = serde_json::from_str(&block.replace(
        "\"/home/you/.local/bin/ctxguard",
        &escaped[..escaped.len() - 1],
    ))
    .unwrap();
    let mut by_hand = by_hand;
    // The status line is a shell line: the path quoted as install quotes it (a Windows path).
    assert_eq!(
        by_hand["statusLine"]["command"],
        format!("{bin} statusline").as_str()
    );
    by_hand["statusLine"]["command"] = json!(format!("{} statusline", sh(&bin)));
    let env = TestEnv::new();
    let path = settings(&env);
    let run = env.run(&["install", "--client-version", "2.1.330"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let installed = read(&path);
    assert_eq!(by_hand, installed);
    let events =
        |v: &Value| -> Vec<String> { v["hooks"].as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        events(&by_hand),
        [
            "PreToolUse",
            "UserPromptSubmit",
            "PreCompact",
            "PostCompact",
            "SessionStart",
            "SessionEnd",
            "PostToolBatch",
            "Stop"
        ]
    );
    assert_eq!(events(&by_hand), events(&installed));
}

/// Issue 20, item 8: a copy of ctxguard under another name, reached through `~`, `$HOME` or a
/// bare name on `PATH`, is recognised like a literal path: install points each entry at itself
/// in place (never a second entry, never a status line wrapped in itself), and uninstall removes
/// them all.
#[test]
fn copies_reached_through_home_or_path_are_replaced_not_doubled() {
    let mut env = TestEnv::new();
    let bin_dir = env.home().join("bin");
    fs::create_dir_all(&bin_dir).unwrap();
    let cg = bin_dir.join(format!("cg{}", std::env::consts::EXE_SUFFIX));
    fs::copy(
        fs::canonicalize(env!("CARGO_BIN_EXE_ctxguard")).unwrap(),
        &cg,
    )
    .unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path =
        std::env::join_paths(std::iter::once(bin_dir.clone()).chain(std::env::split_paths(&path)))
            .unwrap();
    env.set("PATH", path.to_str().unwrap());
    let group = |hook: Value| json!([{"hooks": [hook]}]);
    let written = json!({
        "statusLine": {"type": "command", "command": "cg statusline"},
        "hooks": {
            "PreToolUse": [{"matcher": "*", "hooks": [
                {"type": "command", "command": "~/bin/cg pretooluse"}]}],
            "PreCompact": [{"matcher": "auto|manual", "hooks": [
                {"type": "command", "command": "\"$HOME/bin/cg\" precompact"}]}],
            "SessionStart": group(json!({"type": "command", "command": "cg", "args": ["sessionstart"]})),
            "SessionEnd": group(json!({"type": "command", "command": "${HOME}/bin/cg sessionend"})),
        }
    });
    fs::create_dir_all(env.home().join(".claude")).unwrap();
    fs::write(
        settings(&env),
        serde_json::to_string_pretty(&written).unwrap(),
    )
    .unwrap();
    for _ in 0..2 {
        let run = env.run(&["install", "--client-version", "2.1.330"], "");
        assert_eq!(run.code, 0, "{run:?}");
    }
    let s = read(&settings(&env));
    let bin = bin();
    for (event, sub) in [
        ("PreToolUse", "pretooluse"),
        ("PreCompact", "precompact"),
        ("SessionStart", "sessionstart"),
        ("SessionEnd", "sessionend"),
        ("UserPromptSubmit", "userpromptsubmit"),
        ("PostCompact", "postcompact"),
    ] {
        let groups = s["hooks"][event].as_array().unwrap();
        assert_eq!(groups.len(), 1, "{event}: {groups:?}");
        assert_eq!(groups[0]["hooks"], json!([exec(&bin, sub)]), "{event}");
    }
    assert_eq!(
        s["statusLine"]["command"],
        format!("{} statusline", sh(&bin)).as_str(),
        "replaced, not wrapped in itself"
    );
    let run = env.run(&["uninstall"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let s = read(&settings(&env));
    assert_eq!(s.get("hooks"), None, "{s}");
}

/// Issue 20, item 4: `uninstall --purge` also removes ctxguard's state directory, after saying
/// what it holds, and never a memory file: not the user's `~/.claude-memory/MEMORY.md` beside it,
/// not one inside it when `CTXGUARD_HOME` is the memory folder itself; a state directory that is
/// the home directory or Claude Code's is refused before anything changes.
#[test]
fn uninstall_purge_removes_the_state_directory_and_never_a_memory_file() {
    let run_hooks = |env: &TestEnv| {
        let t = env.write("t.jsonl", &before_first_compaction());
        for (args, payload) in [
            (
                &["precompact"][..],
                precompact_payload(SESSION, &t, "manual", Value::Null),
            ),
            (
                &["sessionstart"][..],
                sessionstart_payload(SESSION, "compact", CWD),
            ),
            (
                &["statusline"][..],
                statusline_payload(SESSION, Some(50_000), Some(200_000)),
            ),
        ] {
            let run = env.run(args, payload.to_string());
            assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
        }
    };
    let memory_dir = |env: &TestEnv| {
        let dir = env.home().join(".claude-memory");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("MEMORY.md"), "- the user prefers tabs\n").unwrap();
        dir
    };

    // The default layout: the state directory beside the memory file.
    let mut env = TestEnv::new();
    let memory = memory_dir(&env);
    let state = memory.join("ctxguard");
    env.set("CTXGUARD_HOME", state.to_str().unwrap());
    assert_eq!(env.run(&["install"], "").code, 0);
    run_hooks(&env);
    let dry = env.run(&["uninstall", "--purge", "--dry-run"], "");
    assert_eq!(dry.code, 0, "{dry:?}");
    for says in [
        &format!("ctxguard's state directory {} holds:", state.display()),
        "  sessions/: sessions' state (markers, locks, cached readings): 1 session\n",
        "  checkpoints/: checkpoints and compaction summaries: checkpoints of 1 session (",
        "  logs/: daily logs: 1 daily log\n",
        "(dry run: nothing removed)",
    ] {
        assert!(dry.stdout.contains(says), "{says}: {dry:?}");
    }
    assert!(state.join("sessions").join(SESSION).exists());
    assert!(read(&settings(&env))["hooks"]["PreCompact"].is_array());
    let run = env.run(&["uninstall", "--purge"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains(&format!("removed the state directory {}", state.display())),
        "{run:?}"
    );
    assert!(!state.exists());
    assert_eq!(
        fs::read_to_string(memory.join("MEMORY.md")).unwrap(),
        "- the user prefers tabs\n"
    );
    // The settings file install created holds nothing else: gone with ctxguard.
    assert!(!settings(&env).exists(), "{run:?}");
    assert!(
        env.home().join(".claude-memory").exists(),
        "the memory folder stays: it holds MEMORY.md"
    );

    // CTXGUARD_HOME set to the memory folder itself: ctxguard's entries go, the rest stays.
    let mut env = TestEnv::new();
    let memory = memory_dir(&env);
    fs::create_dir_all(memory.join("topics")).unwrap();
    fs::write(memory.join("topics/build.md"), "cargo xtask\n").unwrap();
    fs::write(memory.join("notes.txt"), "mine\n").unwrap();
    env.set("CTXGUARD_HOME", memory.to_str().unwrap());
    run_hooks(&env);
    fs::write(memory.join("logs").join("mine.md"), "my own log\n").unwrap();
    let run = env.run(&["uninstall", "--purge"], "");
    assert_eq!(run.code, 0, "{run:?}");
    for gone in ["sessions", "checkpoints", "cwd", "recent"] {
        assert!(!memory.join(gone).exists(), "{gone}: {run:?}");
    }
    for (kept, text) in [
        ("MEMORY.md", "- the user prefers tabs\n"),
        ("topics/build.md", "cargo xtask\n"),
        ("notes.txt", "mine\n"),
        ("logs/mine.md", "my own log\n"),
    ] {
        assert_eq!(
            fs::read_to_string(memory.join(kept)).unwrap(),
            text,
            "{kept}"
        );
    }
    assert!(
        run.stdout
            .contains("stays (it holds what is not ctxguard's)"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("MEMORY.md: a memory file, not ctxguard's"),
        "{run:?}"
    );

    // The home directory, or Claude Code's own: refused, and the settings untouched too.
    for root in [".", ".claude"] {
        let mut env = TestEnv::new();
        assert_eq!(env.run(&["install"], "").code, 0);
        let installed = fs::read_to_string(settings(&env)).unwrap();
        let dir = env.home().join(root);
        env.set("CTXGUARD_HOME", dir.to_str().unwrap());
        let run = env.run(&["uninstall", "--purge"], "");
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stderr.contains("ctxguard will not purge it"), "{run:?}");
        assert_eq!(fs::read_to_string(settings(&env)).unwrap(), installed);
    }
}

/// A state root pointed at a directory of the user's own: files under ctxguard's folder names
/// that ctxguard never writes (a `config.json` of theirs, `logs/app.log`, `sessions/todo.txt`,
/// `cwd/data/train.csv`) are the user's, and stay.
#[test]
fn uninstall_purge_keeps_a_users_files_that_only_share_ctxguards_folder_names() {
    let mut env = TestEnv::new();
    let work = env.dir.path().join("work");
    for (rel, text) in [
        ("config.json", r#"{"secret": "hunter2"}"#),
        ("logs/app.log", "started\n"),
        ("sessions/todo.txt", "buy milk\n"),
        ("cwd/data/train.csv", "a,b\n"),
    ] {
        let path = work.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
    }
    env.set("CTXGUARD_HOME", work.to_str().unwrap());
    let run = env.run(&["uninstall", "--purge"], "");
    assert_eq!(run.code, 0, "{run:?}");
    for (rel, text) in [
        ("config.json", r#"{"secret": "hunter2"}"#),
        ("logs/app.log", "started\n"),
        ("sessions/todo.txt", "buy milk\n"),
        ("cwd/data/train.csv", "a,b\n"),
    ] {
        assert_eq!(
            fs::read_to_string(work.join(rel)).unwrap(),
            text,
            "{rel}: {run:?}"
        );
    }
    assert!(run.stdout.contains("removed 0 files"), "{run:?}");
}

/// Issue 25: a settings file naming 2.1.332's `PreSkillShellCommand` event (a hook of the user's)
/// confuses neither `install`, `doctor` nor `uninstall`: the entry stays where it is, every
/// ctxguard hook gets `onFailure: "continue"`, doctor passes and says what it does on 2.1.332, and
/// uninstall gives the file back as it was. For 2.1.330 doctor only says the entry is ignored.
#[test]
fn a_skill_shell_command_event_confuses_neither_install_doctor_nor_uninstall() {
    let env = TestEnv::new();
    let path = settings(&env);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let theirs = json!({"hooks": {"PreSkillShellCommand": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "~/check-skill.sh"}]}]}});
    fs::write(&path, serde_json::to_string_pretty(&theirs).unwrap()).unwrap();
    let run = env.run(&["install", "--client-version", "2.1.332"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Claude Code 2.1.332"), "{run:?}");
    let s = read(&path);
    assert_eq!(
        s["hooks"]["PreSkillShellCommand"],
        theirs["hooks"]["PreSkillShellCommand"]
    );
    for event in [
        "PreToolUse",
        "UserPromptSubmit",
        "PreCompact",
        "PostCompact",
        "Stop",
    ] {
        assert_eq!(
            s["hooks"][event][0]["hooks"][0]["onFailure"], "continue",
            "{event}"
        );
    }
    let doctor = env.run(&["doctor", "--json", "--client-version", "2.1.332"], "");
    let report: Value = serde_json::from_str(&doctor.stdout).unwrap();
    let text = report.to_string();
    assert!(!text.contains("PreSkillShellCommand"), "{report:#}");
    assert!(
        text.contains("on Claude Code 2.1.332, ctxguard registers exec-form hooks with onFailure"),
        "{report:#}"
    );
    assert!(!text.contains("have no onFailure"), "{report:#}");
    let older = env.run(&["doctor", "--json", "--client-version", "2.1.330"], "");
    assert!(
        older.stdout.contains("names PreSkillShellCommand, which Claude Code 2.1.330 does not know: it ignores that entry"),
        "{older:?}"
    );
    let run = env.run(&["uninstall"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(read(&path), theirs);
}

/// `./install.sh` where rustup has no default toolchain: one line naming what is missing and
/// the command that fixes it, not rustup's backtrace, and nothing installed.
#[cfg(unix)]
#[test]
fn install_sh_without_a_default_toolchain_says_the_fix_in_one_line() {
    let has_rustup = std::process::Command::new("rustup")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_rustup {
        eprintln!("skipped: rustup is not on PATH, so there is no default toolchain to lack");
        return;
    }
    let env = TestEnv::new();
    let rustup_home = env.dir.path().join("rustup");
    fs::create_dir_all(&rustup_home).unwrap();
    let prefix = env.dir.path().join("prefix");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("install.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .env("RUSTUP_HOME", &rustup_home)
        .env_remove("RUSTUP_TOOLCHAIN")
        .env("RUST_BACKTRACE", "1")
        .env("PREFIX", &prefix)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "install.sh: rustup has no default Rust toolchain; run: rustup default stable\n"
    );
    assert!(out.stdout.is_empty());
    assert!(!prefix.exists());
}

/// Issue 28, item 8: where there was no settings file before `install`, `uninstall` leaves none
/// (nor a backup, nor its record); one the user had, even an empty one, stays. And `--purge`
/// takes the default state directory's folder (`~/.claude-memory`) with it when nothing else is
/// in it.
#[test]
fn uninstall_leaves_no_file_install_created_and_no_empty_folder_of_ours() {
    let env = TestEnv::new();
    let claude = env.home().join(".claude");
    let listing = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    assert_eq!(env.run(&["install"], "").code, 0);
    let t = env.write("t.jsonl", &before_first_compaction());
    let pre = env.run(
        &["precompact"],
        precompact_payload(SESSION, &t, "manual", Value::Null).to_string(),
    );
    assert_eq!(pre.code, 0);
    let memory = env.home().join(".claude-memory");
    // The test environment points CTXGUARD_HOME elsewhere; here the default is wanted.
    let mut cmd = env.command(&["uninstall", "--purge", "--dry-run"]);
    cmd.env_remove("CTXGUARD_HOME");
    let out = cmd.output().unwrap();
    let dry = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        dry.contains(&format!(
            "would remove {}: ctxguard's install created it, and it held only ctxguard's entries",
            settings(&env).display()
        )),
        "{dry}"
    );
    assert!(settings(&env).exists());

    // A hook run with the state in its default place, `~/.claude-memory/ctxguard`.
    let mut cmd = env.command(&["precompact"]);
    cmd.env_remove("CTXGUARD_HOME");
    let out = feed(
        cmd,
        precompact_payload(SESSION, &t, "manual", Value::Null).to_string(),
    )
    .wait_with_output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(memory.join("ctxguard").is_dir());
    let mut cmd = env.command(&["uninstall", "--purge"]);
    cmd.env_remove("CTXGUARD_HOME");
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains(&format!(
            "removed the folder {}, empty without it",
            memory.display()
        )),
        "{text}"
    );
    assert!(!memory.exists(), "{text}");
    assert!(!settings(&env).exists(), "{text}");
    assert_eq!(listing(&claude), Vec::<String>::new(), "{text}");

    // Installed twice with a change between (a backup of the file it created): still no file.
    assert_eq!(
        env.run(&["install", "--client-version", "2.1.14"], "").code,
        0
    );
    assert_eq!(env.run(&["install"], "").code, 0);
    assert_eq!(backups(&claude).len(), 1);
    assert_eq!(env.run(&["uninstall"], "").code, 0);
    assert_eq!(listing(&claude), Vec::<String>::new());

    // The folder install created went with it, being empty.
    assert!(!claude.exists());
    // A file the user had, even `{}`, stays (with the backup of it).
    fs::create_dir_all(&claude).unwrap();
    fs::write(settings(&env), "{}\n").unwrap();
    assert_eq!(env.run(&["install"], "").code, 0);
    assert_eq!(env.run(&["uninstall"], "").code, 0);
    assert_eq!(read(&settings(&env)), json!({}));
    assert_eq!(backups(&claude).len(), 2, "{:?}", listing(&claude));
    // Something of theirs added to a file install created: it stays, without ctxguard.
    fs::remove_file(settings(&env)).unwrap();
    for b in backups(&claude) {
        fs::remove_file(b).unwrap();
    }
    assert_eq!(env.run(&["install"], "").code, 0);
    let mut s = read(&settings(&env));
    s["model"] = json!("opus");
    fs::write(settings(&env), s.to_string()).unwrap();
    assert_eq!(env.run(&["uninstall"], "").code, 0);
    assert_eq!(read(&settings(&env)), json!({"model": "opus"}));
    assert!(!listing(&claude)
        .iter()
        .any(|n| n.ends_with(".ctxguard-created")));
}

/// Issue 37, round 5, item 5: `install` into a home without `~/.claude` creates it; `uninstall`
/// removes it again when nothing else is in it, and only then. A folder the user had stays.
#[test]
fn uninstall_removes_the_claude_folder_install_created_when_it_is_empty() {
    let env = TestEnv::new();
    let claude = env.home().join(".claude");
    assert!(!claude.exists());
    assert_eq!(env.run(&["install"], "").code, 0);
    assert!(claude.is_dir());
    let dry = env.run(&["uninstall", "--dry-run"], "");
    let removed = format!(
        "{} {}: ctxguard's install created it, and it is empty\n",
        "would remove",
        claude.display()
    );
    assert!(dry.stdout.contains(&removed), "{}", dry.stdout);
    assert!(claude.is_dir());
    let run = env.run(&["uninstall"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains(&removed.replacen("would remove", "removed", 1)),
        "{}",
        run.stdout
    );
    assert!(!claude.exists(), "{}", run.stdout);

    // Something else in it since (the client's own folders): it stays, without ctxguard's files.
    assert_eq!(env.run(&["install"], "").code, 0);
    fs::create_dir_all(claude.join("projects")).unwrap();
    let run = env.run(&["uninstall"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stdout.contains("and it is empty"), "{}", run.stdout);
    let mut left: Vec<String> = fs::read_dir(&claude)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["projects"]);

    // A folder the user had, empty: it stays.
    fs::remove_dir(claude.join("projects")).unwrap();
    assert_eq!(env.run(&["install"], "").code, 0);
    let run = env.run(&["uninstall"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(claude.is_dir() && !run.stdout.contains("and it is empty"));
}
