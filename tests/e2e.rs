//! End-to-end: the real Claude Code client (npm `@anthropic-ai/claude-code`, pinned 2.1.330, its
//! native linux-x64 binary) with ctxguard's hooks registered, talking to a scripted stand-in for
//! the Messages API on 127.0.0.1 (`tests/e2e/fake_api.py`). Each test asserts on the requests the
//! stand-in received (what the model was sent) and on ctxguard's state. The client is installed
//! with npm into `target/claude-code-2.1.330` on first use; without npm these tests say so and
//! pass without checking.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::util::*;

const CLIENT_VERSION: &str = "2.1.330";

/// The client binary, installed once per test run; `None` when npm is absent.
fn client() -> Option<&'static Path> {
    static CLIENT: OnceLock<Option<PathBuf>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target")
                .join(format!("claude-code-{CLIENT_VERSION}"));
            let bin = dir.join("node_modules/.bin/claude");
            if bin.exists() {
                return Some(bin);
            }
            if Command::new("npm").arg("--version").output().is_err() {
                eprintln!(
                    "e2e tests skipped: npm is not installed, so the Claude Code client cannot be"
                );
                return None;
            }
            fs::create_dir_all(&dir).unwrap();
            let status = Command::new("npm")
                .args([
                    "install",
                    "--no-save",
                    "--no-audit",
                    "--no-fund",
                    "--prefix",
                ])
                .arg(&dir)
                .arg(format!("@anthropic-ai/claude-code@{CLIENT_VERSION}"))
                .stdout(Stdio::null())
                .status()
                .expect("running npm");
            assert!(
                status.success(),
                "npm install @anthropic-ai/claude-code@{CLIENT_VERSION} failed"
            );
            assert!(bin.exists(), "{} missing after npm install", bin.display());
            Some(bin)
        })
        .as_deref()
}

/// The stand-in API, killed on drop.
struct FakeApi {
    child: Child,
    port: u16,
    log: PathBuf,
}

/// What the stand-in answers.
#[derive(Clone, Copy)]
struct Script {
    /// Bash calls per prompt (in the subagent, with `agent`).
    tool_calls: u32,
    /// Tokens in context in every reply...
    context_tokens: u64,
    /// ...and in every reply after a compaction, when set.
    after_compact_tokens: Option<u64>,
    /// A prompt with SPAWN first gets a foreground subagent that makes the Bash calls.
    agent: bool,
}

impl FakeApi {
    fn start(dir: &Path, script: Script) -> FakeApi {
        FakeApi::start_with(dir, script, &[])
    }

    /// Every request body received so far, in order.
    fn requests(&self) -> Vec<Value> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["body"].clone())
            .collect()
    }

    fn clear(&self) {
        let _ = fs::remove_file(&self.log);
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One client home with ctxguard registered, and a stand-in API.
struct Rig {
    env: TestEnv,
    api: FakeApi,
    client: PathBuf,
    settings: PathBuf,
    hook_log: PathBuf,
    project: PathBuf,
}

impl Rig {
    fn new(tool_calls: u32, context_tokens: u64) -> Option<Rig> {
        Rig::with(Script {
            tool_calls,
            context_tokens,
            after_compact_tokens: None,
            agent: false,
        })
    }

    fn with(script: Script) -> Option<Rig> {
        let client = client()?.to_path_buf();
        let env = TestEnv::new();
        fs::write(
            env.home().join(".claude.json"),
            r#"{"hasCompletedOnboarding": true, "autoUpdates": false}"#,
        )
        .unwrap();
        let project = env.dir.path().join("project");
        fs::create_dir_all(&project).unwrap();
        let hook_log = env.dir.path().join("hooks.log");
        let wrapper = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/hook.sh");
        // Exec form, as `ctxguard install` registers hooks: the client starts the logging
        // wrapper directly (no shell), and the wrapper runs ctxguard.
        let hook = |sub: &str| {
            json!([{"type": "command", "command": wrapper,
                    "args": [hook_log, env!("CARGO_BIN_EXE_ctxguard"), sub]}])
        };
        let settings = env.dir.path().join("settings.json");
        let config = json!({"hooks": {
            "PreToolUse": [{"matcher": "*", "hooks": hook("pretooluse")}],
            "UserPromptSubmit": [{"hooks": hook("userpromptsubmit")}],
            "PreCompact": [{"matcher": "auto|manual", "hooks": hook("precompact")}],
            "PostCompact": [{"matcher": "auto|manual", "hooks": hook("postcompact")}],
            "SessionStart": [{"hooks": hook("sessionstart")}],
            "SessionEnd": [{"hooks": hook("sessionend")}],
        }});
        fs::write(&settings, config.to_string()).unwrap();
        let api = FakeApi::start(env.dir.path(), script);
        Some(Rig {
            env,
            api,
            client,
            settings,
            hook_log,
            project,
        })
    }

    /// Runs `claude -p PROMPT` and returns its JSON result.
    fn claude(&self, prompt: &str, resume: Option<&str>, extra: &[&str]) -> Value {
        self.claude_with(&self.settings, prompt, resume, extra, &[])
    }

    /// [`Rig::claude`] with another settings file and more variables.
    fn claude_with(
        &self,
        settings: &Path,
        prompt: &str,
        resume: Option<&str>,
        extra: &[&str],
        vars: &[(&str, &str)],
    ) -> Value {
        let out = self.claude_run(settings, prompt, resume, extra, vars);
        assert!(
            out.status.success(),
            "claude failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    }

    /// Runs `claude -p PROMPT` as [`Rig::claude_with`] does, whatever its exit status.
    fn claude_run(
        &self,
        settings: &Path,
        prompt: &str,
        resume: Option<&str>,
        extra: &[&str],
        vars: &[(&str, &str)],
    ) -> std::process::Output {
        let mut cmd = Command::new(&self.client);
        cmd.args(["-p", prompt, "--settings", settings.to_str().unwrap()])
            .args(["--allowedTools", "Bash", "--output-format", "json"])
            .args(extra)
            .current_dir(&self.project)
            .stdin(Stdio::null());
        if let Some(id) = resume {
            cmd.args(["--resume", id]);
        }
        for (key, _) in std::env::vars() {
            if key.starts_with("CTXGUARD_")
                || key.starts_with("CLAUDE")
                || key.starts_with("ANTHROPIC")
            {
                cmd.env_remove(key);
            }
        }
        cmd.env("HOME", self.env.home())
            .env("CTXGUARD_HOME", self.env.state())
            .env(
                "ANTHROPIC_BASE_URL",
                format!("http://127.0.0.1:{}", self.api.port),
            )
            .env("ANTHROPIC_API_KEY", "sk-ant-e2e-test")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            // Never let the client update itself (into the system npm) during a test.
            .env("DISABLE_AUTOUPDATER", "1")
            .envs(vars.iter().copied());
        cmd.output().expect("running claude")
    }

    /// Every hook run: (subcommand, exit code, stdout), in order.
    fn hook_runs(&self) -> Vec<(String, i32, String)> {
        self.hook_runs_by()
            .into_iter()
            .map(|(sub, code, _, out)| (sub, code, out))
            .collect()
    }

    /// Every hook run: (subcommand, exit code, whether a subagent's, stdout), in order.
    fn hook_runs_by(&self) -> Vec<(String, i32, bool, String)> {
        fs::read_to_string(&self.hook_log)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let mut parts = l.splitn(4, '\t');
                let sub = parts.next().unwrap().to_string();
                let code = parts.next().unwrap().parse().unwrap();
                let subagent = parts.next() == Some("sub");
                (
                    sub,
                    code,
                    subagent,
                    parts.next().unwrap_or_default().replace('\u{1e}', "\n"),
                )
            })
            .collect()
    }

    /// No hook output ever approved, denied or blocked anything.
    fn assert_hooks_only_added_context(&self) {
        let runs = self.hook_runs();
        assert!(!runs.is_empty());
        for (sub, code, out) in runs {
            // The wrapper keeps the output on one line; a nudge is one JSON object.
            assert_eq!(code, 0, "{sub} exited {code}");
            for forbidden in ["permissionDecision", "\"decision\"", "\"continue\""] {
                assert!(!out.contains(forbidden), "{sub} printed {forbidden}: {out}");
            }
            if sub == "precompact" {
                // Plain text the client adds to the compaction's instructions, never JSON.
                assert!(
                    out.is_empty() || out.starts_with("ctxguard (a hook) adds facts"),
                    "{out}"
                );
                continue;
            }
            if !out.is_empty() {
                let v: Value = serde_json::from_str(&out).unwrap();
                assert_eq!(v.as_object().unwrap().len(), 1, "{out}");
                assert_eq!(
                    v["hookSpecificOutput"].as_object().unwrap().len(),
                    2,
                    "{out}"
                );
            }
        }
    }
}

/// The newest checkpoint a compaction wrote for `session` (each run's `SessionEnd` writes one
/// too, with trigger `end: …`).
fn compaction_checkpoint(rig: &Rig, session: &str) -> Value {
    let dir = rig.env.state().join("checkpoints").join(session);
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cp_") && n.ends_with(".json") && !n.ends_with(".receipt.json"))
        .collect();
    names.sort();
    names
        .iter()
        .rev()
        .map(|n| serde_json::from_str::<Value>(&fs::read_to_string(dir.join(n)).unwrap()).unwrap())
        .find(|cp| {
            !cp["meta"]["trigger"]
                .as_str()
                .unwrap_or("")
                .starts_with("end")
        })
        .expect("a compaction checkpoint")
}

fn count(body: &Value, needle: &str) -> usize {
    body.to_string().matches(needle).count()
}

const NUDGE: &str = "PreToolUse:Bash hook additional context: ctxguard:";
/// The nudge by any of its routes (PreToolUse, PostToolBatch, UserPromptSubmit).
const ANY_NUDGE: &str = "hook additional context: ctxguard:";
const RECOVERY: &str = "SessionStart hook additional context: ## ctxguard recovery";

#[test]
fn below_the_trigger_no_nudge_across_three_tool_calls() {
    // 150k on the client's default model, claude-opus-5-5, with no status line: 15% of its 1M
    // window (a 200k guess would nudge here).
    let Some(rig) = Rig::new(3, 150_000) else {
        return;
    };
    let out = rig.claude("run three commands", None, &[]);
    let session = out["session_id"].as_str().unwrap();
    let requests = rig.api.requests();
    assert_eq!(requests.len(), 4, "three tool calls, then the answer");
    assert!(requests
        .iter()
        .all(|r| count(r, "hook additional context") == 0));
    // The tool calls really ran.
    let last = requests.last().unwrap().to_string();
    for n in 1..=3 {
        assert!(
            last.contains(&format!("ctxguard-e2e-{n}")),
            "tool call {n} ran"
        );
    }
    let m = rig.env.marker(session);
    assert_eq!(
        (m["state"].as_str(), m["tokens"].as_u64()),
        (Some("idle"), Some(150_010))
    );
    assert_eq!(
        (m["window"].as_u64(), m["window_source"].as_str()),
        (Some(1_000_000), Some("model"))
    );
    rig.assert_hooks_only_added_context();
}

#[test]
fn above_the_trigger_the_nudge_is_injected_once_and_the_tools_still_run() {
    // 940k of the default model's 1M: past its trigger (927k), short of critical (952k).
    let Some(rig) = Rig::new(3, 940_000) else {
        return;
    };
    let out = rig.claude("run three commands", None, &[]);
    let session = out["session_id"].as_str().unwrap();
    let requests = rig.api.requests();
    assert_eq!(requests.len(), 4);
    // Injected once, at the first tool call whose PreToolUse can see the reply's usage in the
    // transcript (the client may not have flushed the first reply yet), then carried in the
    // history: never twice in one request.
    let counts: Vec<usize> = requests.iter().map(|r| count(r, NUDGE)).collect();
    assert_eq!(counts[0], 0, "{counts:?}");
    let monotonic = counts.windows(2).all(|w| w[0] <= w[1]);
    assert!(monotonic && counts.iter().all(|c| *c <= 1), "{counts:?}");
    assert_eq!(*counts.last().unwrap(), 1, "{counts:?}");
    let last = requests.last().unwrap().to_string();
    assert!(last.contains("(940k are in context now)"), "{last}");
    let last = requests.last().unwrap().to_string();
    for n in 1..=3 {
        assert!(
            last.contains(&format!("ctxguard-e2e-{n}")),
            "tool call {n} ran"
        );
    }
    assert_eq!(rig.env.marker(session)["state"], "nudged");
    let pretooluse: Vec<_> = rig
        .hook_runs()
        .into_iter()
        .filter(|r| r.0 == "pretooluse")
        .collect();
    assert_eq!(pretooluse.len(), 3);
    assert_eq!(
        pretooluse.iter().filter(|r| !r.2.is_empty()).count(),
        1,
        "one nudge printed"
    );
    rig.assert_hooks_only_added_context();
}

#[test]
fn manual_compact_checkpoints_and_the_next_prompt_carries_the_recovery_once() {
    let Some(rig) = Rig::new(2, 150_000) else {
        return;
    };
    let out = rig.claude("write a notes file", None, &[]);
    let session = out["session_id"].as_str().unwrap().to_string();
    rig.claude("/compact keep the open items", Some(&session), &[]);
    let cp = compaction_checkpoint(&rig, &session);
    assert_eq!(cp["meta"]["trigger"], "manual");
    assert_eq!(cp["meta"]["custom_instructions"], "keep the open items");
    assert_eq!(cp["asks"], json!(["write a notes file"]));
    assert_eq!(cp["tools_used"], json!([{"name": "Bash", "count": 2}]));
    // The client fires SessionStart(compact) right after the compaction, in the same run: the
    // recovery is consumed there and rides in the history from then on.
    assert_eq!(rig.env.marker(&session)["recovery_pending"], false);
    // PostCompact comes after SessionStart(compact) in this client (so the block shown right
    // after the compaction cannot know the summary); it keeps the summary beside the checkpoint.
    let order: Vec<String> = rig
        .hook_runs()
        .into_iter()
        .map(|r| r.0)
        .filter(|s| ["precompact", "sessionstart", "postcompact"].contains(&s.as_str()))
        .collect();
    assert!(
        order.ends_with(&[
            "precompact".into(),
            "sessionstart".into(),
            "postcompact".into()
        ]),
        "{order:?}"
    );
    let dir = rig.env.state().join("checkpoints").join(&session);
    let summaries: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".summary.md"))
        .collect();
    assert_eq!(summaries.len(), 1, "{summaries:?}");
    // Beside the compaction's checkpoint (not the one SessionEnd writes at the end of a run).
    let beside = dir.join(summaries[0].replace(".summary.md", ".json"));
    let beside: Value = serde_json::from_str(&fs::read_to_string(beside).unwrap()).unwrap();
    assert_eq!(beside["meta"]["trigger"], "manual");
    let summary = fs::read_to_string(dir.join(&summaries[0])).unwrap();
    assert!(
        summary.contains("the user asked for shell commands"),
        "{summary}"
    );

    rig.api.clear();
    rig.claude("what next?", Some(&session), &[]);
    let requests = rig.api.requests();
    assert!(!requests.is_empty());
    let counts: Vec<usize> = requests.iter().map(|r| count(r, RECOVERY)).collect();
    assert!(
        counts.iter().all(|c| *c == 1),
        "the recovery block, once, in every request: {counts:?}"
    );
    let first = requests[0].to_string();
    assert!(first.contains("compaction #1 of this session"));
    assert!(first.contains("write a notes file"));
    assert!(first.contains("keep the open items"));
    // Resuming again does not inject it again.
    rig.api.clear();
    rig.claude("and now?", Some(&session), &[]);
    let again = rig.api.requests();
    assert!(
        again.iter().all(|r| count(r, RECOVERY) == 1),
        "still only the one from before"
    );
    let sessionstart: Vec<_> = rig
        .hook_runs()
        .into_iter()
        .filter(|r| r.0 == "sessionstart")
        .collect();
    assert_eq!(
        sessionstart.iter().filter(|r| !r.2.is_empty()).count(),
        1,
        "printed once"
    );
    rig.assert_hooks_only_added_context();
}

#[test]
fn auto_compaction_runs_precompact_with_trigger_auto() {
    let Some(rig) = Rig::with(Script {
        tool_calls: 2,
        context_tokens: 150_000,
        after_compact_tokens: Some(20_000),
        agent: false,
    }) else {
        return;
    };
    let out = rig.claude("run two commands", None, &["--autocompact", "100000"]);
    let session = out["session_id"].as_str().unwrap();
    let cp = compaction_checkpoint(&rig, session);
    assert_eq!(cp["meta"]["trigger"], "auto");
    assert_eq!(cp["meta"]["custom_instructions"], Value::Null);
    assert!(rig.env.marker(session)["compactions"].as_u64().unwrap() >= 1);
    rig.assert_hooks_only_added_context();
}

/// The hook runs after the last `precompact` one (2.1.330 may run `PreCompact` twice for one
/// compaction, with a legitimate tool call between the two).
fn after_precompact(runs: &[(String, i32, String)]) -> &[(String, i32, String)] {
    let at = runs
        .iter()
        .rposition(|r| r.0 == "precompact")
        .expect("the client compacted");
    &runs[at + 1..]
}

#[test]
fn after_an_auto_compaction_the_old_usage_never_nudges() {
    // 150k in context on a 100k compaction window: the client compacts before its next request,
    // after which replies report 20k. The first tool calls after the compaction race the
    // client's flush of the transcript; a reading from before the compaction must never nudge.
    // Ten sessions, each with its own compaction.
    let Some(rig) = Rig::with(Script {
        tool_calls: 3,
        context_tokens: 150_000,
        after_compact_tokens: Some(20_000),
        agent: false,
    }) else {
        return;
    };
    for round in 0..10 {
        let before = rig.hook_runs().len();
        let out = rig.claude("run three commands", None, &["--autocompact", "100000"]);
        let session = out["session_id"].as_str().unwrap();
        let runs = rig.hook_runs()[before..].to_vec();
        let after = after_precompact(&runs);
        assert!(
            after.iter().any(|r| r.0 == "pretooluse"),
            "round {round}: tool calls after the compaction: {runs:?}"
        );
        for (sub, _, printed) in after {
            if sub == "pretooluse" || sub == "userpromptsubmit" {
                assert_eq!(
                    printed, "",
                    "round {round}: a stale nudge after the compaction"
                );
            }
        }
        let m = rig.env.marker(session);
        // Counted once, however many times PreCompact ran for it.
        assert_eq!(m["compactions"], 1, "round {round}: {runs:?}");
        assert!(
            m["tokens"].as_u64().is_none_or(|t| t < 100_000),
            "round {round}: {m}"
        );
        rig.api.clear();
    }
    rig.assert_hooks_only_added_context();
}

#[test]
fn autocompact_argument_and_setting_move_the_nudge_before_the_compaction() {
    // The default 1M model at 240k: far below its own trigger (927k), but past the trigger of a
    // 300k compaction window (227k, compaction at 267k).
    let Some(rig) = Rig::new(2, 240_000) else {
        return;
    };
    let out = rig.claude("run two commands", None, &["--autocompact", "300000"]);
    let session = out["session_id"].as_str().unwrap();
    // Nudged at a tool call (the first, unless the client had not flushed its reply yet).
    let last = rig.api.requests().last().unwrap().to_string();
    assert_eq!(count(rig.api.requests().last().unwrap(), NUDGE), 1);
    assert!(
        last.contains("about 27k tokens are left before auto-compaction, which comes at 267k tokens (240k are in context now)"),
        "{last}"
    );
    let m = rig.env.marker(session);
    assert_eq!(
        (m["compact_at"].as_u64(), m["compact_source"].as_str()),
        (Some(267_000), Some("flag"))
    );

    // The same with the per-model window in the user's settings, where /autocompact writes it.
    rig.api.clear();
    fs::create_dir_all(rig.env.home().join(".claude")).unwrap();
    fs::write(
        rig.env.home().join(".claude/settings.json"),
        r#"{"modelSettings": {"claude-opus-5-5": {"autoCompactWindow": 300000}}}"#,
    )
    .unwrap();
    let out = rig.claude("run two commands", None, &[]);
    let session = out["session_id"].as_str().unwrap();
    assert_eq!(count(rig.api.requests().last().unwrap(), NUDGE), 1);
    let m = rig.env.marker(session);
    assert_eq!(m["compact_at"], 267_000);
    assert!(
        m["compact_source"]["setting"].as_str().is_some_and(|f| f
            .starts_with("modelSettings.claude-opus-5-5.autoCompactWindow in ")
            && f.ends_with(".claude/settings.json")),
        "{m}"
    );
    rig.assert_hooks_only_added_context();
}

#[test]
fn a_text_only_turn_is_nudged_through_user_prompt_submit() {
    // No tool calls at all: 940k of 1M after the first answer.
    let Some(rig) = Rig::new(0, 940_000) else {
        return;
    };
    let out = rig.claude("just talk", None, &[]);
    let session = out["session_id"].as_str().unwrap().to_string();
    // The first prompt comes before any reply: nothing known, nothing said.
    assert_eq!(
        count(&rig.api.requests()[0], "hook additional context: ctxguard"),
        0
    );
    rig.api.clear();
    rig.claude("and more", Some(&session), &[]);
    let requests = rig.api.requests();
    let nudge = "UserPromptSubmit hook additional context: ctxguard:";
    assert_eq!(
        count(&requests[0], nudge),
        1,
        "the second prompt carries the nudge"
    );
    assert!(requests[0]
        .to_string()
        .contains("(940k are in context now)"));
    assert_eq!(rig.env.marker(&session)["state"], "nudged");
    // Once: a third prompt does not repeat it (the second carries it in its history only).
    rig.api.clear();
    rig.claude("once more", Some(&session), &[]);
    assert_eq!(
        count(&rig.api.requests()[0], nudge),
        1,
        "only the old one, in the history"
    );
    let printed = rig
        .hook_runs()
        .iter()
        .filter(|r| r.0 == "userpromptsubmit" && !r.2.is_empty())
        .count();
    assert_eq!(printed, 1);
    rig.assert_hooks_only_added_context();
}

#[test]
fn a_subagents_tool_calls_neither_take_nor_receive_the_nudge() {
    // 940k of 1M: the nudge is due. The main thread spawns a foreground subagent (one tool
    // call), and the subagent runs two Bash calls.
    let Some(rig) = Rig::with(Script {
        tool_calls: 2,
        context_tokens: 940_000,
        after_compact_tokens: None,
        agent: true,
    }) else {
        return;
    };
    let out = rig.claude("SPAWN a helper", None, &[]);
    let session = out["session_id"].as_str().unwrap();
    let runs = rig.hook_runs_by();
    let sub: Vec<_> = runs.iter().filter(|r| r.0 == "pretooluse" && r.2).collect();
    assert_eq!(sub.len(), 2, "the subagent's two Bash calls: {runs:?}");
    assert!(sub.iter().all(|r| r.3.is_empty()), "{sub:?}");
    // A subagent's requests start from its own prompt (SUBTASK): none carries the nudge.
    let is_sub = |r: &Value| r["messages"][0]["content"].to_string().contains("SUBTASK");
    let nudge = "hook additional context: ctxguard";
    let requests = rig.api.requests();
    assert!(requests.iter().any(&is_sub), "the subagent ran");
    for r in requests.iter().filter(|r| is_sub(r)) {
        assert_eq!(count(r, nudge), 0, "a subagent request carries the nudge");
    }
    // The nudge was not used up by the subagent: the main thread gets it, at its own tool call
    // (if the client had flushed the reply by then) or with the next prompt.
    let main_had_it = requests.iter().any(|r| !is_sub(r) && count(r, nudge) == 1);
    if !main_had_it {
        rig.api.clear();
        rig.claude("and then?", Some(session), &[]);
        let next = &rig.api.requests()[0];
        assert!(!is_sub(next));
        assert_eq!(
            count(next, "UserPromptSubmit hook additional context: ctxguard:"),
            1,
            "the main thread receives it with the next prompt"
        );
    }
    assert_eq!(rig.env.marker(session)["state"], "nudged");
    rig.assert_hooks_only_added_context();
}

/// Where the real client puts a subagent's `PreToolUse` `additionalContext`: into the
/// subagent's own next request, never the main thread's. (So a nudge given at a subagent's tool
/// call would reach only the subagent, whose context ends with its task: ctxguard gives none
/// there.) A probe hook answers every call with a marker naming whose call it was.
#[test]
fn a_subagents_hook_context_goes_to_the_subagent_not_the_main_thread() {
    let Some(rig) = Rig::with(Script {
        tool_calls: 2,
        context_tokens: 50_000,
        after_compact_tokens: None,
        agent: true,
    }) else {
        return;
    };
    let probe = rig.env.dir.path().join("probe.sh");
    fs::write(
        &probe,
        "#!/bin/sh\ninput=$(cat)\ncase $input in *'\"agent_id\"'*) who=SUBAGENT ;; *) who=MAIN ;; esac\n\
         printf '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"additionalContext\":\"PROBE-%s-CALL\"}}' \"$who\"\n",
    )
    .unwrap();
    #[cfg(unix)]
    fs::set_permissions(&probe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let settings = rig.env.dir.path().join("probe-settings.json");
    let config = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": probe}]}]}});
    fs::write(&settings, config.to_string()).unwrap();
    rig.claude_with(&settings, "SPAWN a helper", None, &[], &[]);
    let is_sub = |r: &Value| r["messages"][0]["content"].to_string().contains("SUBTASK");
    let requests = rig.api.requests();
    let (sub, main): (Vec<&Value>, Vec<&Value>) = requests.iter().partition(|r| is_sub(r));
    assert!(!sub.is_empty() && !main.is_empty(), "{requests:?}");
    assert!(
        sub.iter().any(|r| count(r, "PROBE-SUBAGENT-CALL") > 0),
        "the subagent's requests carry its own hook context"
    );
    assert!(
        main.iter().all(|r| count(r, "PROBE-SUBAGENT-CALL") == 0),
        "the main thread never sees a subagent's hook context"
    );
    assert!(
        main.iter().any(|r| count(r, "PROBE-MAIN-CALL") > 0),
        "the main thread's own call (spawning the subagent) carries its context"
    );
}

mod nudge_settings;
mod recovery;
mod summary_facts;

// Older clients: the same rig on another client version (the scenarios are in e2e_older.rs).

/// `@anthropic-ai/claude-code@VERSION`, installed once into `target/claude-code-VERSION` like
/// [`client`]; `None` when npm is absent.
fn client_at(version: &str) -> Option<PathBuf> {
    npm_client(
        &format!("claude-code-{version}"),
        &format!("@anthropic-ai/claude-code@{version}"),
        "claude",
        &format!("Claude Code {version}"),
    )
}

/// `package` (`name@version`), installed once into `target/DIR` with npm; its `bin` under
/// `node_modules/.bin`, or `None` (said) when npm is absent. One install at a time: tests run in
/// parallel and share the directory. `what` names the client in the skip message.
pub(crate) fn npm_client(dir: &str, package: &str, bin: &str, what: &str) -> Option<PathBuf> {
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _installing = INSTALL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join(dir);
    let bin = dir.join("node_modules/.bin").join(bin);
    if bin.exists() {
        return Some(bin);
    }
    if Command::new("npm").arg("--version").output().is_err() {
        eprintln!("e2e tests of {what} skipped: npm is not installed");
        return None;
    }
    fs::create_dir_all(&dir).unwrap();
    let status = Command::new("npm")
        .args([
            "install",
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--prefix",
        ])
        .arg(&dir)
        .arg(package)
        .stdout(Stdio::null())
        .status()
        .expect("running npm");
    assert!(status.success(), "npm install {package} failed");
    assert!(bin.exists(), "{} missing after npm install", bin.display());
    Some(bin)
}

impl FakeApi {
    /// [`FakeApi::start`] with more arguments for the stand-in.
    fn start_with(dir: &Path, script: Script, extra: &[&str]) -> FakeApi {
        let log = dir.join("requests.jsonl");
        let mut cmd = Command::new("python3");
        cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/fake_api.py"))
            .args(["--log", log.to_str().unwrap()])
            .args(["--tool-calls", &script.tool_calls.to_string()])
            .args(["--context-tokens", &script.context_tokens.to_string()])
            .args(["--idle-exit", "120"])
            .args(extra);
        if let Some(t) = script.after_compact_tokens {
            cmd.args(["--after-compact-tokens", &t.to_string()]);
        }
        if script.agent {
            cmd.args(["--script", "agent"]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the stand-in API");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the stand-in prints its port");
        FakeApi { child, port, log }
    }
}

impl Rig {
    /// [`Rig::with`] on the client `version`, its stand-in answering the side requests older
    /// clients make (`--side-requests`).
    fn with_client(version: &str, script: Script) -> Option<Rig> {
        let client = client_at(version)?;
        let mut rig = Rig::with(script)?;
        rig.client = client;
        // The first stand-in (which has received nothing) is stopped as it is replaced.
        rig.api = FakeApi::start_with(rig.env.dir.path(), script, &["--side-requests"]);
        // Older clients reject a settings file naming an event they do not know (PostCompact
        // came later), which would disable every hook: register only what they have.
        let mut settings: Value =
            serde_json::from_str(&fs::read_to_string(&rig.settings).unwrap()).unwrap();
        let hooks = settings["hooks"].as_object_mut().unwrap();
        hooks.remove("PostCompact");
        // Nor do they know the exec form (`args`): the same commands as shell lines.
        for groups in hooks.values_mut() {
            for group in groups.as_array_mut().unwrap() {
                for entry in group["hooks"].as_array_mut().unwrap() {
                    let entry = entry.as_object_mut().unwrap();
                    if let Some(Value::Array(args)) = entry.remove("args") {
                        let mut line = entry["command"].as_str().unwrap().to_string();
                        for a in args {
                            line.push(' ');
                            line.push_str(a.as_str().unwrap());
                        }
                        entry.insert("command".into(), json!(line));
                    }
                }
            }
        }
        fs::write(&rig.settings, settings.to_string()).unwrap();
        Some(rig)
    }
}

/// A child module, to use the rig as it is.
#[path = "e2e_older.rs"]
mod older;

/// The newest client, on a representative set (a child module too).
#[path = "e2e_newest.rs"]
mod newest;

/// Auto-compaction off on the newest client: where it stops, the nudge, the soft restart.
#[path = "e2e_autooff.rs"]
mod autooff;

/// The plugin installed from a marketplace, downloading its binary (a child module too).
#[path = "e2e_ship.rs"]
mod ship;

/// The status line in the real client's TUI, driven through tmux (a child module too: it uses
/// the stand-in API and the installed clients).
#[path = "e2e_tui.rs"]
mod tui;

// `ctxguard install` against the real client: the exec-form hooks it writes, the shell-form
// registration of an earlier version upgraded in place and removed, and the plugin.

impl Rig {
    /// Runs `ctxguard ARGS` in the rig's home and state root; its stdout.
    fn ctxguard(&self, args: &[&str]) -> String {
        let out = self.env.command(args).output().unwrap();
        assert!(out.status.success(), "ctxguard {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The settings file at `path`, parsed.
    fn read(&self, path: &Path) -> Value {
        serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
    }
}

const HOOKS: [(&str, &str); 4] = [
    ("PreToolUse", "pretooluse"),
    ("UserPromptSubmit", "userpromptsubmit"),
    ("PreCompact", "precompact"),
    ("SessionStart", "sessionstart"),
];

/// The canonical path of the binary, as install writes it.
fn installed_bin() -> String {
    fs::canonicalize(env!("CARGO_BIN_EXE_ctxguard"))
        .unwrap()
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn install_writes_exec_form_hooks_that_the_real_client_runs() {
    // 940k of the default model's 1M: the nudge is due at the first tool call that sees it.
    let Some(rig) = Rig::new(2, 940_000) else {
        return;
    };
    let settings = rig.env.dir.path().join("installed.json");
    let path = settings.to_str().unwrap();
    rig.ctxguard(&["install", "--settings", path, "--statusline", "skip"]);
    let written = rig.read(&settings);
    for (event, sub) in HOOKS {
        assert_eq!(
            written["hooks"][event][0]["hooks"][0],
            json!({"type": "command", "command": installed_bin(), "args": [sub],
                   "onFailure": "continue"}),
            "{event}"
        );
    }
    // PreToolUse, PostToolBatch (and UserPromptSubmit) ran: the nudge reached the model once,
    // by whichever route read the reply first.
    let out = rig.claude_with(&settings, "run two commands", None, &[], &[]);
    let session = out["session_id"].as_str().unwrap().to_string();
    let requests = rig.api.requests();
    assert_eq!(
        count(requests.last().unwrap(), ANY_NUDGE),
        1,
        "{requests:?}"
    );
    assert_eq!(rig.env.marker(&session)["state"], "nudged");
    // PreCompact and SessionStart ran: a checkpoint, then the recovery block, once.
    rig.claude_with(&settings, "/compact", Some(&session), &[], &[]);
    let latest = rig
        .env
        .state()
        .join("checkpoints")
        .join(&session)
        .join("_latest.json");
    assert!(latest.is_file(), "precompact wrote a checkpoint");
    rig.api.clear();
    rig.claude_with(&settings, "what next?", Some(&session), &[], &[]);
    assert_eq!(count(&rig.api.requests()[0], RECOVERY), 1);
}

#[test]
fn a_shell_form_registration_from_an_earlier_version_is_upgraded_runs_and_is_removed() {
    let Some(rig) = Rig::new(2, 940_000) else {
        return;
    };
    // As the earlier `install` wrote it: shell lines, with a hook of the user's in between.
    let bin = installed_bin();
    let mut hooks = serde_json::Map::new();
    for (event, sub) in HOOKS {
        hooks.insert(
            event.into(),
            json!([{"hooks": [
                {"type": "command", "command": "true"},
                {"type": "command", "command": format!("{bin} {sub}")}
            ]}]),
        );
    }
    let settings = rig.env.dir.path().join("old.json");
    fs::write(&settings, json!({"hooks": hooks}).to_string()).unwrap();
    let path = settings.to_str().unwrap();

    let upgraded = rig.ctxguard(&["install", "--settings", path, "--statusline", "skip"]);
    // The four old lines upgraded in place (the hooks added since are added in exec form), and
    // each given onFailure "continue".
    let changes = |l: &&str| l.starts_with("  - ") && !l.contains("onFailure");
    assert_eq!(
        upgraded
            .lines()
            .filter(changes)
            .filter(|l| l.contains("exec form"))
            .count(),
        upgraded.lines().filter(changes).count(),
        "{upgraded}"
    );
    assert_eq!(upgraded.matches("added onFailure").count(), 4, "{upgraded}");
    assert_eq!(upgraded.matches("became").count(), 4, "{upgraded}");
    let written = rig.read(&settings);
    for (event, sub) in HOOKS {
        let group = &written["hooks"][event][0]["hooks"];
        assert_eq!(group[0], json!({"type": "command", "command": "true"}));
        assert_eq!(
            group[1],
            json!({"type": "command", "command": bin, "args": [sub], "onFailure": "continue"}),
            "{event}: upgraded in place"
        );
    }
    let out = rig.claude_with(&settings, "run two commands", None, &[], &[]);
    let session = out["session_id"].as_str().unwrap().to_string();
    assert_eq!(count(rig.api.requests().last().unwrap(), ANY_NUDGE), 1);
    assert_eq!(rig.env.marker(&session)["state"], "nudged");

    // Uninstalled: the user's hooks stay, ctxguard's are gone, and a new session meets none.
    rig.ctxguard(&["uninstall", "--settings", path]);
    let left = rig.read(&settings);
    for (event, _) in HOOKS {
        assert_eq!(
            left["hooks"][event],
            json!([{"hooks": [{"type": "command", "command": "true"}]}])
        );
    }
    rig.api.clear();
    let out = rig.claude_with(&settings, "run two commands", None, &[], &[]);
    let fresh = out["session_id"].as_str().unwrap();
    assert!(rig
        .api
        .requests()
        .iter()
        .all(|r| count(r, "hook additional context: ctxguard") == 0));
    assert!(!rig.env.marker_path(fresh).exists(), "no hook ran");
}

#[test]
fn the_plugin_runs_from_a_directory_with_a_space_in_its_path() {
    let Some(rig) = Rig::new(2, 940_000) else {
        return;
    };
    // The plugin as /plugin install copies it: its manifest and hooks, under a path with a space.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = rig.env.dir.path().join("plugins dir").join("ctxguard");
    for file in [
        ".claude-plugin/plugin.json",
        "hooks/hooks.json",
        "hooks/run.sh",
    ] {
        let to = root.join(file);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(repo.join("plugin").join(file), &to).unwrap();
    }
    let settings = rig.env.dir.path().join("empty.json");
    fs::write(&settings, "{}").unwrap();
    let out = rig.claude_with(
        &settings,
        "run two commands",
        None,
        &["--plugin-dir", root.to_str().unwrap()],
        &[("CTXGUARD_BIN", env!("CARGO_BIN_EXE_ctxguard"))],
    );
    let session = out["session_id"].as_str().unwrap();
    assert_eq!(count(rig.api.requests().last().unwrap(), ANY_NUDGE), 1);
    assert_eq!(rig.env.marker(session)["state"], "nudged");
}
