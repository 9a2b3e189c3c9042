//! End to end, the nudge in the client's last configurations: auto-compaction turned off, auto
//! memory turned off in the client's own environment, a reply that jumps past the compaction
//! point, and the point learned from two auto-compactions.

use serde_json::Value;

use super::{after_precompact, count, FakeApi, Rig, Script, NUDGE};

/// Every request's text joined, for searching.
fn all_requests(rig: &Rig) -> String {
    rig.api
        .requests()
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn with_auto_compaction_off_no_text_claims_a_compaction() {
    // The default 1M model at 950k: nothing compacts, and the client stops accepting requests
    // at 977k (its blocking limit), 27k away: past the nudge (937k), short of critical (962k).
    let Some(rig) = Rig::new(2, 950_000) else {
        return;
    };
    let out = rig.claude_with(
        &rig.settings,
        "run two commands",
        None,
        &[],
        &[("DISABLE_AUTO_COMPACT", "1")],
    );
    let session = out["session_id"].as_str().unwrap();
    let last = rig.api.requests().last().unwrap().clone();
    assert_eq!(count(&last, NUDGE), 1, "{last}");
    let text = last.to_string();
    assert!(
        text.contains(
            "ctxguard: about 27k tokens are left before Claude Code stops accepting requests, at \
             977k tokens (950k of 1M are in use): auto-compaction is off"
        ),
        "{text}"
    );
    assert!(
        text.contains("/compact summarises the conversation in place; /clear starts a fresh"),
        "{text}"
    );
    let everything = all_requests(&rig);
    assert!(
        !everything.contains("will summarise"),
        "a compaction was announced"
    );
    assert!(!everything.contains("auto-compaction is imminent"));
    assert!(!rig.hook_runs().iter().any(|r| r.0 == "precompact"));
    let m = rig.env.marker(session);
    assert_eq!(m["compact_at"], 977_000, "{m}");
    rig.assert_hooks_only_added_context();
}

#[test]
fn auto_memory_off_in_the_clients_environment_names_ctxguards_file() {
    // CLAUDE_CODE_DISABLE_AUTO_MEMORY=1 set when starting `claude` (not in any settings file)
    // reaches the hooks: the nudge names ctxguard's own file, which every recovery shows.
    let Some(rig) = Rig::new(2, 940_000) else {
        return;
    };
    rig.claude_with(
        &rig.settings,
        "run two commands",
        None,
        &[],
        &[("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")],
    );
    let text = rig.api.requests().last().unwrap().to_string();
    let own = rig.env.home().join(".claude-memory/MEMORY.md");
    assert!(
        text.contains(&format!(
            "save durable knowledge to memory now, in {} (ctxguard shows it again",
            own.display()
        )),
        "{text}"
    );
    assert!(!text.contains("Claude Code's memory folder"), "{text}");
}

#[test]
fn a_reply_past_the_point_gets_no_nudge_with_the_next_prompt() {
    // A text-only turn ends at 980k of 1M (the point is 967k). The next prompt's
    // UserPromptSubmit runs before the client compacts: a nudge there would reach the model
    // only after the compaction, asking to save history already gone.
    let Some(rig) = Rig::with(Script {
        tool_calls: 0,
        context_tokens: 980_000,
        after_compact_tokens: Some(20_000),
        agent: false,
    }) else {
        return;
    };
    let out = rig.claude("hello", None, &[]);
    let session = out["session_id"].as_str().unwrap().to_string();
    let before = rig.hook_runs().len();
    rig.api.clear();
    rig.claude("and now?", Some(&session), &[]);
    let runs = rig.hook_runs()[before..].to_vec();
    let prompt = runs
        .iter()
        .find(|r| r.0 == "userpromptsubmit")
        .expect("the prompt hook ran");
    assert_eq!(
        prompt.2, "",
        "no nudge at the prompt past the point: {runs:?}"
    );
    assert!(
        runs.iter().any(|r| r.0 == "precompact"),
        "the client compacted: {runs:?}"
    );
    for (sub, _, printed) in after_precompact(&runs) {
        assert!(
            !printed.contains("ctxguard: about") && !printed.contains("imminent"),
            "{sub} nudged after the compaction: {printed}"
        );
    }
    assert!(
        !all_requests(&rig).contains("hook additional context: ctxguard: "),
        "a nudge reached the model"
    );
    rig.assert_hooks_only_added_context();
}

#[test]
fn two_auto_compactions_teach_a_point_between_the_evidence() {
    // On a 100k compaction window (the client's point: 67k), three runs of one session:
    // 1. replies at 150k: the client compacts before its next request (preTokens about 150k);
    // 2. replies at 60k, one after another: readings the client checked and did not compact;
    // 3. replies at 80k: the client compacts again (preTokens about 80k).
    // What is learned lies above 60k and at or below the newest preTokens; the computed 67k lies
    // there, so it stays (no reading PreCompact had is taken for the point).
    let script = |context_tokens, after_compact_tokens| Script {
        tool_calls: 3,
        context_tokens,
        after_compact_tokens,
        agent: false,
    };
    let Some(mut rig) = Rig::with(script(150_000, Some(20_000))) else {
        return;
    };
    let flag = ["--autocompact", "100000"];
    let out = rig.claude("run three commands", None, &flag);
    let session = out["session_id"].as_str().unwrap().to_string();
    rig.api = FakeApi::start(rig.env.dir.path(), script(60_000, None));
    rig.claude("run three commands", Some(&session), &flag);
    rig.api = FakeApi::start(rig.env.dir.path(), script(80_000, Some(20_000)));
    rig.claude("run three commands", Some(&session), &flag);
    // One more tool call after the second compaction reads its boundary.
    rig.claude("run three commands", Some(&session), &flag);

    let m = rig.env.marker(&session);
    assert!(m["compactions"].as_u64().unwrap() >= 2, "{m}");
    let pre = m["auto_compacted_at"][0]
        .as_u64()
        .expect("a boundary was seen");
    assert!(
        (80_000..100_000).contains(&pre),
        "the newest preTokens: {m}"
    );
    let floor = m["uncompacted_max"][0]
        .as_u64()
        .expect("readings that went on");
    assert!((60_000..61_000).contains(&floor), "{m}");
    let at = m["compact_at"].as_u64().unwrap();
    assert!(floor < at && at <= pre, "{floor} < {at} <= {pre}: {m}");
    assert_eq!(at, 67_000, "{m}");
    rig.assert_hooks_only_added_context();
}

/// A 200k model the client compacts only when a request no longer fits (claude-sonnet-4-5 on
/// 2.1.330, no compaction window set): at 171k, past the usual point (167k), the real client
/// does not compact, and the nudge counts down to where a request overflows (196k: the client
/// cuts `max_tokens` to what is left less 1k, down to 3k), not to a compaction at 167k that
/// will not come.
#[test]
fn a_model_compacted_only_when_full_gets_no_false_countdown() {
    let Some(rig) = Rig::new(2, 171_000) else {
        return;
    };
    let out = rig.claude(
        "run two commands",
        None,
        &["--model", "claude-sonnet-4-5-20250929"],
    );
    let session = out["session_id"].as_str().unwrap();
    // The client did not compact at its usual point.
    assert!(!rig.hook_runs().iter().any(|r| r.0 == "precompact"));
    let everything = all_requests(&rig);
    assert!(!everything.contains("create a detailed summary of the conversation"));
    let last = rig.api.requests().last().unwrap().clone();
    assert_eq!(count(&last, NUDGE), 1, "{last}");
    let text = last.to_string();
    assert!(
        text.contains(
            "ctxguard: about 25k tokens are left before a request no longer fits (171k of 200k \
             tokens are in use). Claude Code compacts this session only then"
        ),
        "{text}"
    );
    assert!(!everything.contains("auto-compaction is imminent"));
    assert!(!everything.contains("which comes at 167k"));
    let m = rig.env.marker(session);
    assert_eq!(m["compact_at"], 196_000, "{m}");
    assert_eq!(m["compact_source"]["reactive"], "claude-sonnet-4-5", "{m}");
    rig.assert_hooks_only_added_context();
}

/// Issue 24 item 7, on the real client: a turn of one tool call whose replies report 930k of 1M
/// after a turn at 160k. `PreToolUse` often reads only the previous turn's usage (the reply
/// that made the call is not on disk yet, as with parallel calls of one reply); `PostToolBatch`,
/// after the batch, reads it. With both registered the
/// turn's next request carries the nudge every time, once; the runs without `PostToolBatch`
/// are counted for docs/states.md.
#[test]
fn a_turn_that_jumps_past_the_trigger_is_nudged_in_that_turn() {
    const RUNS: usize = 3;
    let Some(rig) = Rig::new(1, 160_000) else {
        return;
    };
    let with_batch = rig.env.dir.path().join("with-batch.json");
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&rig.settings).unwrap()).unwrap();
    let mut batch = settings["hooks"]["PreToolUse"][0]["hooks"].clone();
    batch[0]["args"][2] = Value::from("posttoolbatch");
    settings["hooks"]["PostToolBatch"] = serde_json::json!([{ "hooks": batch }]);
    std::fs::write(&with_batch, settings.to_string()).unwrap();
    let mut late_without = 0;
    for (settings, name) in [
        (&rig.settings, "PreToolUse only"),
        (&with_batch, "with PostToolBatch"),
    ] {
        for _ in 0..RUNS {
            let out = rig.claude_with(settings, "USAGE=160000 run a command", None, &[], &[]);
            let session = out["session_id"].as_str().unwrap().to_string();
            rig.api.clear();
            rig.claude_with(
                settings,
                "USAGE=930000 run a command",
                Some(&session),
                &[],
                &[],
            );
            let requests = rig.api.requests();
            let turn: Vec<&Value> = requests
                .iter()
                .filter(|r| !r.to_string().contains("create a detailed summary"))
                .collect();
            let nudged = turn
                .last()
                .map_or(0, |r| count(r, "hook additional context: ctxguard:"));
            eprintln!("{name}: the 930k turn's last request holds {nudged} nudge(s)");
            if settings == &with_batch {
                assert_eq!(nudged, 1, "{name}: {:?}", turn.last());
            } else if nudged == 0 {
                late_without += 1;
            }
        }
    }
    eprintln!("PreToolUse only: {late_without} of {RUNS} turns without the nudge");
}
