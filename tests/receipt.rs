//! A receipt per compaction (`src/receipt.rs`): the first `PreToolUse` or `UserPromptSubmit` after
//! a compaction checks that the recovery reached the conversation, gives it once more where it
//! did not, and records how it arrived; `status --session` and `log` show it.

use std::fs;
use std::path::Path;

use serde_json::{json, Value};

use crate::util::*;

const SESSION: &str = "5b2c9d1e-0000-4000-8000-00000000r001";

/// A session compacted by hand: PreCompact on the real transcript, then the boundary, the
/// summary and (with `kept`) the block as 2.1.330 records it.
fn compacted(env: &TestEnv, kept: bool) -> std::path::PathBuf {
    let path = env.write("t.jsonl", &before_first_compaction());
    let run = env.run(
        &["precompact"],
        precompact_payload(SESSION, &path, "manual", Value::Null).to_string(),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let mut lines = vec![
        json!({"type": "system", "subtype": "compact_boundary", "timestamp": time_from_now(1),
               "compactMetadata": {"trigger": "manual", "preTokens": 120530, "postTokens": 2645}})
        .to_string(),
        json!({"type": "user", "isCompactSummary": true,
               "message": {"role": "user", "content": "This session is being continued..."}})
        .to_string(),
    ];
    if kept {
        lines.push(
            json!({"type": "attachment", "attachment": {"type": "hook_additional_context",
                   "hookName": "SessionStart", "toolUseID": "SessionStart",
                   "content": ["## ctxguard recovery: compaction #1 of this session"]}})
            .to_string(),
        );
    }
    append_lines(&path, &lines);
    path
}

fn sessionstart(env: &TestEnv, path: &Path) -> Run {
    let mut p = sessionstart_payload(SESSION, "compact", CWD);
    p["transcript_path"] = json!(path.to_str().unwrap());
    env.run(&["sessionstart"], p.to_string())
}

fn pretooluse(env: &TestEnv, path: &Path) -> Run {
    env.run(
        &["pretooluse"],
        pretooluse_payload(SESSION, path).to_string(),
    )
}

fn receipts(env: &TestEnv) -> Vec<Value> {
    let run = env.run(&["status", "--session", SESSION, "--json"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    v["sessions"][0]["receipts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn log(env: &TestEnv) -> String {
    let run = env.run(&["log"], "");
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
}

#[test]
fn a_recovery_recorded_in_the_transcript_is_not_given_again() {
    let mut env = TestEnv::new();
    env.set("CLAUDE_PID", "4242");
    let path = compacted(&env, true);
    let start = sessionstart(&env, &path);
    assert!(decode_block(&start.stdout).contains("compaction #1"));
    assert!(env.marker(SESSION)["receipt_pending"].is_object());
    let run = pretooluse(&env, &path);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    assert!(env.marker(SESSION).get("receipt_pending").is_none());
    let r = receipts(&env);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["arrived"], "transcript");
    assert_eq!(r[0]["trigger"], "manual");
    assert_eq!(
        (r[0]["pre_tokens"].as_u64(), r[0]["post_tokens"].as_u64()),
        (Some(120530), Some(2645))
    );
    // A manual `/compact` gets no facts: the user's words steer its summary.
    assert_eq!(r[0]["facts_chars"], 0, "{r:?}");
    assert!(log(&env).contains("recovery of compaction #1 (manual): arrived (in the transcript)"));
}

#[test]
fn a_recovery_handed_to_a_client_that_lost_it_is_given_once_by_the_next_hook() {
    // Handed to one client process (it kept the block in memory, as 2.1.14 does under -p), and
    // the next tool call comes from another: the block is not in the transcript.
    let mut env = TestEnv::new();
    env.set("CLAUDE_PID", "4242");
    let path = compacted(&env, false);
    sessionstart(&env, &path);
    env.set("CLAUDE_PID", "5151");
    let first = pretooluse(&env, &path);
    assert_eq!(first.code, 0, "{first:?}");
    let text = decode_nudge(&first.stdout);
    assert!(text.contains("ctxguard recovery: compaction #1"), "{text}");
    // Never twice: the next tool call is quiet.
    let second = pretooluse(&env, &path);
    assert_eq!((second.code, second.stdout.as_str()), (0, ""), "{second:?}");
    let r = receipts(&env);
    assert_eq!(r[0]["arrived"], "given_again");
    assert_eq!(r[0]["by"], "PreToolUse");
    assert!(log(&env).contains("missing, given again by PreToolUse"));
}

#[test]
fn the_same_client_process_holds_it_in_memory() {
    let mut env = TestEnv::new();
    env.set("CLAUDE_PID", "4242");
    let path = compacted(&env, false);
    sessionstart(&env, &path);
    let run = pretooluse(&env, &path);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    assert_eq!(receipts(&env)[0]["arrived"], "memory");
}

#[test]
fn a_recovery_no_session_start_took_is_given_by_the_prompt_once_the_boundary_landed() {
    // SessionStart never ran (refused, or the client applied the boundary without it).
    let env = TestEnv::new();
    let path = env.write("t.jsonl", &before_first_compaction());
    env.run(
        &["precompact"],
        precompact_payload(SESSION, &path, "auto", Value::Null).to_string(),
    );
    let mut prompt = fixture_json("UserPromptSubmit.json");
    prompt["session_id"] = json!(SESSION);
    prompt["transcript_path"] = json!(path.to_str().unwrap());
    // Before the boundary lands (a summary prepared ahead): nothing yet.
    let early = env.run(&["userpromptsubmit"], prompt.to_string());
    assert_eq!((early.code, early.stdout.as_str()), (0, ""), "{early:?}");
    assert_eq!(env.marker(SESSION)["recovery_pending"], true);
    append_lines(&path, &[boundary_line(&time_from_now(2))]);
    let run = env.run(&["userpromptsubmit"], prompt.to_string());
    assert_eq!(run.code, 0, "{run:?}");
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        out["hookSpecificOutput"]["hookEventName"],
        "UserPromptSubmit"
    );
    let text = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(text.contains("ctxguard recovery: compaction #1"), "{text}");
    assert_eq!(env.marker(SESSION)["recovery_pending"], false);
    let again = env.run(&["userpromptsubmit"], prompt.to_string());
    assert_eq!(again.stdout, "", "{again:?}");
    let r = receipts(&env);
    assert_eq!(
        (r[0]["arrived"].as_str(), r[0]["by"].as_str()),
        (Some("given_again"), Some("UserPromptSubmit"))
    );
    assert_eq!(r[0]["pre_tokens"], 160000);
    // An automatic compaction's summarizer got the facts.
    assert!(r[0]["facts_chars"].as_u64().unwrap() > 0, "{r:?}");
    // No receipt file is left torn or twice.
    let dir = env.state().join("checkpoints").join(SESSION);
    let files: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".receipt.json"))
        .collect();
    assert_eq!(files.len(), 1);
}

/// Repository text after the boundary that holds the block's first words (a CLAUDE.md snapshot,
/// a kept tool result) is no delivery: SessionStart never ran, so the next hook gives the
/// recovery, and the receipt says so.
#[test]
fn text_that_quotes_the_block_is_no_delivery() {
    let env = TestEnv::new();
    let path = env.write("t.jsonl", &before_first_compaction());
    env.run(
        &["precompact"],
        precompact_payload(SESSION, &path, "auto", Value::Null).to_string(),
    );
    let claude_md = json!({"type": "user", "isMeta": true, "timestamp": time_from_now(3),
        "message": {"role": "user", "content":
            "Contents of /repo/CLAUDE.md:\n\n## ctxguard recovery: compaction #1 of this session\nis the header our hook prints"}});
    let tool_result = json!({"type": "user", "timestamp": time_from_now(4),
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
            "content": "## ctxguard recovery: compaction #1 of this session"}]}});
    append_lines(
        &path,
        &[
            boundary_line(&time_from_now(2)),
            claude_md.to_string(),
            tool_result.to_string(),
        ],
    );
    let mut prompt = fixture_json("UserPromptSubmit.json");
    prompt["session_id"] = json!(SESSION);
    prompt["transcript_path"] = json!(path.to_str().unwrap());
    let run = env.run(&["userpromptsubmit"], prompt.to_string());
    assert_eq!(run.code, 0, "{run:?}");
    let out: Value = serde_json::from_str(&run.stdout).expect("the recovery, given again");
    let text = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(text.contains("ctxguard recovery: compaction #1"), "{text}");
    let r = receipts(&env);
    assert_eq!(r[0]["arrived"], "given_again");
}

/// The user's `stale_after_secs` applies where a receipt settles, as everywhere: with two hours
/// set, a cycle nudged 40 minutes ago is still on when the receipt is settled (a hard-coded 30
/// minutes ended it there, and the agent was asked to save again).
#[test]
fn the_receipt_ages_the_marker_by_the_users_stale_after_secs() {
    let mut env = TestEnv::new();
    env.set("CTXGUARD_STALE_AFTER_SECS", "7200");
    let path = env.write("t.jsonl", &before_first_compaction());
    env.run(
        &["precompact"],
        precompact_payload(SESSION, &path, "auto", Value::Null).to_string(),
    );
    // Nudged after the compaction (the context grew fast), 40 minutes ago; the receipt still
    // waits.
    env.edit_marker(SESSION, |m| {
        m["state"] = json!("nudged");
        m["armed_at"] = json!(time_from_now(-2401));
        m["nudged_at"] = json!(time_from_now(-2400));
        m["updated_at"] = json!(time_from_now(-2400));
        m["compacted_at"] = json!(time_from_now(-2410));
    });
    append_lines(&path, &[boundary_line(&time_from_now(-2405))]);
    let mut prompt = fixture_json("UserPromptSubmit.json");
    prompt["session_id"] = json!(SESSION);
    prompt["transcript_path"] = json!(path.to_str().unwrap());
    let run = env.run(&["userpromptsubmit"], prompt.to_string());
    assert_eq!(run.code, 0, "{run:?}");
    let m = env.marker(SESSION);
    assert_eq!(m["recovery_pending"], false);
    assert_eq!(m["state"], "nudged", "{m}");
}

/// Issue 37, round 5, item 2: `status --session` and `log` give a receipt in the same words
/// (exact tokens, `?` for an unknown one), a manual `/compact` says why it had no facts instead
/// of "facts 0 characters", and `log --json` gives the receipt as fields.
#[test]
fn status_and_log_give_a_receipt_in_one_wording_and_log_json_as_fields() {
    let mut env = TestEnv::new();
    env.set("CLAUDE_PID", "4242");
    let path = compacted(&env, true);
    sessionstart(&env, &path);
    pretooluse(&env, &path);
    let words =
        "compaction #1 (manual): arrived (in the transcript) · tokens 120,530 → 2,645 · no \
                 facts: your /compact words steered the summary · summary not kept";
    let run = env.run(&["status", "--session", SESSION], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains(&format!("\nreceipt     {words}\n")),
        "{}",
        run.stdout
    );
    let log = log(&env);
    assert!(
        log.contains(&format!(" · session 5b2c9d1e · recovery of {words}\n")),
        "{log}"
    );
    assert!(!log.contains("facts 0") && !run.stdout.contains("facts 0"));
    let run = env.run(&["log", "--json"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let entries: Value = serde_json::from_str(&run.stdout).unwrap();
    let receipt = entries["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "receipt")
        .unwrap_or_else(|| panic!("{entries}"));
    assert_eq!(
        (
            &receipt["compaction"],
            &receipt["trigger"],
            &receipt["arrived"],
            &receipt["given_again_by"],
            &receipt["tokens_before"],
            &receipt["tokens_after"],
        ),
        (
            &json!(1),
            &json!("manual"),
            &json!("transcript"),
            &Value::Null,
            &json!(120_530),
            &json!(2_645)
        ),
        "{receipt}"
    );
}
