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
    let log = env.run(&["log"], "").stdout;
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
    // A boundary before the small reply: the client compacted; no drop.
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
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    assert!(checkpoints(&env).is_empty());
}
