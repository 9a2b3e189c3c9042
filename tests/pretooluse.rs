//! `ctxguard pretooluse`: arming by status line or transcript, exactly-once nudges, staleness,
//! new cycles, overrides and bad input.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;

use serde_json::{json, Value};

use crate::util::*;

fn missing_transcript(env: &TestEnv) -> PathBuf {
    env.dir.path().join("no-such-transcript.jsonl")
}

/// A transcript whose newest reply has `tokens` of context.
fn transcript_with(env: &TestEnv, tokens: u64) -> PathBuf {
    let text = [
        fixture("transcript-with-compaction.jsonl"),
        assistant_line(tokens, &time_from_now(-5)),
    ]
    .concat();
    env.write("t.jsonl", &(text + "\n"))
}

#[test]
fn armed_by_the_status_line_nudges_exactly_once() {
    let env = TestEnv::new();
    env.statusline(&statusline_payload(SESSION, Some(930_000), Some(1_000_000)));
    let payload = pretooluse_payload(SESSION, &missing_transcript(&env));

    let first = env.pretooluse(&payload);
    assert_eq!((first.code, first.stderr.as_str()), (0, ""));
    let text = decode_nudge(&first.stdout);
    assert!(
        text.starts_with("ctxguard: about 37k tokens are left before auto-compaction, which comes at 967k tokens (930k are in context now)"),
        "{text}"
    );
    let m = env.marker(SESSION);
    assert_eq!(m["state"], "nudged");
    assert!(m["nudged_at"].is_string());

    for _ in 0..3 {
        let again = env.pretooluse(&payload);
        assert_eq!(
            (again.code, again.stdout.as_str(), again.stderr.as_str()),
            (0, "", "")
        );
    }
    assert_eq!(env.marker(SESSION)["state"], "nudged");
}

#[test]
fn critical_nudge_follows_once() {
    let env = TestEnv::new();
    let payload = pretooluse_payload(SESSION, &missing_transcript(&env));
    env.statusline(&statusline_payload(SESSION, Some(130_000), Some(200_000)));
    decode_nudge(&env.pretooluse(&payload).stdout);
    env.statusline(&statusline_payload(SESSION, Some(153_000), Some(200_000)));
    decode_nudge(&env.pretooluse(&payload).stdout);
    assert_eq!(env.marker(SESSION)["state"], "critical_nudged");
    assert_eq!(env.pretooluse(&payload).stdout, "");
}

#[test]
fn the_fast_path_does_not_read_the_transcript() {
    let env = TestEnv::new();
    env.statusline(&statusline_payload(SESSION, Some(50_000), Some(200_000)));
    let before = env.snapshot();
    // A transcript that does not exist: reading it would leave a note on stderr.
    let run = env.pretooluse(&pretooluse_payload(SESSION, &missing_transcript(&env)));
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, "", "")
    );
    assert_eq!(env.snapshot(), before, "the fast path writes nothing");
}

#[test]
fn without_a_status_line_the_real_1m_session_is_not_nudged_at_151k() {
    let env = TestEnv::new();
    // The real transcript: 150,510 tokens after its last compaction, on claude-opus-5-5, the
    // client's default model, whose window is 1M. Without a status line the model decides the
    // window: no nudge at 15%.
    let path = env.write("real.jsonl", &fixture("transcript-with-compaction.jsonl"));
    let run = env.pretooluse(&pretooluse_payload(SESSION, &path));
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    let m = env.marker(SESSION);
    assert_eq!(m["state"], "idle");
    assert_eq!(m["source"], "transcript");
    assert_eq!(m["tokens"], 150_510);
    assert_eq!(
        (
            m["window"].as_u64(),
            m["window_source"].as_str(),
            m["model"].as_str()
        ),
        (Some(1_000_000), Some("model"), Some("claude-opus-5-5"))
    );
    assert_eq!(m["trigger_at"], 927_000);
}

#[test]
fn without_a_status_line_the_transcript_arms_and_nudges() {
    let env = TestEnv::new();
    // A 200k model (claude-opus-4-6) at 150k: trigger 127k, critical 152k.
    let path = transcript_with(&env, 150_510);
    let run = env.pretooluse(&pretooluse_payload(SESSION, &path));
    decode_nudge(&run.stdout);
    let m = env.marker(SESSION);
    assert_eq!(m["state"], "nudged");
    assert_eq!(m["source"], "transcript");
    assert_eq!(m["tokens"], 150_510);
    assert_eq!(m["statusline_at"], Value::Null);
    assert_eq!(
        env.pretooluse(&pretooluse_payload(SESSION, &path)).stdout,
        ""
    );
}

#[test]
fn a_1m_model_named_by_sessionstart_is_not_taken_for_200k_without_a_status_line() {
    // `claude --model opus[1m]` without a status line: the replies say `claude-opus-4-6`
    // (200k), only SessionStart's `model` keeps the suffix. At 150k that is 15%, no nudge.
    let env = TestEnv::new();
    let mut start = sessionstart_payload(SESSION, "resume", "/home/user/proj");
    start["model"] = json!("claude-opus-4-6[1m]");
    let run = env.run(&["sessionstart"], start.to_string());
    assert_eq!(run.code, 0, "{run:?}");
    let path = transcript_with(&env, 150_510);
    let run = env.pretooluse(&pretooluse_payload(SESSION, &path));
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    let m = env.marker(SESSION);
    assert_eq!(m["state"], "idle");
    assert_eq!(
        (m["window"].as_u64(), m["window_source"].as_str()),
        (Some(1_000_000), Some("model"))
    );
    // Another model named at SessionStart does not change what the replies say.
    let env = TestEnv::new();
    let mut start = sessionstart_payload(SESSION, "resume", "/home/user/proj");
    start["model"] = json!("claude-sonnet-4-5[1m]");
    env.run(&["sessionstart"], start.to_string());
    let path = transcript_with(&env, 150_510);
    decode_nudge(&env.pretooluse(&pretooluse_payload(SESSION, &path)).stdout);
    assert_eq!(env.marker(SESSION)["window"], 200_000);
}

#[test]
fn a_reported_1m_window_applies_to_transcript_readings() {
    let env = TestEnv::new();
    env.statusline(&statusline_payload(SESSION, Some(150_510), Some(1_000_000)));
    // Age the status-line report so the transcript is read.
    env.edit_marker(SESSION, |m| m["statusline_at"] = json!(time_from_now(-120)));
    let path = transcript_with(&env, 300_000);
    let run = env.pretooluse(&pretooluse_payload(SESSION, &path));
    assert_eq!(run.stdout, "");
    let m = env.marker(SESSION);
    assert_eq!(
        (m["tokens"].as_u64(), m["window"].as_u64()),
        (Some(300_000), Some(1_000_000))
    );
    assert_eq!(m["source"], "transcript");
    // Over 200k observed with no report at all: the 1M window is inferred.
    let env2 = TestEnv::new();
    let run = env2.pretooluse(&pretooluse_payload(
        SESSION,
        &transcript_with(&env2, 300_000),
    ));
    assert_eq!(run.stdout, "");
    assert_eq!(env2.marker(SESSION)["window"], 1_000_000);
    let run = env2.pretooluse(&pretooluse_payload(
        SESSION,
        &transcript_with(&env2, 940_000),
    ));
    assert!(decode_nudge(&run.stdout).contains("(940k are in context now)"));
}

/// The status line's report is stamped when `ctxguard statusline` runs, and the client builds its
/// payload from the last finished request: a report still of the previous reply can be stamped
/// after the next reply was (2.1.330, in the TUI: a 940k reply stamped 20-60 ms before a status
/// line still saying 300k). That reply is news all the same, and nudges; a reply older than a
/// report of usage no reply on disk has (the report is ahead of the transcript) is not.
#[test]
fn a_reply_stamped_before_a_status_line_report_of_the_previous_reply_still_counts() {
    let env = TestEnv::new();
    let earlier = assistant_line(300_000, &time_from_now(-10));
    let path = env.write(
        "t.jsonl",
        &[
            fixture("transcript-with-compaction.jsonl"),
            earlier.clone() + "\n",
        ]
        .concat(),
    );
    assert_eq!(
        env.pretooluse(&pretooluse_payload(SESSION, &path)).stdout,
        ""
    );
    // The new reply is stamped now; the status line, drawn a moment later, still reports the
    // previous reply.
    let reply = assistant_line(940_000, &time_from_now(0));
    std::thread::sleep(std::time::Duration::from_millis(20));
    env.statusline(&statusline_payload(SESSION, Some(300_000), Some(1_000_000)));
    append_lines(&path, &[reply]);
    let run = env.pretooluse(&pretooluse_payload(SESSION, &path));
    assert!(
        decode_nudge(&run.stdout).contains("(940k are in context now)"),
        "{run:?}"
    );
    // Critically: one more reply of that growth reaches the point.
    let m = env.marker(SESSION);
    assert_eq!(
        (m["state"].as_str(), m["tokens"].as_u64()),
        (Some("critical_nudged"), Some(940_000))
    );

    // The report ahead of the transcript: its usage is no reply's on disk, and the older reply
    // does not take the marker back.
    let env = TestEnv::new();
    let path = env.write(
        "t.jsonl",
        &[fixture("transcript-with-compaction.jsonl"), earlier + "\n"].concat(),
    );
    env.statusline(&statusline_payload(SESSION, Some(940_000), Some(1_000_000)));
    let run = env.pretooluse(&pretooluse_payload(SESSION, &path));
    assert!(
        decode_nudge(&run.stdout).contains("(940k are in context now)"),
        "{run:?}"
    );
    assert_eq!(env.marker(SESSION)["tokens"], 940_000);
}

#[test]
fn a_status_line_still_reporting_the_previous_reply_after_a_nudge_repeats_nothing() {
    let env = TestEnv::new();
    let path = env.write(
        "t.jsonl",
        &[
            fixture("transcript-with-compaction.jsonl"),
            assistant_line(300_000, &time_from_now(-10)) + "\n",
            assistant_line(940_000, &time_from_now(0)) + "\n",
        ]
        .concat(),
    );
    let run = env.pretooluse(&pretooluse_payload(SESSION, &path));
    assert!(
        decode_nudge(&run.stdout).contains("(940k are in context now)"),
        "{run:?}"
    );
    // The status line drawn right after still reports the reply before: no drop, no new cycle;
    // its next report, of the 940k, asks nothing again.
    env.statusline(&statusline_payload(SESSION, Some(300_000), Some(1_000_000)));
    let m = env.marker(SESSION);
    assert_eq!(
        (m["cycle"].as_u64(), m["tokens"].as_u64()),
        (Some(0), Some(940_000)),
        "{m}"
    );
    env.statusline(&statusline_payload(SESSION, Some(940_000), Some(1_000_000)));
    assert_eq!(
        env.pretooluse(&pretooluse_payload(SESSION, &path)).stdout,
        ""
    );
    assert_eq!(env.marker(SESSION)["cycle"], 0);
}

#[test]
fn a_stale_marker_expires_and_rearms() {
    let env = TestEnv::new();
    let path = transcript_with(&env, 130_000);
    decode_nudge(&env.pretooluse(&pretooluse_payload(SESSION, &path)).stdout);
    assert_eq!(
        env.pretooluse(&pretooluse_payload(SESSION, &path)).stdout,
        ""
    );
    // 31 minutes without a refresh: treated as idle, so the still-high usage re-arms it.
    env.edit_marker(SESSION, |m| {
        m["updated_at"] = json!(time_from_now(-31 * 60));
    });
    let run = env.pretooluse(&pretooluse_payload(SESSION, &path));
    decode_nudge(&run.stdout);
    let m = env.marker(SESSION);
    assert_eq!(
        (m["state"].as_str(), m["cycle"].as_u64()),
        (Some("nudged"), Some(0))
    );
}

#[test]
fn stale_after_secs_is_configurable() {
    let mut env = TestEnv::new();
    env.set("CTXGUARD_STALE_AFTER_SECS", "7200");
    let path = transcript_with(&env, 130_000);
    decode_nudge(&env.pretooluse(&pretooluse_payload(SESSION, &path)).stdout);
    env.edit_marker(SESSION, |m| {
        m["updated_at"] = json!(time_from_now(-31 * 60));
    });
    assert_eq!(
        env.pretooluse(&pretooluse_payload(SESSION, &path)).stdout,
        ""
    );
}

#[test]
fn a_compact_boundary_after_arming_starts_a_new_cycle_that_can_rearm() {
    let env = TestEnv::new();
    let mut text = fixture("transcript-with-compaction.jsonl");
    text.push_str(&(assistant_line(130_000, &time_from_now(-60)) + "\n"));
    let path = env.write("t.jsonl", &text);
    let payload = pretooluse_payload(SESSION, &path);
    decode_nudge(&env.pretooluse(&payload).stdout);

    // Compaction: a boundary newer than the arming, no reply yet. No `PreCompact` counted it:
    // it is caught up (tests/unseen.rs), its recovery given once, and a new cycle starts.
    text.push_str(&(boundary_line(&time_from_now(5)) + "\n"));
    std::fs::write(&path, &text).unwrap();
    let run = env.pretooluse(&payload);
    assert!(
        decode_nudge(&run.stdout).contains("compaction #1"),
        "{run:?}"
    );
    let m = env.marker(SESSION);
    assert_eq!(
        (
            m["state"].as_str(),
            m["cycle"].as_u64(),
            m["compactions"].as_u64()
        ),
        (Some("idle"), Some(1), Some(1))
    );
    assert_eq!(m["tokens"], Value::Null);
    assert_eq!(env.pretooluse(&payload).stdout, "", "once");

    // The new cycle fills up again and gets its own nudge.
    text.push_str(&(assistant_line(140_000, &time_from_now(6)) + "\n"));
    std::fs::write(&path, &text).unwrap();
    decode_nudge(&env.pretooluse(&payload).stdout);
    let m = env.marker(SESSION);
    assert_eq!(
        (m["state"].as_str(), m["cycle"].as_u64()),
        (Some("nudged"), Some(1))
    );
}

#[test]
fn parallel_hooks_nudge_exactly_once() {
    // Under wine (CI's Windows run) a process start costs some 30 ms: fewer rounds there.
    let rounds = if cfg!(windows) { 5 } else { 20 };
    for round in 0..rounds {
        let env = TestEnv::new();
        env.statusline(&statusline_payload(SESSION, Some(130_000), Some(200_000)));
        let payload = pretooluse_payload(SESSION, &missing_transcript(&env)).to_string();
        // Start all 64 first, then feed them, so they race for the lock. Under wine, starting
        // (or draining) that many processes at once fails now and then with an internal error
        // (1359) of wine's own: their output goes to files, and a start that fails is tried
        // again (the race is the same).
        let out = |i: usize, name: &str| env.dir.path().join(format!("{name}-{round}-{i}"));
        let spawn = |i: usize| {
            let mut tries = 0;
            loop {
                let started = env
                    .command(&["pretooluse"])
                    .stdin(Stdio::piped())
                    .stdout(std::fs::File::create(out(i, "stdout")).unwrap())
                    .stderr(std::fs::File::create(out(i, "stderr")).unwrap())
                    .spawn();
                match started {
                    Err(e) if cfg!(windows) && e.raw_os_error() == Some(1359) && tries < 5 => {
                        tries += 1;
                        std::thread::sleep(std::time::Duration::from_millis(50));
                    }
                    started => break started.unwrap(),
                }
            }
        };
        let mut children: Vec<_> = (0..64).map(spawn).collect();
        for child in &mut children {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(payload.as_bytes())
                .unwrap();
        }
        let outputs: Vec<_> = children
            .into_iter()
            .enumerate()
            .map(|(i, mut c)| std::process::Output {
                status: c.wait().unwrap(),
                stdout: std::fs::read(out(i, "stdout")).unwrap(),
                stderr: std::fs::read(out(i, "stderr")).unwrap(),
            })
            .collect();
        assert!(outputs.iter().all(|o| o.status.code() == Some(0)));
        let nudges: Vec<_> = outputs.iter().filter(|o| !o.stdout.is_empty()).collect();
        assert_eq!(nudges.len(), 1, "round {round}");
        decode_nudge(&String::from_utf8_lossy(&nudges[0].stdout));
        assert_eq!(env.marker(SESSION)["state"], "nudged");
    }
}

#[test]
fn env_and_config_file_change_the_trigger_and_texts() {
    // threshold_pct from the file: arm at 50% of 200k.
    let mut env = TestEnv::new();
    std::fs::create_dir_all(env.state()).unwrap();
    std::fs::write(
        env.state().join("config.json"),
        r#"{"threshold_pct": 50, "nudge_text": "SAVE {pct}% {tokens}/{window} {headroom}"}"#,
    )
    .unwrap();
    let payload = pretooluse_payload(SESSION, &missing_transcript(&env));
    env.statusline(&statusline_payload(SESSION, Some(100_000), Some(200_000)));
    assert_eq!(
        decode_nudge(&env.pretooluse(&payload).stdout),
        "SAVE 60% 100k/200k 67k"
    );

    // The environment overrides the file.
    env.set("CTXGUARD_NUDGE_TEXT", "ENV {pct}");
    env.set("CTXGUARD_THRESHOLD_PCT", "20");
    env.run(&["reset", "--all"], "");
    env.statusline(&statusline_payload(SESSION, Some(40_000), Some(200_000)));
    // {pct} is of the compaction point: 40k of 167k.
    assert_eq!(decode_nudge(&env.pretooluse(&payload).stdout), "ENV 24");

    // Critical text, and critical disabled.
    let mut env = TestEnv::new();
    env.set("CTXGUARD_CRITICAL_TEXT", "LAST CALL {headroom}");
    env.statusline(&statusline_payload(SESSION, Some(160_000), Some(200_000)));
    assert_eq!(
        decode_nudge(
            &env.pretooluse(&pretooluse_payload(SESSION, &missing_transcript(&env)))
                .stdout
        ),
        "LAST CALL 7k"
    );
    let mut env = TestEnv::new();
    env.set("CTXGUARD_CRITICAL_HEADROOM_TOKENS", "0");
    let payload = pretooluse_payload(SESSION, &missing_transcript(&env));
    env.statusline(&statusline_payload(SESSION, Some(130_000), Some(200_000)));
    decode_nudge(&env.pretooluse(&payload).stdout);
    env.statusline(&statusline_payload(SESSION, Some(165_000), Some(200_000)));
    assert_eq!(env.pretooluse(&payload).stdout, "");
}

#[test]
fn claude_autocompact_overrides_move_the_trigger() {
    let mut env = TestEnv::new();
    env.set("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "50");
    let payload = pretooluse_payload(SESSION, &missing_transcript(&env));
    // Compaction at 50% of (200k less the 20k output reservation): 90k, so the trigger is 50k.
    env.statusline(&statusline_payload(SESSION, Some(61_000), Some(200_000)));
    let m = env.marker(SESSION);
    assert_eq!(
        (m["compact_at"].as_u64(), m["trigger_at"].as_u64()),
        (Some(90_000), Some(50_000))
    );
    decode_nudge(&env.pretooluse(&payload).stdout);

    let mut env = TestEnv::new();
    env.set("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "300000");
    env.statusline(&statusline_payload(SESSION, Some(228_000), Some(1_000_000)));
    let m = env.marker(SESSION);
    assert_eq!(
        (m["compact_at"].as_u64(), m["trigger_at"].as_u64()),
        (Some(267_000), Some(227_000))
    );
    assert_eq!(m["state"], "armed");
}

#[test]
fn bad_input_is_silent_and_changes_nothing() {
    let env = TestEnv::new();
    env.statusline(&statusline_payload(SESSION, Some(130_000), Some(200_000)));
    let before = env.snapshot();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let huge = json!({"session_id": SESSION, "tool_input": {"content": "x".repeat(10 << 20)}, "transcript_path": 5});
    let inputs: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b" \n\t".to_vec(),
        b"hello".to_vec(),
        br#"{"session_id": "225d8c26-5cbd-4b52-b720-e8fe94443567", "tool_name": "Bash""#.to_vec(),
        b"\xc3\x28{}".to_vec(),
        b"[{}]".to_vec(),
        b"null".to_vec(),
        deep.into_bytes(),
        huge.to_string().into_bytes(),
        json!({"session_id": ["a"]}).to_string().into_bytes(),
        json!({"session_id": null, "transcript_path": null})
            .to_string()
            .into_bytes(),
        json!({"session_id": "", "tool_name": "Bash"})
            .to_string()
            .into_bytes(),
    ];
    for input in &inputs {
        env.run(&["pretooluse"], input).assert_silent_failure();
    }
    assert_eq!(env.snapshot(), before, "bad input must not touch state");
    // The marker was armed all along and still nudges for a good payload.
    decode_nudge(
        &env.pretooluse(&pretooluse_payload(SESSION, &missing_transcript(&env)))
            .stdout,
    );
}

#[test]
fn hostile_session_ids_stay_inside_the_state_root() {
    let env = TestEnv::new();
    let path = transcript_with(&env, 130_000);
    let long = "z".repeat(4096);
    let ids = [
        "../../escape",
        "/abs/path",
        "a/b",
        "..",
        ".",
        "a\u{0}b",
        "日本語",
        "con",
        &long,
        "ABC",
        "abc",
    ];
    for id in ids {
        let run = env.pretooluse(&pretooluse_payload(id, &path));
        assert_eq!(run.code, 0, "{id:?}: {run:?}");
        decode_nudge(&run.stdout); // each id is its own session: each gets its nudge
    }
    let sessions: Vec<_> = std::fs::read_dir(env.state().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(sessions.len(), ids.len());
    for dir in &sessions {
        assert_eq!(dir.parent().unwrap(), env.state().join("sessions"));
        assert!(dir.join("marker.json").is_file());
    }
    // Nothing was written beside the state root.
    let top: Vec<_> = std::fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(top.len(), 3, "{top:?}"); // home, state, t.jsonl, and nothing else
}

#[test]
fn wrong_arguments_never_block() {
    let env = TestEnv::new();
    let run = env.run(&["pretooluse", "--bogus"], "{}");
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
}

#[test]
fn an_invalid_config_file_falls_back_to_defaults_with_a_warning() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.state()).unwrap();
    std::fs::write(
        env.state().join("config.json"),
        "{\"headroom_tokens\": \"lots\"}",
    )
    .unwrap();
    let path = transcript_with(&env, 130_000);
    let run = env.pretooluse(&pretooluse_payload(SESSION, &path));
    decode_nudge(&run.stdout);
    assert_eq!(run.stderr.lines().count(), 1);
    assert!(
        run.stderr.contains("config.json") && run.stderr.contains("headroom_tokens"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_corrupt_marker_is_replaced_not_fatal() {
    let env = TestEnv::new();
    let path = transcript_with(&env, 130_000);
    let dir = env.state().join("sessions").join(SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("marker.json"), "{\"state\": \"arm").unwrap();
    let run = env.pretooluse(&pretooluse_payload(SESSION, &path));
    decode_nudge(&run.stdout);
    assert!(run.stderr.contains("corrupt"), "{}", run.stderr);
    assert_eq!(env.marker(SESSION)["state"], "nudged");
}

#[test]
fn the_nudge_says_exactly_where_to_save() {
    // Auto memory is on by default: Claude Code's memory folder of this project, in its format.
    let env = TestEnv::new();
    let folder = env
        .home()
        .join(".claude")
        .join("projects")
        .join("-home-user-proj");
    std::fs::create_dir_all(&folder).unwrap();
    let transcript = folder.join(format!("{SESSION}.jsonl"));
    std::fs::write(
        &transcript,
        assistant_line(150_000, &time_from_now(-5)) + "\n",
    )
    .unwrap();
    let nudge = decode_nudge(
        &env.pretooluse(&pretooluse_payload(SESSION, &transcript))
            .stdout,
    );
    let dir = folder.join("memory");
    assert!(
        nudge.contains(&format!(
            "in Claude Code's memory folder {}: one file per memory",
            dir.display()
        )),
        "{nudge}"
    );
    assert!(
        nudge.contains(&dir.join("MEMORY.md").display().to_string()),
        "{nudge}"
    );

    // Turned off: ctxguard's own memory file, by its full path.
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::fs::write(
        env.home().join(".claude/settings.json"),
        r#"{"autoMemoryEnabled": false}"#,
    )
    .unwrap();
    let t = env.write(
        "t.jsonl",
        &(assistant_line(150_000, &time_from_now(-5)) + "\n"),
    );
    let nudge = decode_nudge(&env.pretooluse(&pretooluse_payload(SESSION, &t)).stdout);
    let own = env.home().join(".claude-memory/MEMORY.md");
    assert!(
        nudge.contains(&format!(
            "save durable knowledge to memory now, in {} (ctxguard shows it again",
            own.display()
        )),
        "{nudge}"
    );
}

#[test]
fn auto_memory_turned_off_in_the_clients_environment_names_ctxguards_file() {
    // `CLAUDE_CODE_DISABLE_AUTO_MEMORY=1` set when starting `claude` reaches every hook's
    // environment: the nudge must not send memories to a folder nothing brings back.
    let mut env = TestEnv::new();
    env.set("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1");
    let t = env.write(
        "t.jsonl",
        &(assistant_line(150_000, &time_from_now(-5)) + "\n"),
    );
    let nudge = decode_nudge(&env.pretooluse(&pretooluse_payload(SESSION, &t)).stdout);
    let own = env.home().join(".claude-memory/MEMORY.md");
    assert!(
        nudge.contains(&format!("in {} (ctxguard shows it again", own.display())),
        "{nudge}"
    );
    assert!(!nudge.contains("Claude Code's memory folder"), "{nudge}");
}

#[test]
fn with_auto_compaction_off_no_text_claims_a_compaction() {
    for (var, value, make_room) in [
        (
            "DISABLE_AUTO_COMPACT",
            "1",
            "/compact summarises the conversation in place; /clear starts a fresh context, and \
             ctxguard brings this session's checkpoint",
        ),
        (
            "DISABLE_COMPACT",
            "true",
            "what comes next: /clear starts a fresh context, and ctxguard brings",
        ),
    ] {
        let mut env = TestEnv::new();
        env.set(var, value);
        // 150k of a 200k window: past the nudge (137k); the client stops at 177k.
        let t = env.write(
            "t.jsonl",
            &(assistant_line(150_000, &time_from_now(-5)) + "\n"),
        );
        let nudge = decode_nudge(&env.pretooluse(&pretooluse_payload(SESSION, &t)).stdout);
        assert!(
            nudge.starts_with(
                "ctxguard: about 27k tokens are left before Claude Code stops accepting \
                 requests, at 177k tokens (150k of 200k are in use): auto-compaction is off"
            ),
            "{var}: {nudge}"
        );
        assert!(nudge.contains(make_room), "{nudge}");
        assert!(!nudge.contains("will summarise"), "{nudge}");
        let m = env.marker(SESSION);
        assert_eq!(
            (
                m["trigger_at"].as_u64(),
                m["critical_at"].as_u64(),
                m["compact_at"].as_u64()
            ),
            (Some(137_000), Some(162_000), Some(177_000)),
            "{var}"
        );
        // The critical one, at 164k: the 13k truly left, before the stop.
        let t = env.write(
            "t.jsonl",
            &(assistant_line(164_000, &time_from_now(-4)) + "\n"),
        );
        let nudge = decode_nudge(&env.pretooluse(&pretooluse_payload(SESSION, &t)).stdout);
        assert!(
            nudge.starts_with(
                "ctxguard: Claude Code stops accepting requests in about 13k tokens, at 177k"
            ),
            "{nudge}"
        );
        assert!(!nudge.contains("imminent"), "{nudge}");
    }
    // `autoCompactEnabled: false` in the settings alike.
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::fs::write(
        env.home().join(".claude/settings.json"),
        r#"{"autoCompactEnabled": false}"#,
    )
    .unwrap();
    let t = env.write(
        "t.jsonl",
        &(assistant_line(170_000, &time_from_now(-5)) + "\n"),
    );
    let nudge = decode_nudge(&env.pretooluse(&pretooluse_payload(SESSION, &t)).stdout);
    assert!(nudge.contains("auto-compaction is off"), "{nudge}");
}

#[test]
fn a_prompt_past_the_compaction_point_gets_no_nudge() {
    // One reply jumped from below the trigger past the point (900k → 980k of 1M, compacting at
    // 967k): the client compacts before the model sees the next prompt, so a nudge with it
    // would ask to save history already gone.
    let env = TestEnv::new();
    let t = env.write(
        "t.jsonl",
        &(assistant_line_of("claude-opus-5-5", 900_000, &time_from_now(-9))
            + "\n"
            + &assistant_line_of("claude-opus-5-5", 980_000, &time_from_now(-5))
            + "\n"),
    );
    let mut ups = pretooluse_payload(SESSION, &t);
    ups["hook_event_name"] = json!("UserPromptSubmit");
    ups["prompt"] = json!("go on");
    let run = env.run(&["userpromptsubmit"], ups.to_string());
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    let m = env.marker(SESSION);
    assert_eq!(
        (m["state"].as_str(), m["tokens"].as_u64()),
        (Some("armed"), Some(980_000))
    );
    // Below the point, the prompt route nudges as ever.
    let env = TestEnv::new();
    let t = env.write(
        "t.jsonl",
        &(assistant_line_of("claude-opus-5-5", 940_000, &time_from_now(-5)) + "\n"),
    );
    let mut ups = pretooluse_payload(SESSION, &t);
    ups["hook_event_name"] = json!("UserPromptSubmit");
    let run = env.run(&["userpromptsubmit"], ups.to_string());
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    let text = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(text.contains("about 27k tokens are left"), "{run:?}");
}
