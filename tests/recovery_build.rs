//! What a checkpoint takes from real sessions, through the binary: `precompact` on excerpts of
//! real transcripts (`../shared/from-project/fixtures/transcripts/`, sources in its SOURCES.txt;
//! skipped without `../shared`), then `checkpoint show --json` and `sessionstart`. What they say
//! is known here by its SHA-256 ([`Quote`]), never quoted. Asks given as slash commands, long asks, todos, edits that failed,
//! failures that say what failed, background commands.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::*;

fn excerpt(name: &str) -> Option<PathBuf> {
    shared(&format!("from-project/fixtures/transcripts/{name}"))
}

/// A JSON value as one compact line, what a [`Quote`] of it is taken on.
fn line(value: &Value) -> String {
    value.to_string()
}

/// A section's lines joined, what a [`Quote`] of a whole section is taken on.
fn lines(section: &[&str]) -> String {
    section.join("\n")
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

/// kronix.jsonl (2.1.123): a custom slash command alone, then with arguments: the second is the ask.
#[test]
fn a_slash_command_with_arguments_is_an_ask() {
    let Some(path) = excerpt("kronix-slash-command.jsonl") else {
        return;
    };
    let env = TestEnv::new();
    let (cp, block) = compact(&env, &path, "");
    // The second command, with its arguments, the only ask.
    let ask = quote(73, "e331f69e9b9b78b885eec0e2");
    assert_eq!(cp["asks"].as_array().map(Vec::len), Some(1), "{cp}");
    assert!(ask.is(cp["asks"][0].as_str().unwrap()), "{cp}");
    assert!(
        ask.is(&lines(&section(&block, "Recent user requests"))),
        "{block}"
    );
}

/// session-share-0ccf1a04.jsonl (2.1.16): `/plugin` and `/publish-session` without arguments
/// are not asks; a long prompt keeps its start and its end; a `TaskOutput` error names its task.
#[test]
fn slash_commands_without_arguments_are_not_asks() {
    let Some(path) = excerpt("session-share-0ccf1a04-commands.jsonl") else {
        return;
    };
    let env = TestEnv::new();
    let (cp, _) = compact(&env, &path, "");
    let asks: Vec<&str> = cp["asks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(asks.len(), 2, "{asks:?}");
    // The long prompt's start and end, then the user's question.
    assert!(
        quote(30, "d149efc5ac5099178e893fa6").starts(asks[0]),
        "{asks:?}"
    );
    assert!(
        quote(31, "9caa6882852da71f5a79f6a2").ends(asks[0]),
        "{asks:?}"
    );
    assert!(
        quote(21, "0ca5dabf1fcfccf9eaea80ea").is(asks[1]),
        "{asks:?}"
    );
    // The task's id, then the client's error.
    assert!(
        quote(79, "f6c22c9f8a03ea4f7383ed2e").is(&line(&cp["failures"])),
        "{}",
        cp["failures"]
    );
}

/// reliability-python-to-rust-port.jsonl (2.1.14): the instruction at the end of a long first
/// prompt survives, and the todo list is recalled.
#[test]
fn a_long_ask_keeps_its_end_and_todos_are_recalled() {
    let Some(path) = excerpt("reliability-python-to-rust-port-todos.jsonl") else {
        return;
    };
    let env = TestEnv::new();
    let (cp, block) = compact(&env, &path, "");
    let ask = cp["asks"][0].as_str().unwrap();
    // The prompt's first sentence and its closing instruction.
    assert!(quote(33, "fe488dbcf7260cbdbaa6c6f5").starts(ask), "{ask}");
    assert!(quote(51, "2f6e1c2f691ee828e1e6d137").ends(ask), "{ask}");
    assert!(ask.chars().count() <= 200 && ask.contains('…'), "{ask}");
    let todos = section(&block, "Open todos");
    assert_eq!(todos.len(), 10, "{block}");
    // The first todo in progress, the last pending.
    assert!(
        quote(55, "67dbdeda35585dae845af16a").is(todos[0]),
        "{block}"
    );
    assert!(
        quote(36, "b77f998f9ee3fb99ec03f952").is(todos[9]),
        "{block}"
    );
}

/// spotter-ae4a77f8.jsonl (2.1.39): the Edit whose old string was not found changed nothing;
/// the Write did. Failures name their file or command; /compact's arguments are not an ask.
#[test]
fn failed_edits_are_not_modified_files_and_failures_say_what_failed() {
    let Some(path) = excerpt("spotter-ae4a77f8-edits.jsonl") else {
        return;
    };
    let env = TestEnv::new();
    // The user's own /compact arguments.
    let instructions = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["message"]["content"].as_str().map(str::to_string))
        .find_map(|c| {
            c.split_once("<command-args>")
                .and_then(|(_, rest)| rest.split_once("</command-args>"))
                .map(|(args, _)| args.to_string())
        })
        .unwrap_or_default();
    assert!(
        quote(37, "06121818b45d10129daa1cc4").is(&instructions),
        "{instructions}"
    );
    let (cp, block) = compact(&env, &path, &instructions);
    // The one file written, whole.
    assert!(
        quote(69, "9819cc2b8d75318f63312d4b").is(&line(&cp["files_modified"])),
        "{}",
        cp["files_modified"]
    );
    assert_eq!(cp.get("files_read"), None);
    // The prompt, not the /compact arguments.
    assert!(
        quote(152, "794e6f432bed679e899635df").is(&line(&cp["asks"])),
        "{}",
        cp["asks"]
    );
    assert_eq!(
        section(&block, "Files modified"),
        [".dialyzerignore"],
        "relative to the session's directory"
    );
    // The command cut with its error, then the file whose edit found no match.
    assert!(
        quote(192, "e4a10f6d137aae768432de69").is(&lines(&section(&block, "Recent tool failures"))),
        "{block}"
    );
}

/// spotter-4d5611e5.jsonl (2.1.39): a failed `git push` says why; a completed background
/// command's notification is neither an ask nor a failure.
#[test]
fn a_bash_failure_names_its_command_and_error() {
    let Some(path) = excerpt("spotter-4d5611e5-git-push.jsonl") else {
        return;
    };
    let env = TestEnv::new();
    let (cp, _) = compact(&env, &path, "");
    assert_eq!(cp["asks"], json!([]));
    // The push and git's own `fatal:` line.
    assert!(
        quote(105, "9eaa0ede6eaa30a860a18f56").is(&line(&cp["failures"])),
        "{}",
        cp["failures"]
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
    // The background command, its description and the failure.
    assert!(
        quote(145, "e9e8aeafa31cc1fe5dbf84ed").is(section(&block, "Recent tool failures")[0]),
        "{block}"
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
    let Some(path) = excerpt("cipherbox-f7594e2b-queued.jsonl") else {
        return;
    };
    let env = TestEnv::new();
    let (cp, block) = compact(&env, &path, "");
    // The skill that started the session.
    let goal = quote(37, "fa8f8ac429c4b18ebcc7f963");
    assert!(goal.is(cp["goal"].as_str().unwrap_or_default()), "{cp}");
    // The three prompts typed while the agent worked, oldest first.
    assert!(
        quote(212, "345afd5ce59b1f65ee5eb793").is(&line(&cp["queued"])),
        "{}",
        cp["queued"]
    );
    let requests = section(&block, "Recent user requests");
    // The newest queued prompt first, marked as queued.
    assert!(
        quote(37, "204f453c800acdcee07d449f").is(requests[0]),
        "{block}"
    );
    assert_eq!(requests.len(), 4, "{block}");
    assert!(
        quote(26, "d246b42e40838030df974222").starts(requests[3]),
        "{block}"
    );
    assert!(
        goal.is(&lines(&section(&block, "The session's goal"))),
        "{block}"
    );
    // The branch, then the pull request's number and address.
    assert!(
        quote(103, "049c2082a89b54440c3d4717").is(&lines(&section(&block, "Where the work lives"))),
        "{block}"
    );
    // The test run, its verdict line.
    assert!(
        quote(97, "299bd5c045f966739304f4f5").is(&lines(&section(&block, "Last verification"))),
        "{block}"
    );
}

/// ctxeval-8209f1c2.jsonl (2.1.45): a plan accepted in plan mode keeps its steps, never the
/// client's footer; a lint that failed and then passed is no longer a failure; the gist keeps
/// the end of the last message.
#[test]
fn a_plan_keeps_its_steps_a_fixed_failure_goes_and_the_gist_keeps_its_end() {
    let Some(path) = excerpt("ctxeval-8209f1c2-plan.jsonl") else {
        return;
    };
    let env = TestEnv::new();
    let (cp, block) = compact(&env, &path, "");
    let goal = cp["goal"].as_str().unwrap();
    // The plan's title and first step, then its eighth and last.
    assert!(quote(85, "dfe8ef2c4f2e4d8c2ece7b7a").starts(goal), "{goal}");
    assert!(
        quote(32, "747118b196324fb3b842fe12").ends(goal),
        "every step: {goal}"
    );
    assert!(!block.contains("read the full transcript at"), "{block}");
    assert_eq!(cp["failures"], json!([]), "the lint passed later");
    // The lint that passed, and its verdict line.
    assert!(
        quote(102, "6848951ef58428a85f9de30a").is(&line(&cp["verification"])),
        "{}",
        cp["verification"]
    );
    let gist = cp["last_assistant"].as_str().unwrap();
    assert!(quote(10, "f51461d0d4dbf37101b3b4ef").starts(gist), "{gist}");
    assert!(quote(67, "dcf9ac30256a48f2b2a3bc01").ends(gist), "{gist}");
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
    let Some(path) = excerpt("cybervpn-cdd85d16-teammate.jsonl") else {
        return;
    };
    let env = TestEnv::new();
    let (cp, block) = compact(&env, &path, "");
    // Three tasks in progress, each with its id and its subject.
    assert!(
        quote(167, "5b9cd086ddf78904e3e9e93d").is(&lines(&section(&block, "Open todos"))),
        "{block}"
    );
    // The lead's message as its sender and task.
    assert!(
        quote(66, "9a5e03f3f8f200d91d4e560b").is(cp["asks"][1].as_str().unwrap_or_default()),
        "{cp}"
    );
}

/// spotter-ae4a77f8.jsonl (2.1.39): `mix test | tail -30` exits 0 with 11 failures: the last
/// verification says so.
#[test]
fn a_red_run_piped_through_tail_is_a_failed_verification() {
    let Some(path) = excerpt("spotter-ae4a77f8-red-tail.jsonl") else {
        return;
    };
    let env = TestEnv::new();
    let (_, block) = compact(&env, &path, "");
    // Failed, the command and its count of failures.
    assert!(
        quote(80, "116595201501050d89693d2c").is(&lines(&section(&block, "Last verification"))),
        "{block}"
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
