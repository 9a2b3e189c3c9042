//! `status --session` shows the newest usage: a turn's last reply is written after its last
//! hook, so the hooks' reading (186k) lags what `usage` reads from the transcript (199,510).
//! The transcript's tail is read for the one session shown; without a transcript, the row says
//! how old the hooks' figure is.

use serde_json::Value;

use crate::util::*;

const SESSION: &str = "6c1d0e2f-0000-4000-8000-0000000000a1";

#[test]
fn status_session_reads_the_transcripts_newest_reply() {
    let env = TestEnv::new();
    let run = env.statusline(&statusline_payload(SESSION, Some(186_000), Some(1_000_000)));
    assert_eq!(run.code, 0, "{run:?}");

    // No transcript where Claude Code keeps it: the hooks' figure, with its age.
    let run = env.run(&["status", "--session", SESSION], "");
    assert_eq!(run.code, 0, "{run:?}");
    let row = run
        .stdout
        .lines()
        .find(|l| l.starts_with("tokens "))
        .unwrap();
    assert!(
        row.starts_with("tokens      186k (the hooks' reading, saved at ")
            && row.ends_with(" ago))"),
        "{row}"
    );

    // The turn's last reply, written after its last hook.
    let dir = env.home().join(".claude/projects/-home-user-proj");
    std::fs::create_dir_all(&dir).unwrap();
    let at = "2026-11-21T19:59:00Z";
    std::fs::write(
        dir.join(format!("{SESSION}.jsonl")),
        assistant_line(186_000, "2026-11-21T19:58:00Z")
            + "\n"
            + &assistant_line(199_510, at)
            + "\n",
    )
    .unwrap();
    let run = env.run(
        &[
            "usage",
            dir.join(format!("{SESSION}.jsonl")).to_str().unwrap(),
        ],
        "",
    );
    assert!(run.stdout.contains("199,510"), "{}", run.stdout);
    let run = env.run(&["status", "--session", SESSION], "");
    assert_eq!(run.code, 0, "{run:?}");
    let row = run
        .stdout
        .lines()
        .find(|l| l.starts_with("tokens "))
        .unwrap();
    assert!(
        row.starts_with("tokens      200k at 2026-11-21 19:59:00 UTC (")
            && row.ends_with(" ago) (the transcript's newest reply; the hooks last read 186k)"),
        "{row}"
    );
    let run = env.run(&["status", "--session", SESSION, "--json"], "");
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let newest = &v["sessions"][0]["newest"];
    assert_eq!(newest["tokens"], 199_510, "{newest}");
    assert_eq!(newest["reply_at"], "2026-11-21T19:59:00Z", "{newest}");
    assert_eq!(v["sessions"][0]["tokens"], 186_000);
    // The table reads no transcript.
    let run = env.run(&["status", "--json"], "");
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(v["sessions"][0].get("newest").is_none(), "{v}");
}
