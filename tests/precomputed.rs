//! Summaries prepared ahead of time (`src/precomputed.rs`), through the binary with payloads and
//! transcripts shaped as Claude Code 2.1.332 writes them: `PreCompact(auto)` when the summary is
//! prepared (after a turn, or while idle), more turns, then the boundary with
//! `compactMetadata.precomputed: true`, then `SessionStart(compact)` (or `resume`, from a saved
//! summary). No local client run reaches this path (2.1.332 arms `after_turn` only where
//! `summaryReachesNextWorker()` holds, and its other precompute on a server flag and
//! `precomputeArmTokens`), so the sequence is built here from the client's code.

use serde_json::{json, Value};

use crate::util::*;

const SESSION: &str = "7d4e1f30-0000-4000-8000-00000000p001";

fn prompt(text: &str, secs: i64) -> String {
    json!({"type": "user", "isSidechain": false, "timestamp": time_from_now(secs),
           "message": {"role": "user", "content": text}})
    .to_string()
}

fn boundary(secs: i64) -> String {
    json!({"type": "system", "subtype": "compact_boundary", "timestamp": time_from_now(secs),
           "compactMetadata": {"trigger": "auto", "preTokens": 170000, "postTokens": 21000,
                               "precomputed": true}})
    .to_string()
}

fn summary(secs: i64) -> String {
    json!({"type": "user", "isCompactSummary": true, "timestamp": time_from_now(secs),
           "message": {"role": "user", "content": "This session is being continued..."}})
    .to_string()
}

/// The session up to the precompute: one task asked and answered; PreCompact(auto) runs.
fn prepared(env: &TestEnv) -> std::path::PathBuf {
    let path = env.write(
        "t.jsonl",
        &format!(
            "{}\n{}\n",
            prompt("first task: fix the lexer", -300),
            assistant_line(150_000, &time_from_now(-290))
        ),
    );
    let run = env.run_at(
        -280,
        &["precompact"],
        precompact_payload(SESSION, &path, "auto", Value::Null).to_string(),
    );
    assert_eq!(run.code, 0, "{run:?}");
    path
}

fn start(env: &TestEnv, path: &std::path::Path, source: &str, secs: i64) -> String {
    let mut p = sessionstart_payload(SESSION, source, CWD);
    p["transcript_path"] = json!(path.to_str().unwrap());
    let run = env.run_at(secs, &["sessionstart"], p.to_string());
    assert_eq!(run.code, 0, "{run:?}");
    decode_block(&run.stdout)
}

#[test]
fn after_turn_the_recovery_covers_the_turns_between_the_checkpoint_and_the_boundary() {
    let env = TestEnv::new();
    let path = prepared(&env);
    // The session goes on before the boundary lands.
    append_lines(
        &path,
        &[
            prompt("second task: add the parser tests", -200),
            assistant_line(160_000, &time_from_now(-190)),
            boundary(-10),
            summary(-9),
        ],
    );
    let block = start(&env, &path, "compact", -5);
    assert!(block.contains("compaction #1 of this session"), "{block}");
    assert!(
        block.contains("second task: add the parser tests"),
        "{block}"
    );
    assert!(block.contains("first task: fix the lexer"), "{block}");
    let m = env.marker(SESSION);
    assert!(
        m["last_checkpoint"]
            .as_str()
            .unwrap()
            .ends_with("cp_002.json"),
        "{m:#}"
    );
    let log = env.run(&["log"], "").stdout;
    assert!(log.contains("the summary was prepared ahead"), "{log}");
    assert!(log.contains("checkpoint cp_001 rebuilt as cp_002"), "{log}");
    // The receipt of that compaction says the summary was prepared ahead.
    let mut p = pretooluse_payload(SESSION, &path);
    p["session_id"] = json!(SESSION);
    let run = env.run(&["pretooluse"], p.to_string());
    assert_eq!(run.code, 0, "{run:?}");
    let status = env
        .run(&["status", "--session", SESSION, "--json"], "")
        .stdout;
    let v: Value = serde_json::from_str(&status).unwrap();
    let r = &v["sessions"][0]["receipts"][0];
    assert_eq!(r["precomputed"], true, "{v:#}");
    assert_eq!(r["compaction"], 1, "{v:#}");
    assert!(r["checkpoint"].as_str().unwrap().ends_with("cp_002.json"));
}

#[test]
fn a_compaction_at_the_boundary_keeps_its_checkpoint() {
    // Nothing between PreCompact and the boundary: the checkpoint stays as it was.
    let env = TestEnv::new();
    let path = prepared(&env);
    append_lines(&path, &[boundary(-270), summary(-269)]);
    let block = start(&env, &path, "compact", -265);
    assert!(block.contains("first task: fix the lexer"), "{block}");
    assert!(env.marker(SESSION)["last_checkpoint"]
        .as_str()
        .unwrap()
        .ends_with("cp_001.json"));
}

#[test]
fn resume_from_a_saved_summary_gives_a_recovery_that_covers_the_later_turns() {
    // Prepared while idle in one process; that process ends; a later `--resume` applies the
    // saved summary (the boundary) and starts with SessionStart(resume).
    let env = TestEnv::new();
    let path = prepared(&env);
    append_lines(
        &path,
        &[
            prompt("third task: write the changelog", -100),
            assistant_line(155_000, &time_from_now(-95)),
            boundary(-3),
            summary(-2),
        ],
    );
    let block = start(&env, &path, "resume", -1);
    assert!(block.contains("third task: write the changelog"), "{block}");
    assert_eq!(env.marker(SESSION)["recovery_pending"], false);
    // Once: a later resume gives nothing more.
    let mut p = sessionstart_payload(SESSION, "resume", CWD);
    p["transcript_path"] = json!(path.to_str().unwrap());
    append_lines(
        &path,
        &[
            json!({"type": "attachment", "attachment": {"type": "hook_additional_context",
                 "content": ["## ctxguard recovery: compaction #1 of this session"]}})
            .to_string(),
        ],
    );
    let again = env.run(&["sessionstart"], p.to_string());
    assert_eq!(again.stdout, "", "{again:?}");
}

/// Defect 3 of issue 42: the checkpoint rebuilt at the boundary keeps what the one it replaces
/// recorded of the compaction: the facts `PreCompact` handed the summarizer (the receipt says
/// they reached it) and the nudges of its cycle.
#[test]
fn a_rebuilt_checkpoint_keeps_the_facts_handed_over_and_the_cycles_nudges() {
    let env = TestEnv::new();
    // A 2.1.330 session (its PreCompact output reaches the summarizer) nudged at 150k.
    let versioned = |line: String| {
        let mut v: Value = serde_json::from_str(&line).unwrap();
        v["version"] = json!("2.1.330");
        v.to_string()
    };
    let path = env.write(
        "t.jsonl",
        &format!(
            "{}\n{}\n",
            versioned(prompt("first task: fix the lexer", -300)),
            versioned(assistant_line(150_000, &time_from_now(-290)))
        ),
    );
    let nudge = env.run_at(
        -285,
        &["pretooluse"],
        pretooluse_payload(SESSION, &path).to_string(),
    );
    assert!(nudge.stdout.contains("additionalContext"), "{nudge:?}");
    let pre = env.run_at(
        -280,
        &["precompact"],
        precompact_payload(SESSION, &path, "auto", Value::Null).to_string(),
    );
    assert!(pre.stdout.starts_with(FACTS), "{pre:?}");
    let facts = pre.stdout.chars().count();
    append_lines(
        &path,
        &[
            versioned(prompt("second task: add the parser tests", -200)),
            versioned(assistant_line(160_000, &time_from_now(-190))),
            boundary(-10),
            summary(-9),
        ],
    );
    let block = start(&env, &path, "compact", -5);
    assert!(
        block.contains("second task: add the parser tests"),
        "rebuilt: {block}"
    );
    let show = env.run(&["checkpoint", "show", "--session", SESSION, "--json"], "");
    let cp: Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(cp["id"], json!("cp_002"), "{cp}");
    assert_eq!(cp["meta"]["facts_chars"], json!(facts), "{cp}");
    assert_eq!(cp["meta"]["nudges"], json!(["normal 150k"]), "{cp}");
    // The receipt, once the next hook reads what the client recorded after the boundary.
    append_lines(
        &path,
        &[versioned(assistant_line(30_000, &time_from_now(-2)))],
    );
    env.run_at(
        -1,
        &["pretooluse"],
        pretooluse_payload(SESSION, &path).to_string(),
    );
    let status = env.run(&["status", "--session", SESSION], "");
    assert!(
        !status.stdout.contains("no facts"),
        "the receipt says the facts reached the summarizer: {}",
        status.stdout
    );
    let grouped = facts
        .to_string()
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join(",");
    assert!(
        status
            .stdout
            .contains(&format!("facts {grouped} characters")),
        "{}",
        status.stdout
    );
}
