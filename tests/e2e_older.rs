//! End-to-end against an older client: Claude Code 2.1.14 (npm, its JavaScript build), with the
//! same rig as 2.1.330 (`e2e.rs`), installed into `target/claude-code-2.1.14` on first use. Its
//! default model, `claude-sonnet-4-5-20250929`, has a 200k window, and it reserves the reply's
//! whole 32k output before compacting: it compacts at 155k, ctxguard arms at 115k and nudges
//! critically at 140k. It also asks the API things on the
//! side (a warmup, the file paths a command touched): the stand-in answers those apart
//! (`--side-requests`), and only the conversation's own requests (with tools) are checked.
//! (2.0.76, older still, drops PreToolUse's `additionalContext`: there the nudge waits for the
//! next prompt, which `tests/versions.rs` checks on its recorded payloads.)

use std::io::Write;

use serde_json::{json, Value};

use super::*;

const VERSION: &str = "2.1.14";

fn rig(tool_calls: u32, context_tokens: u64) -> Option<Rig> {
    Rig::with_client(
        VERSION,
        Script {
            tool_calls,
            context_tokens,
            after_compact_tokens: None,
            agent: false,
        },
    )
}

impl Rig {
    /// One `claude -p` process fed `prompts` (stream-json), each sent once the answer to the one
    /// before is complete: a `/compact` and the next prompt in one session, as in the TUI. (This
    /// client keeps `SessionStart`'s context in memory only, not across `--resume`.) Returns the
    /// session id.
    fn claude_session(&self, prompts: &[&str]) -> String {
        let mut cmd = Command::new(&self.client);
        cmd.args(["-p", "--input-format", "stream-json"])
            .args(["--output-format", "stream-json", "--verbose"])
            .args(["--settings", self.settings.to_str().unwrap()])
            .args(["--allowedTools", "Bash"])
            .current_dir(&self.project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
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
            .env("DISABLE_AUTOUPDATER", "1");
        let mut child = cmd.spawn().expect("running claude");
        let mut stdin = child.stdin.take();
        let send = |stdin: &mut Option<std::process::ChildStdin>, prompt: &str| {
            let line = json!({"type": "user",
                "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}});
            writeln!(stdin.as_mut().unwrap(), "{line}").unwrap();
        };
        let mut next = prompts.iter();
        send(&mut stdin, next.next().unwrap());
        let mut session = String::new();
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            let Ok(event) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if event["type"] == "result" {
                assert_eq!(event["is_error"], false, "{line}");
                session = event["session_id"].as_str().unwrap().to_string();
                match next.next() {
                    Some(prompt) => send(&mut stdin, prompt),
                    // End of input: the client exits.
                    None => drop(stdin.take()),
                }
            }
        }
        assert!(child.wait().unwrap().success(), "claude failed");
        assert!(next.next().is_none(), "every prompt was answered");
        session
    }
}

/// The requests of the conversation itself: with tools, and neither the warmup nor the
/// compaction's summary request.
fn conversation(rig: &Rig) -> Vec<Value> {
    rig.api
        .requests()
        .into_iter()
        .filter(|r| r["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .filter(|r| !r["messages"][0]["content"].to_string().contains("Warmup"))
        .filter(|r| count(r, "create a detailed summary of the conversation") == 0)
        .collect()
}

#[test]
fn older_client_below_the_trigger_no_nudge() {
    // 100k of 200k: half full, below the trigger (115k: 2.1.14 compacts at 155k).
    let Some(rig) = rig(3, 100_000) else {
        return;
    };
    let out = rig.claude("run three commands", None, &[]);
    let session = out["session_id"].as_str().unwrap();
    let requests = conversation(&rig);
    assert_eq!(requests.len(), 4, "three tool calls, then the answer");
    assert!(requests
        .iter()
        .all(|r| count(r, "hook additional context") == 0));
    let last = requests.last().unwrap().to_string();
    for n in 1..=3 {
        assert!(last.contains(&format!("ctxguard-e2e-{n}")), "tool call {n}");
    }
    let m = rig.env.marker(session);
    assert_eq!(
        (
            m["state"].as_str(),
            m["tokens"].as_u64(),
            m["window"].as_u64()
        ),
        (Some("idle"), Some(100_010), Some(200_000)),
        "{m}"
    );
    rig.assert_hooks_only_added_context();
}

#[test]
fn older_client_above_the_trigger_one_nudge_and_the_tools_run() {
    // 125k of 200k: past the trigger (115k), short of critical (140k): 2.1.14 reserves the
    // reply's whole 32k output, so it compacts at 155k.
    let Some(rig) = rig(3, 125_000) else {
        return;
    };
    let out = rig.claude("run three commands", None, &[]);
    let session = out["session_id"].as_str().unwrap();
    let requests = conversation(&rig);
    assert_eq!(requests.len(), 4);
    let counts: Vec<usize> = requests.iter().map(|r| count(r, NUDGE)).collect();
    assert_eq!(counts[0], 0, "{counts:?}");
    assert!(
        counts.windows(2).all(|w| w[0] <= w[1]) && counts.iter().all(|c| *c <= 1),
        "{counts:?}"
    );
    assert_eq!(*counts.last().unwrap(), 1, "{counts:?}");
    let last = requests.last().unwrap().to_string();
    assert!(
        last.contains("about 30k tokens are left before auto-compaction, which comes at 155k tokens (125k are in context now)"),
        "{last}"
    );
    for n in 1..=3 {
        assert!(last.contains(&format!("ctxguard-e2e-{n}")), "tool call {n}");
    }
    assert_eq!(rig.env.marker(session)["state"], "nudged");
    let printed: Vec<_> = rig
        .hook_runs()
        .into_iter()
        .filter(|r| r.0 == "pretooluse")
        .map(|r| !r.2.is_empty())
        .collect();
    assert_eq!(printed.len(), 3);
    assert_eq!(printed.iter().filter(|p| **p).count(), 1, "one nudge");
    rig.assert_hooks_only_added_context();
}

#[test]
fn older_client_compact_checkpoints_and_the_next_prompt_carries_the_recovery_once() {
    let Some(rig) = rig(2, 100_000) else {
        return;
    };
    let session = rig.claude_session(&[
        "write a notes file",
        "/compact keep the open items",
        "what next?",
    ]);
    let cp = super::compaction_checkpoint(&rig, &session);
    assert_eq!(cp["meta"]["trigger"], "manual");
    assert_eq!(cp["meta"]["custom_instructions"], "keep the open items");
    assert_eq!(cp["asks"], json!(["write a notes file"]));
    assert_eq!(cp["tools_used"], json!([{"name": "Bash", "count": 2}]));
    let m = rig.env.marker(&session);
    assert_eq!(
        (&m["recovery_pending"], &m["compactions"]),
        (&json!(false), &json!(1))
    );

    // Before the compaction no request carries it; after it, every one does, once.
    let compacted = |r: &Value| count(r, "session is being continued from a previous") > 0;
    let requests = conversation(&rig);
    let (after, before): (Vec<_>, Vec<_>) = requests.iter().partition(|r| compacted(r));
    assert_eq!(before.len(), 3, "two tool calls, then the answer");
    assert!(before.iter().all(|r| count(r, RECOVERY) == 0));
    assert_eq!(
        after.len(),
        3,
        "the next prompt: two tool calls, then the answer"
    );
    let counts: Vec<usize> = after.iter().map(|r| count(r, RECOVERY)).collect();
    assert!(counts.iter().all(|c| *c == 1), "once, in each: {counts:?}");
    let first = after[0].to_string();
    assert!(first.contains("compaction #1 of this session"));
    assert!(first.contains("write a notes file") && first.contains("keep the open items"));

    // Resuming later does not inject it again.
    rig.api.clear();
    rig.claude("and now?", Some(&session), &[]);
    assert!(conversation(&rig).iter().all(|r| count(r, RECOVERY) <= 1));
    let printed = rig
        .hook_runs()
        .into_iter()
        .filter(|r| r.0 == "sessionstart" && !r.2.is_empty())
        .count();
    assert_eq!(printed, 1, "printed once");
    rig.assert_hooks_only_added_context();
}

/// What `ctxguard install` writes for this client, finding it on PATH: shell lines and no
/// PostCompact (it ignores a settings file naming an event it does not know, and runs an
/// exec-form entry without its arguments). The client runs it: the nudge reaches the model once.
/// `doctor` agrees; a current client's registration fails its check for this client.
#[test]
fn install_registers_what_this_client_accepts_and_it_runs() {
    let Some(rig) = rig(3, 125_000) else {
        return;
    };
    let settings = rig.env.dir.path().join("installed.json");
    let path_with_client = std::env::join_paths(
        std::iter::once(rig.client.parent().unwrap().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    let run = |args: &[&str]| {
        rig.env
            .command(args)
            .env("PATH", &path_with_client)
            .current_dir(&rig.project)
            .output()
            .unwrap()
    };
    let s = settings.to_str().unwrap();
    let out = run(&["install", "--settings", s, "--statusline", "skip"]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("Claude Code 2.1.14") && said.contains("shell lines, without PostCompact"),
        "{said}"
    );
    let written = rig.read(&settings);
    assert!(written["hooks"].get("PostCompact").is_none(), "{written:#}");
    let bin = installed_bin();
    assert_eq!(
        written["hooks"]["PreToolUse"][0]["hooks"][0],
        json!({"type": "command", "command": format!("{bin} pretooluse")})
    );
    let out = rig.claude_with(&settings, "run three commands", None, &[], &[]);
    let session = out["session_id"].as_str().unwrap();
    let counts: Vec<usize> = conversation(&rig).iter().map(|r| count(r, NUDGE)).collect();
    assert_eq!(counts.last(), Some(&1), "{counts:?}");
    assert_eq!(rig.env.marker(session)["state"], "nudged");

    // doctor, run where the client is on PATH, with the user settings being these.
    let user = rig.env.home().join(".claude").join("settings.json");
    fs::create_dir_all(user.parent().unwrap()).unwrap();
    fs::copy(&settings, &user).unwrap();
    let doctor = run(&["doctor", "--json"]);
    let report: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let hooks: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "hooks")
        .map(|f| {
            format!(
                "{}: {}",
                f["status"].as_str().unwrap(),
                f["message"].as_str().unwrap()
            )
        })
        .collect();
    assert!(hooks.iter().all(|h| h.starts_with("ok:")), "{hooks:?}");
    assert!(
        hooks
            .iter()
            .any(|h| h.contains("PostCompact is not registered")),
        "{hooks:?}"
    );
    // What a current client's install writes: doctor fails it for this client.
    assert!(run(&["install", "--client-version", "2.1.330"])
        .status
        .success());
    let report: Value = serde_json::from_slice(&run(&["doctor", "--json"]).stdout).unwrap();
    let fails: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "fail")
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(
        fails.iter().any(|m| m
            .contains("names PostCompact, PostToolBatch, which Claude Code 2.1.14 does not know")),
        "{fails:?}"
    );
    assert!(
        fails
            .iter()
            .any(|m| m.contains("registers ctxguard in exec form")),
        "{fails:?}"
    );
    // With the version given, doctor judges for it whatever is on PATH.
    let given = run(&["doctor", "--json", "--client-version", "2.1.330"]);
    assert_eq!(given.status.code(), Some(0), "{given:?}");
}

/// This client keeps SessionStart's context in memory only: `claude -p "/compact"` ends with the
/// recovery it was handed. The next `--resume` finds nothing after the boundary carrying it, no
/// reply either, and gets it again: its first request carries it, once.
#[test]
fn older_client_a_recovery_lost_with_its_process_comes_back_at_resume() {
    let Some(rig) = rig(2, 100_000) else {
        return;
    };
    let out = rig.claude("write a notes file", None, &[]);
    let session = out["session_id"].as_str().unwrap().to_string();
    rig.claude("/compact keep the open items", Some(&session), &[]);
    assert_eq!(rig.env.marker(&session)["recovery_pending"], false);
    rig.api.clear();
    rig.claude("what next?", Some(&session), &[]);
    let requests = conversation(&rig);
    assert!(!requests.is_empty());
    let counts: Vec<usize> = requests.iter().map(|r| count(r, RECOVERY)).collect();
    assert!(counts.iter().all(|c| *c == 1), "once, in each: {counts:?}");
    assert!(requests[0].to_string().contains("write a notes file"));
    // The conversation went on: a later resume does not bring it again.
    rig.api.clear();
    rig.claude("and now?", Some(&session), &[]);
    assert!(conversation(&rig).iter().all(|r| count(r, RECOVERY) == 0));
}
