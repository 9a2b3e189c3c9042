//! A compaction no `PreCompact` counted (`src/dropped.rs` `unseen`, `catch_up`), through the
//! binary: `PreCompact` fails open when the session's lock is held past its wait, or is not
//! registered at all, and the client compacts anyway. The transcript still holds everything up
//! to the boundary: the next hook that can give context checkpoints it, counts and logs it, and
//! gives its recovery once, with a receipt.

use std::fs;
use std::path::{Path, PathBuf};

use fs2::FileExt;
use serde_json::{json, Value};

use crate::util::*;

const SESSION: &str = "5e55a0c1-0000-4000-8000-00000000c0de";
const ASK: &str = "Fix the failing parser tests in src/parser.rs";

fn prompt(text: &str, at: &str) -> String {
    json!({"type": "user", "isSidechain": false, "timestamp": at, "cwd": "/p",
           "message": {"role": "user", "content": text}})
    .to_string()
}

fn summary(at: &str) -> String {
    json!({"type": "user", "isSidechain": false, "isCompactSummary": true, "timestamp": at,
           "message": {"role": "user", "content": "This session is being continued from a previous conversation."}})
    .to_string()
}

/// The session before its compaction: the ask, then replies up to 170k of 200k; a `PreToolUse`
/// has read it.
fn session(env: &TestEnv) -> PathBuf {
    let path = env.write(
        "s.jsonl",
        &[
            prompt(ASK, &time_from_now(-600)),
            assistant_line(150_000, &time_from_now(-500)),
            assistant_line(170_000, &time_from_now(-400)),
        ]
        .map(|l| l + "\n")
        .concat(),
    );
    let run = env.run_at(
        -390,
        &["pretooluse"],
        pretooluse_payload(SESSION, &path).to_string(),
    );
    assert_eq!(run.code, 0, "{run:?}");
    path
}

/// The client's compaction: its boundary, its summary, written `secs` from now.
fn compacted(path: &Path, secs: i64) {
    append_lines(
        path,
        &[
            boundary_line(&time_from_now(secs)),
            summary(&time_from_now(secs)),
        ],
    );
}

/// `SessionStart(compact)` of the session, on its transcript.
fn start_payload(path: &Path) -> String {
    let mut p = sessionstart_payload(SESSION, "compact", "/p");
    p["transcript_path"] = json!(path.to_str().unwrap());
    p.to_string()
}

fn status(env: &TestEnv) -> Value {
    let run = env.run(&["status", "--session", SESSION, "--json"], "");
    assert_eq!(run.code, 0, "{run:?}");
    serde_json::from_str(&run.stdout).unwrap()
}

fn log_entries(env: &TestEnv) -> usize {
    let run = env.run(&["log", "--days", "2", "--json"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let log: Value = serde_json::from_str(&run.stdout).unwrap();
    log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["session"] == SESSION[..8] && e["kind"] == "compaction")
        .count()
}

/// Defect 1 of issue 42: `PreCompact` cannot take the session's lock (held past its 2 s wait)
/// and fails open; the client compacts and starts the session again. `SessionStart(compact)`
/// finds nothing pending, sees the boundary nobody counted, and gives its recovery once.
#[test]
fn a_compaction_whose_precompact_failed_is_caught_up_at_session_start() {
    let env = TestEnv::new();
    let path = session(&env);
    let lock = fs::File::open(env.state().join("sessions").join(SESSION).join("lock"))
        .or_else(|_| {
            fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(env.state().join("sessions").join(SESSION).join("lock"))
        })
        .unwrap();
    lock.lock_exclusive().unwrap();
    let pre = env.run_at(
        -300,
        &["precompact"],
        precompact_payload(SESSION, &path, "auto", Value::Null).to_string(),
    );
    lock.unlock().unwrap();
    // Failed open: exit 0, nothing for the summarizer, one line saying why.
    assert_eq!((pre.code, pre.stdout.as_str()), (0, ""), "{pre:?}");
    assert_eq!(pre.stderr.lines().count(), 1, "{pre:?}");
    assert_eq!(
        status(&env)["sessions"][0]["compactions"],
        json!(0),
        "nothing counted yet"
    );

    compacted(&path, -290);
    let start = env.run_at(-280, &["sessionstart"], start_payload(&path));
    assert_eq!(start.code, 0, "{start:?}");
    let block = decode_block(&start.stdout);
    assert!(
        block.contains("ctxguard recovery: compaction #1 of this session"),
        "{block}"
    );
    assert!(block.contains(ASK), "{block}");
    // Once: the next start, and the next tool call after a reply, give nothing more.
    let again = env.run_at(-270, &["sessionstart"], start_payload(&path));
    assert_eq!(again.stdout, "", "{again:?}");
    append_lines(&path, &[assistant_line(30_000, &time_from_now(-260))]);
    let next = env.run_at(
        -250,
        &["pretooluse"],
        pretooluse_payload(SESSION, &path).to_string(),
    );
    assert!(!next.stdout.contains("ctxguard recovery"), "{next:?}");
    assert_eq!(status(&env)["sessions"][0]["compactions"], json!(1));
    assert_eq!(log_entries(&env), 1, "one log entry");
}

/// The same compaction with no `PreCompact` and no `SessionStart` registered (settings written
/// by hand): the first tool call after it reads the fall of usage past a boundary nobody
/// counted, and gives the recovery itself, once.
#[test]
fn a_compaction_no_hook_saw_is_caught_up_by_the_next_tool_call() {
    let env = TestEnv::new();
    let path = session(&env);
    compacted(&path, -290);
    append_lines(&path, &[assistant_line(30_000, &time_from_now(-280))]);
    let run = env.run_at(
        -270,
        &["pretooluse"],
        pretooluse_payload(SESSION, &path).to_string(),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let block = decode_nudge(&run.stdout);
    assert!(
        block.contains("ctxguard recovery: compaction #1 of this session"),
        "{block}"
    );
    assert!(block.contains(ASK), "{block}");
    let again = env.run_at(
        -260,
        &["pretooluse"],
        pretooluse_payload(SESSION, &path).to_string(),
    );
    assert_eq!(again.stdout, "", "{again:?}");
    let s = status(&env);
    assert_eq!(s["sessions"][0]["compactions"], json!(1), "{s}");
    assert_eq!(log_entries(&env), 1, "one log entry");
}
