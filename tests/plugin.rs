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
    let manifest: Value = serde_json::from_str(
        &fs::read_to_string(repo("plugin/.claude-plugin/plugin.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["name"], "ctxguard");
    let cargo = fs::read_to_string(repo("Cargo.toml")).unwrap();
    assert!(
        cargo.contains(&format!("version = {}", manifest["version"])),
        "plugin version = crate version"
    );

    let hooks: Value =
        serde_json::from_str(&fs::read_to_string(repo("plugin/hooks/hooks.json")).unwrap())
            .unwrap();
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
    let mut cmd = Command::new(repo("plugin/hooks/run.sh"));
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
    let mut cmd = Command::new(repo("plugin/hooks/run.sh"));
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

/// Every file under `dir`, by its path relative to it, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, under: &str, out: &mut Vec<String>) {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let name = format!("{under}{}", entry.file_name().to_string_lossy());
            if entry.file_type().unwrap().is_dir() {
                walk(&entry.path(), &format!("{name}/"), out);
            } else {
                out.push(name);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, "", &mut files);
    files.sort();
    files
}

/// The marketplace serves a folder that holds the plugin and nothing else: no sources, tests,
/// fixtures of sessions or benches reach a user's plugin cache.
#[test]
fn the_marketplace_serves_the_plugins_folder_and_it_holds_only_the_plugin() {
    let market: Value =
        serde_json::from_str(&fs::read_to_string(repo(".claude-plugin/marketplace.json")).unwrap())
            .unwrap();
    let plugins = market["plugins"].as_array().unwrap();
    assert_eq!(plugins.len(), 1);
    assert_eq!(plugins[0]["name"], "ctxguard");
    assert_eq!(plugins[0]["source"], "./plugin");
    // The repository's root is no plugin: its manifest lives in the plugin's folder only.
    assert!(!repo(".claude-plugin/plugin.json").exists());
    assert!(!repo("hooks").exists());

    let shipped = files_under(&repo("plugin"));
    let allowed = [
        ".claude-plugin/plugin.json",
        "README.md",
        "hooks/hooks.json",
        "hooks/release.sha256",
        "hooks/run.sh",
    ];
    let extra: Vec<&String> = shipped
        .iter()
        .filter(|f| !allowed.contains(&f.as_str()))
        .collect();
    assert!(extra.is_empty(), "not the plugin's: {extra:?}");
    for needed in [
        ".claude-plugin/plugin.json",
        "README.md",
        "hooks/hooks.json",
        "hooks/run.sh",
    ] {
        assert!(shipped.iter().any(|f| f == needed), "{needed}: {shipped:?}");
    }
    let bytes: u64 = shipped
        .iter()
        .map(|f| fs::metadata(repo("plugin").join(f)).unwrap().len())
        .sum();
    assert!(bytes < 64 * 1024, "{bytes} bytes");
    // What its README tells the user to run exists.
    let readme = fs::read_to_string(repo("plugin/README.md")).unwrap();
    for command in ["--statusline-only", "uninstall --purge", "ctxguard doctor"] {
        assert!(readme.contains(command), "{command}");
    }
}
