//! The defect classes real sessions nobody here tuned on showed (issue 33), each through the
//! binary: a transcript shaped as Claude Code writes it, `precompact`, then the block
//! `sessionstart` injects. Each test failed before its fix.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::util::*;

/// A transcript under construction: prompts, tool calls and their results, in order.
pub(crate) struct Session {
    pub(crate) lines: Vec<String>,
    t: i64,
    n: usize,
}

impl Session {
    pub(crate) fn new(prompt: &str) -> Session {
        let mut s = Session {
            lines: Vec::new(),
            t: -3600,
            n: 0,
        };
        s.prompt(prompt);
        s
    }

    pub(crate) fn at(&mut self) -> String {
        self.t += 5;
        time_from_now(self.t)
    }

    pub(crate) fn prompt(&mut self, text: &str) {
        let at = self.at();
        self.lines.push(
            json!({"type": "user", "isSidechain": false, "timestamp": at, "cwd": "/work/app",
                   "message": {"role": "user", "content": text}})
            .to_string(),
        );
    }

    /// A call of `tool` with `input`, and its result (`error`: the client's `is_error`).
    pub(crate) fn call(&mut self, tool: &str, input: Value, output: &str, error: bool) -> String {
        self.n += 1;
        let id = format!("toolu_{:04}", self.n);
        let at = self.at();
        self.lines.push(
            json!({"type": "assistant", "isSidechain": false, "timestamp": at,
                   "message": {"id": format!("msg_{}", self.n), "model": "claude-opus-4-6",
                               "role": "assistant",
                               "content": [{"type": "tool_use", "id": id, "name": tool,
                                            "input": input}],
                               "usage": {"input_tokens": 5, "cache_read_input_tokens": 40_000,
                                         "output_tokens": 100}}})
            .to_string(),
        );
        let at = self.at();
        self.lines.push(
            json!({"type": "user", "isSidechain": false, "timestamp": at,
                   "message": {"role": "user",
                               "content": [{"type": "tool_result", "tool_use_id": id,
                                            "content": output, "is_error": error}]}})
            .to_string(),
        );
        id
    }

    pub(crate) fn bash(&mut self, command: &str, output: &str, error: bool) {
        self.call("Bash", json!({"command": command}), output, error);
    }

    /// `precompact` then `sessionstart(compact)`: the block.
    pub(crate) fn block(&self) -> String {
        let env = TestEnv::new();
        let path: PathBuf = env.write("t.jsonl", &(self.lines.join("\n") + "\n"));
        let mut payload = precompact_payload(SESSION, &path, "manual", json!(""));
        payload["cwd"] = json!("/work/app");
        let run = env.run(&["precompact"], payload.to_string());
        assert_eq!(run.code, 0, "{run:?}");
        let start = env.run(
            &["sessionstart"],
            sessionstart_payload(SESSION, "compact", "/work/app").to_string(),
        );
        decode_block(&start.stdout)
    }
}

/// The line of the block after `title`'s fence opens, or "".
pub(crate) fn first_of(block: &str, title: &str) -> String {
    block
        .find(title)
        .and_then(|at| block[at..].lines().nth(2))
        .unwrap_or_default()
        .to_string()
}

/// Class 1: the run is on the command's second line, or after an `echo`.
#[test]
fn a_verification_not_on_the_first_line_is_the_last_one() {
    let mut s = Session::new("fix the date formatting");
    s.bash("cargo build", "Finished `dev` profile", false);
    s.bash(
        "cd /work/app\nnpx vitest run src/date",
        "Test Files  1 failed | 3 passed (4)\n      Tests  2 failed | 40 passed (42)",
        true,
    );
    let block = s.block();
    let last = first_of(&block, "Last verification:");
    assert!(
        last.starts_with("[failed] npx vitest run src/date"),
        "{block}"
    );
    let mut s = Session::new("run the suite");
    s.bash("cargo build", "Finished `dev` profile", false);
    s.bash("echo start && pnpm test", "Tests: 3 passed, 3 total", false);
    let last = first_of(&s.block(), "Last verification:");
    assert!(last.starts_with("[passed] pnpm test"), "{last}");
}

/// Class 2: ruff passes, then pytest fails, in one command piped through `tail`.
#[test]
fn the_worst_verdict_of_a_compound_command_wins() {
    let mut s = Session::new("make the checks pass");
    s.bash(
        "ruff check . && pytest -q 2>&1 | tail -3",
        "All checks passed!\n.....F..F\n2 failed, 1074 passed in 12.31s",
        false,
    );
    let last = first_of(&s.block(), "Last verification:");
    assert!(
        last.starts_with("[failed] ruff check . && pytest -q"),
        "{last}"
    );
    assert!(last.contains("2 failed, 1074 passed"), "{last}");
}

/// Class 3: vitest colours its summary; an unrelated FAIL line of a test's output came first.
#[test]
fn colour_codes_do_not_hide_the_summary() {
    let mut s = Session::new("fix the date tests");
    s.bash(
        "npx vitest run",
        "FAIL  src/date.test.ts > formats dates\n \u{1b}[2m Test Files \u{1b}[22m \u{1b}[1m\u{1b}[31m1 failed\u{1b}[39m\u{1b}[22m\u{1b}[2m | \u{1b}[22m\u{1b}[1m\u{1b}[32m3 passed\u{1b}[39m\u{1b}[22m\u{1b}[90m (4)\u{1b}[39m",
        true,
    );
    let last = first_of(&s.block(), "Last verification:");
    assert!(
        last.contains("Test Files 1 failed | 3 passed (4)"),
        "{last}"
    );
}

/// Class 4: a failed build, then the same build piped through `tail` passing; a failed push,
/// then a pull and the same push in one command.
#[test]
fn a_failure_is_cleared_by_the_same_run_in_another_form() {
    let mut s = Session::new("ship the build");
    s.bash(
        "npm run build",
        "Exit code 1\nerror TS2304: Cannot find name 'foo'.",
        true,
    );
    s.bash(
        "git push origin feat",
        "Exit code 1\n! [rejected] feat -> feat (fetch first)\nerror: failed to push some refs",
        true,
    );
    s.bash(
        "npm run build 2>&1 | tail -30",
        "vite v5.0.0 building for production...\n✓ built in 2.31s",
        false,
    );
    s.bash(
        "git pull --rebase origin feat && git push origin feat",
        "Successfully rebased and updated refs/heads/feat.\nTo github.com:o/r.git\n   abc..def  feat -> feat",
        false,
    );
    let block = s.block();
    assert!(!block.contains("Cannot find name"), "{block}");
    assert!(!block.contains("failed to push"), "{block}");
}

/// Class 5: an MCP tool's failure on a page, then its success on the same page.
#[test]
fn an_mcp_failure_is_cleared_by_its_later_success_on_the_same_target() {
    let mut s = Session::new("update the wiki page");
    s.call(
        "mcp__notion__update_page",
        json!({"page_id": "abc123", "content": "v1"}),
        "Error: rate limited",
        true,
    );
    s.call(
        "mcp__notion__update_page",
        json!({"page_id": "abc123", "content": "v2"}),
        "updated",
        false,
    );
    s.call(
        "mcp__notion__update_page",
        json!({"page_id": "zzz999", "content": "v1"}),
        "Error: page not found",
        true,
    );
    let block = s.block();
    assert!(!block.contains("rate limited"), "{block}");
    assert!(
        block.contains("page not found"),
        "another page's failure stays: {block}"
    );
}

/// Class 6: review comments answered through the API, the current branch's pull request viewed
/// with no number; and a created pull request outranks a long todo list in a tight block.
#[test]
fn pull_request_work_is_named_and_outranks_the_rest() {
    let mut s = Session::new("address the review comments");
    s.bash(
        "gh pr view --json number,title,url",
        "{\"number\":172,\"title\":\"Fix parser\",\"url\":\"https://github.com/o/r/pull/172\"}",
        false,
    );
    s.bash(
        "gh api repos/o/r/pulls/172/comments/991/replies -f body='Fixed in abc123'",
        "{\"id\":1}",
        false,
    );
    let block = s.block();
    assert!(block.contains("pull request #172 (commented)"), "{block}");
    // Reading a pull request's review comments is work on it.
    let mut s = Session::new("look at the review");
    s.bash(
        "gh api repos/o/r/pulls/158/comments --jq '.[] | {path: .path, body: .body}'",
        "{\"path\":\"a.go\",\"body\":\"nit\"}",
        false,
    );
    let block = s.block();
    assert!(
        block.contains("pull request #158 (review comments read)"),
        "{block}"
    );

    let mut s = Session::new("ship it");
    let todos: Vec<Value> = (0..30)
        .map(|i| json!({"content": format!("a long open task number {i} with many words in it to fill the block"), "status": "pending", "activeForm": "working"}))
        .collect();
    s.call("TodoWrite", json!({"todos": todos}), "ok", false);
    s.bash(
        "gh pr create --title 'Fix parser' --body x",
        "https://github.com/o/r/pull/1066",
        false,
    );
    // A `git log` full of merges after it: pull requests seen in history, not acted on.
    let merges: String = (900..912)
        .map(|n| format!("abc{n} Merge pull request #{n} from o/branch-{n}\n"))
        .collect();
    s.bash("git log --oneline -20", &merges, false);
    for i in 0..40 {
        s.call(
            "Edit",
            json!({"file_path": format!("/work/app/src/some/deeply/nested/module_{i}/file.rs"),
                   "old_string": "a", "new_string": "b"}),
            "ok",
            false,
        );
    }
    let block = s.block();
    assert!(
        block.contains("pull request #1066 (created) https://github.com/o/r/pull/1066"),
        "{block}"
    );
}

/// Class 7: one user record bundling a peer's status ping, then the lead's instruction.
#[test]
fn every_message_of_a_bundled_teammate_record_is_read() {
    let mut s = Session::new("start on the importer");
    s.prompt(
        "<teammate-message teammate_id=\"test-eng\">\n{\"type\":\"idle_notification\",\"from\":\"test-eng\"}\n</teammate-message>\n\n<teammate-message teammate_id=\"team-lead\">\nStop the importer work and fix the failing CSV parser test first.\n</teammate-message>",
    );
    let block = s.block();
    assert!(
        block.contains(
            "team-lead: Stop the importer work and fix the failing CSV parser test first."
        ),
        "{block}"
    );
    assert!(!block.contains("idle_notification"), "{block}");
}

/// Class 8: a background test run's verdict is known where its output was read, after a lint
/// that ran meanwhile: that read is the last verification.
#[test]
fn a_background_verification_is_dated_where_its_output_was_read() {
    let mut s = Session::new("run the tests");
    s.bash(
        "npm test",
        "Command running in background with ID: a1b2c3d. Output is being written to: /tmp/b.out",
        false,
    );
    s.bash("npm run lint", "✔ No problems found\n0 problems", false);
    s.call(
        "TaskOutput",
        json!({"task_id": "a1b2c3d", "block": true}),
        "<retrieval_status>success</retrieval_status>\n<task_id>a1b2c3d</task_id>\n<status>completed</status>\n<exit_code>1</exit_code>\n<output>\nTests:       2 failed, 40 passed, 42 total\n</output>",
        false,
    );
    let last = first_of(&s.block(), "Last verification:");
    assert!(last.starts_with("[failed] npm test"), "{last}");
    assert!(last.contains("2 failed, 40 passed"), "{last}");
}

/// Class 8, as the newer clients run it: the output file of a background run, read with `Read`
/// (or `tail`), holds its verdict; that read is the last verification, after a lint that ran
/// meanwhile.
#[test]
fn a_background_runs_output_file_read_later_holds_its_verdict() {
    for read_with_tail in [false, true] {
        let mut s = Session::new("run the tests");
        s.bash(
            "npm test",
            "Command running in background with ID: b81. Output is being written to: /tmp/claude/tasks/b81.output",
            false,
        );
        s.bash("npm run lint", "0 problems", false);
        let output = "Tests:       2 failed, 40 passed, 42 total";
        if read_with_tail {
            s.bash("tail -5 /tmp/claude/tasks/b81.output", output, false);
        } else {
            s.call(
                "Read",
                json!({"file_path": "/tmp/claude/tasks/b81.output"}),
                &format!("     1\t{output}"),
                false,
            );
        }
        let last = first_of(&s.block(), "Last verification:");
        assert!(
            last.starts_with("[failed] npm test"),
            "{read_with_tail}: {last}"
        );
    }
}

/// Class 10: a plan step is shortened from its end, never cut in the middle of a word.
#[test]
fn plan_steps_keep_their_heads() {
    let mut s = Session::new("add the hooks");
    s.call(
        "ExitPlanMode",
        json!({"plan": "# Wingman hooks\n\n## 1. Stop hook: wingman status notification (cmd/entire/cli/agent/claudecode_handlers.go)\n\n## 2. Session start: load the wingman state\n"}),
        "User has approved your plan.",
        false,
    );
    let block = s.block();
    assert!(
        block.contains("1. Stop hook: wingman status notification (cmd/entire/cli/…"),
        "{block}"
    );
    assert!(!block.contains("notifi…"), "{block}");
}

/// A run the user refused never ran: the run before it stays the last verification.
#[test]
fn a_refused_run_is_no_verification() {
    let mut s = Session::new("run the integration tests");
    s.bash("go test ./...", "ok  \tgithub.com/o/r/cli\t0.5s", false);
    s.bash(
        "go test -tags=integration -race ./... 2>&1 | tail -5",
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.",
        true,
    );
    let last = first_of(&s.block(), "Last verification:");
    assert!(last.starts_with("[passed] go test ./..."), "{last}");
}

/// Runs that run less, or nothing, are no verification and clear no failure (from an attack):
/// `cargo test --no-run` compiles only, a commit message naming `cargo test` runs nothing.
#[test]
fn a_run_that_runs_nothing_clears_nothing() {
    let mut s = Session::new("fix the tests");
    s.bash(
        "cargo test",
        "Exit code 101\ntest result: FAILED. 10 passed; 2 failed",
        true,
    );
    s.bash("cargo test --no-run", "Finished `test` profile", false);
    s.bash(
        "git commit -m \"wip; cargo test --all\"",
        "[main abc123] wip",
        false,
    );
    let block = s.block();
    let last = first_of(&block, "Last verification:");
    assert!(last.starts_with("[failed] cargo test"), "{last}");
    assert!(
        !last.contains("--no-run") && !last.contains("--all"),
        "{last}"
    );
}

/// A task runner's test task is a verification (`mise run test:ci`).
#[test]
fn a_task_runners_test_task_is_a_verification() {
    let mut s = Session::new("make CI green");
    s.bash("go build ./...", "", false);
    s.bash(
        "mise run test:ci",
        "Exit code 1\n[test:ci] $ go test -race ./...\nFAIL\tgithub.com/o/r/cli\t2.1s\n[test:ci] ERROR task failed",
        true,
    );
    let last = first_of(&s.block(), "Last verification:");
    assert!(last.starts_with("[failed] mise run test:ci"), "{last}");
}

/// Class 9, what repeats an abandoned prompt without a `uuid` (the queue's `enqueue`, the
/// client's `last-prompt`), and a first prompt edited before a compaction (read from the head
/// for the goal): none of it comes back.
#[test]
fn nothing_of_a_rewound_prompt_comes_back_by_any_record() {
    let rec = |v: Value| v.to_string();
    let at = |s: i64| time_from_now(s - 3600);
    let prompt = |uuid: &str, parent: Option<&str>, text: &str, s: i64| {
        rec(
            json!({"type": "user", "uuid": uuid, "parentUuid": parent, "timestamp": at(s),
                   "isSidechain": false, "message": {"role": "user", "content": text}}),
        )
    };
    let reply = |uuid: &str, parent: &str, s: i64| {
        rec(
            json!({"type": "assistant", "uuid": uuid, "parentUuid": parent, "timestamp": at(s),
                   "isSidechain": false,
                   "message": {"id": format!("msg_{uuid}"), "model": "claude-opus-4-6",
                               "role": "assistant", "content": [{"type": "text", "text": "ok"}],
                               "usage": {"input_tokens": 5, "cache_read_input_tokens": 50_000,
                                         "output_tokens": 10}}}),
        )
    };
    let lines = [
        prompt("p1", None, "build the thing, my key is SECRET_FIRST", 0),
        reply("a1", "p1", 5),
        // Esc Esc on the first prompt: a new root.
        prompt(
            "p1b",
            None,
            "build the thing, the key is in the environment",
            10,
        ),
        reply("a2", "p1b", 15),
        rec(
            json!({"type": "queue-operation", "operation": "enqueue", "timestamp": at(18),
                   "content": "deploy with token SECRET_QUEUED"}),
        ),
        prompt("p2", Some("a2"), "deploy with token SECRET_QUEUED", 20),
        reply("a3", "p2", 25),
        rec(
            json!({"type": "last-prompt", "lastPrompt": "deploy with token SECRET_QUEUED",
                   "leafUuid": "a3"}),
        ),
        // Esc Esc on the second prompt.
        prompt(
            "p2b",
            Some("a2"),
            "deploy, reading the token from the vault",
            30,
        ),
        reply("a4", "p2b", 35),
        rec(
            json!({"type": "system", "subtype": "compact_boundary", "uuid": "b1",
                   "parentUuid": null, "logicalParentUuid": "a4", "timestamp": at(40),
                   "compactMetadata": {"trigger": "auto", "preTokens": 160_000}}),
        ),
        prompt("p3", Some("b1"), "go on", 45),
        reply("a5", "p3", 50),
    ];
    // Before the boundary (every record of both rewinds in the part read), then after it (the
    // goal from the head).
    for (name, text) in [
        ("cut.jsonl", lines[..10].join("\n")),
        ("t.jsonl", lines.join("\n")),
    ] {
        let env = TestEnv::new();
        let path = env.write(name, &(text + "\n"));
        let mut payload = precompact_payload(SESSION, &path, "auto", json!(""));
        payload["cwd"] = json!("/work/app");
        assert_eq!(env.run(&["precompact"], payload.to_string()).code, 0);
        let show = env
            .run(&["checkpoint", "show", "--session", SESSION], "")
            .stdout;
        assert!(!show.contains("SECRET"), "{name}: {show}");
        assert!(
            show.contains("the key is in the environment"),
            "{name}: {show}"
        );
    }
}
