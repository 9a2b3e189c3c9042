//! `status`, `reset` and `usage`: the commands people run by hand.

use assert_cmd::assert::OutputAssertExt;
use serde::Deserialize;
use serde_json::json;

use crate::util::*;

/// `status --json` must have exactly these fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // fields are checked by deserialising
struct Status {
    sessions: Vec<SessionStatus>,
    more: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionStatus {
    session_id: String,
    state: String,
    cycle: u64,
    tokens: Option<u64>,
    window: Option<u64>,
    window_source: Option<String>,
    model: Option<String>,
    compact_at: Option<u64>,
    compact_source: Option<String>,
    idle_compaction_applies: bool,
    trigger_at: Option<u64>,
    armed_at: Option<String>,
    nudged_at: Option<String>,
    updated_at: Option<String>,
    source: Option<String>,
    compactions: u64,
    last_checkpoint: Option<String>,
    recovery_pending: bool,
    cwd: Option<String>,
    last_nudge: Option<LastNudge>,
    last_checkpoint_at: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // fields are checked by deserialising
struct LastNudge {
    at: String,
    tokens: Option<u64>,
    critical: bool,
}

fn status(env: &TestEnv, args: &[&str]) -> Status {
    let out = env
        .command(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn status_json_lists_sessions_with_exactly_the_documented_fields() {
    let env = TestEnv::new();
    assert!(status(&env, &["status", "--json"]).sessions.is_empty());
    env.statusline(&statusline_payload(SESSION, Some(930_000), Some(1_000_000)));
    env.statusline(&statusline_payload(
        "other-session",
        Some(1_000),
        Some(200_000),
    ));
    let s = status(&env, &["status", "--json"]);
    assert_eq!(s.sessions.len(), 2);
    let s = status(&env, &["status", "--session", SESSION, "--json"]);
    assert_eq!(s.sessions.len(), 1);
    let one = &s.sessions[0];
    assert_eq!(one.session_id, SESSION);
    assert_eq!(one.state, "armed");
    assert_eq!(one.cycle, 0);
    assert_eq!(one.tokens, Some(930_000));
    assert_eq!(one.window, Some(1_000_000));
    assert_eq!(one.compact_at, Some(967_000));
    assert_eq!(one.trigger_at, Some(927_000));
    assert!(one.armed_at.is_some() && one.updated_at.is_some());
    assert_eq!(one.nudged_at, None);
    assert_eq!(one.source.as_deref(), Some("statusline"));
    assert_eq!(
        (
            one.compactions,
            one.last_checkpoint.as_deref(),
            one.recovery_pending
        ),
        (0, None, false)
    );
    assert_eq!(
        (
            one.cwd.as_deref(),
            one.last_nudge.is_none(),
            one.last_checkpoint_at.as_deref()
        ),
        (Some(CWD), true, None)
    );
}

#[test]
fn status_reports_a_stale_marker_as_idle() {
    let env = TestEnv::new();
    env.statusline(&statusline_payload(SESSION, Some(930_000), Some(1_000_000)));
    env.edit_marker(SESSION, |m| m["updated_at"] = json!(time_from_now(-3600)));
    let s = &status(&env, &["status", "--json"]).sessions[0];
    assert_eq!(s.state, "idle");
    // Where the numbers came from.
    assert_eq!(
        (
            s.window_source.as_deref(),
            s.model.as_deref(),
            s.compact_source.as_deref()
        ),
        (Some("reported"), Some("claude-opus-5-5"), Some("window"))
    );
    assert!(
        s.idle_compaction_applies,
        "930k: the client may compact it while idle"
    );
}

#[test]
fn status_table_and_unknown_session() {
    let env = TestEnv::new();
    let empty = env.command(&["status"]).assert().success();
    assert!(
        String::from_utf8_lossy(&empty.get_output().stdout).starts_with("no sessions yet under ")
    );
    env.statusline(&statusline_payload(SESSION, Some(130_000), Some(200_000)));
    let out = env.command(&["status"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("SESSION"));
    assert!(lines[1].starts_with(SESSION));
    let run = env.run(&["status", "--session", "nope"], "");
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("no state for session \"nope\""),
        "{}",
        run.stderr
    );
}

#[test]
fn reset_one_and_all() {
    let env = TestEnv::new();
    env.statusline(&statusline_payload(SESSION, Some(130_000), Some(200_000)));
    env.statusline(&statusline_payload("second", Some(130_000), Some(200_000)));
    let run = env.run(&["reset", "--session", SESSION], "");
    assert_eq!(
        (run.code, run.stdout.trim()),
        (0, format!("reset session {SESSION} to idle").as_str())
    );
    assert_eq!(env.marker(SESSION)["state"], "idle");
    assert_eq!(env.marker("second")["state"], "armed");
    let run = env.run(&["reset", "--all"], "");
    assert_eq!(run.stdout.trim(), "reset 2 session(s) to idle");
    assert_eq!(env.marker("second")["state"], "idle");
    // Usage still past the trigger re-arms on the next report.
    env.statusline(&statusline_payload(SESSION, Some(130_000), Some(200_000)));
    assert_eq!(env.marker(SESSION)["state"], "armed");
}

#[test]
fn reset_argument_errors_exit_1_not_2() {
    let env = TestEnv::new();
    for args in [
        &["reset"][..],
        &["reset", "--all", "--session", "x"],
        &["bogus"],
    ] {
        let run = env.run(args, "");
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(!run.stderr.is_empty());
    }
    let run = env.run(&["reset", "--session", "unknown"], "");
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("ctxguard status"), "{}", run.stderr);
}

#[test]
fn usage_on_the_real_transcript() {
    let env = TestEnv::new();
    let path = env.write("real.jsonl", &fixture("transcript-with-compaction.jsonl"));
    let p = path.to_str().unwrap();
    let run = env.run(&["usage", p], "");
    assert_eq!(run.code, 0, "{run:?}");
    // The transcript's model, claude-opus-5-5, has a 1M window.
    assert_eq!(
        run.stdout,
        "tokens       150,510 (15% of a 1,000,000 window, below the nudge point)\n\
         window       1,000,000 (known for this model; model claude-opus-5-5)\n\
         compacts at  967,000 (816,490 to go; from the window)\n\
         nudge at     927,000\n\
         critical at  952,000\n"
    );
    let run = env.run(&["usage", p, "--window", "200000"], "");
    assert!(
        run.stdout
            .starts_with("tokens       150,510 (75% of a 200,000 window, past the nudge point)\n"),
        "{}",
        run.stdout
    );
    let run = env.run(&["usage", p, "--window", "200000", "--json"], "");
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        v,
        json!({"transcript": p, "tokens": 150_510, "window": 200_000, "percent": 75,
               "compact_at": 167_000, "trigger_at": 127_000, "critical_at": 152_000,
               "level": "armed", "just_compacted": false, "model": "claude-opus-5-5",
               "window_source": "config", "compact_source": "window"})
    );
}

#[test]
fn usage_names_the_autocompact_setting_that_moved_the_compaction_point() {
    // What `/autocompact 400000` writes, per model, in the user's settings (`modelSettings`;
    // a map under `autoCompactWindow` is no form the client knows, and changes nothing).
    let env = TestEnv::new();
    let settings = env.home().join(".claude").join("settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"modelSettings": {"claude-opus-5-5": {"autoCompactWindow": 400000}}}"#,
    )
    .unwrap();
    let path = env.write("real.jsonl", &fixture("transcript-with-compaction.jsonl"));
    let run = env.run(&["usage", path.to_str().unwrap()], "");
    assert_eq!(run.code, 0, "{run:?}");
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("compacts at"))
        .unwrap();
    assert_eq!(
        line,
        format!(
            "compacts at  367,000 (216,490 to go; from modelSettings.claude-opus-5-5.autoCompactWindow in {})",
            settings.display()
        )
    );
}

#[test]
fn usage_takes_the_compaction_window_the_client_ran_with() {
    // `claude --autocompact 300000` on the 1M model: compaction at 267k, not 967k.
    let env = TestEnv::new();
    let path = env.write("real.jsonl", &fixture("transcript-with-compaction.jsonl"));
    let p = path.to_str().unwrap();
    let run = env.run(&["usage", p, "--autocompact", "300000", "--json"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        (&v["compact_at"], &v["trigger_at"], &v["compact_source"]),
        (&json!(267_000), &json!(227_000), &json!("flag"))
    );
    // A clear error, exit 1 as for every manual command's bad argument.
    let run = env.run(&["usage", p, "--autocompact", "0"], "");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("--autocompact"), "{run:?}");
}

#[test]
fn usage_uses_the_window_the_status_line_reported_for_that_session() {
    let env = TestEnv::new();
    let path = env.write(
        &format!("{SESSION}.jsonl"),
        &fixture("transcript-with-compaction.jsonl"),
    );
    env.statusline(&statusline_payload(SESSION, Some(150_510), Some(1_000_000)));
    let run = env.run(&["usage", path.to_str().unwrap()], "");
    assert!(
        run.stdout
            .starts_with("tokens       150,510 (15% of a 1,000,000 window, below the nudge point)"),
        "{}",
        run.stdout
    );
}

#[test]
fn usage_right_after_a_compaction_is_unknown() {
    let env = TestEnv::new();
    let mut text = fixture("transcript-with-compaction.jsonl");
    text.push_str(&(boundary_line(&time_from_now(0)) + "\n"));
    let path = env.write("t.jsonl", &text);
    let run = env.run(&["usage", path.to_str().unwrap(), "--json"], "");
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        (&v["tokens"], &v["just_compacted"]),
        (&json!(null), &json!(true))
    );
    let run = env.run(&["usage", path.to_str().unwrap()], "");
    assert!(
        run.stdout
            .starts_with("tokens       unknown: just compacted"),
        "{}",
        run.stdout
    );
}

#[test]
fn usage_env_overrides() {
    let cases: &[(&str, &str, [u64; 3])] = &[
        // (variable, value, [compact_at, trigger_at, critical_at]) on a forced 200k window
        (
            "CTXGUARD_HEADROOM_TOKENS",
            "10000",
            [167_000, 157_000, 157_000],
        ),
        ("CTXGUARD_THRESHOLD_PCT", "50", [167_000, 100_000, 152_000]),
        (
            "CTXGUARD_CRITICAL_HEADROOM_TOKENS",
            "5000",
            [167_000, 127_000, 162_000],
        ),
        (
            "CTXGUARD_COMPACT_BUFFER_TOKENS",
            "20000",
            [180_000, 140_000, 165_000],
        ),
        (
            "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
            "70",
            // 70% of the window less the 20k output reservation, as the client has it.
            [126_000, 86_000, 111_000],
        ),
        (
            "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
            "100000",
            [67_000, 27_000, 52_000],
        ),
    ];
    for (var, value, [compact, trigger, critical]) in cases {
        let mut env = TestEnv::new();
        env.set("CTXGUARD_WINDOW_TOKENS", "200000").set(var, value);
        let path = env.write("real.jsonl", &fixture("transcript-with-compaction.jsonl"));
        let run = env.run(&["usage", path.to_str().unwrap(), "--json"], "");
        assert_eq!(run.code, 0, "{var}: {run:?}");
        let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(
            (
                v["window"].as_u64(),
                v["compact_at"].as_u64(),
                v["trigger_at"].as_u64(),
                v["critical_at"].as_u64()
            ),
            (
                Some(200_000),
                Some(*compact),
                Some(*trigger),
                Some(*critical)
            ),
            "{var}={value}"
        );
    }
}

#[test]
fn manual_commands_fail_clearly_on_bad_config_and_files() {
    let mut env = TestEnv::new();
    let missing = env.dir.path().join("missing.jsonl");
    let run = env.run(&["usage", missing.to_str().unwrap()], "");
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("missing.jsonl") && run.stderr.contains("(os error 2)"),
        "{}",
        run.stderr
    );

    std::fs::create_dir_all(env.state()).unwrap();
    std::fs::write(env.state().join("config.json"), "{\"threshold_pct\": 120}").unwrap();
    let run = env.run(&["status"], "");
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("config.json") && run.stderr.contains("`threshold_pct` must be"),
        "{}",
        run.stderr
    );

    std::fs::write(env.state().join("config.json"), "{\"headroom\": 1}").unwrap();
    let run = env.run(&["status"], "");
    assert_eq!(run.code, 0);
    assert!(
        run.stderr.contains("unknown key `headroom`"),
        "{}",
        run.stderr
    );

    std::fs::remove_file(env.state().join("config.json")).unwrap();
    env.set("CTXGUARD_WINDOW_TOKENS", "big");
    let run = env.run(&["status"], "");
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("CTXGUARD_WINDOW_TOKENS"),
        "{}",
        run.stderr
    );
}

#[test]
fn help_has_examples_and_succeeds() {
    let env = TestEnv::new();
    let subs: [&[&str]; 14] = [
        &["statusline"],
        &["pretooluse"],
        &["precompact"],
        &["sessionstart"],
        &["status"],
        &["reset"],
        &["usage"],
        &["install"],
        &["uninstall"],
        &["doctor"],
        &["completions"],
        &["checkpoint", "show"],
        &["prune"],
        &["log"],
    ];
    for sub in subs {
        let run = env.run(&[sub, &["--help"]].concat(), "");
        assert_eq!(run.code, 0, "{sub:?}");
        assert!(run.stdout.contains("Example"), "{sub:?}: {}", run.stdout);
    }
}

/// The short id `log` and `status` print, or any unique start of an id, names a session
/// wherever an id is taken; a start two sessions share names both.
#[test]
fn a_unique_start_of_an_id_is_accepted_everywhere_and_an_ambiguous_one_names_its_candidates() {
    const TWIN: &str = "225d0000-1111-4222-8333-444455556666";
    let env = TestEnv::new();
    let t = env.write("t.jsonl", &before_first_compaction());
    let pre = env.run(
        &["precompact"],
        precompact_payload(SESSION, &t, "auto", serde_json::Value::Null).to_string(),
    );
    assert_eq!(pre.code, 0, "{pre:?}");
    env.statusline(&statusline_payload(TWIN, Some(130_000), Some(200_000)));
    // What `log` prints of the session.
    let short = &SESSION[..8];
    let log = env.run(&["log"], "");
    assert!(
        log.stdout.contains(&format!("session {short} ·")),
        "{log:?}"
    );

    let one = status(&env, &["status", "--session", short, "--json"]);
    assert_eq!(one.sessions[0].session_id, SESSION);
    let mine = env.run(&["log", "--session", short], "");
    assert!(mine.stdout.contains(short), "{mine:?}");
    let shown = env.run(&["checkpoint", "show", "--session", "225d8"], "");
    assert_eq!(shown.code, 0, "{shown:?}");
    assert!(shown.stdout.contains("compaction #1"), "{shown:?}");
    let reset = env.run(&["reset", "--session", "225d0"], "");
    assert_eq!(
        (reset.code, reset.stdout.trim()),
        (0, format!("reset session {TWIN} to idle").as_str())
    );

    for args in [
        &["status", "--session", "225d"][..],
        &["reset", "--session", "225d"],
        &["checkpoint", "show", "--session", "225d"],
        &["log", "--session", "225d"],
    ] {
        let run = env.run(args, "");
        assert_eq!(
            (run.code, run.stdout.as_str()),
            (1, ""),
            "{args:?}: {run:?}"
        );
        assert!(
            run.stderr.contains("session id \"225d\" is ambiguous")
                && run.stderr.contains(SESSION)
                && run.stderr.contains(TWIN),
            "{args:?}: {}",
            run.stderr
        );
    }
    // A start nobody has: as for an unknown id.
    let run = env.run(&["status", "--session", "9"], "");
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("no state for session \"9\""),
        "{}",
        run.stderr
    );
}
