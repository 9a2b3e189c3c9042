//! The opt-in compaction gate: `PreCompact` exits 2 once per cycle, only for an auto-compaction
//! whose nudge has not been delivered, and never twice.

use serde_json::{json, Value};

use crate::util::*;

/// Runs `PreCompact`; when it lets the compaction through, the transcript then gets what the
/// client writes: the boundary, and a reply after it (150k again).
fn precompact(env: &TestEnv, trigger: &str, transcript: &std::path::Path) -> Run {
    let mut p = fixture_json("PreCompact-auto.json");
    p["transcript_path"] = json!(transcript.to_str().unwrap());
    p["trigger"] = json!(trigger);
    let run = env.run(&["precompact"], p.to_string());
    if run.code == 0 && transcript.exists() {
        std::thread::sleep(std::time::Duration::from_millis(5));
        append_lines(
            transcript,
            &[
                boundary_line(&time_from_now(0)),
                assistant_line(150_000, &time_from_now(0)),
            ],
        );
    }
    run
}

fn checkpoints(env: &TestEnv) -> usize {
    std::fs::read_dir(env.state().join("checkpoints").join(SESSION)).map_or(0, |d| {
        // Not `_latest.json`, nor a receipt beside a checkpoint (here the tool call after the
        // manual compaction, which no SessionStart followed, gives its recovery and writes one).
        d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "_latest.json" && !n.ends_with(".receipt.json"))
            .count()
    })
}

/// A transcript at 150k tokens: below a 200k window's compaction point, so the nudge may be due.
fn transcript(env: &TestEnv, tokens: u64) -> std::path::PathBuf {
    env.write(
        "t.jsonl",
        &(assistant_line(tokens, &time_from_now(-5)) + "\n"),
    )
}

#[test]
fn off_by_default_never_blocks() {
    let env = TestEnv::new();
    let t = transcript(&env, 150_000);
    let run = precompact(&env, "auto", &t);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, "", "")
    );
    assert_eq!(checkpoints(&env), 1);
}

#[test]
fn holds_once_then_nudges_then_passes() {
    let mut env = TestEnv::new();
    env.set("CTXGUARD_GATE_AUTO_COMPACTION", "true");
    // The gate holds only on a window it can trust: forced here, reported by the status line
    // in `a_window_in_doubt_never_holds`.
    env.set("CTXGUARD_WINDOW_TOKENS", "200000");
    let t = transcript(&env, 150_000);

    // Manual compactions are never held.
    let manual = precompact(&env, "manual", &t);
    assert_eq!(manual.code, 0, "{manual:?}");
    assert_eq!(checkpoints(&env), 1);

    // Auto, nudge not delivered: held once, with the reason on stderr, nothing written.
    let held = precompact(&env, "auto", &t);
    assert_eq!((held.code, held.stdout.as_str()), (2, ""), "{held:?}");
    assert_eq!(held.stderr.lines().count(), 1);
    assert!(
        held.stderr.contains("auto-compaction held once"),
        "{}",
        held.stderr
    );
    assert_eq!(
        checkpoints(&env),
        1,
        "a held compaction is not checkpointed"
    );
    let m = env.marker(SESSION);
    assert_eq!(m["state"], "armed");
    assert!(m["gate_held_at"].is_string());

    // The next tool call delivers the nudge.
    let nudge = env.pretooluse(&pretooluse_payload(SESSION, &t));
    decode_nudge(&nudge.stdout);

    // The next auto-compaction passes, and the next cycle starts with the gate re-armed.
    let passed = precompact(&env, "auto", &t);
    assert_eq!((passed.code, passed.stdout.as_str()), (0, ""), "{passed:?}");
    assert_eq!(checkpoints(&env), 2);
    let m = env.marker(SESSION);
    assert_eq!(
        (m["gate_held_at"].clone(), m["cycle"].as_u64()),
        (Value::Null, Some(2))
    );
    let held_again = precompact(&env, "auto", &t);
    assert_eq!(
        held_again.code, 2,
        "a new cycle may hold once more: {held_again:?}"
    );
}

#[test]
fn a_stuck_gate_never_blocks_twice() {
    let mut env = TestEnv::new();
    env.set("CTXGUARD_GATE_AUTO_COMPACTION", "1");
    env.set("CTXGUARD_WINDOW_TOKENS", "200000");
    let t = transcript(&env, 150_000);
    // No tool call ever delivers the nudge: each hold is followed by a compaction that passes
    // (which starts a new cycle, which may hold once again), never by a second hold.
    let codes: Vec<i32> = (0..6).map(|_| precompact(&env, "auto", &t).code).collect();
    assert_eq!(codes, [2, 0, 2, 0, 2, 0]);
    assert_eq!(checkpoints(&env), 3);
}

#[test]
fn delivered_nudge_or_overflow_or_unknown_usage_pass() {
    // Nudge already delivered this cycle.
    let mut env = TestEnv::new();
    env.set("CTXGUARD_GATE_AUTO_COMPACTION", "true");
    env.set("CTXGUARD_WINDOW_TOKENS", "200000");
    let t = transcript(&env, 150_000);
    decode_nudge(&env.pretooluse(&pretooluse_payload(SESSION, &t)).stdout);
    assert_eq!(precompact(&env, "auto", &t).code, 0);

    // Within 5,000 tokens of the (200k) window: an overflow recovery must not fail.
    let mut env = TestEnv::new();
    env.set("CTXGUARD_GATE_AUTO_COMPACTION", "true");
    env.set("CTXGUARD_WINDOW_TOKENS", "200000");
    let t = transcript(&env, 196_000);
    assert_eq!(precompact(&env, "auto", &t).code, 0);

    // Usage unknown (no transcript, no marker).
    let mut env = TestEnv::new();
    env.set("CTXGUARD_GATE_AUTO_COMPACTION", "true");
    let run = precompact(&env, "auto", &env.dir.path().join("missing.jsonl"));
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn a_window_in_doubt_never_holds() {
    // No status line and no configured window: 150k of a guessed 200k may be 15% of a 1M
    // window. In doubt, the compaction proceeds.
    let mut env = TestEnv::new();
    env.set("CTXGUARD_GATE_AUTO_COMPACTION", "true");
    let t = transcript(&env, 150_000);
    assert_eq!(precompact(&env, "auto", &t).code, 0);

    // The status line reported 200k just now: trusted, so the gate may hold.
    let mut env = TestEnv::new();
    env.set("CTXGUARD_GATE_AUTO_COMPACTION", "true");
    env.statusline(&statusline_payload(SESSION, Some(100_000), Some(200_000)));
    let t = transcript(&env, 150_000);
    assert_eq!(precompact(&env, "auto", &t).code, 2);
}

#[test]
fn an_overflow_after_a_model_switch_never_holds() {
    // The marker still holds the 1M window of the previous model, reported long ago; the
    // session now has 300k tokens on a 200k model and is compacting to recover.
    let mut env = TestEnv::new();
    env.set("CTXGUARD_GATE_AUTO_COMPACTION", "true");
    env.statusline(&statusline_payload(SESSION, Some(100_000), Some(1_000_000)));
    env.edit_marker(SESSION, |m| {
        m["statusline_at"] = serde_json::json!(time_from_now(-7200));
        m["updated_at"] = serde_json::json!(time_from_now(-7200));
    });
    let t = transcript(&env, 300_000);
    assert_eq!(precompact(&env, "auto", &t).code, 0);

    // Even a fresh report is not trusted when usage is over it.
    let mut env = TestEnv::new();
    env.set("CTXGUARD_GATE_AUTO_COMPACTION", "true");
    env.statusline(&statusline_payload(SESSION, Some(100_000), Some(200_000)));
    let t = transcript(&env, 300_000);
    assert_eq!(precompact(&env, "auto", &t).code, 0);
}

#[test]
fn no_other_hook_ever_exits_2_even_with_the_gate_on() {
    let mut env = TestEnv::new();
    env.set("CTXGUARD_GATE_AUTO_COMPACTION", "true");
    let t = transcript(&env, 150_000);
    for (hook, payload) in [
        ("pretooluse", pretooluse_payload(SESSION, &t)),
        (
            "statusline",
            statusline_payload(SESSION, Some(150_000), Some(200_000)),
        ),
        ("sessionstart", fixture_json("SessionStart-compact.json")),
    ] {
        for input in [payload.to_string(), "garbage".to_string(), String::new()] {
            let run = env.run(&[hook], &input);
            assert_eq!(run.code, 0, "{hook}: {run:?}");
        }
    }
}
