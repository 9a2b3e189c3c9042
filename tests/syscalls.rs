//! How often a hook opens what it reads, counted by `strace` (Linux): a `PreToolUse` that acts
//! on a drop of context opens the transcript at most twice (the reading of what was appended,
//! then one open the judge, the rewind tree and the checkpoint share), and `SessionStart(compact)`
//! takes the session's lock once, a summary prepared ahead included, and searches the
//! transcript for its newest boundary once (one open for the catch-up, the hand-over and the
//! summary prepared ahead, one for the rebuilt checkpoint's read). Without `strace` on the
//! machine these say so and pass without checking (`.ci/run` installs it).

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::util::*;

const SESSION: &str = "5c0a11ed-0000-4000-8000-0000000005c1";
const MODEL: &str = "claude-opus-5-5";

fn have_strace() -> bool {
    let ok = Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: strace is not installed (apt-get install strace)");
    }
    ok
}

/// `ctxguard ARGS` (as `env` runs it, `secs` from now) under `strace -f -e trace=openat`: its
/// output, and the paths it opened, one per successful open.
fn traced(env: &TestEnv, secs: i64, args: &[&str], stdin: &str) -> (Run, Vec<String>) {
    let inner = env.command(args);
    let log = env.dir.path().join("strace.log");
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-e", "trace=openat,open", "-o"])
        .arg(&log)
        .arg(inner.get_program())
        .args(inner.get_args());
    for (key, value) in inner.get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    cmd.env("CTXGUARD_NOW", time_from_now(secs));
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let out = feed(cmd, stdin).wait_with_output().unwrap();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    let opened = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.contains("= -1"))
        .filter_map(|l| l.split('"').nth(1).map(str::to_string))
        .collect();
    (run, opened)
}

fn count(opened: &[String], path: &Path) -> usize {
    let path = path.to_str().unwrap();
    opened.iter().filter(|p| p.as_str() == path).count()
}

fn prompt(text: &str, secs: i64) -> String {
    json!({"type": "user", "isSidechain": false, "timestamp": time_from_now(secs), "cwd": "/p",
           "message": {"role": "user", "content": text}})
    .to_string()
}

#[test]
fn a_pretooluse_acting_on_a_drop_opens_the_transcript_at_most_twice() {
    if !have_strace() {
        return;
    }
    let env = TestEnv::new();
    // A boundary early on, so the checkpoint also reads the head for the goal.
    let path = env.write(
        "t.jsonl",
        &([
            prompt("port the lexer to the new token type", -900),
            assistant_line_of(MODEL, 150_000, &time_from_now(-890)),
            boundary_line(&time_from_now(-880)),
            prompt("now the parser", -870),
            assistant_line_of(MODEL, 903_000, &time_from_now(-10)),
        ]
        .join("\n")
            + "\n"),
    );
    let first = env.run_at(
        -5,
        &["pretooluse"],
        pretooluse_payload(SESSION, &path).to_string(),
    );
    assert_eq!(first.code, 0, "{first:?}");
    append_lines(
        &path,
        &[assistant_line_of(MODEL, 275_000, &time_from_now(3600))],
    );
    let payload = pretooluse_payload(SESSION, &path).to_string();
    let (run, opened) = traced(&env, 3610, &["pretooluse"], &payload);
    assert!(
        decode_nudge(&run.stdout).contains("ctxguard recovery: compaction #1"),
        "{run:?}"
    );
    let n = count(&opened, &path);
    assert!(
        (1..=2).contains(&n),
        "opened the transcript {n} times: {opened:#?}"
    );
}

#[test]
fn session_start_after_a_summary_prepared_ahead_takes_the_lock_once() {
    if !have_strace() {
        return;
    }
    let env = TestEnv::new();
    let path = env.write(
        "t.jsonl",
        &format!(
            "{}\n{}\n",
            prompt("first task: fix the lexer", -300),
            assistant_line(150_000, &time_from_now(-290))
        ),
    );
    let pre = env.run_at(
        -280,
        &["precompact"],
        precompact_payload(SESSION, &path, "auto", Value::Null).to_string(),
    );
    assert_eq!(pre.code, 0, "{pre:?}");
    let boundary = json!({"type": "system", "subtype": "compact_boundary",
        "timestamp": time_from_now(-10),
        "compactMetadata": {"trigger": "auto", "preTokens": 170000, "precomputed": true}});
    append_lines(
        &path,
        &[
            prompt("second task: add the parser tests", -200),
            assistant_line(160_000, &time_from_now(-190)),
            boundary.to_string(),
        ],
    );
    let mut start = sessionstart_payload(SESSION, "compact", "/p");
    start["transcript_path"] = json!(path.to_str().unwrap());
    start["model"] = json!("claude-opus-4-6");
    let (run, opened) = traced(&env, -5, &["sessionstart"], &start.to_string());
    let block = decode_block(&run.stdout);
    assert!(
        block.contains("second task: add the parser tests"),
        "{block}"
    );
    let lock = env.state().join("sessions").join(SESSION).join("lock");
    assert_eq!(count(&opened, &lock), 1, "{opened:#?}");
    // The boundary found once (the hand-over and the summary prepared ahead share it), then
    // the part before it read for the rebuilt checkpoint.
    assert_eq!(count(&opened, &path), 2, "{opened:#?}");
    // The model it named, the rebuilt checkpoint and the handing over, in that one update.
    let m = env.marker(SESSION);
    assert_eq!(m["session_model"], json!("claude-opus-4-6"), "{m}");
    assert_eq!(m["recovery_pending"], json!(false), "{m}");
    assert!(
        m["receipt_pending"]["checkpoint"]
            .as_str()
            .is_some_and(|c| c.ends_with("cp_002.json")),
        "{m}"
    );
}
