//! `install --client codex`, `uninstall --client codex` and `doctor`'s Codex checks, on real
//! files in a temporary `CODEX_HOME`; and, where the real Codex CLI is installed
//! (`target/codex-0.171.0`, as `.ci/run` and the end-to-end tests install it), Codex's own
//! verdict on the trust install writes.

use std::fs;
#[cfg(unix)]
use std::io::{BufRead, BufReader, Write};
#[cfg(unix)]
use std::path::Path;
use std::path::PathBuf;
#[cfg(unix)]
use std::process::{Command, Stdio};
#[cfg(unix)]
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::*;

const CODEX_HOOKS: [(&str, &str); 5] = [
    ("SessionStart", "sessionstart"),
    ("UserPromptSubmit", "userpromptsubmit"),
    ("PreToolUse", "pretooluse"),
    ("PreCompact", "precompact"),
    ("SessionEnd", "sessionend"),
];

/// A test environment whose `CODEX_HOME` is `<tmp>/codex`.
fn codex_env() -> TestEnv {
    let mut env = TestEnv::new();
    let home = env.dir.path().join("codex");
    fs::create_dir_all(&home).unwrap();
    env.set("CODEX_HOME", home.to_str().unwrap());
    env
}

/// The table header of the trust entry `<hooks.json>:<key>` as `toml_edit` writes it: the
/// canonical `hooks.json` (on Windows without the `\\?\` prefix), in a basic string, or a
/// literal one when it holds backslashes (Windows).
fn state_header(env: &TestEnv, key: &str) -> String {
    let path = fs::canonicalize(codex_home(env))
        .unwrap()
        .join("hooks.json");
    let path = path.to_str().unwrap();
    let path = path.strip_prefix(r"\\?\").unwrap_or(path);
    if path.contains('\\') {
        format!("[hooks.state.'{path}:{key}']")
    } else {
        format!("[hooks.state.\"{path}:{key}\"]")
    }
}

fn codex_home(env: &TestEnv) -> PathBuf {
    env.dir.path().join("codex")
}

fn hooks_json(env: &TestEnv) -> PathBuf {
    codex_home(env).join("hooks.json")
}

fn config_toml(env: &TestEnv) -> PathBuf {
    codex_home(env).join("config.toml")
}

/// The binary's path as install writes it, quoted for `sh` when it must be.
fn bin() -> String {
    let c = fs::canonicalize(env!("CARGO_BIN_EXE_ctxguard")).unwrap();
    let c = c.to_str().unwrap();
    let c = c.strip_prefix(r"\\?\").unwrap_or(c);
    let plain = c
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@%".contains(&b));
    if plain {
        c.to_string()
    } else {
        format!("'{}'", c.replace('\'', r"'\''"))
    }
}

/// Files in Codex's directory (its backups and records), by name.
fn names(env: &TestEnv) -> Vec<String> {
    let mut n: Vec<String> = fs::read_dir(codex_home(env))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_str().unwrap().to_string())
        .collect();
    n.sort();
    n
}

fn run(env: &TestEnv, args: &[&str]) -> Run {
    let r = env.run(args, "");
    assert_eq!(r.code, 0, "{args:?}: {r:?}");
    r
}

#[test]
fn install_writes_the_hooks_once_and_says_codex_skips_them_until_trusted() {
    let env = codex_env();
    let dry = run(&env, &["install", "--client", "codex", "--dry-run"]);
    assert!(dry.stdout.contains("would change"), "{}", dry.stdout);
    assert!(dry.stdout.ends_with("(dry run: nothing written)\n"));
    assert!(names(&env).is_empty(), "a dry run writes nothing");

    let first = run(&env, &["install", "--client", "codex"]);
    let bin = bin();
    let want: serde_json::Map<String, Value> = CODEX_HOOKS
        .iter()
        .map(|(event, sub)| {
            let mut handler = json!({"type": "command", "command": format!("{bin} {sub}")});
            // SessionEnd gets Codex's cap, 3 s (its default is 1).
            if *event == "SessionEnd" {
                handler["timeout"] = json!(3);
            }
            ((*event).to_string(), json!([{ "hooks": [handler] }]))
        })
        .collect();
    let text = fs::read_to_string(hooks_json(&env)).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({ "hooks": want })
    );
    for (event, sub) in CODEX_HOOKS {
        assert!(
            first
                .stdout
                .contains(&format!("  - {event}: added `{bin} {sub}`")),
            "{}",
            first.stdout
        );
    }
    assert!(
        first.stdout.contains("5 of ctxguard's are not trusted yet")
            && first.stdout.contains("type /hooks")
            && first.stdout.contains("--trust"),
        "{}",
        first.stdout
    );
    assert!(
        !config_toml(&env).exists(),
        "no trust written without --trust"
    );

    let again = run(&env, &["install", "--client", "codex"]);
    assert!(
        again.stdout.contains(&format!(
            "ctxguard is already installed in {} (nothing changed)",
            hooks_json(&env).display()
        )),
        "{}",
        again.stdout
    );
    assert_eq!(fs::read_to_string(hooks_json(&env)).unwrap(), text);
    assert_eq!(names(&env), ["hooks.json", "hooks.json.ctxguard-created"]);
}

const THEIR_HOOKS: &str = r#"{"description": "my hooks",
  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}}
"#;

const THEIR_CONFIG: &str =
    "# my Codex settings\nmodel = \"gpt-5\"   # the default\n\n[profiles.fast]\nmodel = \"mini\"\n";

#[test]
fn install_keeps_the_users_files_backs_them_up_and_uninstall_gives_them_back_byte_for_byte() {
    let env = codex_env();
    fs::write(hooks_json(&env), THEIR_HOOKS).unwrap();
    fs::write(config_toml(&env), THEIR_CONFIG).unwrap();

    let out = run(&env, &["install", "--client", "codex", "--trust"]);
    let doc: Value = serde_json::from_str(&fs::read_to_string(hooks_json(&env)).unwrap()).unwrap();
    assert_eq!(doc["description"], "my hooks");
    assert_eq!(
        doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "guard.sh"
    );
    assert_eq!(
        doc["hooks"]["PreToolUse"][1]["hooks"][0]["command"],
        format!("{} pretooluse", bin())
    );
    let keys: Vec<&String> = doc["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "PreToolUse",
            "Stop",
            "SessionStart",
            "UserPromptSubmit",
            "PreCompact",
            "SessionEnd"
        ]
    );
    // The trust: one table per hook, after the user's own lines, which are kept.
    let config = fs::read_to_string(config_toml(&env)).unwrap();
    assert!(config.starts_with(THEIR_CONFIG), "{config}");

    for key in [
        "session_start:0:0",
        "user_prompt_submit:0:0",
        "pre_tool_use:1:0",
        "pre_compact:0:0",
        "session_end:0:0",
    ] {
        assert!(
            config.contains(&format!(
                "{}\ntrusted_hash = \"sha256:",
                state_header(&env, key)
            )),
            "{key}: {config}"
        );
    }
    assert_eq!(config.matches("trusted_hash").count(), 5);
    assert!(
        out.stdout
            .contains("Codex trusts all 5 of ctxguard's hooks"),
        "{}",
        out.stdout
    );
    // A backup of each file, holding the original bytes.
    for (file, original) in [("hooks.json", THEIR_HOOKS), ("config.toml", THEIR_CONFIG)] {
        let backups: Vec<String> = names(&env)
            .into_iter()
            .filter(|n| n.starts_with(&format!("{file}.ctxguard-backup-")))
            .collect();
        assert_eq!(backups.len(), 1, "{file}: {:?}", names(&env));
        assert_eq!(
            fs::read_to_string(codex_home(&env).join(&backups[0])).unwrap(),
            original
        );
    }
    let again = run(&env, &["install", "--client", "codex", "--trust"]);
    assert!(
        again.stdout.contains("already trusted") && again.stdout.contains("already installed"),
        "{}",
        again.stdout
    );

    let dry = run(&env, &["uninstall", "--client", "codex", "--dry-run"]);
    assert!(
        dry.stdout.ends_with("(dry run: nothing written)\n"),
        "{}",
        dry.stdout
    );
    assert_eq!(fs::read_to_string(config_toml(&env)).unwrap(), config);

    let out = run(&env, &["uninstall", "--client", "codex"]);
    assert_eq!(fs::read_to_string(hooks_json(&env)).unwrap(), THEIR_HOOKS);
    assert_eq!(fs::read_to_string(config_toml(&env)).unwrap(), THEIR_CONFIG);
    assert!(
        out.stdout.contains("PreToolUse: removed the trust of"),
        "{}",
        out.stdout
    );
    let again = run(&env, &["uninstall", "--client", "codex"]);
    assert!(
        again.stdout.contains("ctxguard is not registered in"),
        "{}",
        again.stdout
    );
}

#[test]
fn uninstall_removes_the_files_install_created_and_keeps_a_hook_added_since_trusted() {
    let env = codex_env();
    run(&env, &["install", "--client", "codex", "--trust"]);
    assert!(config_toml(&env).exists());
    run(&env, &["uninstall", "--client", "codex"]);
    assert!(names(&env).is_empty(), "{:?}", names(&env));

    // A hook of the user's added after ctxguard's, and trusted: it moves up when ctxguard's
    // group goes, and its trust moves with it.
    run(&env, &["install", "--client", "codex", "--trust"]);
    let mut doc: Value =
        serde_json::from_str(&fs::read_to_string(hooks_json(&env)).unwrap()).unwrap();
    doc["hooks"]["PreToolUse"]
        .as_array_mut()
        .unwrap()
        .push(json!({"hooks": [{"type": "command", "command": "mine"}]}));
    fs::write(hooks_json(&env), doc.to_string()).unwrap();

    let mut config = fs::read_to_string(config_toml(&env)).unwrap();
    config.push_str(&format!(
        "\n{}\ntrusted_hash = \"sha256:mine\"\n",
        state_header(&env, "pre_tool_use:1:0")
    ));
    fs::write(config_toml(&env), &config).unwrap();
    let out = run(&env, &["uninstall", "--client", "codex"]);
    assert!(out.stdout.contains("moved with it"), "{}", out.stdout);
    let doc: Value = serde_json::from_str(&fs::read_to_string(hooks_json(&env)).unwrap()).unwrap();
    assert_eq!(
        doc,
        json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "mine"}]}]}})
    );
    assert_eq!(
        fs::read_to_string(config_toml(&env)).unwrap().trim_start(),
        format!(
            "{}\ntrusted_hash = \"sha256:mine\"\n",
            state_header(&env, "pre_tool_use:0:0")
        )
    );
}

#[test]
fn claude_code_flags_are_refused_for_codex_and_trust_for_claude_code() {
    let env = codex_env();
    for args in [
        &["install", "--client", "codex", "--project"][..],
        &[
            "install",
            "--client",
            "codex",
            "--client-version",
            "2.1.330",
        ],
        &["uninstall", "--client", "codex", "--settings", "x.json"],
        &["install", "--trust"],
    ] {
        let r = env.run(args, "");
        assert_eq!(r.code, 1, "{args:?}: {r:?}");
    }
    assert!(names(&env).is_empty());
}

#[test]
fn a_broken_config_toml_stops_trust_before_anything_is_written() {
    let env = codex_env();
    fs::write(config_toml(&env), "model = [broken").unwrap();
    let r = env.run(&["install", "--client", "codex", "--trust"], "");
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("not valid TOML"), "{}", r.stderr);
    assert_eq!(names(&env), ["config.toml"]);
    // Without --trust the hooks go in, and install says it cannot tell the trust.
    let r = run(&env, &["install", "--client", "codex"]);
    assert!(
        r.stdout.contains("cannot say which hooks Codex trusts"),
        "{}",
        r.stdout
    );
    assert!(hooks_json(&env).exists());
}

/// `doctor --client codex --json`'s findings of the `codex` check, as `status: message`, and
/// its exit code.
fn doctor(env: &TestEnv) -> (i32, Vec<String>) {
    let r = env.run(&["doctor", "--client", "codex", "--json"], "");
    let report: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"));
    let findings = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "codex")
        .map(|f| {
            format!(
                "{}: {}",
                f["status"].as_str().unwrap(),
                f["message"].as_str().unwrap()
            )
        })
        .collect();
    (r.code, findings)
}

#[test]
fn doctor_says_which_codex_hooks_are_missing_untrusted_or_trusted() {
    let env = codex_env();
    let home = codex_home(&env);
    let (code, f) = doctor(&env);
    assert_eq!(code, 1);
    assert!(
        f[0].starts_with("fail: ctxguard is not registered with Codex CLI"),
        "{f:?}"
    );

    run(&env, &["install", "--client", "codex"]);
    let (code, f) = doctor(&env);
    assert_eq!(code, 1);
    assert_eq!(
        f[0],
        "fail: Codex skips ctxguard's SessionStart (not trusted), UserPromptSubmit (not trusted), \
         PreToolUse (not trusted), PreCompact (not trusted), SessionEnd (not trusted): it runs a \
         hook of hooks.json only once trusted"
    );

    run(&env, &["install", "--client", "codex", "--trust"]);
    let (code, f) = doctor(&env);
    assert_eq!(code, 0, "{f:?}");
    assert_eq!(
        f,
        [
            format!(
                "ok: Codex runs ctxguard's 5 hooks from {}, each trusted",
                home.join("hooks.json").display()
            ),
            format!(
                "info: {} sets no compaction limit: Codex compacts at 90% of the model's window",
                home.join("config.toml").display()
            ),
            // What ctxguard cannot do the same way on Codex, said, not faked.
            "info: on Codex, the nudge reads the rollout's token counts (Codex has no status \
             line, so no gauge), and Codex's summary can be neither steered nor kept (its \
             PreCompact and PostCompact carry no instructions and no summary): the recovery \
             block brings every fact back after the compaction (docs/clients.md)"
                .to_string(),
        ]
    );

    // A handler changed by hand, one taken out.
    let mut doc: Value =
        serde_json::from_str(&fs::read_to_string(hooks_json(&env)).unwrap()).unwrap();
    doc["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = json!(30);
    doc["hooks"]
        .as_object_mut()
        .unwrap()
        .shift_remove("SessionEnd");
    fs::write(hooks_json(&env), doc.to_string()).unwrap();
    let (code, f) = doctor(&env);
    assert_eq!(code, 1);
    assert_eq!(
        f[..2],
        [
            format!(
                "fail: {} lacks SessionEnd (`ctxguard sessionend`)",
                home.join("hooks.json").display()
            ),
            "fail: Codex skips ctxguard's PreToolUse (changed since it was trusted): it runs a \
             hook of hooks.json only once trusted"
                .to_string()
        ]
    );
}

#[test]
fn doctor_says_nothing_of_codex_without_its_directory() {
    let env = TestEnv::new();
    let mut cmd = env.command(&["doctor", "--json"]);
    cmd.env_remove("CODEX_HOME");
    let out = cmd.output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let codex = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "codex")
        .count();
    assert_eq!(codex, 0, "{report}");
}

/// The real Codex CLI the end-to-end tests drive (installed with npm on first use); `None`
/// (said) without npm. (Its Linux build: not on Windows.)
#[cfg(unix)]
fn real_codex() -> Option<PathBuf> {
    crate::e2e_codex::codex().map(Path::to_path_buf)
}

/// `hooks/list` from the real `codex app-server` (stdio JSON-RPC) on `codex_home`.
#[cfg(unix)]
pub(crate) fn hooks_list(codex: &Path, env: &TestEnv) -> Value {
    let mut child = Command::new(codex)
        .arg("app-server")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.home())
        .env("CODEX_HOME", env.dir.path().join("codex"))
        .current_dir(env.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting codex app-server");
    let mut stdin = child.stdin.take().unwrap();
    for line in [
        json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "ctxguard-test", "version": "0"}}}),
        json!({"method": "initialized"}),
        json!({"id": 2, "method": "hooks/list", "params": {}}),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                if v["id"] == 2 {
                    let _ = tx.send(v);
                    return;
                }
            }
        }
    });
    let answer = rx.recv_timeout(Duration::from_secs(60));
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    answer.expect("hooks/list answered within 60 s")["result"]["data"][0].clone()
}

#[cfg(unix)]
#[test]
fn the_real_codex_trusts_what_install_trust_writes() {
    let Some(codex) = real_codex() else {
        return;
    };
    let env = codex_env();
    run(&env, &["install", "--client", "codex"]);
    let listed = hooks_list(&codex, &env);
    let status = |listed: &Value| -> Vec<(String, String)> {
        listed["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["command"].as_str().unwrap().to_string(),
                    h["trustStatus"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let before = status(&listed);
    assert_eq!(before.len(), 5, "{listed}");
    assert!(before.iter().all(|(_, s)| s == "untrusted"), "{before:?}");
    assert_eq!(listed["errors"], json!([]), "{listed}");

    run(&env, &["install", "--client", "codex", "--trust"]);
    let after = status(&hooks_list(&codex, &env));
    assert_eq!(after.len(), 5);
    assert!(after.iter().all(|(_, s)| s == "trusted"), "{after:?}");
    let mut commands: Vec<String> = after.into_iter().map(|(c, _)| c).collect();
    commands.sort();
    let mut want: Vec<String> = CODEX_HOOKS
        .iter()
        .map(|(_, sub)| format!("{} {sub}", bin()))
        .collect();
    want.sort();
    assert_eq!(commands, want);
}

/// A config.toml that parses but cannot take a trust entry (its `hooks` an inline table): `--trust`
/// is refused before anything is written, so no hook is left registered and untrusted.
#[test]
fn trust_that_cannot_be_recorded_writes_nothing() {
    let env = codex_env();
    let config = "hooks = { foo = 1 }\n";
    fs::write(config_toml(&env), config).unwrap();
    let out = env.run(&["install", "--client", "codex", "--trust"], "");
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("cannot record trust there, nothing written"),
        "{out:?}"
    );
    assert!(!hooks_json(&env).exists());
    assert_eq!(fs::read_to_string(config_toml(&env)).unwrap(), config);
}

#[test]
fn files_kept_with_crlf_line_endings_keep_them() {
    let env = codex_env();
    let crlf = |text: &str| text.replace('\n', "\r\n");
    fs::write(hooks_json(&env), crlf(THEIR_HOOKS)).unwrap();
    fs::write(config_toml(&env), crlf(THEIR_CONFIG)).unwrap();

    run(&env, &["install", "--client", "codex", "--trust"]);
    for path in [hooks_json(&env), config_toml(&env)] {
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("ctxguard") || text.contains("trusted_hash"));
        assert_eq!(
            text.matches('\n').count(),
            text.matches("\r\n").count(),
            "{}: {text:?}",
            path.display()
        );
    }
    assert_eq!(
        fs::read_to_string(config_toml(&env))
            .unwrap()
            .matches("trusted_hash")
            .count(),
        5
    );

    run(&env, &["uninstall", "--client", "codex"]);
    assert_eq!(
        fs::read_to_string(hooks_json(&env)).unwrap(),
        crlf(THEIR_HOOKS)
    );
    assert_eq!(
        fs::read_to_string(config_toml(&env)).unwrap(),
        crlf(THEIR_CONFIG)
    );
}

#[test]
fn an_empty_hooks_object_comes_back_as_it_was() {
    let env = codex_env();
    fs::write(hooks_json(&env), "{\"hooks\":{}}").unwrap();
    run(&env, &["install", "--client", "codex"]);
    assert!(fs::read_to_string(hooks_json(&env))
        .unwrap()
        .contains("pretooluse"));
    run(&env, &["uninstall", "--client", "codex"]);
    assert_eq!(
        fs::read_to_string(hooks_json(&env)).unwrap(),
        "{\"hooks\":{}}"
    );
}
