//! The first hour of the CLI, by hand: what a new user tries and gets wrong, answered the way
//! the other commands answer it (an unknown session, a negative count, a file that is not a
//! transcript), the help naming both clients, the costs of a Codex replay that cannot be known,
//! the table's reading older than its transcript, and `uninstall` giving the settings back as
//! they were.

use std::fs;

use serde_json::Value;

use crate::util::*;

#[test]
fn log_refuses_an_unknown_session_and_a_negative_count_as_status_and_prune_do() {
    let env = TestEnv::new();
    // status, the model: exit 1, the session named, how to list the known ones.
    let status = env.run(&["status", "--session", "nosuch"], "");
    assert_eq!(status.code, 1, "{status:?}");
    let log = env.run(&["log", "--session", "nosuch"], "");
    assert_eq!(log.code, 1, "{log:?}");
    assert!(log.stdout.is_empty(), "{log:?}");
    assert!(
        log.stderr
            .contains("no state for session \"nosuch\" under ")
            && log
                .stderr
                .contains("no entry of the log names it in the last 1 day")
            && log
                .stderr
                .contains("run `ctxguard status` to list known sessions"),
        "{}",
        log.stderr
    );
    // A session ctxguard knows, with nothing logged today: an answer, not an error.
    assert_eq!(
        env.statusline(&statusline_payload(SESSION, Some(20_000), Some(200_000)))
            .code,
        0
    );
    let known = env.run(&["log", "--session", &SESSION[..8]], "");
    assert_eq!(known.code, 0, "{known:?}");
    assert!(
        known.stdout.starts_with("no log entries for session "),
        "{known:?}"
    );

    // A negative or zero count, in words, as `prune --older-than -1` says it.
    let prune = env.run(&["prune", "--older-than", "-1"], "");
    assert_eq!(prune.code, 1, "{prune:?}");
    assert!(prune
        .stderr
        .contains("\"-1\" is negative; give a whole number of days"));
    for (days, says) in [
        (
            "-1",
            "\"-1\" is negative; give a whole number of days from 1 (today) to 3660",
        ),
        (
            "0",
            "0 days is fewer than 1; give a whole number of days from 1 (today)",
        ),
        ("3661", "3661 days is more than 3660"),
        ("week", "\"week\" is not a number of days"),
    ] {
        let run = env.run(&["log", "--days", days], "");
        assert_eq!(run.code, prune.code, "{days}: {run:?}");
        assert!(
            run.stderr.contains(says) && run.stderr.contains("e.g. --days 7"),
            "{days}: {}",
            run.stderr
        );
    }
    assert_eq!(env.run(&["log", "--days", "7"], "").code, 0);
}

#[test]
fn replay_refuses_a_file_that_is_not_a_transcript_saying_what_it_is() {
    let env = TestEnv::new();
    let settings = env.write(
        "settings.json",
        "{\n  \"model\": \"opus\",\n  \"hooks\": {}\n}\n",
    );
    let log = env.write("notes.txt", "ran the tests, all green\n");
    let keyless = env.write("other.jsonl", "{\"message\": \"hi\"}\n");
    let binary = env.write("blob.jsonl", "\u{0}\u{1}\u{2}\n");
    for (file, what) in [
        (&settings, "it is one JSON document spread over lines"),
        (
            &log,
            "its first line is not JSON (\"ran the tests, all green\")",
        ),
        (
            &keyless,
            "its first line is a JSON object without a \"type\" (keys: message)",
        ),
        (&binary, "it is not text"),
    ] {
        let run = env.run(&["replay", file.to_str().unwrap()], "");
        assert_eq!(run.code, 1, "{file:?}: {run:?}");
        assert!(run.stdout.is_empty(), "{run:?}");
        assert!(
            run.stderr.contains(&format!(
                "{} is not a transcript or a rollout: {what}",
                file.display()
            )) && run
                .stderr
                .contains("~/.claude/projects/<project>/<session>.jsonl"),
            "{}",
            run.stderr
        );
    }
    // A transcript, even an empty one, is replayed.
    let transcript = env.write(
        "t.jsonl",
        &(assistant_line(50_000, &time_from_now(-60)) + "\n"),
    );
    assert_eq!(
        env.run(&["replay", transcript.to_str().unwrap()], "").code,
        0
    );
    let empty = env.write("empty.jsonl", "");
    assert_eq!(env.run(&["replay", empty.to_str().unwrap()], "").code, 0);
}

#[test]
fn help_names_the_three_clients() {
    let env = TestEnv::new();
    for flag in ["-h", "--help"] {
        let run = env.run(&[flag], "");
        assert_eq!(run.code, 0, "{run:?}");
        assert!(
            run.stdout.contains("Claude Code")
                && run.stdout.contains("Codex")
                && (run.stdout.contains("and pi save")
                    || run.stdout.contains("of pi, the coding agent")),
            "{flag}: {}",
            run.stdout
        );
    }
    let long = env.run(&["--help"], "").stdout;
    assert!(long.contains("ctxguard install --client codex"), "{long}");
    assert!(long.contains("ctxguard install --client pi"), "{long}");
}

/// A Codex rollout says nothing of what a compaction wrote to the cache: its refill is unknown,
/// shown as `-`, never totalled as 0 nor said to be 0.
#[test]
fn a_codex_replay_never_totals_an_unknown_refill_as_zero() {
    let mut env = TestEnv::new();
    let codex_home = env.dir.path().join("codex-home");
    fs::create_dir_all(&codex_home).unwrap();
    env.set("CODEX_HOME", codex_home.to_str().unwrap());
    let rollout = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "fixtures/codex/replay/rollout-2026-11-25T17-40-00-01a213c0-5e1d-7a42-9b3c-2f0d81e4c7a9.jsonl",
    );
    let run = env.run(&["replay", rollout.to_str().unwrap()], "");
    assert_eq!(run.code, 0, "{run:?}");
    let table: Vec<&str> = run
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("what each compaction cost"))
        .collect();
    let total = table.iter().find(|l| l.contains(" total ")).unwrap();
    let refill = total.split_whitespace().nth(3).unwrap();
    assert_eq!(refill, "-", "{total}");
    assert!(!run.stdout.contains("with 0 tokens"), "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "  1 compaction: what refilled the cache is not known (the transcript does not say)\n"
        ),
        "{}",
        run.stdout
    );
    let json = env.run(&["replay", rollout.to_str().unwrap(), "--json"], "");
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["cost"]["refill"], Value::Null, "{}", report["cost"]);
    assert_eq!(report["cost"]["refill_unknown"], 1, "{}", report["cost"]);
    assert_eq!(report["cost"]["compactions"], 1);
}

/// The table reads no transcript, but says when the figure it shows is older than the
/// session's transcript (`-p` sessions have no status line: the last reply comes after the last
/// hook).
#[test]
fn the_status_table_marks_a_reading_older_than_the_transcript() {
    let env = TestEnv::new();
    // The hooks' reading, an hour ago.
    let run = env.run_at(
        -3600,
        &["statusline"],
        statusline_payload(SESSION, Some(21_000), Some(200_000)).to_string(),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let row = |stdout: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(SESSION))
            .unwrap()
            .to_string()
    };
    let before = env.run(&["status"], "");
    assert!(
        row(&before.stdout).contains(" 21k/200k "),
        "{}",
        before.stdout
    );
    assert!(!before.stdout.contains('*'), "{}", before.stdout);

    // The transcript, written since.
    let dir = env.home().join(".claude/projects/-home-user-proj");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join(format!("{SESSION}.jsonl")),
        assistant_line(41_000, &time_from_now(-5)) + "\n",
    )
    .unwrap();
    let after = env.run(&["status"], "");
    assert_eq!(after.code, 0, "{after:?}");
    assert!(
        row(&after.stdout).contains(" 21k/200k* "),
        "{}",
        after.stdout
    );
    assert!(
        after.stdout.contains(
            "* the hooks' last reading: the transcript was written since (a turn's last reply \
             comes after its last hook); `ctxguard status --session ID` reads it now"
        ),
        "{}",
        after.stdout
    );
    // The JSON is as it was: the mark is the table's.
    let json: Value = serde_json::from_str(&env.run(&["status", "--json"], "").stdout).unwrap();
    assert!(json["sessions"][0].get("behind").is_none());
}

#[test]
fn uninstall_gives_the_settings_back_byte_for_byte_when_nothing_else_changed() {
    let env = TestEnv::new();
    let path = env.home().join(".claude/settings.json");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    // The user's own layout: four spaces, a compact array, no final newline.
    let original = "{\n    \"model\": \"opus\",\n    \"permissions\": {\"allow\": [\"Bash(ls)\"]},\n    \"env\": {\"A\": \"1\"}\n}";
    fs::write(&path, original).unwrap();
    let install = env.run(&["install", "--client-version", "2.1.330"], "");
    assert_eq!(install.code, 0, "{install:?}");
    assert_ne!(fs::read_to_string(&path).unwrap(), original);
    let uninstall = env.run(&["uninstall"], "");
    assert_eq!(uninstall.code, 0, "{uninstall:?}");
    assert_eq!(fs::read_to_string(&path).unwrap(), original);
    assert!(
        uninstall.stdout.contains("given back byte for byte"),
        "{}",
        uninstall.stdout
    );

    // Something else changed meanwhile: that change is kept, in the file's JSON as ctxguard
    // writes it.
    assert_eq!(
        env.run(&["install", "--client-version", "2.1.330"], "")
            .code,
        0
    );
    let mut value: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    value["model"] = "sonnet".into();
    fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    let uninstall = env.run(&["uninstall"], "");
    assert_eq!(uninstall.code, 0, "{uninstall:?}");
    let left: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let mut want: Value = serde_json::from_str(original).unwrap();
    want["model"] = "sonnet".into();
    assert_eq!(left, want);
    assert!(
        !uninstall.stdout.contains("byte for byte"),
        "{}",
        uninstall.stdout
    );
}
