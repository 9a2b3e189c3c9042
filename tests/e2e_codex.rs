//! End-to-end: the real Codex CLI (npm `@openai/codex`, pinned 0.171.0, its native linux-x64
//! binary) running ctxguard's hooks in `codex exec`, against a scripted stand-in for the
//! Responses API on 127.0.0.1 (`tests/e2e/fake_responses.py`, a custom `model_providers` entry
//! with `wire_api = "responses"`). The hooks are registered by `ctxguard install --client codex
//! --trust`, as a user would, so Codex runs them without `--dangerously-bypass-hook-trust`. Each
//! test asserts on what the model was sent (the stand-in's request log) and on ctxguard's state.
//! Codex is installed with npm into `target/codex-0.171.0` on first use; without npm these tests
//! say so and pass without checking.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

const CODEX_VERSION: &str = "0.171.0";

/// The Codex binary, installed once per test run; `None` when npm is absent.
pub(crate) fn codex() -> Option<&'static Path> {
    static CODEX: OnceLock<Option<PathBuf>> = OnceLock::new();
    CODEX
        .get_or_init(|| {
            crate::e2e::npm_client(
                &format!("codex-{CODEX_VERSION}"),
                &format!("@openai/codex@{CODEX_VERSION}"),
                "codex",
                &format!("Codex CLI {CODEX_VERSION}"),
            )
        })
        .as_deref()
}

/// The stand-in Responses API, killed on drop.
struct Api {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Api {
    fn start(dir: &Path) -> Api {
        let log = dir.join("requests.jsonl");
        let port_file = dir.join("port");
        let child = Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/fake_responses.py"))
            .arg("--log")
            .arg(&log)
            .arg("--port-file")
            .arg(&port_file)
            .arg("--idle-exit")
            .arg("600")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the stand-in API (python3)");
        let mut port = None;
        for _ in 0..100 {
            if let Some(p) = fs::read_to_string(&port_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                port = Some(p);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Api {
            child,
            port: port.expect("the stand-in API did not start"),
            log,
        }
    }

    /// Every request the stand-in received, oldest first.
    fn requests(&self) -> Vec<Value> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        if let Some(keep) = std::env::var_os("CTXGUARD_E2E_KEEP") {
            let _ = fs::copy(&self.log, Path::new(&keep));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A private Codex home, ctxguard state and project, with ctxguard installed for Codex.
struct Rig {
    // The stand-in stops before its folder goes.
    api: Api,
    dir: tempfile::TempDir,
    codex: PathBuf,
}

impl Rig {
    /// Codex configured with a 100k window and an auto-compact limit of 20k; ctxguard's nudge
    /// 5k before it (critical 2k before).
    fn new() -> Option<Rig> {
        let codex = codex()?.to_path_buf();
        let dir = tempfile::tempdir().unwrap();
        for sub in ["home", "codex", "state", "proj"] {
            fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let api = Api::start(dir.path());
        let config = format!(
            "model = \"mock-model\"\nmodel_provider = \"mock\"\napproval_policy = \"never\"\n\
             sandbox_mode = \"danger-full-access\"\nmodel_context_window = 100000\n\
             model_auto_compact_token_limit = 20000\n\n[model_providers.mock]\nname = \"mock\"\n\
             base_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\n\
             request_max_retries = 0\nstream_max_retries = 0\n",
            api.port
        );
        fs::write(dir.path().join("codex/config.toml"), config).unwrap();
        let rig = Rig { api, dir, codex };
        // Registered and trusted as a user would: Codex then runs them without
        // --dangerously-bypass-hook-trust.
        let out = rig.ctxguard(&["install", "--client", "codex", "--trust"]);
        assert!(out.status.success(), "install failed: {out:?}");
        Some(rig)
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("CODEX_HOME", self.path("codex"))
            .env("CTXGUARD_HOME", self.path("state"))
            .env("CTXGUARD_HEADROOM_TOKENS", "5000")
            .env("CTXGUARD_CRITICAL_HEADROOM_TOKENS", "2000")
            .env("TERM", "dumb");
    }

    fn ctxguard(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxguard"));
        self.env(&mut cmd);
        cmd.args(args).output().unwrap()
    }

    /// `codex exec` with `args`, in the project; its output.
    fn exec(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(&self.codex);
        self.env(&mut cmd);
        cmd.current_dir(self.path("proj"))
            .arg("exec")
            .arg("--skip-git-repo-check")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// The requests, each as (kind, its body's text).
    fn requests(&self) -> Vec<(String, String)> {
        self.api
            .requests()
            .into_iter()
            .filter(|r| r["method"] == "POST")
            .map(|r| {
                (
                    r["kind"].as_str().unwrap_or_default().to_string(),
                    r["body"].to_string(),
                )
            })
            .collect()
    }

    /// The checkpoints of compactions (not those `SessionEnd` writes as each `codex exec` ends).
    fn compactions(&self) -> Vec<Value> {
        self.checkpoints()
            .into_iter()
            .filter(|cp| matches!(cp["meta"]["trigger"].as_str(), Some("auto" | "manual")))
            .collect()
    }

    /// Every checkpoint (the sessions' directories under the state's `checkpoints/`).
    fn checkpoints(&self) -> Vec<Value> {
        let root = self.path("state/checkpoints");
        let mut out = Vec::new();
        for session in fs::read_dir(&root).into_iter().flatten().flatten() {
            for cp in fs::read_dir(session.path()).into_iter().flatten().flatten() {
                let name = cp.file_name().to_string_lossy().to_string();
                let numbered = name
                    .strip_prefix("cp_")
                    .and_then(|n| n.strip_suffix(".json"))
                    .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()));
                if numbered {
                    out.push(
                        serde_json::from_str(&fs::read_to_string(cp.path()).unwrap()).unwrap(),
                    );
                }
            }
        }
        out
    }
}

const NUDGE: &str = "ctxguard: about ";
const CRITICAL: &str = "ctxguard: auto-compaction is imminent";
const RECOVERY: &str = "ctxguard recovery: compaction #1";

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

/// The index of the first compaction request.
fn compaction_at(requests: &[(String, String)]) -> usize {
    requests
        .iter()
        .position(|(kind, _)| kind == "compaction")
        .unwrap_or_else(|| panic!("no compaction request in {:#?}", kinds(requests)))
}

fn kinds(requests: &[(String, String)]) -> Vec<&str> {
    requests.iter().map(|(k, _)| k.as_str()).collect()
}

#[test]
fn codex_mid_turn_the_nudge_comes_first_then_the_checkpoint_and_the_recovery_once() {
    let Some(rig) = Rig::new() else { return };
    // Three tool calls: the first reply is past the nudge's point (15k), the second near the
    // limit, the third past Codex's 20k limit: the tool runs, then Codex compacts mid-turn.
    let out = rig.exec(&[
        "RUN_TOOL echo one\nRUN_TOOL echo two\nRUN_TOOL echo three\nUSAGES=16000,17000,21000\n\
         AFTER_USAGE=3000",
    ]);
    assert!(out.status.success(), "codex exec failed: {out:?}");
    let requests = rig.requests();
    let at = compaction_at(&requests);
    // The nudge: in the request right after the call that crossed the point, once, and in
    // none before it; the model had two requests to act on it before the compaction.
    assert_eq!(count(&requests[0].1, NUDGE), 0);
    assert_eq!(count(&requests[1].1, NUDGE), 1, "{:#?}", kinds(&requests));
    assert!(at >= 3, "{:#?}", kinds(&requests));
    for (_, body) in &requests[..at] {
        assert_eq!(count(body, RECOVERY), 0);
        assert!(count(body, NUDGE) <= 1, "the nudge is given once");
    }
    // Past the limit no nudge is given: Codex compacts once the call has run, and the model
    // would get it only inside the history the summarizer reads.
    assert_eq!(count(&requests[at].1, CRITICAL), 0, "{}", requests[at].1);
    // The checkpoint, of an automatic compaction, from the rollout.
    let cps = rig.compactions();
    assert_eq!(cps.len(), 1, "{cps:#?}");
    assert_eq!(cps[0]["meta"]["trigger"], "auto");
    assert!(cps[0]["meta"]["transcript_path"]
        .as_str()
        .unwrap()
        .contains("/sessions/"));
    assert!(
        cps[0]["tools_used"].to_string().contains("Bash"),
        "{}",
        cps[0]
    );
    // The recovery: in the first request after the compaction, once.
    let after = &requests[at + 1].1;
    assert_eq!(count(after, RECOVERY), 1, "{after}");
    assert!(
        after.contains("RUN_TOOL echo one"),
        "the ask is in the block"
    );
}

#[test]
fn codex_before_a_turn_the_recovery_reaches_the_first_request_once() {
    let Some(rig) = Rig::new() else { return };
    // A turn that ends over the limit: Codex compacts at the start of the next one.
    let out = rig.exec(&["RUN_TOOL echo one\nUSAGES=16000,21000\nAFTER_USAGE=3000"]);
    assert!(out.status.success(), "codex exec failed: {out:?}");
    let first = rig.requests();
    assert_eq!(
        count(&first[1].1, NUDGE),
        1,
        "nudged before the turn ended: {}",
        first[1].1
    );
    assert!(!first.iter().any(|(k, _)| k == "compaction"));
    let out = rig.exec(&["resume", "--last", "second prompt AFTER_USAGE=3000"]);
    assert!(out.status.success(), "codex exec resume failed: {out:?}");
    let requests = rig.requests();
    let at = compaction_at(&requests);
    assert!(at >= first.len());
    let after = &requests[at + 1].1;
    assert_eq!(count(after, RECOVERY), 1, "{after}");
    assert!(after.contains("second prompt"));
    // Nothing else repeats it: resume's SessionStart left it to the compaction's.
    assert_eq!(count(after, CRITICAL), 0);
    assert_eq!(rig.compactions().len(), 1);
    // `status` and `log` know the session and its compaction.
    let log = String::from_utf8_lossy(&rig.ctxguard(&["log"]).stdout).to_string();
    assert!(log.contains("compaction #1 (auto)"), "{log}");
}

/// Kills every process whose command line names `dir` (Codex's app-server daemon, which the TUI
/// leaves running from its copy under `$CODEX_HOME/packages`).
fn kill_processes_under(dir: &Path) {
    let needle = dir.to_string_lossy().to_string();
    for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

/// The Codex TUI in tmux, stopped (with its daemon) on drop.
struct Tui<'a> {
    rig: &'a Rig,
    name: String,
}

impl Tui<'_> {
    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Types `text`, presses Enter, and waits until the stand-in has received `requests`
    /// requests in all (at most 20 s).
    fn send(&self, text: &str, requests: usize) {
        Command::new("tmux")
            .args(["send-keys", "-t", &self.name, "-l", text])
            .status()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        Command::new("tmux")
            .args(["send-keys", "-t", &self.name, "Enter"])
            .status()
            .unwrap();
        for _ in 0..200 {
            if self.rig.requests().len() >= requests {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        // The turn's hooks and its last requests settle.
        std::thread::sleep(std::time::Duration::from_millis(1500));
    }
}

impl Drop for Tui<'_> {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
        let mut stop = Command::new(&self.rig.codex);
        self.rig.env(&mut stop);
        let _ = stop
            .args(["app-server", "daemon", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        kill_processes_under(self.rig.dir.path());
    }
}

#[test]
fn codex_tui_manual_compact_checkpoints_and_the_next_turn_gets_the_recovery_once() {
    let Some(rig) = Rig::new() else { return };
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("Codex TUI test skipped: tmux is not installed");
        return;
    }
    let name = format!("ctxguard-codex-{}", std::process::id());
    let mut launch = String::from("env -i");
    for (k, v) in [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", rig.path("home").display().to_string()),
        ("CODEX_HOME", rig.path("codex").display().to_string()),
        ("CTXGUARD_HOME", rig.path("state").display().to_string()),
        ("CTXGUARD_HEADROOM_TOKENS", "5000".into()),
        ("CTXGUARD_CRITICAL_HEADROOM_TOKENS", "2000".into()),
        ("TERM", "xterm-256color".into()),
    ] {
        launch.push_str(&format!(" {k}='{v}'"));
    }
    launch.push_str(&format!(" '{}'; sleep 60", rig.codex.display()));
    let status = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            "160",
            "-y",
            "50",
            "-c",
        ])
        .arg(rig.path("proj"))
        .arg(launch)
        .status()
        .unwrap();
    assert!(status.success());
    let tui = Tui { rig: &rig, name };
    for _ in 0..100 {
        if tui.screen().contains("Ask Codex") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let before = rig.requests().len();
    tui.send("RUN_TOOL echo one USAGES=16000", before + 2);
    tui.send("/compact", rig.requests().len() + 1);
    let compacted = rig.requests().len();
    tui.send("what next", compacted + 1);
    let requests = rig.requests();
    let at = compaction_at(&requests);
    // The nudge reached the model before the compaction; the screen shows none of it.
    assert!(requests[..at].iter().any(|(_, b)| count(b, NUDGE) == 1));
    let screen = tui.screen();
    assert!(!screen.contains("ctxguard"), "{screen}");
    // A manual compaction's checkpoint, and its recovery in the next turn's first request,
    // once (it waits for the user's next turn).
    let cps = rig.compactions();
    assert_eq!(cps.len(), 1, "{cps:#?}");
    assert_eq!(cps[0]["meta"]["trigger"], "manual");
    assert_eq!(count(&requests[at].1, RECOVERY), 0);
    let next = requests[at + 1..]
        .iter()
        .find(|(_, b)| b.contains("what next"))
        .expect("the next turn's request");
    assert_eq!(count(&next.1, RECOVERY), 1, "{}", next.1);
}
