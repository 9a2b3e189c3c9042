//! Tests of `src/checkpoint/tools.rs`: what each tool call adds to a checkpoint, on literal calls and results.

use super::*;
use crate::checkpoint::bounded::{ID_BYTES, MAX_CALLS, MAX_TOOL_NAMES};
use crate::checkpoint::MAX_FAILURES;
use serde_json::{json, Value};

fn with_block(v: Value, f: impl FnOnce(&Block)) {
    let text = v.to_string();
    f(&serde_json::from_str::<Block>(&text).unwrap());
}

fn call(log: &mut ToolLog, id: &str, name: &str, input: Value) {
    let block = json!({"type": "tool_use", "id": id, "name": name, "input": input});
    with_block(block, |b| log.call(b, Some("/home/user/proj")));
}

fn result(log: &mut ToolLog, id: &str, content: Value, is_error: bool) {
    let block =
        json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error});
    with_block(block, |b| log.result(b));
}

fn failed_tools(cp: &Checkpoint) -> Vec<&str> {
    cp.failures.iter().map(|f| f.tool.as_str()).collect()
}

fn shown(cp: &Checkpoint) -> Vec<String> {
    cp.failures
        .iter()
        .map(|f| format!("{}: {}", f.tool, f.error))
        .collect()
}

#[test]
fn only_the_last_five_failures() {
    let mut log = ToolLog::default();
    for i in 0..8 {
        call(&mut log, &format!("b{i}"), "Bash", json!({}));
        result(&mut log, &format!("b{i}"), json!(format!("fail {i}")), true);
    }
    let cp = log.finish();
    assert_eq!(cp.failures.len(), MAX_FAILURES);
    assert_eq!(cp.failures[0].error, "fail 3");
    assert_eq!(cp.failures[4].error, "fail 7");
}

/// Failures in the forms real transcripts hold them (written here, with invented names): the
/// command or file, then the line that says what went wrong; repeats counted.
#[test]
fn failures_name_the_command_or_file_and_the_error() {
    let mut log = ToolLog::default();
    call(
        &mut log,
        "toolu_01",
        "Bash",
        json!({"command": "git push 2>&1", "description": "Push"}),
    );
    let push = "Exit code 128\nfatal: The current branch feature-quota has no upstream branch.\nTo push the current branch and set the remote as upstream, use";
    result(&mut log, "toolu_01", json!(push), true);
    call(
        &mut log,
        "toolu_02",
        "Edit",
        json!({"file_path": "/home/user/proj/lib/cache.ex", "old_string": "defp warm_up do", "new_string": "x"}),
    );
    result(
            &mut log,
            "toolu_02",
            json!("<tool_use_error>String to replace not found in file.\nString:   defp warm_up do</tool_use_error>"),
            true,
        );
    for id in ["toolu_03", "toolu_04"] {
        call(
            &mut log,
            id,
            "Bash",
            json!({"command": "false", "description": "fails"}),
        );
        result(&mut log, id, json!("Exit code 1"), true);
    }
    // A long command is cut; a rejected call with nothing but boilerplate is no failure.
    call(
        &mut log,
        "toolu_05",
        "Bash",
        json!({"command": format!("cargo test {}", "--flag ".repeat(30))}),
    );
    result(
        &mut log,
        "toolu_05",
        json!([{"type": "text", "text": "Exit code 101\ntest parser::precedence ... FAILED"}]),
        true,
    );
    call(
        &mut log,
        "toolu_06",
        "Write",
        json!({"file_path": "/etc/x"}),
    );
    result(
            &mut log,
            "toolu_06",
            json!("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."),
            true,
        );
    let cp = log.finish();
    let long = format!("cargo test {}", "--flag ".repeat(30));
    assert_eq!(
        shown(&cp),
        [
            "Bash: git push 2>&1 → fatal: The current branch feature-quota has no upstream branch."
                .to_string(),
            "Edit: lib/cache.ex → String to replace not found in file.".to_string(),
            "Bash: false → Exit code 1 (2 times)".to_string(),
            format!(
                "Bash: {} → test parser::precedence ... FAILED",
                cut(&long, SUBJECT_CHARS)
            ),
        ]
    );
}

/// A background command (in the shapes real sessions' have, with a failed status): its
/// notification and its output name the command that started it.
#[test]
fn failed_background_commands_are_recorded() {
    let mut log = ToolLog::default();
    call(
        &mut log,
        "toolu_bg",
        "Bash",
        json!({"command": "mix test test/shop_web/live/cart_live_test.exs", "run_in_background": true}),
    );
    result(
            &mut log,
            "toolu_bg",
            json!("Command running in background with ID: c41d9a3. Output is being written to: /tmp/claude-1000/tasks/c41d9a3.output"),
            false,
        );
    call(
        &mut log,
        "toolu_out",
        "TaskOutput",
        json!({"task_id": "c41d9a3", "block": true, "timeout": 120000}),
    );
    result(
            &mut log,
            "toolu_out",
            json!("<retrieval_status>success</retrieval_status>\n\n<task_id>c41d9a3</task_id>\n\n<task_type>local_bash</task_type>\n\n<status>failed</status>\n\n<exit_code>2</exit_code>\n\n<output>\n==> shop\n  1) test renders (ShopWeb.CartLiveTest)\n** (MatchError) no match of right hand side value: nil\n</output>"),
            false,
        );
    let note = "<task-notification>\n<task-id>c41d9a3</task-id>\n<status>failed</status>\n<summary>Background command \"Run CartLive tests\" failed with exit code 2</summary>\n</task-notification>";
    log.notification(note);
    // The same notification again (queued, then delivered) is one failure.
    log.notification(note);
    // An unknown task: an agent's.
    log.notification("<task-notification>\n<task-id>a9e27f0</task-id>\n<status>failed</status>\n<summary>Agent \"Poem\" failed: API error</summary>\n</task-notification>");
    let cp = log.finish();
    assert_eq!(
            shown(&cp),
            [
                "Bash (background): mix test test/shop_web/live/cart_live_test.exs → ** (MatchError) no match of right hand side value: nil",
                "Bash (background): mix test test/shop_web/live/cart_live_test.exs → Background command \"Run CartLive tests\" failed with exit code 2",
                "background task: Agent \"Poem\" failed: API error",
            ]
        );
}

/// Edits count once they succeeded: `String to replace not found` (as real sessions have it)
/// changed nothing. One still waiting for its result when the compaction started counts,
/// as the newest.
#[test]
fn only_edits_that_succeeded_or_are_in_flight_are_modified() {
    let mut log = ToolLog::default();
    call(&mut log, "e1", "Edit", json!({"file_path": "/p/ok.rs"}));
    result(
        &mut log,
        "e1",
        json!("The file /p/ok.rs has been updated successfully."),
        false,
    );
    call(&mut log, "e2", "Edit", json!({"file_path": "/p/missed.rs"}));
    result(
            &mut log,
            "e2",
            json!("<tool_use_error>String to replace not found in file.\nString: ## Limits</tool_use_error>"),
            true,
        );
    call(
        &mut log,
        "e3",
        "MultiEdit",
        json!({"file_path": "/p/flying.rs"}),
    );
    call(
        &mut log,
        "e4",
        "NotebookEdit",
        json!({"notebook_path": "/p/n.ipynb"}),
    );
    result(&mut log, "e4", json!("Updated cell"), false);
    // A second result for the same call changes nothing.
    result(&mut log, "e2", json!("ok"), false);
    let cp = log.finish();
    assert_eq!(
        cp.files_modified,
        ["/p/flying.rs", "/p/n.ipynb", "/p/ok.rs"]
    );
}

#[test]
fn todo_changes_whose_results_failed_are_not_recorded() {
    let mut log = ToolLog::default();
    let todos = json!({"todos": [{"content": "Ship it", "status": "in_progress", "activeForm": "Shipping"}]});
    call(&mut log, "w1", "TodoWrite", todos);
    result(
        &mut log,
        "w1",
        json!("<tool_use_error>Error: No such tool available: TodoWrite</tool_use_error>"),
        true,
    );
    call(
        &mut log,
        "c1",
        "TaskCreate",
        json!({"subject": "Parse input", "description": "d"}),
    );
    result(
        &mut log,
        "c1",
        json!("Task #1 created successfully: Parse input"),
        false,
    );
    call(
        &mut log,
        "u1",
        "TaskUpdate",
        json!({"taskId": "4", "status": "completed"}),
    );
    // 2.1.330 answers an unknown task without `is_error`.
    result(&mut log, "u1", json!("Task not found"), false);
    call(&mut log, "c2", "TaskCreate", json!({"subject": "Refused"}));
    result(
            &mut log,
            "c2",
            json!("<tool_use_error>InputValidationError: TaskCreate failed due to the following issue:\nThe required parameter `description` is missing</tool_use_error>"),
            true,
        );
    let cp = log.finish();
    let list: Vec<_> = cp
        .todos
        .iter()
        .map(|t| (t.content.as_str(), t.status.as_str()))
        .collect();
    assert_eq!(list, [("Parse input", "pending")]);
    assert_eq!(failed_tools(&cp), ["TodoWrite", "TaskCreate"]);
}

#[test]
fn tasks_are_tracked_through_create_and_update() {
    let mut log = ToolLog::default();
    call(
        &mut log,
        "c1",
        "TaskCreate",
        json!({"subject": "Parse input"}),
    );
    result(
        &mut log,
        "c1",
        json!("Task #1 created successfully: Parse input"),
        false,
    );
    call(
        &mut log,
        "c2",
        "TaskCreate",
        json!({"subject": "Write tests"}),
    );
    let created = json!([{"type": "text", "text": "Task #2 created successfully: Write tests"}]);
    result(&mut log, "c2", created, false);
    call(
        &mut log,
        "u1",
        "TaskUpdate",
        json!({"taskId": "1", "status": "completed"}),
    );
    call(
        &mut log,
        "u2",
        "TaskUpdate",
        json!({"taskId": "2", "status": "in_progress"}),
    );
    let old = json!({"taskId": "7", "status": "pending", "subject": "Old task"});
    call(&mut log, "u3", "TaskUpdate", old);
    call(
        &mut log,
        "u4",
        "TaskUpdate",
        json!({"taskId": 9, "status": "in_progress"}),
    );
    let cp = log.finish();
    let list: Vec<_> = cp
        .todos
        .iter()
        .map(|t| (t.content.as_str(), t.status.as_str()))
        .collect();
    assert_eq!(
        list,
        [
            ("Write tests", "in_progress"),
            ("task #9", "in_progress"),
            ("Old task", "pending"),
            ("Parse input", "completed"),
        ]
    );
}

#[test]
fn overlong_ids_are_not_paired() {
    let mut log = ToolLog::default();
    let long = "i".repeat(ID_BYTES + 1);
    call(&mut log, &long, "Bash", json!({}));
    result(&mut log, &long, json!("boom"), true);
    assert_eq!(log.calls.len(), 0);
    assert_eq!(failed_tools(&log.finish()), ["tool"]);
}

#[test]
fn results_pair_with_the_newest_calls_only() {
    let mut log = ToolLog::default();
    for i in 0..MAX_CALLS * 4 {
        call(
            &mut log,
            &format!("id{i}"),
            &format!("T{}", i % 7),
            json!({}),
        );
    }
    assert_eq!(log.calls.len(), MAX_CALLS);
    let newest = MAX_CALLS * 4 - 1;
    result(&mut log, &format!("id{newest}"), json!("late"), true);
    result(&mut log, "id0", json!("too late"), true);
    assert_eq!(
        failed_tools(&log.finish()),
        [format!("T{}", newest % 7).as_str(), "tool"]
    );
}

#[test]
fn tools_used_are_the_most_used_few_with_short_names() {
    let mut log = ToolLog::default();
    for i in 0..MAX_TOOL_NAMES * 2 {
        call(
            &mut log,
            "x",
            &format!("{i:04}{}", "n".repeat(200)),
            json!({}),
        );
        call(&mut log, "x", "Bash", json!({}));
    }
    assert_eq!(log.counts.len(), MAX_TOOL_NAMES);
    let cp = log.finish();
    assert_eq!(cp.tools_used.len(), MAX_TOOLS);
    assert_eq!(cp.tools_used[0].name, "Bash");
    assert_eq!(cp.tools_used[0].count, MAX_TOOL_NAMES as u64 * 2);
    assert!(cp.tools_used[1..]
        .iter()
        .all(|t| t.count == 1 && t.name.chars().count() == NAME_CHARS));
}

#[test]
fn files_are_the_newest_distinct_few() {
    let mut log = ToolLog::default();
    for i in 0..MAX_FILES * 3 {
        call(
            &mut log,
            &format!("e{i}"),
            "Edit",
            json!({"file_path": format!("/p/{i}.rs")}),
        );
        result(&mut log, &format!("e{i}"), json!("ok"), false);
    }
    let long = format!("/p/{}", "d/".repeat(PATH_CHARS));
    call(&mut log, "w", "Write", json!({"file_path": long}));
    result(&mut log, "w", json!("ok"), false);
    call(&mut log, "e", "Edit", json!({"file_path": "/p/0.rs"}));
    result(&mut log, "e", json!("ok"), false);
    let cp = log.finish();
    assert_eq!(cp.files_modified.len(), MAX_FILES);
    assert_eq!(cp.files_modified[0], "/p/0.rs");
    assert_eq!(cp.files_modified[1].chars().count(), PATH_CHARS);
    assert_eq!(cp.files_modified[2], format!("/p/{}.rs", MAX_FILES * 3 - 1));
}

#[test]
fn subjects_are_relative_to_the_session_directory_and_keep_their_end() {
    assert_eq!(
        shown_path("/home/user/proj/src/a.rs", Some("/home/user/proj")),
        "src/a.rs"
    );
    assert_eq!(
        shown_path("/home/user/proj2/a.rs", Some("/home/user/proj")),
        "/home/user/proj2/a.rs"
    );
    assert_eq!(
        shown_path("/home/user/proj", Some("/home/user/proj")),
        "/home/user/proj"
    );
    assert_eq!(shown_path("/a.rs", None), "/a.rs");
    let deep = format!("/p/{}end.rs", "d/".repeat(100));
    let s = shown_path(&deep, Some("/q"));
    assert!(s.starts_with('…') && s.ends_with("d/end.rs"), "{s}");
    assert_eq!(s.chars().count(), SUBJECT_CHARS);
    let heredoc = format!("cat > big.txt <<'EOF'\n{}EOF", "line\n".repeat(200_000));
    let subject = command_subject(&heredoc);
    assert!(
        subject.starts_with("cat > big.txt <<'EOF' line line"),
        "{subject}"
    );
    assert_eq!(subject.chars().count(), SUBJECT_CHARS);
}

/// Issue 28 item 10: `a//b` and `a/b` are one file.
#[test]
fn modified_paths_are_normalised() {
    let mut log = ToolLog::default();
    call(
        &mut log,
        "e1",
        "Edit",
        json!({"file_path": "/home/user/proj//src/a.rs"}),
    );
    result(&mut log, "e1", json!("ok"), false);
    call(
        &mut log,
        "e2",
        "Write",
        json!({"file_path": "/home/user/proj/./src/a.rs"}),
    );
    result(&mut log, "e2", json!("ok"), false);
    call(
        &mut log,
        "e3",
        "Edit",
        json!({"file_path": "//server/share/b.rs"}),
    );
    result(&mut log, "e3", json!("ok"), false);
    assert_eq!(
        log.finish().files_modified,
        ["//server/share/b.rs", "/home/user/proj/src/a.rs"]
    );
}

/// Issue 27: a verification sent to the background gets its verdict where its output is read;
/// a `cd … &&` prefix is not part of its name.
#[test]
fn a_background_verification_is_judged_where_its_output_is_read() {
    let mut log = ToolLog::default();
    call(
        &mut log,
        "b1",
        "Bash",
        json!({"command": "cd /home/user/proj/packages/web && npx vite build 2>&1 | tail -5", "run_in_background": true}),
    );
    result(&mut log, "b1", json!("Command running in background with ID: d72e4c8. Output is being written to: /tmp/d72e4c8.output"), false);
    assert!(log.verification.is_none());
    call(
        &mut log,
        "o1",
        "TaskOutput",
        json!({"task_id": "d72e4c8", "block": false}),
    );
    result(&mut log, "o1", json!("<retrieval_status>not_ready</retrieval_status>\n<task_id>d72e4c8</task_id>\n<status>running</status>"), false);
    assert!(log.verification.is_none());
    call(
        &mut log,
        "o2",
        "TaskOutput",
        json!({"task_id": "d72e4c8", "block": true}),
    );
    result(&mut log, "o2", json!("<retrieval_status>success</retrieval_status>\n\n<task_id>d72e4c8</task_id>\n\n<status>completed</status>\n\n<exit_code>0</exit_code>\n\n<output>\nvite v5.4.2 building for production...\n✓ built in 3.39s\n</output>"), false);
    let v = log.finish().verification.expect("judged");
    assert_eq!(
        (v.command.as_str(), v.verdict.as_str(), v.passed),
        ("npx vite build 2>&1 | tail -5", "✓ built in 3.39s", true)
    );
}

/// Issue 27, in the form a real session has it: the plan written in plan mode, its steps (one
/// marked done stays so) and its file.
#[test]
fn a_plan_from_plan_mode_is_kept_with_its_file() {
    let mut log = ToolLog::default();
    let plan = "# Cache Rework\n\n## Status\n1. ✅ Key format\n2. ⏳ Eviction policy - **NEXT**\n\n### 1. Key layout\n### 2. Limits\n";
    call(
        &mut log,
        "w1",
        "Write",
        json!({"file_path": "/home/dev/.claude/plans/quiet-otter.md", "content": plan}),
    );
    result(&mut log, "w1", json!("File created successfully"), false);
    call(&mut log, "x1", "ExitPlanMode", json!({"plan": plan}));
    result(&mut log, "x1", json!("User has approved your plan. You can now start coding.\n\nYour plan has been saved to: /home/dev/.claude/plans/quiet-otter.md\nYou can refer back to it"), false);
    let cp = log.finish();
    assert_eq!(
        cp.plan.as_deref(),
        Some("Cache Rework. Steps: 1. [done] Key format; 2. Eviction policy")
    );
    assert_eq!(
        cp.plan_file.as_deref(),
        Some("/home/dev/.claude/plans/quiet-otter.md")
    );
}

/// In the form of a real session's: `git show` late in a long command still names its merged pull request.
#[test]
fn merges_in_git_output_are_pull_requests_whatever_the_command() {
    let mut log = ToolLog::default();
    call(
        &mut log,
        "b1",
        "Bash",
        json!({"command": "grep -rl \"ratelimit\" --include='*.go' . | grep -v internal/ratelimit; echo ---; git show 7a1c9e02 --stat | head -30"}),
    );
    result(&mut log, "b1", json!("commit 7a1c9e02\nMerge: 3f8b2d10 c94e6a57\n\n    Merge pull request #64 from acme/fix/ratelimit-burst\n"), false);
    assert_eq!(log.finish().prs, ["#64 (merged, from git log)"]);
}
