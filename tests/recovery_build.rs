//! What a checkpoint takes from real sessions, through the binary: `precompact` on excerpts of
//! real transcripts (fixtures/transcripts/, sources in its SOURCES.txt), then `checkpoint show
//! --json` and `sessionstart`. Asks given as slash commands, long asks, todos, edits that failed,
//! failures that say what failed, background commands.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::*;

fn excerpt(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/transcripts")
        .join(name)
}

/// The working directory the transcript's lines record.
fn cwd_of(transcript: &Path) -> String {
    let text = std::fs::read_to_string(transcript).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["cwd"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// `precompact` on `transcript`, then the checkpoint as `checkpoint show --json` prints it and
/// the block `sessionstart` injects.
fn compact(env: &TestEnv, transcript: &Path, instructions: &str) -> (Value, String) {
    let cwd = cwd_of(transcript);
    let mut payload = precompact_payload(SESSION, transcript, "manual", json!(instructions));
    payload["cwd"] = json!(cwd);
    let run = env.run(&["precompact"], payload.to_string());
    assert_eq!(run.code, 0, "{run:?}");
    assert!(facts_or_nothing(&run.stdout), "{run:?}");
    let show = env.run(&["checkpoint", "show", "--session", SESSION, "--json"], "");
    assert_eq!(show.code, 0, "{show:?}");
    let cp: Value = serde_json::from_str(&show.stdout).unwrap();
    let start = env.run(
        &["sessionstart"],
        sessionstart_payload(SESSION, "compact", &cwd).to_string(),
    );
    (cp, decode_block(&start.stdout))
}

/// The lines of the fenced section under `title` in a block.
fn section<'a>(block: &'a str, title: &str) -> Vec<&'a str> {
    let Some(at) = block.find(title) else {
        return Vec::new();
    };
    block[at..]
        .lines()
        .skip(2)
        .take_while(|l| !l.starts_with("```"))
        .collect()
}

/// kronix.jsonl (2.1.123): `/apply-grant` alone, then with arguments: the second is the ask.
#[test]
fn a_slash_command_with_arguments_is_an_ask() {
    let env = TestEnv::new();
    let (cp, block) = compact(&env, &excerpt("kronix-slash-command.jsonl"), "");
    assert_eq!(
        cp["asks"],
        json!(["/apply-grant help me apply for the agentic engineering grant by Superteam"])
    );
    assert_eq!(
        section(&block, "Recent user requests"),
        ["/apply-grant help me apply for the agentic engineering grant by Superteam"]
    );
}

/// session-share-0ccf1a04.jsonl (2.1.16): `/plugin` and `/publish-session` without arguments
/// are not asks; a long prompt keeps its start and its end; a `TaskOutput` error names its task.
#[test]
fn slash_commands_without_arguments_are_not_asks() {
    let env = TestEnv::new();
    let (cp, _) = compact(&env, &excerpt("session-share-0ccf1a04-commands.jsonl"), "");
    let asks: Vec<&str> = cp["asks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(asks.len(), 2, "{asks:?}");
    assert!(
        asks[0].starts_with("Spaw sub-agents to write poems"),
        "{asks:?}"
    );
    assert!(
        asks[0].ends_with("write your own poem about sushi"),
        "{asks:?}"
    );
    assert_eq!(asks[1], "why won't you run it?");
    assert_eq!(
        cp["failures"],
        json!([{"tool": "TaskOutput", "error": "task ac27727 → No task found with ID: ac27727"}])
    );
}

/// reliability-python-to-rust-port.jsonl (2.1.14): the instruction at the end of a long first
/// prompt survives, and the todo list is recalled.
#[test]
fn a_long_ask_keeps_its_end_and_todos_are_recalled() {
    let env = TestEnv::new();
    let (cp, block) = compact(
        &env,
        &excerpt("reliability-python-to-rust-port-todos.jsonl"),
        "",
    );
    let ask = cp["asks"][0].as_str().unwrap();
    assert!(
        ask.starts_with("Port this Python project to Rust."),
        "{ask}"
    );
    assert!(
        ask.ends_with("You can ask me questions if you need clarification."),
        "{ask}"
    );
    assert!(ask.chars().count() <= 200 && ask.contains('…'), "{ask}");
    let todos = section(&block, "Open todos");
    assert_eq!(todos.len(), 10, "{block}");
    assert_eq!(
        todos[0],
        "[in_progress] Initialize Rust library project structure"
    );
    assert_eq!(todos[9], "[pending] Delete Python source files");
}

/// spotter-ae4a77f8.jsonl (2.1.39): the Edit whose old string was not found changed nothing;
/// the Write did. Failures name their file or command; /compact's arguments are not an ask.
#[test]
fn failed_edits_are_not_modified_files_and_failures_say_what_failed() {
    let env = TestEnv::new();
    let (cp, block) = compact(
        &env,
        &excerpt("spotter-ae4a77f8-edits.jsonl"),
        "and continue with the reamining tasks",
    );
    assert_eq!(
        cp["files_modified"],
        json!(["/home/USER/projects/spotter-worktrees/spotter-4te/.dialyzerignore"])
    );
    assert_eq!(cp.get("files_read"), None);
    assert_eq!(
        cp["asks"],
        json!(["Work on bead spotter-4te. Run bd show spotter-4te to see the issue details and bd ready to find available subtasks. Start with the first ready task."])
    );
    assert_eq!(
        section(&block, "Files modified"),
        [".dialyzerignore"],
        "relative to the session's directory"
    );
    assert_eq!(
        section(&block, "Recent tool failures"),
        [
            "Bash: source spotter-plugin/scripts/lib/trace_context.sh && \\ spotter_rand_hex 16 | g… → (eval):1: permission denied:",
            "Edit: lib/spotter/telemetry/otel.ex → String to replace not found in file.",
        ]
    );
}

/// spotter-4d5611e5.jsonl (2.1.39): a failed `git push` says why; a completed background
/// command's notification is neither an ask nor a failure.
#[test]
fn a_bash_failure_names_its_command_and_error() {
    let env = TestEnv::new();
    let path = excerpt("spotter-4d5611e5-git-push.jsonl");
    let (cp, _) = compact(&env, &path, "");
    assert_eq!(cp["asks"], json!([]));
    assert_eq!(
        cp["failures"],
        json!([{"tool": "Bash", "error": "git push 2>&1 → fatal: The current branch spotter-dov has no upstream branch."}])
    );

    // The same session had the background command failed: its notification as the client
    // writes a failed one (status and summary changed, nothing else).
    let text = std::fs::read_to_string(&path).unwrap();
    let failed = text
        .replace("<status>completed</status>", "<status>failed</status>")
        .replace("completed (exit code 0)", "failed with exit code 2");
    assert_ne!(failed, text);
    let env = TestEnv::new();
    let path = env.write("failed-background.jsonl", &failed);
    let (cp, block) = compact(&env, &path, "");
    assert_eq!(
        section(&block, "Recent tool failures")[0],
        "Bash (background): mix test test/spotter_web/live/session_live_test.exs 2>&1 → Background command \"Run SessionLive tests\" failed with exit code 2"
    );
    assert_eq!(cp["failures"].as_array().unwrap().len(), 2);
}

/// 2.1.330: after an auto-compaction the prompt is before the boundary; the client's
/// `last-prompt` record names it. The same failure twice is one line, counted.
#[test]
fn the_last_prompt_record_names_the_ask_after_an_auto_compaction() {
    let env = TestEnv::new();
    // The real transcript up to its third compaction: after the second boundary, two failing
    // calls, no prompt.
    let text: String = fixture("transcript-with-compaction.jsonl")
        .lines()
        .take(160)
        .map(|l| format!("{l}\n"))
        .collect();
    let path = env.write("real.jsonl", &text);
    let (cp, block) = compact(&env, &path, "");
    assert_eq!(cp["asks"], json!(["and again"]));
    assert_eq!(section(&block, "Recent user requests"), ["and again"]);
    assert_eq!(
        section(&block, "Recent tool failures"),
        ["Bash: false → Exit code 1 (2 times)"]
    );
}

/// cipherbox-f7594e2b.jsonl (2.1.49): prompts typed while the agent worked are stored only as
/// `queue-operation` records; they are asks in their place in time, the newest first. The skill
/// that started the session is its goal. The branch and the pull request are named.
#[test]
fn queued_prompts_the_goal_the_branch_and_the_pull_request() {
    let env = TestEnv::new();
    let (cp, block) = compact(&env, &excerpt("cipherbox-f7594e2b-queued.jsonl"), "");
    assert_eq!(cp["goal"], json!("/security:review all of phase 14 work"));
    assert_eq!(
        cp["queued"],
        json!([
            "also, forgot to mention the implementation of suggested tests from the report.",
            "we also use migrations in staging, so I dont think that we need to avoid migrations based on dev",
            "ok lets get a pr up for this"
        ])
    );
    let requests = section(&block, "Recent user requests");
    assert_eq!(requests[0], "[queued] ok lets get a pr up for this");
    assert_eq!(requests.len(), 4, "{block}");
    assert!(
        requests[3].starts_with("ok, lets commit the review"),
        "{block}"
    );
    assert_eq!(
        section(&block, "The session's goal"),
        ["/security:review all of phase 14 work"]
    );
    assert_eq!(
        section(&block, "Where the work lives"),
        [
            "branch feat/phase-14-user-to-user-sharing",
            "pull request #183 https://github.com/FSM1/cipher-box/pull/183"
        ]
    );
    assert_eq!(
        section(&block, "Last verification"),
        ["[passed] pnpm --filter @cipherbox/crypto test -- --reporter=verbose 2>&1 → Tests 241 passed (241)"]
    );
}

/// ctxeval-8209f1c2.jsonl (2.1.45): a plan accepted in plan mode keeps its steps, never the
/// client's footer; a lint that failed and then passed is no longer a failure; the gist keeps
/// the end of the last message.
#[test]
fn a_plan_keeps_its_steps_a_fixed_failure_goes_and_the_gist_keeps_its_end() {
    let env = TestEnv::new();
    let (cp, block) = compact(&env, &excerpt("ctxeval-8209f1c2-plan.jsonl"), "");
    let goal = cp["goal"].as_str().unwrap();
    assert!(
        goal.starts_with(
            "Implement the following plan: Plan-First Remediation Pipeline. Steps: 1. Type changes"
        ),
        "{goal}"
    );
    assert!(
        goal.ends_with("; 8. No API route changes needed"),
        "every step: {goal}"
    );
    assert!(!block.contains("read the full transcript at"), "{block}");
    assert_eq!(cp["failures"], json!([]), "the lint passed later");
    assert_eq!(
        cp["verification"],
        json!({"command": "bun run lint 2>&1", "verdict": "Checked 286 files in 85ms. No fixes applied.", "passed": true})
    );
    let gist = cp["last_assistant"].as_str().unwrap();
    assert!(gist.starts_with("All clean."), "{gist}");
    assert!(
        gist.ends_with("Our plan sections are correctly positioned above the new component."),
        "{gist}"
    );
    assert_eq!(cp["meta"]["git_branch"], json!("main"));
    assert!(
        !block.contains("Where the work lives"),
        "main is the default branch"
    );
}

/// cybervpn-cdd85d16.jsonl (2.1.42): a teammate's tasks are known by id only (the lead created
/// them); their subjects come from `TaskList` and `TaskGet` results.
#[test]
fn a_teammates_tasks_carry_their_subjects() {
    let env = TestEnv::new();
    let (cp, block) = compact(&env, &excerpt("cybervpn-cdd85d16-teammate.jsonl"), "");
    assert_eq!(
        section(&block, "Open todos"),
        [
            "[in_progress] #26 TST-3: Unit tests for use cases",
            "[in_progress] #28 TST-5: Widget tests for AddByUrlScreen",
            "[in_progress] #29 TST-6: Integration test for migration flow"
        ]
    );
    assert_eq!(
        cp["asks"][1],
        json!("team-lead assigned task #24: TST-1: Unit tests for domain entities")
    );
}

/// spotter-ae4a77f8.jsonl (2.1.39): `mix test | tail -30` exits 0 with 11 failures: the last
/// verification says so.
#[test]
fn a_red_run_piped_through_tail_is_a_failed_verification() {
    let env = TestEnv::new();
    let (_, block) = compact(&env, &excerpt("spotter-ae4a77f8-red-tail.jsonl"), "");
    assert_eq!(
        section(&block, "Last verification"),
        ["[failed] mix test --seed 0 2>&1 | tail -30 → 14 doctests, 297 tests, 11 failures"]
    );
}

/// Issue 28 item 10, through the binary: a file edited as `a//b` and as `a/b` is one entry.
#[test]
fn a_file_spelt_two_ways_is_one_modified_file() {
    let env = TestEnv::new();
    let lines: Vec<String> = [
        json!({"type": "user", "cwd": "/p", "message": {"role": "user", "content": "tidy the parser"}}),
        json!({"type": "assistant", "cwd": "/p", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "e1", "name": "Edit", "input": {"file_path": "/p/src//parser.rs"}},
            {"type": "tool_use", "id": "e2", "name": "Write", "input": {"file_path": "/p/src/./parser.rs"}},
            {"type": "tool_use", "id": "e3", "name": "Edit", "input": {"file_path": "/p/src/parser.rs"}}]}}),
        json!({"type": "user", "cwd": "/p", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "e1", "content": "ok"},
            {"type": "tool_result", "tool_use_id": "e2", "content": "ok"},
            {"type": "tool_result", "tool_use_id": "e3", "content": "ok"}]}}),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    let transcript = env.write("paths.jsonl", &(lines.join("\n") + "\n"));
    let (cp, block) = compact(&env, &transcript, "");
    assert_eq!(cp["files_modified"], json!(["/p/src/parser.rs"]), "{cp}");
    assert_eq!(
        section(&block, "Files modified"),
        ["src/parser.rs"],
        "{block}"
    );
}
