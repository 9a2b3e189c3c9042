//! The Claude Code plugin packaging: its manifest, its hooks (the same events and matchers as
//! `ctxguard install` registers) and its launcher. (The real client running the plugin, from a
//! directory with a space in its path, is in the end-to-end tests.)

use std::fs;
use std::path::Path;
#[cfg(unix)]
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::util::*;

fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn manifest_and_hooks_match_what_install_registers() {
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(repo(".claude-plugin/plugin.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["name"], "ctxguard");
    let cargo = fs::read_to_string(repo("Cargo.toml")).unwrap();
    assert!(
        cargo.contains(&format!("version = {}", manifest["version"])),
        "plugin version = crate version"
    );

    let hooks: Value =
        serde_json::from_str(&fs::read_to_string(repo("hooks/hooks.json")).unwrap()).unwrap();
    let env = TestEnv::new();
    assert_eq!(env.run(&["install", "--statusline", "skip"], "").code, 0);
    let installed: Value = serde_json::from_str(
        &fs::read_to_string(env.home().join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    let events: Vec<&String> = hooks["hooks"].as_object().unwrap().keys().collect();
    let installed_events: Vec<&String> = installed["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(events, installed_events);
    for event in events {
        let ours = &hooks["hooks"][event][0];
        let theirs = &installed["hooks"][event][0];
        assert_eq!(ours.get("matcher"), theirs.get("matcher"), "{event}");
        let cmd = ours["hooks"][0]["command"].as_str().unwrap();
        let sub = theirs["hooks"][0]["args"][0].as_str().unwrap();
        // Shell form, the plugin root quoted (see hooks/run.sh for why not the exec form).
        assert_eq!(
            cmd,
            format!("\"${{CLAUDE_PLUGIN_ROOT}}/hooks/run.sh\" {sub}"),
            "{event}"
        );
        assert!(ours["hooks"][0].get("args").is_none(), "{event}");
    }
}

#[cfg(unix)]
fn launch(bin: Option<&str>, input: &str) -> std::process::Output {
    let mut cmd = Command::new(repo("hooks/run.sh"));
    cmd.arg("pretooluse")
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", "/nonexistent")
        .env_remove("CTXGUARD_BIN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(b) = bin {
        cmd.env("CTXGUARD_BIN", b);
    }
    let mut child = cmd.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[cfg(unix)]
#[test]
fn the_launcher_runs_ctxguard_or_does_nothing_quietly() {
    let env = TestEnv::new();
    let transcript = env.write(
        "t.jsonl",
        &(assistant_line(150_000, &time_from_now(-5)) + "\n"),
    );
    let payload = pretooluse_payload(SESSION, &transcript).to_string();
    // Found: it is ctxguard that answers (here with a nudge: 150k of a 200k model's window).
    let state = env.state();
    let mut cmd = Command::new(repo("hooks/run.sh"));
    let out = cmd
        .arg("pretooluse")
        .env("CTXGUARD_BIN", env!("CARGO_BIN_EXE_ctxguard"))
        .env("CTXGUARD_HOME", &state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(payload.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success());
    decode_nudge(&String::from_utf8_lossy(&out.stdout));
    // Not found: exit 0, nothing on stdout, one line on stderr.
    let out = launch(None, &payload);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("binary was not found"), "{err}");
}
