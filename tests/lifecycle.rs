//! Living with ctxguard for months, through the binary: retention (the daily pass from
//! `SessionEnd`, bounded, and `prune` by hand, with a fake clock), never a pending recovery; the
//! directory index under concurrent sessions; `status` newest first with `--limit`, `--all` and
//! `--cwd`; `log`; the status line's trace of a nudge and a checkpoint; `--version`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{json, Value};

use crate::util::*;

const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;

/// A test environment whose local time is UTC, so log dates are predictable.
fn env() -> TestEnv {
    let mut env = TestEnv::new();
    env.set("TZ", "UTC");
    env
}

fn transcript(env: &TestEnv) -> PathBuf {
    env.write("t.jsonl", &before_first_compaction())
}

fn session_dir(env: &TestEnv, id: &str) -> PathBuf {
    env.state().join("sessions").join(id)
}

fn checkpoint_dir(env: &TestEnv, id: &str) -> PathBuf {
    env.state().join("checkpoints").join(id)
}

#[track_caller]
fn ok(run: &Run) {
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
}

/// A status-line report of `tokens` for `session`, working in `cwd`, `secs` from now.
fn report_at(env: &TestEnv, secs: i64, session: &str, cwd: &str, tokens: u64) -> Run {
    let mut p = statusline_payload(session, Some(tokens), Some(200_000));
    p["cwd"] = json!(cwd);
    p["workspace"]["current_dir"] = json!(cwd);
    env.run_at(secs, &["statusline", "--no-color"], p.to_string())
}

fn end_payload(session: &str, transcript: &Path, cwd: &str) -> Value {
    let mut p = fixture_json("SessionEnd.json");
    p["session_id"] = json!(session);
    p["transcript_path"] = json!(transcript.to_str().unwrap());
    p["cwd"] = json!(cwd);
    p["reason"] = json!("clear");
    p
}

/// `SessionEnd` of `session` in `cwd`, `secs` from now: a final checkpoint, and the daily pass.
fn end_at(env: &TestEnv, secs: i64, session: &str, transcript: &Path, cwd: &str) {
    ok(&env.run_at(
        secs,
        &["sessionend"],
        end_payload(session, transcript, cwd).to_string(),
    ));
}

/// An auto-compaction of `session`, `secs` from now: its recovery stays pending.
fn compact_at(env: &TestEnv, secs: i64, session: &str, transcript: &Path) {
    let payload = precompact_payload(session, transcript, "auto", Value::Null);
    ok(&env.run_at(secs, &["precompact"], payload.to_string()));
}

fn status_json(env: &TestEnv, secs: i64, args: &[&str]) -> Value {
    let run = env.run_at(secs, &[&["status", "--json"], args].concat(), "");
    ok(&run);
    serde_json::from_str(&run.stdout).unwrap()
}

fn ids(status: &Value) -> Vec<String> {
    status["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn prune_removes_idle_sessions_with_their_checkpoints_and_old_logs_never_a_pending_recovery() {
    let env = env();
    let t = transcript(&env);
    end_at(&env, -40 * DAY, "old-ended", &t, CWD);
    report_at(&env, -40 * DAY, "old-idle", CWD, 50_000);
    compact_at(&env, -40 * DAY, "old-pending", &t);
    report_at(&env, -DAY, "recent", CWD, 50_000);
    let old_log = env.state().join("logs").join(
        (chrono::Utc::now() - chrono::Duration::days(40))
            .format("%Y-%m-%d.md")
            .to_string(),
    );
    assert!(old_log.exists());
    assert!(checkpoint_dir(&env, "old-ended")
        .join("_latest.json")
        .exists());

    // A dry run says what would go and changes nothing.
    let before = env.snapshot();
    let dry = env.run(&["prune", "--dry-run"], "");
    ok(&dry);
    assert!(
        dry.stdout.contains("would remove session old-ended: idle since ")
            && dry.stdout.contains("(40 days), 1 checkpoint\n")
            && dry.stdout.contains("would remove session old-idle: ")
            && dry.stdout.contains(&format!("would remove log {}", old_log.display()))
            && dry
                .stdout
                .contains("kept session old-pending: its recovery is still pending")
            && dry.stdout.ends_with(
                "2 sessions and 1 daily log older than 30 days would be removed (dry run: nothing was)\n"
            ),
        "{}",
        dry.stdout
    );
    assert!(!dry.stdout.contains("recent"), "{}", dry.stdout);
    assert_eq!(env.snapshot(), before, "a dry run writes nothing");

    let run = env.run(&["prune"], "");
    ok(&run);
    assert!(
        run.stdout
            .ends_with("2 sessions and 1 daily log older than 30 days removed\n"),
        "{}",
        run.stdout
    );
    for gone in ["old-ended", "old-idle"] {
        assert!(!session_dir(&env, gone).exists(), "{gone}");
        assert!(!checkpoint_dir(&env, gone).exists(), "{gone}");
    }
    assert!(!old_log.exists());
    // The pending recovery and everything it needs stay.
    assert!(session_dir(&env, "old-pending")
        .join("marker.json")
        .exists());
    assert!(checkpoint_dir(&env, "old-pending")
        .join("cp_001.json")
        .exists());
    assert_eq!(
        ids(&status_json(&env, 0, &["--all"])),
        ["recent", "old-pending"]
    );
    // Nothing left to do.
    let again = env.run(&["prune"], "");
    assert!(again
        .stdout
        .ends_with("nothing to prune: no session idle and no daily log older than 30 days\n"));

    // Once the recovery is taken, the session is an ordinary idle one.
    let start = sessionstart_payload("old-pending", "compact", CWD);
    let taken = env.run_at(-39 * DAY, &["sessionstart"], start.to_string());
    assert!(decode_block(&taken.stdout).contains("compaction #1"));
    ok(&env.run(&["prune"], ""));
    assert!(!session_dir(&env, "old-pending").exists());
    assert!(!checkpoint_dir(&env, "old-pending").exists());
}

#[test]
fn older_than_overrides_the_age_and_retention_days_zero_keeps_everything() {
    let mut env = env();
    report_at(&env, -10 * DAY, "ten-days", CWD, 50_000);
    report_at(&env, -2 * DAY, "two-days", CWD, 50_000);
    let run = env.run(&["prune", "--dry-run"], "");
    assert!(run.stdout.starts_with("nothing to prune"), "{run:?}");
    let run = env.run(&["prune", "--older-than", "5"], "");
    ok(&run);
    assert!(run.stdout.contains("removed session ten-days"), "{run:?}");
    assert!(!session_dir(&env, "ten-days").exists());
    assert!(session_dir(&env, "two-days").exists());

    // Out of range or not a number: a message saying what is accepted, and nothing removed.
    for (bad, says) in [
        ("-1", "\"-1\" is negative"),
        ("7d", "\"7d\" is not a number of days"),
        ("99999", "99999 days is more than 36500"),
        ("99999999999999999999999", "is more than 36500"),
    ] {
        let run = env.run(&["prune", "--older-than", bad], "");
        assert_eq!(run.code, 1, "{run:?}");
        assert!(
            run.stderr.contains(says)
                && run
                    .stderr
                    .contains("a whole number of days from 0 to 36500"),
            "{bad}: {run:?}"
        );
    }
    assert!(session_dir(&env, "two-days").exists());

    // 0: every idle session, whatever its age; a pending recovery is still kept.
    compact_at(&env, 0, "pending-now", &transcript(&env));
    report_at(&env, -60, "a-minute-ago", CWD, 50_000);
    let run = env.run(&["prune", "--older-than", "0", "--dry-run"], "");
    ok(&run);
    assert!(
        run.stdout.contains("would remove session two-days"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("would remove session a-minute-ago"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("kept session pending-now: its recovery is still pending"),
        "{run:?}"
    );
    let run = env.run(&["prune", "--older-than", "0"], "");
    ok(&run);
    assert!(
        run.stdout
            .ends_with("2 sessions and 0 daily logs (idle at all, or from before today) removed\n"),
        "{run:?}"
    );
    assert!(!session_dir(&env, "two-days").exists());
    assert!(!session_dir(&env, "a-minute-ago").exists());
    assert!(session_dir(&env, "pending-now").exists());

    env.set("CTXGUARD_RETENTION_DAYS", "0");
    report_at(&env, -400 * DAY, "ancient", CWD, 50_000);
    end_at(&env, 0, "ending", &transcript(&env), CWD);
    assert!(
        session_dir(&env, "ancient").exists(),
        "the daily pass keeps all"
    );
    let run = env.run(&["prune"], "");
    ok(&run);
    assert!(run.stdout.starts_with("retention is off"), "{run:?}");
    assert!(session_dir(&env, "ancient").exists());
}

#[test]
fn the_daily_pass_runs_from_sessionend_at_most_once_a_day() {
    let env = env();
    let t = transcript(&env);
    report_at(&env, -40 * DAY, "old-a", CWD, 50_000);
    compact_at(&env, -40 * DAY, "old-pending", &t);
    end_at(&env, 0, "today", &t, CWD);
    assert!(!session_dir(&env, "old-a").exists(), "the first pass runs");
    assert!(session_dir(&env, "old-pending").exists());
    let progress: Value =
        serde_json::from_slice(&fs::read(env.state().join("retention.json")).unwrap()).unwrap();
    assert!(progress["last_pass"].is_string() && progress["cursor"].is_null());

    report_at(&env, -40 * DAY, "old-b", CWD, 50_000);
    end_at(&env, HOUR, "later-today", &t, CWD);
    assert!(session_dir(&env, "old-b").exists(), "once a day");
    // Nor from any other hook.
    report_at(&env, 2 * HOUR, "today", CWD, 50_000);
    compact_at(&env, 2 * HOUR, "today", &t);
    assert!(session_dir(&env, "old-b").exists());
    end_at(&env, 25 * HOUR, "tomorrow", &t, CWD);
    assert!(!session_dir(&env, "old-b").exists(), "a day later");
    assert!(
        session_dir(&env, "old-pending").exists(),
        "never a pending recovery"
    );
}

#[test]
fn the_daily_pass_is_bounded_and_continues_at_the_next_sessionend() {
    let env = env();
    let old = time_from_now(-40 * DAY);
    for i in 0..1200 {
        let dir = session_dir(&env, &format!("old-{i:04}"));
        fs::create_dir_all(&dir).unwrap();
        let marker = json!({"session_id": format!("old-{i:04}"), "updated_at": old});
        fs::write(dir.join("marker.json"), marker.to_string()).unwrap();
    }
    let left = || {
        fs::read_dir(env.state().join("sessions"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("old-")
            })
            .count()
    };
    let t = transcript(&env);
    end_at(&env, 0, "today", &t, CWD);
    assert_eq!(left(), 1000, "at most 200 removals per run");
    let progress: Value =
        serde_json::from_slice(&fs::read(env.state().join("retention.json")).unwrap()).unwrap();
    assert_eq!(progress["cursor"], "old-0199");
    // The pass in progress goes on at the next SessionEnd, the same day.
    for _ in 0..5 {
        end_at(&env, 60, "today", &t, CWD);
    }
    assert_eq!(left(), 0);
    assert!(session_dir(&env, "today").exists());
}

/// The directory index's entries for `CWD`.
fn index_entries(env: &TestEnv) -> Vec<String> {
    let base = env.state().join("cwd");
    let dirs: Vec<PathBuf> = fs::read_dir(&base)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let index: Value =
        serde_json::from_slice(&fs::read(dirs[0].join("index.json")).unwrap()).unwrap();
    index["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["session_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_directory_index_survives_concurrent_sessions() {
    let env = env();
    let t = transcript(&env);
    // Twelve sessions in the same directory end at once, a second apart on the clock.
    let children: Vec<_> = (0..12)
        .map(|i| {
            let mut cmd = env.command(&["sessionend"]);
            cmd.env("CTXGUARD_NOW", time_from_now(i))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            feed(cmd, end_payload(&format!("s-{i:02}"), &t, CWD).to_string())
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
    }
    let mut listed = index_entries(&env);
    assert_eq!(listed.len(), 12, "{listed:?}");
    assert_eq!(listed[0], "s-11", "newest first");
    listed.sort();
    listed.dedup();
    assert_eq!(listed.len(), 12);
    assert!(env.state().join("cwd/.complete").exists());
    // The next session here gets the newest one's digest, once.
    let start = |id: &str| {
        env.run_at(
            20,
            &["sessionstart"],
            sessionstart_payload(id, "startup", CWD).to_string(),
        )
    };
    let digest = decode_block(&start("next").stdout);
    assert!(
        digest.starts_with("## ctxguard: previous session"),
        "{digest}"
    );
    assert_eq!(
        env.marker("s-11")["digest_given"],
        true,
        "the newest was given"
    );
}

#[test]
fn the_previous_session_is_found_through_the_index_not_by_reading_every_marker() {
    let env = env();
    let t = transcript(&env);
    end_at(&env, 0, "older", &t, CWD);
    end_at(&env, 10, "newer", &t, CWD);
    assert_eq!(index_entries(&env), ["newer", "older"]);
    // Take `newer` out of the index by hand: a scan of every marker would still pick it.
    let dir = fs::read_dir(env.state().join("cwd"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    let mut index: Value =
        serde_json::from_slice(&fs::read(dir.join("index.json")).unwrap()).unwrap();
    index["sessions"].as_array_mut().unwrap().remove(0);
    fs::write(dir.join("index.json"), index.to_string()).unwrap();
    let run = env.run_at(
        20,
        &["sessionstart"],
        sessionstart_payload("next", "startup", CWD).to_string(),
    );
    decode_block(&run.stdout);
    assert_eq!(env.marker("older")["digest_given"], true);
    assert_eq!(env.marker("newer")["digest_given"], false);
    // Elsewhere: nothing.
    let elsewhere = env.run_at(
        20,
        &["sessionstart"],
        sessionstart_payload("other", "startup", "/somewhere/else").to_string(),
    );
    assert_eq!(elsewhere.stdout, "");
}

#[test]
fn status_lists_the_newest_first_with_limit_all_and_cwd() {
    let env = env();
    for (secs, id, cwd) in [
        (-40 * HOUR, "s5", "/p1"),
        (-3 * HOUR, "s1", "/p1"),
        (-2 * HOUR, "s2", "/p2"),
        (-HOUR, "s3", "/p1/"),
        (0, "s4", "/p2"),
    ] {
        ok(&report_at(&env, secs, id, cwd, 50_000));
    }
    let check = |how: &str| {
        let s = status_json(&env, 60, &["--limit", "2"]);
        assert_eq!(
            (ids(&s), &s["more"]),
            (vec!["s4".into(), "s3".into()], &json!(true)),
            "{how}"
        );
        let all = status_json(&env, 60, &["--all"]);
        assert_eq!(ids(&all), ["s4", "s3", "s2", "s1", "s5"], "{how}");
        assert_eq!(all["more"], false);
        assert_eq!(
            ids(&status_json(&env, 60, &[])),
            ["s4", "s3", "s2", "s1", "s5"],
            "{how}"
        );
        let p1 = status_json(&env, 60, &["--cwd", "/p1"]);
        assert_eq!(ids(&p1), ["s3", "s1", "s5"], "{how}");
        assert_eq!(p1["sessions"][0]["cwd"], "/p1/");
        assert_eq!(
            ids(&status_json(&env, 60, &["--cwd", "/p2/", "--limit", "1"])),
            ["s4"],
            "{how}"
        );
        let table = env.run_at(60, &["status", "--limit", "2"], "");
        ok(&table);
        let lines: Vec<&str> = table.stdout.lines().collect();
        assert_eq!(lines.len(), 4, "{}", table.stdout);
        assert!(lines[0].starts_with("SESSION") && lines[0].contains("LAST NUDGE"));
        assert!(
            lines[1].starts_with("s4 ") && lines[1].ends_with(" /p2"),
            "{}",
            lines[1]
        );
        assert!(lines[3].contains("--all for every session"), "{}", lines[3]);
        let none = env.run_at(60, &["status", "--cwd", "/nowhere"], "");
        assert!(
            none.stdout.starts_with("no sessions in /nowhere"),
            "{none:?}"
        );
    };
    // Before the first pass the listing reads every marker; after it, the activity buckets.
    check("every marker");
    assert!(!env.state().join("recent/.complete").exists());
    ok(&env.run(&["prune"], ""));
    assert!(env.state().join("recent/.complete").exists());
    check("buckets");
    assert!(env.run(&["status", "--all", "--limit", "3"], "").code != 0);
}

#[test]
fn status_shows_the_last_nudge_and_the_last_checkpoint() {
    let env = env();
    let t = transcript(&env);
    ok(&report_at(&env, 0, SESSION, CWD, 130_000));
    decode_nudge(
        &env.run_at(
            1,
            &["pretooluse"],
            pretooluse_payload(SESSION, &t).to_string(),
        )
        .stdout,
    );
    compact_at(&env, 120, SESSION, &t);
    let s = &status_json(&env, 180, &["--session", SESSION])["sessions"][0];
    assert_eq!(s["nudged_at"], Value::Null, "a new cycle");
    assert_eq!(s["last_nudge"]["tokens"], 130_000, "{s}");
    assert_eq!(s["last_nudge"]["critical"], false);
    assert!(s["last_checkpoint"]
        .as_str()
        .unwrap()
        .ends_with("cp_001.json"));
    assert!(s["last_checkpoint_at"].is_string());
    let table = env.run_at(180, &["status"], "");
    assert!(
        table.stdout.contains("130k 2m ago ")
            && table.stdout.contains("cp_001 60s ago, pending  60s ago "),
        "{}",
        table.stdout
    );
    let one = env.run_at(180, &["status", "--session", SESSION], "");
    assert!(
        one.stdout.contains("\nlast nudge  130k at "),
        "{}",
        one.stdout
    );
    assert!(one.stdout.contains("\nwritten     "), "{}", one.stdout);
}

#[test]
fn the_status_line_shows_that_the_agent_was_asked_to_save_and_that_a_checkpoint_was_written() {
    let mut env = env();
    let t = transcript(&env);
    let line = |env: &TestEnv, secs: i64, tokens: u64, args: &[&str]| {
        let mut p = statusline_payload(SESSION, Some(tokens), Some(200_000));
        p["transcript_path"] = json!(t.to_str().unwrap());
        let run = env.run_at(secs, &[&["statusline"], args].concat(), p.to_string());
        ok(&run);
        run.stdout
    };
    assert_eq!(
        line(&env, 0, 130_000, &["--no-color"]),
        "ctx 65% · 130k/200k · compacts in 37k\n",
        "armed, not nudged yet"
    );
    decode_nudge(
        &env.run_at(
            1,
            &["pretooluse"],
            pretooluse_payload(SESSION, &t).to_string(),
        )
        .stdout,
    );
    assert_eq!(
        line(&env, 2, 131_000, &["--no-color"]),
        "ctx 66% · 131k/200k · compacts in 36k · asked to save\n"
    );
    // In colour, the trace comes after the coloured gauge, uncoloured.
    assert_eq!(
        line(&env, 3, 131_000, &[]),
        "\u{1b}[33mctx 66% · 131k/200k · compacts in 36k\u{1b}[0m · asked to save\n"
    );
    // The critical nudge.
    ok(&report_at(&env, 4, SESSION, CWD, 153_000));
    decode_nudge(
        &env.run_at(
            5,
            &["pretooluse"],
            pretooluse_payload(SESSION, &t).to_string(),
        )
        .stdout,
    );
    assert!(line(&env, 6, 153_000, &["--no-color"]).ends_with(" · asked to save (critical)\n"));
    // A compaction (by hand, so the compaction point stays where it was): the checkpoint is
    // shown for a while.
    let manual = precompact_payload(SESSION, &t, "manual", Value::Null);
    ok(&env.run_at(60, &["precompact"], manual.to_string()));
    env.set("NO_COLOR", "1");
    let after = line(&env, 90, 20_000, &[]);
    assert_eq!(
        after,
        "ctx 10% · 20k/200k · compacts in 147k · checkpoint saved\n"
    );
    assert!(!after.contains('\u{1b}'));
    assert_eq!(
        line(&env, 60 + 11 * 60, 21_000, &[]),
        "ctx 11% · 21k/200k · compacts in 146k\n"
    );
}

#[test]
fn log_prints_the_daily_log_by_days_and_session() {
    let env = env();
    let t = transcript(&env);
    compact_at(&env, -DAY, "yesterday-session", &t);
    compact_at(&env, 0, SESSION, &t);
    let run = env.run(&["log"], "");
    ok(&run);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert!(
        run.stdout.starts_with(&format!("# {today}\n\n## ")),
        "{}",
        run.stdout
    );
    assert!(run
        .stdout
        .contains("· session 225d8c26 · compaction #1 (auto)"));
    assert!(!run.stdout.contains("yesterda"), "{}", run.stdout);
    let two = env.run(&["log", "--days", "2"], "");
    let (y, tdy) = (
        two.stdout.find("yesterda").unwrap(),
        two.stdout.find("225d8c26").unwrap(),
    );
    assert!(y < tdy, "oldest first: {}", two.stdout);
    assert_eq!(
        two.stdout.matches("\n# ").count() + usize::from(two.stdout.starts_with("# ")),
        2
    );
    let mine = env.run(&["log", "--days", "2", "--session", SESSION], "");
    assert!(
        !mine.stdout.contains("yesterda") && mine.stdout.contains("225d8c26"),
        "{mine:?}"
    );
    // A session neither the state nor the log knows is an error, as for `status`.
    let none = env.run(&["log", "--session", "nobody"], "");
    assert_eq!(none.code, 1, "{none:?}");
    assert!(
        none.stderr
            .contains("no state for session \"nobody\" under "),
        "{none:?}"
    );
}

#[test]
fn version_names_the_version_and_the_commit() {
    let run = TestEnv::new().run(&["--version"], "");
    ok(&run);
    let prefix = format!("ctxguard {} (commit ", env!("CARGO_PKG_VERSION"));
    assert!(
        run.stdout.starts_with(&prefix) && run.stdout.ends_with(")\n"),
        "{run:?}"
    );
}

/// `log --json`, decoded strictly: any other field fails the test.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LogReport {
    entries: Vec<LogEntry>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct LogEntry {
    date: String,
    time: String,
    session: String,
    kind: String,
    compaction: Option<u64>,
    trigger: Option<String>,
    arrived: Option<String>,
    given_again_by: Option<String>,
    tokens_before: Option<u64>,
    tokens_after: Option<u64>,
    retry_of: Option<String>,
    retried_at: Option<String>,
    project: Option<String>,
    branch: Option<String>,
    checkpoint: Option<String>,
    summary_chars: Option<u64>,
    summary: Option<String>,
    text: String,
}

/// Issue 20, item 5: the summary's first line is shown (sanitised), `log --json` exists, and an
/// attempt that failed (PreCompact with no compact_boundary after it, then PreCompact again for
/// the same compaction) is shown as a failed attempt, so `#1` appears once as a compaction.
#[test]
fn log_shows_summaries_failed_attempts_and_json() {
    let env = env();
    let t = transcript(&env);
    compact_at(&env, -120, SESSION, &t);
    // The compaction failed: no boundary; the session went on, and it is tried again.
    append_lines(&t, &[assistant_line(150_000, &time_from_now(-90))]);
    compact_at(&env, -60, SESSION, &t);
    let mut post = fixture_json("PostCompact-auto.json");
    post["session_id"] = json!(SESSION);
    post["compact_summary"] = json!(
        "<analysis>\n\n## Fixed the \u{1b}[31mparser\u{202e} precedence bug\nThen the lexer."
    );
    ok(&env.run_at(-30, &["postcompact"], post.to_string()));

    let run = env.run(&["log"], "");
    ok(&run);
    let text = &run.stdout;
    assert_eq!(text.matches("· compaction #1 (auto)").count(), 2, "{text}");
    assert_eq!(
        text.matches(" · failed attempt: no compact_boundary followed it (tried again at ")
            .count(),
        1,
        "{text}"
    );
    assert_eq!(
        text.matches(" · after a failed attempt at ").count(),
        1,
        "{text}"
    );
    assert!(
        text.contains(
            "· session 225d8c26 · compaction summary (62 characters): Fixed the parser precedence bug\n"
        ),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{202e}'),
        "{text:?}"
    );

    let run = env.run(&["log", "--json", "--session", SESSION], "");
    ok(&run);
    let report: LogReport = serde_json::from_str(&run.stdout).unwrap();
    let kinds: Vec<&str> = report.entries.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["failed_attempt", "compaction", "summary"]);
    let (failed, done, summary) = (&report.entries[0], &report.entries[1], &report.entries[2]);
    assert_eq!((failed.compaction, done.compaction), (Some(1), Some(1)));
    assert_eq!(failed.retried_at.as_deref(), Some(done.time.as_str()));
    assert_eq!(done.retry_of.as_deref(), Some(failed.time.as_str()));
    assert_eq!(done.trigger.as_deref(), Some("auto"));
    assert_eq!(done.project.as_deref(), Some(CWD));
    // The recorded transcript says `HEAD`, which names no branch.
    assert_eq!(done.branch.as_deref(), None);
    assert!(done.checkpoint.as_deref().unwrap().ends_with("cp_002.json"));
    assert_eq!(
        (summary.summary_chars, summary.summary.as_deref()),
        (Some(62), Some("Fixed the parser precedence bug"))
    );
    assert_eq!(summary.session, "225d8c26");
    // An unknown session: the error on stderr, no JSON.
    let run = env.run(&["log", "--json", "--session", "nobody"], "");
    assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{run:?}");
    // Nothing in the span: an empty list, not a sentence.
    let run = env.run(
        &["log", "--json", "--days", "1", "--session", "225d8c26"],
        "",
    );
    ok(&run);
    assert!(
        serde_json::from_str::<Value>(&run.stdout).unwrap()["entries"].is_array(),
        "{run:?}"
    );
}

/// Issue 20, item 2: `status --limit N` read every marker of the newest hour, so with every
/// session active in the same hour it read them all. Now it reads the newest N: a corrupt marker
/// further down is never read (no warning), while `--all` reads and reports it.
#[test]
fn status_limit_reads_only_the_newest_even_when_all_share_an_hour() {
    let env = env();
    let hour = "2026-11-21T20";
    let at = |i: usize| format!("{hour}:{:02}:{:02}Z", i / 2, (i % 2) * 30);
    let run_at = |time: &str, args: &[&str], stdin: String| {
        let mut cmd = env.command(args);
        cmd.env("CTXGUARD_NOW", time);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let out = feed(cmd, stdin).wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let sessions: Vec<String> = (0..40).map(|i| format!("s{i:02}")).collect();
    for (i, id) in sessions.iter().enumerate() {
        let p = statusline_payload(id, Some(50_000), Some(200_000));
        run_at(&at(i), &["statusline"], p.to_string());
    }
    // The daily pass completes the buckets.
    run_at(&format!("{hour}:59:00Z"), &["prune"], String::new());
    fs::write(env.marker_path("s10"), "{not json").unwrap();
    let mut cmd = env.command(&["status", "--json", "--limit", "5"]);
    cmd.env("CTXGUARD_NOW", format!("{hour}:59:30Z"));
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "s10 is never read"
    );
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ids(&status), ["s39", "s38", "s37", "s36", "s35"]);
    assert_eq!(status["more"], true);
    let mut cmd = env.command(&["status", "--json", "--all"]);
    cmd.env("CTXGUARD_NOW", format!("{hour}:59:30Z"));
    let out = cmd.output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .replace('\\', "/")
            .contains("/s10/marker.json is corrupt"),
        "{out:?}"
    );
}
