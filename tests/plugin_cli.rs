//! The command line beside the plugin, through the binary: the status line registered alone
//! (`install --statusline-only`), a full install refused while the plugin is enabled, doctor
//! recognising the plugin's hooks and its binary, and `uninstall --purge` run as the plugin's
//! binary through its link (the state, the link, then `claude plugin uninstall`). The real
//! client doing the same is in `e2e_plugin.rs`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::util::*;

fn settings(env: &TestEnv) -> PathBuf {
    env.home().join(".claude/settings.json")
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// Each finding of `doctor --json` for `check`, as `status: message`.
fn findings(report: &Value, check: &str) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == check)
        .map(|f| {
            format!(
                "{}: {} [{}]",
                f["status"].as_str().unwrap(),
                f["message"].as_str().unwrap(),
                f["fix"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn doctor(env: &TestEnv) -> Value {
    let run = env.run(&["doctor", "--json"], "");
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"))
}

#[test]
fn the_status_line_alone_beside_the_plugin_and_doctor_takes_the_plugins_hooks_as_ctxguards() {
    let env = TestEnv::new();
    let path = settings(&env);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(
        &path,
        json!({"statusLine": {"type": "command", "command": "printf mine"}}).to_string(),
    )
    .unwrap();
    // Registered by hand first, then the plugin enabled: every hook twice.
    let run = env.run(&["install", "--client-version", "2.1.332"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let mut value = read(&path);
    value["enabledPlugins"] = json!({"ctxguard@ctxguard": true});
    fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    let report = doctor(&env);
    let hooks = findings(&report, "hooks");
    let twice: Vec<&String> = hooks.iter().filter(|h| h.starts_with("warn:")).collect();
    assert_eq!(twice.len(), 8, "{hooks:#?}");
    // The advice keeps the plugin's hooks and the status line.
    for h in &twice {
        assert!(
            h.contains("2 times") && h.contains("the ctxguard plugin"),
            "{h}"
        );
        assert!(
            h.contains("keep the plugin's: `ctxguard install --statusline-only`"),
            "{h}"
        );
        assert!(!h.contains("uninstall"), "{h}");
    }

    // A full install beside the plugin is refused, saying what to run.
    let before = fs::read_to_string(&path).unwrap();
    let run = env.run(&["install"], "");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("the plugin ctxguard@ctxguard is enabled (in ")
            && run
                .stderr
                .contains("run `ctxguard install --statusline-only`"),
        "{run:?}"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), before);

    // The status line alone: ctxguard's hooks leave the file, the status line stays, theirs
    // still wrapped.
    let run = env.run(&["install", "--statusline-only"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("PreToolUse: removed ctxguard pretooluse"),
        "{run:?}"
    );
    let value = read(&path);
    assert!(value.get("hooks").is_none(), "{value:#}");
    let line = value["statusLine"]["command"].as_str().unwrap();
    assert!(line.contains("statusline --then 'printf mine'"), "{line}");
    assert_eq!(value["enabledPlugins"]["ctxguard@ctxguard"], true);
    // Again: nothing to do.
    let run = env.run(&["install", "--statusline-only"], "");
    assert!(run.stdout.contains("(nothing changed)"), "{run:?}");

    // doctor: every hook is ctxguard's, once, through the plugin; the status line is ctxguard's.
    let report = doctor(&env);
    let hooks = findings(&report, "hooks");
    assert_eq!(hooks.len(), 8, "{hooks:#?}");
    for h in &hooks {
        assert!(
            h.starts_with("ok: ") && h.contains("(the ctxguard plugin (enabled in "),
            "{h}"
        );
    }
    assert!(
        findings(&report, "statusline")[0].starts_with("ok: the status line runs ctxguard"),
        "{report:#}"
    );
    assert_eq!(
        findings(&report, "plugin"),
        [format!(
            "ok: the plugin ctxguard@ctxguard is enabled (in {}) and registers the hooks []",
            path.display()
        )]
    );

    // Without a status line, doctor's advice is the status line alone.
    let mut value = read(&path);
    value.as_object_mut().unwrap().remove("statusLine");
    fs::write(&path, value.to_string()).unwrap();
    let line = findings(&doctor(&env), "statusline");
    assert!(
        line[0].contains(
            "[run `ctxguard install --statusline-only` (the plugin registers the hooks)]"
        ),
        "{line:?}"
    );

    // What it cannot be given with.
    for (args, says) in [
        (
            &["install", "--statusline-only", "--statusline", "skip"][..],
            "--statusline skip leaves alone",
        ),
        (
            &["install", "--statusline-only", "--client", "codex"][..],
            "Codex has no status line",
        ),
    ] {
        let run = env.run(args, "");
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(run.stderr.contains(says), "{args:?}: {run:?}");
    }
}

/// The test binary where the plugin's launcher puts the one it downloads, and the link it makes;
/// the link's path.
fn as_the_plugins(env: &TestEnv) -> (PathBuf, PathBuf) {
    let data = env.home().join(".claude/plugins/data/ctxguard-ctxguard");
    let bin = data.join("bin/ctxguard");
    fs::create_dir_all(bin.parent().unwrap()).unwrap();
    fs::copy(env!("CARGO_BIN_EXE_ctxguard"), &bin).unwrap();
    let link = env.home().join(".local/bin/ctxguard");
    fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&bin, &link).unwrap();
    (data, link)
}

/// `ctxguard ARGS` run through the plugin's link, as the user's shell finds it. The binary was
/// just copied: a child another test forked at that moment may hold it open for writing a little
/// longer (`ETXTBSY`), so that is tried again.
fn through(env: &TestEnv, link: &Path, path: &str, args: &[&str]) -> Run {
    let mut tries = 0;
    let out = loop {
        let run = Command::new(link)
            .args(args)
            .env_clear()
            .env("HOME", env.home())
            .env("CTXGUARD_HOME", env.state())
            .env("PATH", path)
            .current_dir(env.dir.path())
            .stdin(Stdio::null())
            .output();
        match run {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => break other.unwrap(),
        }
    };
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn as_the_plugins_binary_doctor_knows_it_and_purge_takes_the_plugin_out() {
    let env = TestEnv::new();
    let (data, link) = as_the_plugins(&env);
    let path = settings(&env);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(
        &path,
        json!({"enabledPlugins": {"ctxguard@ctxguard": true}}).to_string(),
    )
    .unwrap();
    // A `claude` that does what `claude plugin uninstall` does to the data folder, and records
    // how it was called.
    let tools = env.dir.path().join("tools");
    fs::create_dir_all(&tools).unwrap();
    let calls = env.dir.path().join("claude-calls");
    let claude = tools.join("claude");
    fs::write(
        &claude,
        format!(
            "#!/bin/sh\ncase \"$1\" in --version) echo '2.1.332 (Claude Code)'; exit 0 ;; esac\n\
             echo \"$*\" >>'{}'\nrm -rf '{}'\necho 'Successfully uninstalled plugin: ctxguard'\n",
            calls.display(),
            data.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&claude, fs::Permissions::from_mode(0o755)).unwrap();
    let path_var = format!(
        "{}:{}:/usr/bin:/bin",
        link.parent().unwrap().display(),
        tools.display()
    );

    // doctor, run as the user runs it, by name: it is the plugin's, run through the link.
    let run = through(&env, &link, &path_var, &["doctor", "--json"]);
    let report: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"));
    let said = findings(&report, "plugin");
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with(&format!(
            "ok: this ctxguard is the one the plugin ctxguard@ctxguard downloaded ({}, run as \
             its link {});",
            fs::canonicalize(data.join("bin/ctxguard"))
                .unwrap()
                .display(),
            link.display()
        )),
        "{said:?}"
    );
    // The commands the README names work: the state they make and read.
    assert_eq!(
        env.statusline(&statusline_payload(SESSION, Some(20_000), Some(200_000)))
            .code,
        0
    );
    let status = through(&env, &link, &path_var, &["status"]);
    assert!(status.stdout.contains(SESSION), "{status:?}");
    assert_eq!(through(&env, &link, &path_var, &["log"]).code, 0);

    // A dry run says all it would do and does none of it.
    let dry = through(
        &env,
        &link,
        &path_var,
        &["uninstall", "--purge", "--dry-run"],
    );
    assert_eq!(dry.code, 0, "{dry:?}");
    assert!(
        dry.stdout.contains(&format!(
            "would remove {}, the plugin's link",
            link.display()
        )) && dry
            .stdout
            .contains("would run `claude plugin uninstall ctxguard@ctxguard`"),
        "{dry:?}"
    );
    assert!(link.exists() && env.state().exists() && !calls.exists());

    // Then everything: the state, the link, the plugin (and with it its data folder).
    let run = through(&env, &link, &path_var, &["uninstall", "--purge"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!env.state().exists(), "{run:?}");
    assert!(fs::symlink_metadata(&link).is_err(), "{run:?}");
    assert_eq!(
        fs::read_to_string(&calls).unwrap(),
        "plugin uninstall ctxguard@ctxguard --scope user\n"
    );
    assert!(!data.exists());
    assert!(
        run.stdout
            .contains("ran `claude plugin uninstall ctxguard@ctxguard`"),
        "{run:?}"
    );
}

#[test]
fn doctor_points_at_a_link_left_to_a_plugins_binary_that_is_gone() {
    let env = TestEnv::new();
    let (data, link) = as_the_plugins(&env);
    fs::remove_dir_all(&data).unwrap();
    let said = findings(&doctor(&env), "plugin");
    assert_eq!(
        said,
        [format!(
            "warn: {} links to the plugin's binary {}, which is gone (the plugin was \
             uninstalled) [remove the link: rm {}]",
            link.display(),
            data.join("bin/ctxguard").display(),
            link.display()
        )]
    );
}
