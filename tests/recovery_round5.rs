//! What sessions nobody here tuned on still lost (issue 43), each class through the binary: a
//! transcript in the form Claude Code writes (each helper names the real record it imitates),
//! `precompact`, then the block `sessionstart` injects. Each test failed on the main branch
//! before this round.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::recovery_classes::{first_of, Session};
use crate::util::*;

/// The agent asks `questions` (`(question, options)`) with `AskUserQuestion` and the user answers
/// (`answers`: question → answer, `notes`: question → notes), as 2.1.232 records it
/// (entirecontext-d29c2adb.jsonl, lines 82–84: the tool result's text and its `toolUseResult`
/// with `questions`, `answers` and `annotations`). An empty `answers` is the client's timeout.
pub(crate) fn ask_user(
    s: &mut Session,
    questions: &[(&str, &[&str])],
    answers: &[(&str, &str)],
    notes: &[(&str, &str)],
) {
    let qs: Vec<Value> = questions
        .iter()
        .map(|(q, opts)| {
            json!({"question": q, "header": "Choice", "multiSelect": false,
                   "options": opts.iter().map(|o| json!({"label": o, "description": "…"})).collect::<Vec<_>>()})
        })
        .collect();
    let id = s.call(
        "AskUserQuestion",
        json!({"questions": qs}),
        &if answers.is_empty() {
            "No response after 300s — the user may be away from keyboard. Proceed using your best judgment based on the context so far.".to_string()
        } else {
            let pairs: Vec<String> = answers.iter().map(|(q, a)| format!("\"{q}\"=\"{a}\"")).collect();
            format!("Your questions have been answered: {}. You can now continue with these answers in mind.", pairs.join(", "))
        },
        false,
    );
    let last = s.lines.pop().expect("the result line");
    let mut result: Value = serde_json::from_str(&last).expect("json");
    assert_eq!(result["message"]["content"][0]["tool_use_id"], json!(id));
    let map = |pairs: &[(&str, &str)]| -> Value {
        pairs
            .iter()
            .map(|(q, a)| ((*q).to_string(), json!(a)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let annotations: serde_json::Map<String, Value> = notes
        .iter()
        .map(|(q, n)| ((*q).to_string(), json!({"notes": n})))
        .collect();
    result["version"] = json!("2.1.232");
    result["toolUseResult"] =
        json!({"questions": qs, "answers": map(answers), "annotations": annotations});
    if answers.is_empty() {
        result["toolUseResult"]["afkTimeoutMs"] = json!(300_000);
    }
    s.lines.push(result.to_string());
}

/// `precompact` at an automatic compaction: the facts it prints for the summarizer.
fn facts(s: &Session) -> String {
    let env = TestEnv::new();
    let path: PathBuf = env.write("t.jsonl", &(s.lines.join("\n") + "\n"));
    let mut payload = precompact_payload(SESSION, &path, "auto", json!(""));
    payload["cwd"] = json!("/work/app");
    let run = env.run(&["precompact"], payload.to_string());
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
}

/// The fenced items under `title`, or none.
pub(crate) fn items_of(block: &str, title: &str) -> Vec<String> {
    let Some(at) = block.find(title) else {
        return Vec::new();
    };
    block[at..]
        .lines()
        .skip(2)
        .take_while(|l| !l.starts_with("```"))
        .map(str::to_string)
        .collect()
}

/// Class 1: the user's answers to the agent's questions come back, newest first, with their
/// notes; a question that timed out is no decision. They are in the summarizer's facts too.
#[test]
fn the_users_answers_to_the_agents_questions_are_decisions() {
    let mut s = Session::new("Clean up the release tooling and ship 2.4");
    ask_user(
        &mut s,
        &[("Keep the mise pin for node?", &["Keep it", "Drop it"])],
        &[(
            "Keep the mise pin for node?",
            "Drop the mise pin; keep npx in the script",
        )],
        &[],
    );
    s.bash("git rm .mise.toml", "rm '.mise.toml'", false);
    ask_user(
        &mut s,
        &[
            (
                "Archive the old changelog where?",
                &["onto #540 now", "later"],
            ),
            (
                "How are the fixtures queried?",
                &["Shared", "Isolated / queried separately"],
            ),
        ],
        &[
            ("Archive the old changelog where?", "Archive onto #540 now"),
            (
                "How are the fixtures queried?",
                "Isolated / queried separately",
            ),
        ],
        &[("How are the fixtures queried?", "one db per test file")],
    );
    ask_user(&mut s, &[("Merge PR #541?", &["Merge", "Wait"])], &[], &[]);
    let block = s.block();
    let decisions = items_of(&block, "The user's decisions");
    assert_eq!(
        decisions,
        [
            "How are the fixtures queried? → Isolated / queried separately (notes: one db per test file)",
            "Archive the old changelog where? → Archive onto #540 now",
            "Keep the mise pin for node? → Drop the mise pin; keep npx in the script",
        ],
        "{block}"
    );
    assert!(!block.contains("Merge PR #541?"), "{block}");
    let facts = facts(&s);
    assert!(facts.contains("The user's decisions"), "{facts}");
    assert!(facts.contains("Archive onto #540 now"), "{facts}");
}

/// Class 1: a plan the user approved in plan mode is a decision (2.0.76's `ExitPlanMode`
/// result, cctrace-phase0.jsonl line 34); one the user refused is not.
#[test]
fn a_plan_approved_in_plan_mode_is_a_decision() {
    let mut s = Session::new("Plan the storage migration, then do it");
    s.call(
        "ExitPlanMode",
        json!({"plan": "# Storage migration\n\n## 1. Copy the rows\n## 2. Switch reads"}),
        "User has approved your plan. You can now start coding. Start with updating your todo list if applicable",
        false,
    );
    let block = s.block();
    assert_eq!(
        items_of(&block, "The user's decisions"),
        ["The plan written in plan mode → approved"],
        "{block}"
    );
    let mut s = Session::new("Plan the storage migration, then do it");
    s.call(
        "ExitPlanMode",
        json!({"plan": "# Storage migration\n\n## 1. Copy the rows"}),
        "The user doesn't want to proceed with this tool use. The tool use was rejected.",
        true,
    );
    assert!(!s.block().contains("The user's decisions"));
}

/// Class 2: an apostrophe in a here-document's body opened no quote over the commands after its
/// terminator, so the older failing run stayed the last verification.
#[test]
fn a_here_document_hides_no_command_after_it() {
    let mut s = Session::new("fix the exporter and note it");
    s.bash("uv run pytest -q", "1 failed, 674 passed in 9.10s", true);
    s.bash(
        "cat >> NOTES.md <<'EOF'\n- the exporter's header is written once\nEOF\nuv run pytest -q",
        "675 passed in 9.42s",
        false,
    );
    let block = s.block();
    let last = first_of(&block, "Last verification:");
    assert!(last.starts_with("[passed] "), "{block}");
    assert!(last.contains("675 passed"), "{block}");
}

/// Class 3: tests and a lint in one command: the test count stays beside the lint's verdict; a
/// lint's own count of warnings beats its count of files checked.
#[test]
fn tests_and_a_lint_in_one_command_keep_the_test_count() {
    let mut s = Session::new("get the exporter green");
    s.bash(
        "uv run pytest -q | tail -3; uv run ruff check",
        "........\n675 passed in 9.42s\nAll checks passed!",
        false,
    );
    let last = first_of(&s.block(), "Last verification:");
    assert!(last.contains("675 passed in 9.42s"), "{last}");
    assert!(last.contains("All checks passed!"), "{last}");
    let mut s = Session::new("lint the web app");
    s.bash(
        "npx biome check src",
        "Checked 42 files in 5ms. No fixes applied.\nFound 10 warnings.",
        false,
    );
    let last = first_of(&s.block(), "Last verification:");
    assert!(
        last.starts_with("[passed] npx biome check src → Found 10 warnings"),
        "{last}"
    );
}

/// Class 4: the `Tool loaded.` Claude Code 2.1.70 writes beside each `ToolSearch` result (a
/// user message holding the `tool_result`, its content a `tool_reference`, then that text) is
/// no request.
#[test]
fn the_clients_tool_loaded_is_no_request() {
    let mut s = Session::new("Wire the new search endpoint into the CLI");
    s.prompt("also add a --json flag");
    for tool in ["WebSearch", "WebFetch", "NotebookEdit"] {
        s.call(
            "ToolSearch",
            json!({"query": format!("select:{tool}")}),
            "",
            false,
        );
        let last = s.lines.pop().expect("the result line");
        let mut result: Value = serde_json::from_str(&last).expect("json");
        let id = result["message"]["content"][0]["tool_use_id"].clone();
        result["message"]["content"] = json!([
            {"type": "tool_result", "tool_use_id": id,
             "content": [{"type": "tool_reference", "tool_name": tool}]},
            {"type": "text", "text": "Tool loaded."}
        ]);
        s.lines.push(result.to_string());
    }
    let block = s.block();
    assert!(!block.contains("Tool loaded."), "{block}");
    assert_eq!(
        first_of(&block, "Recent user requests"),
        "also add a --json flag",
        "{block}"
    );
}

/// Class 6: a failure redone successfully is history: a `Read` too large, then the same file
/// read with a limit; a relative path refused, then the same file by its absolute path; a
/// command the client blocked (`sleep` first), then the command alone.
#[test]
fn failures_redone_successfully_are_not_current() {
    let mut s = Session::new("find why the importer drops rows");
    s.call(
        "Read",
        json!({"file_path": "/work/app/data/import.log"}),
        "<tool_use_error>File content (61234 tokens) exceeds maximum allowed tokens (25000). Please use offset and limit parameters to read specific portions of the file, or use the GrepTool to search for specific content.</tool_use_error>",
        true,
    );
    s.call(
        "Read",
        json!({"file_path": "/work/app/data/import.log", "offset": 1, "limit": 200}),
        "     1→row 1 ok",
        false,
    );
    s.call(
        "Read",
        json!({"file_path": "src/importer.rs"}),
        "<tool_use_error>File does not exist. Note: your current working directory is /work/app.</tool_use_error>",
        true,
    );
    s.call(
        "Read",
        json!({"file_path": "/work/app/src/importer.rs"}),
        "     1→use std::io;",
        false,
    );
    s.bash(
        "sleep 45; gh pr checks 540",
        "Blocked: sleep 45 followed by: gh pr checks 540. To wait for a condition, use Monitor with an until-loop. To wait for a command you started, use run_in_background: true.",
        true,
    );
    s.bash(
        "gh pr checks 540",
        "build\tpass\t2m3s\thttps://github.com/o/r/actions/runs/1",
        false,
    );
    s.call(
        "Edit",
        json!({"file_path": "/work/app/src/importer.rs", "old_string": "x", "new_string": "y"}),
        "<tool_use_error>String to replace not found in file.</tool_use_error>",
        true,
    );
    s.call(
        "Read",
        json!({"file_path": "/work/app/src/importer.rs"}),
        "     1→use std::io;",
        false,
    );
    let block = s.block();
    let failures = items_of(&block, "Recent tool failures");
    // The failed Edit stays: a read of its file redoes no edit.
    assert_eq!(
        failures,
        ["Edit: src/importer.rs → String to replace not found in file."],
        "{block}"
    );
}

/// Class 7: an agent team's lead creates the tasks and its teammates close them in their own
/// transcripts: the lead's `TaskList` result (2.1.42's form, cybervpn-cdd85d16.jsonl line 102:
/// `#24 [in_progress] TST-1: … (test-eng)`, one task a line) carries their statuses.
#[test]
fn a_leads_task_list_carries_the_statuses_its_teammates_set() {
    let mut s = Session::new("Build the profile import with the team");
    for (n, subject) in [
        "DOM-1: Profile entity",
        "DL-1: Drift schema",
        "UI-1: Profile list screen",
    ]
    .iter()
    .enumerate()
    {
        s.call(
            "TaskCreate",
            json!({"subject": subject, "description": "…"}),
            &format!("Task #{} created successfully: {subject}", n + 1),
            false,
        );
    }
    s.call(
        "TaskList",
        json!({}),
        "#1 [completed] DOM-1: Profile entity (domain-dev)\n#2 [completed] DL-1: Drift schema (data-dev)\n#3 [in_progress] UI-1: Profile list screen (ui-dev) [blocked by #1]",
        false,
    );
    let block = s.block();
    assert!(
        block.contains("Open todos (2 completed not shown):"),
        "{block}"
    );
    assert_eq!(
        items_of(&block, "Open todos"),
        ["[in_progress] UI-1: Profile list screen"],
        "{block}"
    );
}

/// Class 9: what the user typed while the agent worked on a branch later rewound away from (a
/// `queue-operation` `enqueue`, no `uuid`), and a pull request linked there (a `pr-link`, no
/// `uuid`), are abandoned with it: not a `[queued]` request, not a pull request, in the block,
/// `checkpoint show` or the summarizer's facts.
#[test]
fn what_came_without_a_uuid_on_an_abandoned_branch_is_abandoned_with_it() {
    let at = |s: i64| time_from_now(s - 3600);
    let prompt = |uuid: &str, parent: Option<&str>, text: &str, s: i64| {
        json!({"type": "user", "uuid": uuid, "parentUuid": parent, "timestamp": at(s),
               "isSidechain": false, "version": "2.1.232",
               "message": {"role": "user", "content": text}})
        .to_string()
    };
    let reply = |uuid: &str, parent: &str, s: i64| {
        json!({"type": "assistant", "uuid": uuid, "parentUuid": parent, "timestamp": at(s),
               "isSidechain": false,
               "message": {"id": format!("msg_{uuid}"), "model": "claude-opus-4-6",
                           "role": "assistant", "content": [{"type": "text", "text": "ok"}],
                           "usage": {"input_tokens": 5, "cache_read_input_tokens": 50_000,
                                     "output_tokens": 10}}})
        .to_string()
    };
    let lines = [
        prompt("p1", None, "Port the billing job to the new queue", 0),
        reply("a1", "p1", 5),
        prompt("p2", Some("a1"), "try it with a raw SQS client first", 10),
        reply("a2", "p2", 15),
        json!({"type": "queue-operation", "operation": "enqueue", "timestamp": at(17),
               "content": "use the key AKIA_SECRET_QUEUED for the test account"})
        .to_string(),
        json!({"type": "pr-link", "prNumber": 611, "timestamp": at(18),
               "prUrl": "https://github.com/o/billing/pull/611"})
        .to_string(),
        // Esc Esc on the second prompt: the raw-client branch is abandoned.
        prompt(
            "p2b",
            Some("a1"),
            "no, use the queue library we already have",
            30,
        ),
        reply("a3", "p2b", 35),
    ];
    let env = TestEnv::new();
    let path = env.write("t.jsonl", &(lines.join("\n") + "\n"));
    let mut payload = precompact_payload(SESSION, &path, "auto", json!(""));
    payload["cwd"] = json!("/work/app");
    let facts = env.run(&["precompact"], payload.to_string());
    assert_eq!(facts.code, 0, "{facts:?}");
    let show = env
        .run(&["checkpoint", "show", "--session", SESSION], "")
        .stdout;
    for text in [&facts.stdout, &show] {
        assert!(!text.contains("SECRET"), "{text}");
        assert!(!text.contains("611"), "{text}");
    }
    assert!(
        show.contains("no, use the queue library we already have"),
        "{show}"
    );
    let start = env.run(
        &["sessionstart"],
        sessionstart_payload(SESSION, "compact", "/work/app").to_string(),
    );
    let block = decode_block(&start.stdout);
    assert!(block.contains("no, use the queue library"), "{block}");
    assert!(
        !block.contains("SECRET") && !block.contains("611"),
        "{block}"
    );
}

/// The block after `/compact <focus>` on `s`.
fn focused(s: &Session, focus: &str) -> String {
    let env = TestEnv::new();
    let path = env.write("t.jsonl", &(s.lines.join("\n") + "\n"));
    let mut payload = precompact_payload(SESSION, &path, "manual", json!(focus));
    payload["cwd"] = json!("/work/app");
    assert_eq!(env.run(&["precompact"], payload.to_string()).code, 0);
    let start = env.run(
        &["sessionstart"],
        sessionstart_payload(SESSION, "compact", "/work/app").to_string(),
    );
    decode_block(&start.stdout)
}

/// Class 10: a negated loss keeps, whatever the verb of losing and however far it is from the
/// negation, and "not just X" widens: none of these set anything aside.
#[test]
fn a_focus_that_says_keep_in_other_words_sets_nothing_aside() {
    let mut s = Session::new("Rotate the SSH keys on the build hosts");
    s.prompt("Then harden the auth middleware for the API");
    s.prompt("Write the migration for the sessions table");
    for focus in [
        "focus on the API, without losing the SSH key rotation",
        "the API, not just the auth middleware",
        "don't summarize away the migration",
        "no need to drop the SSH key work",
        "do not let the migration get lost",
    ] {
        let block = focused(&s, focus);
        assert!(
            !block.contains("Set aside by the focus"),
            "{focus}: {block}"
        );
        for kept in [
            "Rotate the SSH keys",
            "harden the auth middleware",
            "Write the migration",
        ] {
            assert!(block.contains(kept), "{focus}: {kept} missing: {block}");
        }
    }
    // A drop still drops.
    let block = focused(&s, "drop the SSH key work");
    assert!(!block.contains("Rotate the SSH keys"), "{block}");
}

/// Class 5: a request typed just before a compaction and worked on through the next one (no
/// prompt since, no `last-prompt` record) is the request in flight: it ranks with the recent
/// requests, not with the earlier ones cut first for space, below a finished task's plan.
#[test]
fn the_request_in_flight_across_compactions_is_a_recent_one() {
    let mut s = Session::new("Set up the billing service");
    s.call(
        "ExitPlanMode",
        json!({"plan": "# Billing service scaffold\n\n## 1. Crate layout\n## 2. Config loading\n## 3. Health endpoint"}),
        "User has approved your plan. You can now start coding.",
        false,
    );
    s.prompt(
        "Now migrate the billing tables to the new ledger schema, keeping the old columns readable",
    );
    let first = s.lines.clone();
    let at = s.at();
    s.lines.push(
        json!({"type": "system", "subtype": "compact_boundary", "timestamp": at,
               "compactMetadata": {"trigger": "auto", "preTokens": 160_000}})
        .to_string(),
    );
    for n in 0..30 {
        let file = format!(
            "/work/app/crates/billing/src/ledger/migrations/step_{n:02}_move_the_columns.rs"
        );
        s.call(
            "Edit",
            json!({"file_path": file, "old_string": "a", "new_string": "b"}),
            "The file has been updated.",
            false,
        );
        s.bash(
            &format!("cargo test -p billing migration_{n}"),
            &format!("error: test failed, step {n} left a column unreadable"),
            true,
        );
    }
    let env = TestEnv::new();
    // The first compaction before the boundary's time, the second now.
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
    run(&first, -3590);
    let block = run(&s.lines, 0);
    assert!(block.contains("compaction #2"), "{block}");
    assert!(
        first_of(&block, "Recent user requests").starts_with("Now migrate the billing tables"),
        "{block}"
    );
}

/// A Codex 0.144 code-mode rollout in the forms of ../shared/from-project/fixtures/codex/
/// (code-mode: `custom_tool_call` `exec` cells, their `custom_tool_call_output` headed `Script
/// completed\nWall time N seconds\nOutput:\n`; real-forms/toolchain-background.jsonl: a
/// top-level `write_stdin` and its `Process exited with code N` output): a first `cargo test`
/// that passed, then `cells`, each `(code, output parts, later write_stdin output)`.
fn code_mode_block(cells: &[(&str, &[&str], Option<&str>)]) -> String {
    let session = "019f99aa-0000-7000-8000-000000000043";
    let line = |t: &str, payload: Value| {
        json!({"timestamp": t, "type": "response_item", "payload": payload}).to_string()
    };
    let mut lines = vec![
        json!({"timestamp": "2026-07-15T21:19:26.792Z", "type": "session_meta",
               "payload": {"id": session, "timestamp": "2026-07-15T21:19:26.631Z", "cwd": "/work/app",
                           "originator": "codex_cli_rs", "cli_version": "0.144.2"}})
        .to_string(),
        line("2026-07-15T21:19:28.000Z", json!({"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "Make the workspace tests pass"}]})),
    ];
    let mut all: Vec<(&str, &[&str], Option<&str>)> = vec![(
        "const r = await tools.exec_command({cmd:\"cargo test -p core\", yield_time_ms: 10000}); text(JSON.stringify(r))",
        &["{\"chunk_id\":\"a1\",\"wall_time_seconds\":0.003,\"exit_code\":0,\"output\":\"test result: ok. 3 passed; 0 failed\"}"],
        None,
    )];
    all.extend_from_slice(cells);
    for (n, (code, parts, later)) in all.iter().enumerate() {
        let t = format!("2026-07-15T21:2{n}:00.000Z");
        let call = format!("call_cell_{n}");
        lines.push(line(
            &t,
            json!({"type": "custom_tool_call", "status": "completed", "call_id": call,
                                   "name": "exec", "input": code}),
        ));
        let mut output: Vec<Value> = vec![json!({"type": "input_text", "text": parts[0]})];
        output.extend(
            parts[1..]
                .iter()
                .map(|p| json!({"type": "input_text", "text": p})),
        );
        lines.push(line(
            &t,
            json!({"type": "custom_tool_call_output", "call_id": call, "output": output}),
        ));
        if let Some(later) = later {
            let id = format!("call_stdin_{n}");
            lines.push(line(
                &t,
                json!({"type": "function_call", "name": "write_stdin", "call_id": id,
                "arguments": "{\"session_id\":4821,\"chars\":\"\",\"yield_time_ms\":30000}"}),
            ));
            lines.push(line(
                &t,
                json!({"type": "function_call_output", "call_id": id, "output": later}),
            ));
        }
    }
    let env = TestEnv::new();
    let path = env.write(
        &format!("rollout-2026-07-15T21-19-26-{session}.jsonl"),
        &(lines.join("\n") + "\n"),
    );
    crate::codex_code_mode::recovery_block(&path, "/work/app")
}

/// Class 8: a cell that prints its command's session as `SESSION_ID=N` on a line of the output
/// is linked to the later `write_stdin` that saw the command fail; a command printed without
/// exit code or verdict whose cell ended before its yield time had ended, and is the last run.
#[test]
fn codex_code_mode_links_a_printed_session_and_a_cell_that_ended_before_its_yield() {
    let block = code_mode_block(&[(
        "const r = await tools.exec_command({cmd:\"cargo test --workspace\", yield_time_ms: 10000}); text(r.output + \"\\nSESSION_ID=\" + r.session_id)",
        &["Script completed\nWall time 10.0 seconds\nOutput:\n", "   Compiling app v0.1.0\nSESSION_ID=4821"],
        Some("Chunk ID: 9a5cd2\nWall time: 183.2 seconds\nProcess exited with code 101\nOriginal token count: 40\nOutput:\ntest tests::ledger ... FAILED\ntest result: FAILED. 41 passed; 1 failed; 0 ignored"),
    )]);
    let last = first_of(&block, "Last verification:");
    assert!(
        last.starts_with("[failed] cargo test --workspace"),
        "{block}"
    );
    let block = code_mode_block(&[(
        "const r = await tools.exec_command({cmd:\"cargo build --release\", yield_time_ms: 30000}); text(r.output)",
        &["Script completed\nWall time 2.1 seconds\nOutput:\n", "   Compiling app v0.1.0"],
        None,
    )]);
    let last = first_of(&block, "Last verification:");
    assert!(
        last.starts_with("[passed] cargo build --release"),
        "{block}"
    );
}
