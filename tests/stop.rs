//! `ctxguard stop`: the end-of-turn nudge before an idle compaction, through the binary on the
//! real 2.1.330 Stop payload.

use serde_json::{json, Value};

use crate::util::*;

fn stop_payload(transcript: &std::path::Path, active: bool) -> Value {
    let mut p = fixture_json("Stop.json");
    p["session_id"] = json!(SESSION);
    p["transcript_path"] = json!(transcript.to_str().unwrap());
    p["stop_hook_active"] = json!(active);
    p
}

fn transcript(env: &TestEnv, tokens: u64) -> std::path::PathBuf {
    env.write(
        "t.jsonl",
        &(assistant_line_of("claude-opus-5-5", tokens, &time_from_now(-5)) + "\n"),
    )
}

#[test]
fn past_the_idle_threshold_the_turn_goes_on_once_to_save() {
    let env = TestEnv::new();
    // 250k of 1M: far below the nudge (927k), but idle compaction takes it after an hour.
    let t = transcript(&env, 250_000);
    let run = env.run(&["stop"], stop_payload(&t, false).to_string());
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    // Additional context, not a block: the client gives it to the model once and shows the
    // user "Stop hook says", never "reported a problem".
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "Stop", "{out}");
    assert_eq!(
        out.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["hookSpecificOutput"]
    );
    let text = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    // The user reads it too ("Stop hook says: …"): one short line, no path, no question to
    // repeat; the client's system prompt names the memory folder.
    assert_eq!(
        text,
        "ctxguard: an hour idle compacts these 250k tokens. Briefly save decisions, open \
         tasks, next steps to your memory; start nothing new."
    );
    // A level of its own: the trigger's nudge is still to come.
    let m = env.marker(SESSION);
    assert_eq!(m["state"], "idle");
    assert_eq!(m["idle_nudge"]["idle"], true, "{m}");
    let status = env.run(&["status", "--session", SESSION], "").stdout;
    assert!(
        status.contains("last nudge  idle (end of turn), 250k"),
        "{status}"
    );
    // The turn that goes on ends again: never a second time (the marker, and
    // stop_hook_active, each stop it).
    for active in [true, false] {
        let run = env.run(&["stop"], stop_payload(&t, active).to_string());
        assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    }
}

#[test]
fn no_end_of_turn_nudge_where_idle_compaction_cannot_come() {
    // Below 200k; under -p or the SDK; with idleCompaction off; with idle_nudge off; with
    // the client's threshold raised; for a subagent.
    type Case<'a> = (&'a str, u64, &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 5] = [
        ("below", 150_000, &[], ""),
        ("-p", 250_000, &[("CLAUDE_CODE_SESSION_ATTENDED", "0")], ""),
        ("off", 250_000, &[("CTXGUARD_IDLE_NUDGE", "false")], ""),
        (
            "threshold",
            250_000,
            &[("CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS", "300000")],
            "",
        ),
        (
            "idleCompaction",
            250_000,
            &[],
            r#"{"idleCompaction": false}"#,
        ),
    ];
    for (name, tokens, vars, settings) in cases {
        let mut env = TestEnv::new();
        for (k, v) in vars {
            env.set(k, v);
        }
        if !settings.is_empty() {
            std::fs::create_dir_all(env.home().join(".claude")).unwrap();
            std::fs::write(env.home().join(".claude/settings.json"), settings).unwrap();
        }
        let t = transcript(&env, tokens);
        let run = env.run(&["stop"], stop_payload(&t, false).to_string());
        assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{name}: {run:?}");
    }
    let env = TestEnv::new();
    let t = transcript(&env, 250_000);
    let mut sub = stop_payload(&t, false);
    sub["agent_id"] = json!("a1");
    let run = env.run(&["stop"], sub.to_string());
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    // Bad input: silent.
    env.run(&["stop"], "{nope").assert_silent_failure();
}

#[test]
fn once_per_cycle_even_after_the_marker_went_stale() {
    // The user comes back after 31 minutes (the marker is stale after 30), before the client's
    // idle compaction at about an hour: the cycle was asked already.
    let mut env = TestEnv::new();
    let t = transcript(&env, 250_000);
    let run = env.run(&["stop"], stop_payload(&t, false).to_string());
    assert!(run.stdout.contains("additionalContext"), "{run:?}");
    env.set("CTXGUARD_NOW", &time_from_now(31 * 60));
    let run = env.run(&["stop"], stop_payload(&t, false).to_string());
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    // A subagent named by a number is a subagent all the same.
    let env = TestEnv::new();
    let t = transcript(&env, 250_000);
    let mut sub = stop_payload(&t, false);
    sub["agent_id"] = json!(42);
    let run = env.run(&["stop"], sub.to_string());
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
}

/// The idle nudge never takes the place of the trigger's: a session nudged at the end of a turn
/// at 300k still gets the regular nudge at 930k; and a Stop right after that nudge stays quiet
/// (not 100k of new work since).
#[test]
fn the_idle_nudge_leaves_the_regular_nudge_to_come() {
    let env = TestEnv::new();
    let t = transcript(&env, 300_000);
    let run = env.run(&["stop"], stop_payload(&t, false).to_string());
    assert!(run.stdout.contains("additionalContext"), "{run:?}");
    append_lines(
        &t,
        &[assistant_line_of(
            "claude-opus-5-5",
            930_000,
            &time_from_now(-1),
        )],
    );
    let text = decode_nudge(&env.pretooluse(&pretooluse_payload(SESSION, &t)).stdout);
    assert!(text.contains("comes at 967k"), "{text}");
    let run = env.run(&["stop"], stop_payload(&t, false).to_string());
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    // The compaction's entry in the log says which nudges the cycle had.
    env.run(
        &["precompact"],
        precompact_payload(SESSION, &t, "auto", Value::Null).to_string(),
    );
    let log = env.run(&["log"], "").stdout;
    assert!(
        log.contains("asked to save: idle 300k, critical 930k"),
        "{log}"
    );
}

/// Every nudge of the cycle is in the compaction's log entry, not only the newest: a normal one
/// and then a critical one.
#[test]
fn the_log_names_every_nudge_of_the_cycle() {
    let env = TestEnv::new();
    let t = transcript(&env, 900_000);
    let reply =
        |tokens: u64, at: i64| assistant_line_of("claude-opus-5-5", tokens, &time_from_now(at));
    append_lines(&t, &[reply(928_000, -3)]);
    let text = decode_nudge(&env.pretooluse(&pretooluse_payload(SESSION, &t)).stdout);
    assert!(text.contains("928k"), "{text}");
    assert_eq!(env.marker(SESSION)["state"], "nudged");
    append_lines(&t, &[reply(960_000, -2)]);
    decode_nudge(&env.pretooluse(&pretooluse_payload(SESSION, &t)).stdout);
    assert_eq!(env.marker(SESSION)["state"], "critical_nudged");
    env.run(
        &["precompact"],
        precompact_payload(SESSION, &t, "auto", Value::Null).to_string(),
    );
    let log = env.run(&["log"], "").stdout;
    assert!(
        log.contains("asked to save: normal 928k, critical 960k"),
        "{log}"
    );
}

/// Defect 2 of issue 42: the status line reports 260k of 1M while the newest reply on disk is
/// the turn's first, at 150k (the client writes the rest later). The step ignores a reading
/// older than the status line's, so `Stop` judges the session at 260k, where idle compaction
/// can take it, and asks once.
#[test]
fn stop_judges_by_the_status_lines_newer_reading_not_an_older_reply_on_disk() {
    let env = TestEnv::new();
    let t = env.write(
        "t.jsonl",
        &(assistant_line_of("claude-opus-5-5", 150_000, &time_from_now(-60)) + "\n"),
    );
    let mut frame = statusline_payload(SESSION, Some(260_000), Some(1_000_000));
    frame["transcript_path"] = json!(t.to_str().unwrap());
    frame["model"]["id"] = json!("claude-opus-5-5");
    let sl = env.statusline(&frame);
    assert_eq!(sl.code, 0, "{sl:?}");
    assert_eq!(env.marker(SESSION)["tokens"], json!(260_000));
    let run = env.run(&["stop"], stop_payload(&t, false).to_string());
    assert_eq!(run.code, 0, "{run:?}");
    let out: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|_| panic!("{run:?}"));
    let text = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(text.contains("these 260k tokens"), "{text}");
    assert_eq!(
        env.marker(SESSION)["tokens"],
        json!(260_000),
        "not the older reply"
    );
}
