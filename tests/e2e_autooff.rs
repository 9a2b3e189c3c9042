//! End to end on the newest client (Claude Code 2.1.332, `-p`) with auto-compaction off
//! (`"autoCompactEnabled": false` in its user settings), on a 200k model: the client stops
//! accepting requests at its blocking limit (177k), ctxguard's nudges come before it with the
//! true room, and the soft restart: the user's `/clear` after a nudge brings the cleared
//! session's checkpoint back in full, once, with its receipt; a `/clear` with no nudge gets the
//! one-line pointer. The refusal this records is kept in `fixtures/claude-code-2.1.332/` (the
//! TUI's run is in `e2e_tui.rs`).

use std::fs;
use std::path::Path;

use serde_json::Value;

use super::*;

const VERSION: &str = "2.1.332";
const MODEL: [&str; 2] = ["--model", "claude-sonnet-4-5-20250929"];
const CLEARED: &str =
    "SessionStart hook additional context: ## ctxguard recovery: the work before /clear";
const POINTER: &str = "SessionStart hook additional context: ctxguard: the previous session";

/// The rig on 2.1.332 with auto-compaction off in the user's settings (which the client and
/// ctxguard both read).
fn rig(tool_calls: u32) -> Option<Rig> {
    let client = client_at(VERSION)?;
    let mut rig = Rig::new(tool_calls, 10_000)?;
    rig.client = client;
    let dir = rig.env.home().join(".claude");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("settings.json"),
        r#"{"autoCompactEnabled": false}"#,
    )
    .unwrap();
    Some(rig)
}

fn run(rig: &Rig, prompt: &str, session: Option<&str>) -> Value {
    rig.claude(prompt, session, &MODEL)
}

/// The text of every request since the last `clear`, joined.
fn sent(rig: &Rig) -> String {
    rig.api
        .requests()
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn autooff_the_nudges_come_before_the_stop_and_clear_brings_the_work_back_once() {
    let Some(rig) = rig(2) else {
        return;
    };
    // 140k: past the nudge (137k), with the true room to the stop (177k).
    let out = run(&rig, "USAGE=140000 build the parser", None);
    let session = out["session_id"].as_str().unwrap().to_string();
    let text = sent(&rig);
    assert!(
        text.contains(
            "ctxguard: about 37k tokens are left before Claude Code stops accepting requests, at \
             177k tokens (140k of 200k are in use)"
        ),
        "{text}"
    );
    assert!(
        text.contains("/compact summarises the conversation in place; /clear starts a fresh"),
        "{text}"
    );
    let m = rig.env.marker(&session);
    assert_eq!(
        (
            m["trigger_at"].as_u64(),
            m["critical_at"].as_u64(),
            m["compact_at"].as_u64()
        ),
        (Some(137_000), Some(162_000), Some(177_000)),
        "{m}"
    );
    // 164k: the critical nudge, before the stop, with the 13k truly left.
    rig.api.clear();
    run(&rig, "USAGE=164000 go on", Some(&session));
    let text = sent(&rig);
    assert!(
        text.contains(
            "ctxguard: Claude Code stops accepting requests in about 13k tokens, at 177k"
        ),
        "{text}"
    );
    // 177.5k: the client's blocking limit. Its tool call runs; the request with the result is
    // refused without being sent ("Prompt is too long"), and so is the next prompt.
    rig.api.clear();
    let refused = rig.claude_run(
        &rig.settings,
        "USAGE=177500 one more",
        Some(&session),
        &MODEL,
        &[],
    );
    let said: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(
        (said["result"].as_str(), said["terminal_reason"].as_str()),
        (Some("Prompt is too long"), Some("blocking_limit")),
        "{said}"
    );
    assert_eq!(
        rig.api.requests().len(),
        1,
        "the request with the tool result was never sent"
    );
    rig.api.clear();
    let again = rig.claude_run(&rig.settings, "and again", Some(&session), &MODEL, &[]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("Prompt is too long"));
    assert!(rig.api.requests().is_empty(), "the client sent nothing");
    let transcript = transcript_path(&rig, &session);
    let recorded = fs::read_to_string(&transcript).unwrap();
    assert!(
        recorded.contains("\"isApiErrorMessage\":true"),
        "{recorded}"
    );
    keep_recording(&recorded, &rig.env.home(), rig.env.dir.path());
    // `replay` names the refusal, and the nudge before it.
    let replay = rig.ctxguard(&["replay", transcript.to_str().unwrap()]);
    assert!(
        replay.contains(
            "177,510 tokens: the client stopped accepting requests (\"Prompt is too long\"); \
             nudged before, at 140,010"
        ),
        "{replay}"
    );

    // The soft restart: /clear, then the new session's model gets the whole block, once.
    let cleared = run(&rig, "/clear", Some(&session));
    let new = cleared["session_id"].as_str().unwrap().to_string();
    assert_ne!(new, session);
    let order: Vec<String> = rig.hook_runs().into_iter().map(|r| r.0).collect();
    assert!(!order.contains(&"precompact".to_string()), "{order:?}");
    rig.api.clear();
    run(&rig, "where were we?", Some(&new));
    let requests = rig.api.requests();
    assert_eq!(count(&requests[0], CLEARED), 1, "{}", requests[0]);
    assert_eq!(count(&requests[0], POINTER), 0, "{}", requests[0]);
    let first = requests[0].to_string();
    assert!(
        first.contains(
            "The session's goal (its first request):\\n```text\\nUSAGE=140000 build the parser"
        ),
        "the goal: {first}"
    );
    assert!(
        first.contains("USAGE=164000 go on"),
        "the newest requests: {first}"
    );
    // Its receipt: found in the new transcript, kept beside the checkpoint it brought back.
    let m = rig.env.marker(&new);
    assert!(m.get("receipt_pending").is_none_or(Value::is_null), "{m:#}");
    let status = rig.ctxguard(&["status", "--session", &session, "--json"]);
    let v: Value = serde_json::from_str(&status).unwrap();
    let receipts = v["sessions"][0]["receipts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        receipts.iter().any(|r| r["arrived"] == "transcript"),
        "{v:#}"
    );
    // Once: the next prompt of the new session carries it in its history only.
    rig.api.clear();
    run(&rig, "and now?", Some(&new));
    assert!(rig.api.requests().iter().all(|r| count(r, CLEARED) == 1));

    // A /clear at low usage with no nudge: the pointer only.
    let out = run(&rig, "USAGE=50000 a quick question", Some(&new));
    assert_eq!(out["session_id"].as_str(), Some(new.as_str()));
    let cleared = run(&rig, "/clear", Some(&new));
    let newer = cleared["session_id"].as_str().unwrap().to_string();
    rig.api.clear();
    run(&rig, "hello", Some(&newer));
    let requests = rig.api.requests();
    assert_eq!(count(&requests[0], POINTER), 1, "{}", requests[0]);
    assert_eq!(
        count(&requests[0], "ctxguard recovery"),
        0,
        "{}",
        requests[0]
    );
    rig.assert_hooks_only_added_context();
}

/// The client's transcript of `session`.
fn transcript_path(rig: &Rig, session: &str) -> std::path::PathBuf {
    let projects = rig.env.home().join(".claude/projects");
    fs::read_dir(&projects)
        .unwrap()
        .flatten()
        .map(|d| d.path().join(format!("{session}.jsonl")))
        .find(|p| p.exists())
        .expect("the transcript")
}

/// With `CTXGUARD_RECORD=1`, keeps the transcript of the refusal in
/// `fixtures/claude-code-2.1.332/refused.jsonl`, its home as `/home/user` and the test's
/// directory as `/tmp/e2e`.
fn keep_recording(transcript: &str, home: &Path, dir: &Path) {
    if std::env::var_os("CTXGUARD_RECORD").is_none() {
        return;
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude-code-2.1.332");
    fs::create_dir_all(&fixtures).unwrap();
    let text = transcript
        .replace(home.to_str().unwrap(), "/home/user")
        .replace(dir.to_str().unwrap(), "/tmp/e2e")
        .replace(&dir.to_str().unwrap().replace('/', "-"), "-tmp-e2e")
        .replace(&dir.to_str().unwrap().replace(['/', '.'], "-"), "-tmp-e2e");
    fs::write(fixtures.join("refused.jsonl"), text).unwrap();
}

/// The client's rule, checked against the client itself: with its blocking limit at 177,000
/// (200k − 20k − 3k), a reply at 176,710 (plus its 20 output tokens and the tool result the
/// client estimates) still gets its next request sent.
#[test]
fn autooff_a_request_just_below_the_blocking_limit_is_sent() {
    let Some(rig) = rig(1) else {
        return;
    };
    let out = rig.claude_run(&rig.settings, "USAGE=176700 one call", None, &MODEL, &[]);
    let said: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["is_error"], false, "{said}");
    assert_eq!(rig.api.requests().len(), 2, "the tool result was sent");
}
