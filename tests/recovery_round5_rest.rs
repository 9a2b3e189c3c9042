//! What issue 43's held-back sessions still lost after its first fixes, each through the binary
//! on invented text of the real records' form: a failure redone by the same check with another
//! reader of its output, teammates' completion messages, decisions from before an earlier
//! compaction, and a forked Codex session's branch.

use serde_json::json;

use crate::recovery_classes::Session;
use crate::recovery_round5::{ask_user, items_of};
use crate::util::*;

/// A pipeline is the check its first stage runs. Its reader failing (an interpreter given its
/// program inline, as `… | python3 -c "…"` whose interpreter is not installed, exit 126) is
/// redone by the same check read another way; a run the client blocked (`sleep N; …`) is
/// redone by the same pipeline without the sleep.
#[test]
fn a_check_redone_with_another_reader_of_its_output_is_no_current_failure() {
    let mut s = Session::new("Fix the lint findings file by file");
    s.bash(
        "vet-lint run --timeout=5m --format=json ./... 2>/dev/null | python3 -c \"\nimport json, sys\nrows = json.load(sys.stdin)\nprint(len(rows), 'total')\n\"",
        "Exit code 126\nNo interpreter is configured for python3\nAdd one of these to .tool-versions",
        true,
    );
    s.bash(
        "vet-lint run --timeout=5m ./... 2>&1 | grep -E '^\\w' | cut -d: -f1 | sort | uniq -c",
        "  12 src/store.go\n   4 src/api.go",
        false,
    );
    s.bash(
        "sleep 20; gh pr view 12 -R o/r --json statusCheckRollup --jq '.statusCheckRollup[] | .name' 2>&1 | head",
        "<tool_use_error>Blocked: sleep 20 followed by: gh pr view 12 -R o/r --json statusCheckRollup. To wait for a condition, use Monitor with an until-loop.</tool_use_error>",
        true,
    );
    s.bash(
        "gh pr view 12 -R o/r --json statusCheckRollup --jq '.statusCheckRollup[] | .name' 2>&1 | head",
        "build\nlint",
        false,
    );
    // A script the interpreter runs from a file is a run of its own: its failure stays.
    s.bash(
        "vet-lint run ./... | python3 scripts/tally.py",
        "Exit code 1\nTraceback (most recent call last):\nKeyError: 'Pos'",
        true,
    );
    s.bash("vet-lint run ./... | wc -l", "16", false);
    let block = s.block();
    assert_eq!(
        items_of(&block, "Recent tool failures"),
        ["Bash: vet-lint run ./... | python3 scripts/tally.py → KeyError: 'Pos'"],
        "{block}"
    );
}

/// An agent team's lead creates the tasks; its teammates close them in their own transcripts
/// and tell the lead in messages the client hands over (2.1.232's form, `Another Claude session
/// sent a message:` then `<teammate-message teammate_id=… color=… summary=…>`): the client's
/// `task_completed` frame, an `idle_notification` whose `completedTaskId` is `resolved`, and a
/// teammate's own "Task #N done". Each closes the lead's task as its `TaskList` would; a
/// blocked one, or a message only naming a task, leaves it open.
#[test]
fn teammates_telling_the_lead_a_task_is_done_close_it() {
    let mut s = Session::new("Build the profile import with the team");
    let subjects = [
        "DOM-1: Profile entity",
        "DL-1: Drift schema",
        "UI-1: Profile list screen",
        "API-1: Import endpoint",
        "QA-1: Smoke tests",
    ];
    for (n, subject) in subjects.iter().enumerate() {
        s.call(
            "TaskCreate",
            json!({"subject": subject, "description": "…"}),
            &format!("Task #{} created successfully: {subject}", n + 1),
            false,
        );
    }
    let handed = |from: &str, attrs: &str, body: &str| {
        format!("Another Claude session sent a message:\n<teammate-message teammate_id=\"{from}\" color=\"blue\"{attrs}>\n{body}\n</teammate-message>\n\nThis came from another Claude session — not typed by your user.")
    };
    s.prompt(&handed(
        "domain-dev",
        "",
        "{\"type\":\"task_completed\",\"from\":\"domain-dev\",\"taskId\":\"1\",\"taskSubject\":\"DOM-1: Profile entity\"}",
    ));
    s.prompt(&handed(
        "data-dev",
        "",
        "{\"type\":\"idle_notification\",\"from\":\"data-dev\",\"idleReason\":\"available\",\"completedTaskId\":\"2\",\"completedStatus\":\"resolved\"}",
    ));
    s.prompt(&handed(
        "api-dev",
        " summary=\"Task #4 done, endpoint merged\"",
        "The import endpoint is in and its tests pass.",
    ));
    s.prompt(&handed(
        "ui-dev",
        "",
        "{\"type\":\"idle_notification\",\"from\":\"ui-dev\",\"completedTaskId\":\"3\",\"completedStatus\":\"blocked\"}",
    ));
    s.prompt(&handed(
        "qa-eng",
        "",
        "Task #5 depends on #3: waiting for the list screen.",
    ));
    let block = s.block();
    assert!(
        block.contains("Open todos (3 completed not shown):"),
        "{block}"
    );
    assert_eq!(
        items_of(&block, "Open todos"),
        [
            "[pending] UI-1: Profile list screen",
            "[pending] QA-1: Smoke tests"
        ],
        "{block}"
    );
}

/// `s` compacted twice in one state directory: at its `boundary`-th line (before the boundary's
/// time), then at its end. The second block.
fn second_block(s: &Session, boundary: usize) -> String {
    let env = TestEnv::new();
    let run = |lines: &[String], secs: i64| {
        let path = env.write("t.jsonl", &(lines.join("\n") + "\n"));
        let mut payload = precompact_payload(SESSION, &path, "auto", json!(""));
        payload["cwd"] = json!("/work/app");
        assert_eq!(
            env.run_at(secs, &["precompact"], payload.to_string()).code,
            0
        );
        let start = sessionstart_payload(SESSION, "compact", "/work/app").to_string();
        decode_block(&env.run_at(secs, &["sessionstart"], start).stdout)
    };
    run(&s.lines[..boundary], -3590);
    let block = run(&s.lines, 0);
    assert!(block.contains("compaction #2"), "{block}");
    block
}

fn boundary(s: &mut Session) -> usize {
    let at = s.at();
    s.lines.push(
        json!({"type": "system", "subtype": "compact_boundary", "timestamp": at,
               "compactMetadata": {"trigger": "auto", "preTokens": 160_000}})
        .to_string(),
    );
    s.lines.len() - 1
}

/// A decision made before an earlier compaction still holds at the next one: the resuming agent
/// must not ask again. It stands in a section of its own, below the decisions made since,
/// unless the user answered the same question again (the newer answer only) or a new plan
/// replaced the one approved.
#[test]
fn decisions_made_before_an_earlier_compaction_are_carried_while_they_apply() {
    let mut s = Session::new("Move the exporter to the new storage layer");
    ask_user(
        &mut s,
        &[
            ("Which storage backend?", &["SQLite", "Postgres"]),
            ("Keep the v1 endpoint?", &["Yes", "No"]),
        ],
        &[
            ("Which storage backend?", "Postgres"),
            ("Keep the v1 endpoint?", "Yes"),
        ],
        &[],
    );
    s.call(
        "ExitPlanMode",
        json!({"plan": "# Exporter on Postgres\n\n## 1. Schema\n## 2. Writer"}),
        "User has approved your plan. You can now start coding.",
        false,
    );
    let at = boundary(&mut s);
    s.prompt("Go on with the writer");
    ask_user(
        &mut s,
        &[("Keep the v1 endpoint?", &["Yes", "No"])],
        &[("Keep the v1 endpoint?", "No, drop it in this release")],
        &[],
    );
    let block = second_block(&s, at);
    assert_eq!(
        items_of(&block, "The user's decisions"),
        ["Keep the v1 endpoint? → No, drop it in this release"],
        "{block}"
    );
    assert_eq!(
        items_of(&block, "Their decisions before a previous compaction"),
        [
            "The plan written in plan mode → approved",
            "Which storage backend? → Postgres",
        ],
        "{block}"
    );

    // A plan of its own since: the approval was of the plan before it.
    s.call(
        "ExitPlanMode",
        json!({"plan": "# Drop v1\n\n## 1. Remove the routes\n## 2. Changelog"}),
        "The user doesn't want to proceed with this tool use. The tool use was rejected.",
        true,
    );
    let block = second_block(&s, at);
    assert_eq!(
        items_of(&block, "Their decisions before a previous compaction"),
        ["Which storage backend? → Postgres"],
        "{block}"
    );
}

/// A forked Codex session (a subagent's, 0.118's form: its own `session_meta` first, with
/// `forked_from_id`, then its parent's history copied, the parent's `session_meta` too): the
/// branch is the session's own, not the parent's written after it, which counts only when the
/// session's own names none.
#[test]
fn a_forked_codex_session_works_on_its_own_branch() {
    let own = "019d7e2f-0000-7000-8000-000000000043";
    let parent = "019d7d08-0000-7000-8000-000000000042";
    let meta = |id: &str, branch: &str, at: &str| {
        json!({"timestamp": at, "type": "session_meta",
               "payload": {"id": id, "timestamp": at, "cwd": "/work/app", "originator": "codex-tui",
                           "cli_version": "0.118.0",
                           "git": {"commit_hash": "4b63c50a", "branch": branch}}})
    };
    let mut first = meta(own, "feat/rewrite", "2026-04-11T20:15:02.723Z");
    first["payload"]["forked_from_id"] = json!(parent);
    let lines = [
        first,
        meta(parent, "trunk-copy", "2026-04-11T14:53:07.660Z"),
        json!({"timestamp": "2026-04-11T20:15:03.000Z", "type": "response_item",
               "payload": {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": "Review the sync planner for races"}]}}),
    ]
    .map(|l| l.to_string());
    let env = TestEnv::new();
    let path = env.write(
        &format!("rollout-2026-04-11T20-15-02-{own}.jsonl"),
        &(lines.join("\n") + "\n"),
    );
    let block = crate::codex_code_mode::recovery_block(&path, "/work/app");
    assert!(block.contains("branch feat/rewrite"), "{block}");
    assert!(!block.contains("trunk-copy"), "{block}");

    // Forked in the IDE, its own `session_meta` with no branch: the parent's is where it was made.
    let mut lines = lines;
    let mut own_meta: serde_json::Value = serde_json::from_str(&lines[0]).expect("json");
    own_meta["payload"]
        .as_object_mut()
        .expect("payload")
        .remove("git");
    lines[0] = own_meta.to_string();
    let path = env.write(
        &format!("rollout-2026-04-11T20-15-02-{own}.jsonl"),
        &(lines.join("\n") + "\n"),
    );
    let block = crate::codex_code_mode::recovery_block(&path, "/work/app");
    assert!(block.contains("branch trunk-copy"), "{block}");
}
