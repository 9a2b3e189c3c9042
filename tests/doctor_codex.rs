//! `doctor --client codex` asks Codex itself: the `codex` on PATH for its version (and nothing
//! of Claude Code), and its app-server (`hooks/list`) whether it trusts ctxguard's hooks, which
//! is the word that counts when Codex changes how it hashes them. The version on a stand-in
//! script; the trust on the real Codex CLI of the end-to-end tests.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

use crate::util::*;

/// A temporary CODEX_HOME, and `bin` first on PATH.
fn env_with_path(bin: &Path) -> TestEnv {
    let mut env = TestEnv::new();
    let home = env.dir.path().join("codex");
    fs::create_dir_all(&home).unwrap();
    env.set("CODEX_HOME", home.to_str().unwrap());
    let path = std::env::var("PATH").unwrap_or_default();
    env.set("PATH", &format!("{}:{path}", bin.display()));
    env
}

/// Each finding as `status check: message`, and the exit code.
fn doctor(env: &TestEnv) -> (i32, Vec<String>) {
    let r = env.run(&["doctor", "--client", "codex", "--json"], "");
    let report: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"));
    let findings = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}: {}",
                f["status"].as_str().unwrap(),
                f["check"].as_str().unwrap(),
                f["message"].as_str().unwrap()
            )
        })
        .collect();
    (r.code, findings)
}

fn fake_codex(dir: &Path, prints: &str) -> std::path::PathBuf {
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let codex = bin.join("codex");
    fs::write(&codex, format!("#!/bin/sh\necho '{prints}'\n")).unwrap();
    fs::set_permissions(&codex, fs::Permissions::from_mode(0o755)).unwrap();
    codex
}

#[test]
fn doctor_client_codex_names_the_codex_it_found_and_nothing_of_claude_code() {
    let scratch = tempfile::tempdir().unwrap();
    let codex = fake_codex(scratch.path(), "codex-cli 0.171.0");
    let env = env_with_path(codex.parent().unwrap());
    let (_, findings) = doctor(&env);
    assert_eq!(
        findings[1],
        format!(
            "ok client: Codex CLI 0.171.0 ({}), a version the end-to-end tests cover",
            codex.display()
        ),
        "{findings:#?}"
    );
    assert!(
        !findings.iter().any(|f| f.contains("claude")),
        "{findings:#?}"
    );
    // Another version: named, and said to be untested.
    fake_codex(scratch.path(), "codex-cli 0.150.2");
    let (_, findings) = doctor(&env);
    assert_eq!(
        findings[1],
        format!(
            "info client: Codex CLI 0.150.2 ({}) is not a version the end-to-end tests cover \
             (0.171.0); its hook payloads were not checked against ctxguard",
            codex.display()
        )
    );
    // None on PATH.
    let bare = TestEnv::new();
    let mut bare = bare;
    bare.set(
        "CODEX_HOME",
        bare.dir.path().join("codex").to_str().unwrap(),
    );
    let (_, findings) = doctor(&bare);
    assert_eq!(
        findings[1],
        "info client: no `codex` on PATH, so its version is unknown (the end-to-end tests cover \
         Codex CLI 0.171.0)"
    );
}

/// The real Codex: `install --trust`, then doctor says trusted exactly where Codex's own
/// `hooks/list` does; a hash changed by hand, and both say it is not.
#[test]
fn doctor_reports_the_trust_codex_itself_reports() {
    let Some(codex) = crate::e2e_codex::codex() else {
        return;
    };
    let env = env_with_path(codex.parent().unwrap());
    let run = env.run(&["install", "--client", "codex", "--trust"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let statuses = |listed: &Value| -> Vec<String> {
        listed["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["trustStatus"].as_str().unwrap().to_string())
            .collect()
    };
    let listed = crate::install_codex::hooks_list(codex, &env);
    assert_eq!(statuses(&listed), ["trusted"; 5], "{listed}");
    let (code, findings) = doctor(&env);
    assert_eq!(code, 0, "{findings:#?}");
    assert!(
        findings.contains(
            &"ok codex: Codex 0.171.0 runs ctxguard's 5 hooks: it reports each trusted (codex \
              app-server, hooks/list)"
                .to_string()
        ),
        "{findings:#?}"
    );

    // One trusted hash no longer the handler's.
    let config = env.dir.path().join("codex/config.toml");
    let text = fs::read_to_string(&config).unwrap();
    let at = text.find("trusted_hash = \"sha256:").unwrap() + "trusted_hash = \"sha256:".len();
    let flipped = if &text[at..=at] == "0" { "1" } else { "0" };
    fs::write(
        &config,
        format!("{}{flipped}{}", &text[..at], &text[at + 1..]),
    )
    .unwrap();
    let listed = crate::install_codex::hooks_list(codex, &env);
    let untrusted: Vec<(String, String)> = listed["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["trustStatus"] != "trusted")
        .map(|h| {
            (
                h["eventName"].as_str().unwrap().to_string(),
                h["trustStatus"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(untrusted.len(), 1, "{listed}");
    let (event, status) = &untrusted[0];
    let event = format!("{}{}", event[..1].to_uppercase(), &event[1..]);
    let (code, findings) = doctor(&env);
    assert_eq!(code, 1, "{findings:#?}");
    assert!(
        findings.contains(&format!(
            "fail codex: Codex 0.171.0 itself reports ctxguard's {event} ({status}) not trusted, \
             and skips them"
        )),
        "{findings:#?}"
    );
    let human = env.run(&["doctor", "--client", "codex"], "");
    // An explanation wraps under its item: read it as one line.
    let text = human.stdout.replace(&format!("\n{:17}", ""), " ");
    assert!(
        text.contains(
            "fix: review and trust them in Codex (start `codex`, type /hooks), or run `ctxguard \
             install --client codex --trust`"
        ),
        "{human:?}"
    );
}
