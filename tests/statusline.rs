//! `ctxguard statusline` on real and edited status-line payloads.

use serde_json::{json, Value};

use crate::util::*;

const SL_SESSION: &str = "e09e1818-7974-46d3-98ed-eaa268f5d1d0";

#[test]
fn real_payload_draws_the_gauge_and_records_usage() {
    let mut env = TestEnv::new();
    env.set("NO_COLOR", "1");
    let run = env.run(&["statusline"], fixture("statusline-after-turn.json"));
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout, "ctx 15% · 151k/1M · compacts in 816k\n");
    assert_eq!(run.stderr, "");
    let m = env.marker(SL_SESSION);
    assert_eq!(m["session_id"], SL_SESSION);
    assert_eq!(m["state"], "idle");
    assert_eq!(m["tokens"], 150_510);
    assert_eq!(m["window"], 1_000_000);
    assert_eq!(m["compact_at"], 967_000);
    assert_eq!(m["trigger_at"], 927_000);
    assert_eq!(m["critical_at"], 952_000);
    assert_eq!(m["reported_window"], 1_000_000);
    assert_eq!(m["source"], "statusline");
    assert!(m["statusline_at"].is_string());
    assert_eq!(m["armed_at"], Value::Null);
}

#[test]
fn first_render_with_null_usage_is_unknown() {
    let mut env = TestEnv::new();
    env.set("NO_COLOR", "1");
    let run = env.run(&["statusline"], fixture("statusline-first-render.json"));
    assert_eq!((run.code, run.stdout.as_str()), (0, "ctx ?/1M\n"));
    let m = env.marker(SL_SESSION);
    assert_eq!(
        (m["state"].as_str(), &m["tokens"]),
        (Some("idle"), &Value::Null)
    );
    assert_eq!(
        m["statusline_at"],
        Value::Null,
        "an unknown reading is not a report"
    );
}

#[test]
fn arms_past_the_trigger_on_a_1m_window() {
    let env = TestEnv::new();
    let below = env.run(
        &["statusline", "--no-color"],
        statusline_payload(SESSION, Some(926_999), Some(1_000_000)).to_string(),
    );
    assert_eq!(
        below.stdout,
        "ctx 93% · 927k/1M · compacts in 40k · idle≥200k\n"
    );
    assert_eq!(env.marker(SESSION)["state"], "idle");

    let above = env.run(
        &["statusline", "--no-color"],
        statusline_payload(SESSION, Some(927_000), Some(1_000_000)).to_string(),
    );
    assert_eq!(
        above.stdout,
        "ctx 93% · 927k/1M · compacts in 40k · idle≥200k\n"
    );
    let m = env.marker(SESSION);
    assert_eq!(m["state"], "armed");
    assert!(m["armed_at"].is_string());
    assert_eq!(m["tokens"], 927_000);
}

#[test]
fn a_payload_without_window_size_uses_the_models_window() {
    // Old clients send no window: the model decides (claude-opus-5-5 has 1M)...
    let env = TestEnv::new();
    let run = env.run(
        &["statusline", "--no-color"],
        statusline_payload(SESSION, Some(130_000), None).to_string(),
    );
    assert_eq!(run.stdout, "ctx 13% · 130k/1M · compacts in 837k\n");
    assert_eq!(env.marker(SESSION)["window_source"], "model");
    // ...a 200k model, or an unknown one, gets 200k. The client compacts claude-opus-4-6 and a
    // model it does not know at its threshold; claude-sonnet-4-5 only when the window is full.
    for (model, gauge, state, trigger) in [
        (
            "claude-opus-4-6",
            "ctx 65% · 130k/200k · compacts in 37k\n",
            "armed",
            127_000,
        ),
        (
            "some-new-model",
            "ctx 65% · 130k/200k · compacts in 37k\n",
            "armed",
            127_000,
        ),
        (
            "claude-sonnet-4-5-20250929",
            "ctx 65% · 130k/200k · full in 66k\n",
            "idle",
            156_000,
        ),
    ] {
        let env = TestEnv::new();
        let mut payload = statusline_payload(SESSION, Some(130_000), None);
        payload["model"]["id"] = json!(model);
        let run = env.run(&["statusline", "--no-color"], payload.to_string());
        assert_eq!(run.stdout, gauge, "{model}");
        let m = env.marker(SESSION);
        assert_eq!(
            (m["state"].as_str(), m["trigger_at"].as_u64()),
            (Some(state), Some(trigger)),
            "{model}"
        );
        assert_eq!(m["reported_window"], Value::Null);
    }
}

#[test]
fn colours_follow_the_level_unless_disabled() {
    let env = TestEnv::new();
    let colour = |tokens: u64| {
        env.statusline(&statusline_payload(SESSION, Some(tokens), Some(200_000)))
            .stdout
    };
    assert!(colour(100_000).starts_with("\x1b[32mctx 50%"), "green");
    assert!(colour(130_000).starts_with("\x1b[33m"), "yellow");
    assert!(colour(155_000).starts_with("\x1b[31m"), "red");
    // Past 147k the client shows its own countdown: ctxguard no percent of its own.
    assert!(colour(170_000).starts_with("\x1b[31mctx 170k/200k · compaction due"));
    assert!(colour(170_000).ends_with("\x1b[0m\n"));

    let mut env = TestEnv::new();
    env.set("NO_COLOR", "1");
    let plain = env.statusline(&statusline_payload(SESSION, Some(130_000), Some(200_000)));
    assert!(!plain.stdout.contains('\x1b'));
}

#[test]
fn quiet_records_but_prints_nothing() {
    let env = TestEnv::new();
    let run = env.run(
        &["statusline", "--quiet"],
        statusline_payload(SESSION, Some(930_000), Some(1_000_000)).to_string(),
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, "", "")
    );
    assert_eq!(env.marker(SESSION)["state"], "armed");
}

#[test]
fn forced_window_overrides_the_report() {
    let mut env = TestEnv::new();
    env.set("CTXGUARD_WINDOW_TOKENS", "200000")
        .set("NO_COLOR", "1");
    let run = env.statusline(&statusline_payload(SESSION, Some(150_000), Some(1_000_000)));
    assert_eq!(run.stdout, "ctx 150k/200k · compacts in 17k\n");
    let m = env.marker(SESSION);
    assert_eq!(
        (m["state"].as_str(), m["window"].as_u64()),
        (Some("armed"), Some(200_000))
    );
    assert_eq!(m["reported_window"], 1_000_000);
}

#[test]
fn bad_input_renders_a_neutral_segment_and_writes_nothing() {
    let env = TestEnv::new();
    let inputs: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"   \n".to_vec(),
        b"not json".to_vec(),
        b"{\"session_id\": \"x\", \"context_window\": ".to_vec(),
        b"[1,2,3]".to_vec(),
        b"\xff\xfe{}".to_vec(),
        json!({"session_id": 7}).to_string().into_bytes(),
        json!({"session_id": "s", "context_window": {"current_usage": {"input_tokens": "many"}}})
            .to_string()
            .into_bytes(),
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
    ];
    for input in inputs {
        let run = env.run(&["statusline"], &input);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stdout, "ctx ?\n", "{run:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
        assert!(run.stderr.starts_with("ctxguard statusline: "), "{run:?}");
    }
    assert!(env.snapshot().is_empty(), "bad input must not create state");
}

#[test]
fn a_usage_drop_after_arming_starts_a_new_cycle() {
    let env = TestEnv::new();
    env.statusline(&statusline_payload(SESSION, Some(130_000), Some(200_000)));
    assert_eq!(env.marker(SESSION)["state"], "armed");
    // After a compaction the client first reports null, then the small post-compaction usage.
    env.statusline(&statusline_payload(SESSION, None, Some(200_000)));
    assert_eq!(env.marker(SESSION)["state"], "armed");
    env.statusline(&statusline_payload(SESSION, Some(3_000), Some(200_000)));
    let m = env.marker(SESSION);
    assert_eq!(
        (m["state"].as_str(), m["cycle"].as_u64()),
        (Some("idle"), Some(1))
    );
    assert_eq!(m["armed_at"], Value::Null);
}

#[test]
fn the_gauge_says_when_idle_compaction_can_come_first() {
    let env = TestEnv::new();
    let below = env.run(
        &["statusline", "--no-color"],
        statusline_payload(SESSION, Some(150_000), Some(1_000_000)).to_string(),
    );
    assert_eq!(below.stdout, "ctx 15% · 150k/1M · compacts in 817k\n");
    let above = env.run(
        &["statusline", "--no-color"],
        statusline_payload(SESSION, Some(250_000), Some(1_000_000)).to_string(),
    );
    assert_eq!(
        above.stdout,
        "ctx 25% · 250k/1M · compacts in 717k · idle≥200k\n"
    );
    // Turned off in the user's settings: not shown.
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::fs::write(
        env.home().join(".claude/settings.json"),
        r#"{"idleCompaction": false}"#,
    )
    .unwrap();
    let off = env.run(
        &["statusline", "--no-color"],
        statusline_payload(SESSION, Some(250_000), Some(1_000_000)).to_string(),
    );
    assert_eq!(off.stdout, "ctx 25% · 250k/1M · compacts in 717k\n");
}

#[test]
fn the_percent_agrees_with_the_client() {
    let env = TestEnv::new();
    // Rounded to the nearest, as the client rounds: 69.8% is 70.
    let run = env.run(
        &["statusline", "--no-color"],
        statusline_payload(SESSION, Some(139_600), Some(200_000)).to_string(),
    );
    assert!(run.stdout.starts_with("ctx 70% · 140k/200k"), "{run:?}");
    // The client's own used_percentage wins when it describes the same window.
    let mut payload = statusline_payload(SESSION, Some(139_000), Some(200_000));
    payload["context_window"]["used_percentage"] = json!(69);
    let run = env.run(&["statusline", "--no-color"], payload.to_string());
    assert!(run.stdout.starts_with("ctx 69% · 139k/200k"), "{run:?}");
    // Within 20k of its threshold the client's TUI shows "N% until auto-compact" of its own:
    // no second, different percentage beside it.
    let mut payload = statusline_payload(SESSION, Some(156_000), Some(200_000));
    payload["context_window"]["used_percentage"] = json!(78);
    let run = env.run(&["statusline", "--no-color"], payload.to_string());
    assert_eq!(run.stdout, "ctx 156k/200k · compacts in 11k\n", "{run:?}");
}

#[test]
fn usage_above_the_reported_window_proves_it_wrong() {
    // Some 2.1.x clients report 200k for a 1M session.
    let env = TestEnv::new();
    let run = env.run(
        &["statusline", "--no-color"],
        statusline_payload(SESSION, Some(350_000), Some(200_000)).to_string(),
    );
    assert_eq!(
        run.stdout,
        "ctx 35% · 350k/1M · compacts in 617k · idle≥200k\n"
    );
    let m = env.marker(SESSION);
    assert_eq!(
        (m["window"].as_u64(), m["state"].as_str()),
        (Some(1_000_000), Some("idle"))
    );
    // The model's own window (claude-opus-5-5: 1M) replaces the impossible report.
    assert_eq!(m["window_source"], "model");
}

/// Issue 37 item 1: claude-sonnet-4-5, which Claude Code compacts only when a request no longer
/// fits. Its requests carry `max_tokens: 32000`; a request the API refuses for it is sent again
/// with `max_tokens` cut to what is left less 1000, and only below 3000 does the client compact
/// (read in 2.1.332's code): the context overflows at 196k of 200k, not at 200k. The client's own
/// indicator reads "N% context used" of 180k from 147k on (100% at 189k): the gauge shows no
/// count of tokens left beside it, and the critical nudge counts to 196k.
#[test]
fn a_model_compacted_only_when_full_is_counted_to_where_a_request_overflows() {
    let env = TestEnv::new();
    let gauge = |tokens: u64| {
        let mut payload = statusline_payload(SESSION, Some(tokens), Some(200_000));
        payload["model"]["id"] = json!("claude-sonnet-4-5-20250929");
        env.run(&["statusline", "--no-color"], payload.to_string())
            .stdout
    };
    assert_eq!(gauge(140_000), "ctx 70% · 140k/200k · full in 56k\n");
    for tokens in [147_000, 170_000, 189_000, 199_000] {
        let shown = gauge(tokens);
        assert_eq!(
            shown,
            format!("ctx {}k/200k · compacts when full\n", tokens / 1000)
        );
    }
    let m = env.marker(SESSION);
    assert_eq!(
        (m["compact_at"].as_u64(), m["critical_at"].as_u64()),
        (Some(196_000), Some(181_000)),
        "{m}"
    );
    // At 189k the critical nudge: 7k left before the overflow, not 11k before the window's end.
    let env = TestEnv::new();
    let mut payload = statusline_payload(SESSION, Some(189_000), Some(200_000));
    payload["model"]["id"] = json!("claude-sonnet-4-5-20250929");
    env.statusline(&payload);
    let transcript = env.dir.path().join("no-such-transcript.jsonl");
    let text = decode_nudge(
        &env.pretooluse(&pretooluse_payload(SESSION, &transcript))
            .stdout,
    );
    assert!(
        text.starts_with(
            "ctxguard: the context window is almost full: about 7k tokens are left before a \
             request no longer fits (189k of 200k tokens are in use), and Claude Code compacts \
             this session then."
        ),
        "{text}"
    );
    assert_eq!(env.marker(SESSION)["state"], "critical_nudged");
}
