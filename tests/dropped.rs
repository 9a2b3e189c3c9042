//! Context lost without a boundary (`src/dropped.rs`): a large drop between two readings of the
//! session's own transcript, with no `compact_boundary` between, is checkpointed and its
//! recovery given once; what only looks like a drop (a sidechain, a synthetic or API-error line,
//! a subagent) never is.

use serde_json::{json, Value};

use crate::util::*;

const SESSION: &str = "6c3d0e2f-0000-4000-8000-00000000d001";
const MODEL: &str = "claude-opus-5-5";

fn prompt(text: &str, at: &str) -> String {
    json!({"type": "user", "isSidechain": false, "timestamp": at,
           "message": {"role": "user", "content": text}})
    .to_string()
}

fn pretooluse_at(env: &TestEnv, secs: i64, path: &std::path::Path) -> Run {
    env.run_at(
        secs,
        &["pretooluse"],
        pretooluse_payload(SESSION, path).to_string(),
    )
}

fn checkpoints(env: &TestEnv) -> Vec<Value> {
    let dir = env.state().join("checkpoints").join(SESSION);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("cp_") && n.ends_with(".json") && !n.contains(".receipt"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .iter()
        .map(|n| serde_json::from_str(&std::fs::read_to_string(dir.join(n)).unwrap()).unwrap())
        .collect()
}

#[test]
fn a_synthetic_drop_gives_one_checkpoint_and_one_recovery() {
    let env = TestEnv::new();
    let path = env.write(
        "t.jsonl",
        &([
            prompt("refactor the parser", &time_from_now(-10)),
            assistant_line_of(MODEL, 903_000, &time_from_now(-5)),
        ]
        .join("\n")
            + "\n"),
    );
    let first = pretooluse_at(&env, 0, &path);
    assert_eq!((first.code, first.stdout.as_str()), (0, ""), "{first:?}");
    assert_eq!(env.marker(SESSION)["last_reply"][0], 903_000);
    // After an idle gap, the next reply reports 275k: no boundary, no PreCompact.
    append_lines(
        &path,
        &[
            prompt("go on", &time_from_now(3600)),
            assistant_line_of(MODEL, 275_000, &time_from_now(3605)),
        ],
    );
    let run = pretooluse_at(&env, 3610, &path);
    assert_eq!(run.code, 0, "{run:?}");
    let text = decode_nudge(&run.stdout);
    assert!(text.contains("ctxguard recovery: compaction #1"), "{text}");
    assert!(text.contains("refactor the parser"), "{text}");
    let cps = checkpoints(&env);
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0]["meta"]["trigger"], "dropped");
    let m = env.marker(SESSION);
    assert_eq!(
        (m["compactions"].as_u64(), m["recovery_pending"].as_bool()),
        (Some(1), Some(false))
    );
    // Once: the next calls are quiet, and nothing more is written.
    for secs in [3620, 3700] {
        let again = pretooluse_at(&env, secs, &path);
        assert_eq!((again.code, again.stdout.as_str()), (0, ""), "{again:?}");
    }
    assert_eq!(checkpoints(&env).len(), 1);
    // The log of the day the drop was read (an hour from now: tomorrow, late in the evening).
    let log = env.run_at(3600, &["log"], "").stdout;
    assert!(
        log.contains("context dropped without a compaction (903000 → 275000 tokens"),
        "{log}"
    );
    let status = env
        .run(&["status", "--session", SESSION, "--json"], "")
        .stdout;
    let v: Value = serde_json::from_str(&status).unwrap();
    let r = &v["sessions"][0]["receipts"][0];
    assert_eq!(
        (
            r["trigger"].as_str(),
            r["arrived"].as_str(),
            r["by"].as_str()
        ),
        (Some("dropped"), Some("given_again"), Some("PreToolUse"))
    );
}

#[test]
fn what_only_looks_like_a_drop_never_is_one() {
    // A boundary between (a compaction the hooks did not see), a sidechain's small reply, a
    // synthetic line and an API error: none of them is context lost without a compaction.
    let env = TestEnv::new();
    let path = env.write(
        "t.jsonl",
        &(assistant_line_of(MODEL, 903_000, &time_from_now(-5)) + "\n"),
    );
    pretooluse_at(&env, 0, &path);
    let mut side: Value =
        serde_json::from_str(&assistant_line_of(MODEL, 20_000, &time_from_now(100))).unwrap();
    side["isSidechain"] = json!(true);
    let mut synthetic: Value =
        serde_json::from_str(&assistant_line_of(MODEL, 20_000, &time_from_now(110))).unwrap();
    synthetic["message"]["model"] = json!("<synthetic>");
    let mut error: Value =
        serde_json::from_str(&assistant_line_of(MODEL, 20_000, &time_from_now(120))).unwrap();
    error["isApiErrorMessage"] = json!(true);
    append_lines(
        &path,
        &[side.to_string(), synthetic.to_string(), error.to_string()],
    );
    let run = pretooluse_at(&env, 130, &path);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    // A subagent's call reads nothing of the main thread.
    let mut sub = pretooluse_payload(SESSION, &path);
    sub["agent_id"] = json!("agent-1");
    append_lines(
        &path,
        &[assistant_line_of(MODEL, 20_000, &time_from_now(140))],
    );
    let run = env.run_at(150, &["pretooluse"], sub.to_string());
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    // A boundary before the small reply: the client compacted; no drop. No `PreCompact` counted
    // that compaction here, so it is caught up as one (tests/unseen.rs): its checkpoint is the
    // compaction's, up to the boundary, never a drop's.
    let env = TestEnv::new();
    let path = env.write(
        "t.jsonl",
        &(assistant_line_of(MODEL, 903_000, &time_from_now(-5)) + "\n"),
    );
    pretooluse_at(&env, 0, &path);
    append_lines(
        &path,
        &[
            boundary_line(&time_from_now(100)),
            assistant_line_of(MODEL, 40_000, &time_from_now(110)),
        ],
    );
    let run = pretooluse_at(&env, 130, &path);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        decode_nudge(&run.stdout).contains("compaction #1"),
        "{run:?}"
    );
    let cps = checkpoints(&env);
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0]["meta"]["trigger"], "auto");
    assert_eq!(cps[0]["meta"]["tokens_before"], 903_000);
    let log = env.run_at(130, &["log"], "").stdout;
    assert!(!log.contains("context dropped"), "{log}");
    let again = pretooluse_at(&env, 140, &path);
    assert_eq!((again.code, again.stdout.as_str()), (0, ""), "{again:?}");
}

/// The transcript of [`a_synthetic_drop_gives_one_checkpoint_and_one_recovery`], its first
/// reading taken by `PreToolUse`, then a reply of `after` tokens an hour later.
fn read_then_dropped(env: &TestEnv, after: u64) -> std::path::PathBuf {
    let path = env.write(
        "t.jsonl",
        &([
            prompt("refactor the parser", &time_from_now(-10)),
            assistant_line_of(MODEL, 903_000, &time_from_now(-5)),
        ]
        .join("\n")
            + "\n"),
    );
    let first = pretooluse_at(env, 0, &path);
    assert_eq!((first.code, first.stdout.as_str()), (0, ""), "{first:?}");
    append_lines(
        &path,
        &[
            prompt("go on", &time_from_now(3600)),
            assistant_line_of(MODEL, after, &time_from_now(3605)),
        ],
    );
    path
}

fn posttoolbatch_payload(path: &std::path::Path) -> Value {
    json!({"session_id": SESSION, "transcript_path": path.to_str().unwrap(),
           "cwd": "/tmp", "hook_event_name": "PostToolBatch", "tool_calls": []})
}

/// The hook that reads a drop first records it; the first that can give context acts on it,
/// once. PostToolBatch (which usually reads a new reply first) gives it itself.
#[test]
fn a_drop_read_first_by_posttoolbatch_is_given_by_it_once() {
    let env = TestEnv::new();
    let path = read_then_dropped(&env, 275_000);
    let run = env.run_at(
        3610,
        &["posttoolbatch"],
        posttoolbatch_payload(&path).to_string(),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let out: Value = serde_json::from_str(&run.stdout).expect("PostToolBatch gives the recovery");
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PostToolBatch");
    let text = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(text.contains("ctxguard recovery: compaction #1"), "{text}");
    assert!(text.contains("refactor the parser"), "{text}");
    // Once: the next PreToolUse says nothing, and one checkpoint was taken.
    let next = pretooluse_at(&env, 3620, &path);
    assert_eq!((next.code, next.stdout.as_str()), (0, ""), "{next:?}");
    assert_eq!(checkpoints(&env).len(), 1);
    assert_eq!(env.marker(SESSION)["compactions"], 1);
    let r = &receipts_of(&env)[0];
    assert_eq!(r["by"], "PostToolBatch");
}

/// Stop's context reaches the user, not as a recovery should: it records the drop, and the
/// next PreToolUse gives the recovery.
#[test]
fn a_drop_read_first_by_stop_is_given_by_the_next_pretooluse() {
    let env = TestEnv::new();
    // 150k: below the idle threshold, so Stop has nothing of its own to say.
    let path = read_then_dropped(&env, 150_000);
    let mut stop = fixture_json("Stop.json");
    stop["session_id"] = json!(SESSION);
    stop["transcript_path"] = json!(path.to_str().unwrap());
    stop["stop_hook_active"] = json!(false);
    let run = env.run_at(3610, &["stop"], stop.to_string());
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    assert_eq!(env.marker(SESSION)["pending_drop"]["after"], 150_000);
    let next = pretooluse_at(&env, 3620, &path);
    let text = decode_nudge(&next.stdout);
    assert!(text.contains("ctxguard recovery: compaction #1"), "{text}");
    assert_eq!(checkpoints(&env).len(), 1);
    assert!(env.marker(SESSION).get("pending_drop").is_none());
    let again = pretooluse_at(&env, 3630, &path);
    assert_eq!(again.stdout, "", "{again:?}");
}

/// A usage change alone is written at most every 15 s; a drop is written, and acted on, by the
/// first hook that reads it, however soon after the previous write.
#[test]
fn a_drop_read_within_the_refresh_interval_is_acted_on_at_once() {
    let env = TestEnv::new();
    let path = env.write(
        "t.jsonl",
        &([
            prompt("refactor the parser", &time_from_now(-10)),
            assistant_line_of(MODEL, 903_000, &time_from_now(-5)),
        ]
        .join("\n")
            + "\n"),
    );
    assert_eq!(pretooluse_at(&env, 0, &path).stdout, "");
    append_lines(
        &path,
        &[assistant_line_of(MODEL, 275_000, &time_from_now(2))],
    );
    let run = pretooluse_at(&env, 4, &path);
    let text = decode_nudge(&run.stdout);
    assert!(text.contains("ctxguard recovery: compaction #1"), "{text}");
    assert_eq!(checkpoints(&env).len(), 1);
}

fn receipts_of(env: &TestEnv) -> Vec<Value> {
    let status = env
        .run(&["status", "--session", SESSION, "--json"], "")
        .stdout;
    let v: Value = serde_json::from_str(&status).unwrap();
    v["sessions"][0]["receipts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// A record with its place in the conversation.
fn chained(line: String, uuid: &str, parent: Option<&str>) -> String {
    let mut v: Value = serde_json::from_str(&line).unwrap();
    v["uuid"] = json!(uuid);
    v["parentUuid"] = parent.map_or(Value::Null, |p| json!(p));
    if v["type"] == "assistant" {
        v["message"]["id"] = json!(format!("msg_{uuid}"));
    }
    v.to_string()
}

/// The user edits an earlier prompt: usage falls with no boundary, but nothing the user wants
/// was lost. No checkpoint, no recovery, no compaction logged; and a later compaction's
/// checkpoint holds nothing of the branch they took back.
#[test]
fn a_rewind_is_no_drop_and_its_abandoned_branch_never_comes_back() {
    let env = TestEnv::new();
    let path = env.write(
        "t.jsonl",
        &([
            chained(
                prompt("refactor the parser", &time_from_now(-20)),
                "p1",
                None,
            ),
            chained(
                assistant_line_of(MODEL, 140_000, &time_from_now(-15)),
                "a1",
                Some("p1"),
            ),
            chained(
                prompt(
                    "deploy it with token sk-live-SECRET123",
                    &time_from_now(-10),
                ),
                "p2",
                Some("a1"),
            ),
            chained(
                assistant_line_of(MODEL, 150_000, &time_from_now(-5)),
                "a2",
                Some("p2"),
            ),
        ]
        .join("\n")
            + "\n"),
    );
    assert_eq!(pretooluse_at(&env, 0, &path).stdout, "");
    assert_eq!(env.marker(SESSION)["last_reply"][0], 150_000);
    // Esc Esc: the edited prompt takes p2's parent, and the conversation goes on from it.
    append_lines(
        &path,
        &[
            chained(
                prompt(
                    "deploy it, reading the token from the environment",
                    &time_from_now(60),
                ),
                "p2b",
                Some("a1"),
            ),
            chained(
                assistant_line_of(MODEL, 62_000, &time_from_now(65)),
                "a3",
                Some("p2b"),
            ),
        ],
    );
    let run = pretooluse_at(&env, 70, &path);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    assert!(checkpoints(&env).is_empty());
    assert_eq!(env.marker(SESSION)["compactions"], 0);
    assert!(!env.run(&["log"], "").stdout.contains("context dropped"));
    // A real compaction later: its checkpoint and recovery follow the live branch only.
    let pre = env.run_at(
        80,
        &["precompact"],
        precompact_payload(SESSION, &path, "manual", Value::Null).to_string(),
    );
    assert_eq!(pre.code, 0, "{pre:?}");
    let cp = serde_json::to_string(&checkpoints(&env)).unwrap();
    assert!(
        cp.contains("reading the token from the environment"),
        "{cp}"
    );
    assert!(!cp.contains("SECRET123"), "{cp}");
    let start = env.run_at(
        85,
        &["sessionstart"],
        sessionstart_payload(SESSION, "compact", "/tmp").to_string(),
    );
    let block = decode_block(&start.stdout);
    assert!(block.contains("refactor the parser"), "{block}");
    assert!(!block.contains("SECRET123"), "{block}");
}
