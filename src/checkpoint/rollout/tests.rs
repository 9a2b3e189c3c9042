use super::*;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/codex")
        .join(name)
}

/// The work rollout (fixtures/codex/rollout-work.jsonl) up to its `compacted` line: what
/// `PreCompact` reads at that compaction.
fn first_cycle() -> Reading {
    let path = fixture("rollout-work.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let end = text.find("\"type\": \"compacted\"").unwrap();
    let end = text[..end].rfind('\n').unwrap() + 1;
    read_rollout_until(&path, end as u64).unwrap()
}

#[test]
fn a_rollout_gives_the_asks_the_plan_the_verdict_the_files_and_the_branch() {
    let r = first_cycle();
    let cp = &r.body;
    assert_eq!(
        cp.goal.as_deref(),
        Some("Fix the failing parser tests in src/parser.rs and open a PR")
    );
    // Codex's own user messages (AGENTS.md, environment context) are not asks.
    assert_eq!(cp.asks, vec![cp.goal.clone().unwrap()]);
    // update_plan's steps are the todo list, with their statuses.
    let todos: Vec<(&str, &str)> = cp
        .todos
        .iter()
        .map(|t| (t.content.as_str(), t.status.as_str()))
        .collect();
    assert!(
        todos.contains(&("Open a pull request", "in_progress")),
        "{todos:?}"
    );
    assert!(
        todos.contains(&("Fix the tokenizer", "completed")),
        "{todos:?}"
    );
    // The last verification: the second cargo test (through `shell`), passed, with its verdict.
    let v = cp.verification.as_ref().expect("a verification");
    assert!(v.passed, "{v:?}");
    assert!(v.command.starts_with("cargo test --test parse"), "{v:?}");
    assert!(v.verdict.contains("5 passed"), "{v:?}");
    // apply_patch's files, absolute; the failed `cat` is a failure, the failed test run before
    // the passing one is not carried as one.
    assert!(cp
        .files_modified
        .contains(&"/home/user/proj/src/parser.rs".to_string()));
    assert!(cp
        .files_modified
        .contains(&"/home/user/proj/tests/nested.rs".to_string()));
    assert!(
        cp.failures.iter().any(|f| f.error.contains("No such file")),
        "{:?}",
        cp.failures
    );
    assert!(cp.prs.iter().any(|p| p.contains("#57")), "{:?}", cp.prs);
    assert!(cp
        .last_assistant
        .as_deref()
        .is_some_and(|a| a.contains("Should I also update the changelog?")));
    assert_eq!(r.git_branch.as_deref(), Some("feat/parser"));
    assert_eq!(r.cwd.as_deref(), Some("/home/user/proj"));
    assert_eq!(r.tokens, Some(180_000));
    // No Claude Code version rule may read Codex's version.
    assert_eq!(r.client_version, None);
}

#[test]
fn after_a_compaction_the_kept_asks_and_the_head_give_the_goal_and_the_new_work() {
    let r = read_rollout_until(&fixture("rollout-work.jsonl"), u64::MAX).unwrap();
    let cp = &r.body;
    assert_eq!(
        cp.goal.as_deref(),
        Some("Fix the failing parser tests in src/parser.rs and open a PR")
    );
    // The summary handed to the next model is not an ask; the user's reply is.
    assert!(
        !cp.asks.iter().any(|a| a.contains("Another language model")),
        "{:?}",
        cp.asks
    );
    assert_eq!(
        cp.asks.last().map(String::as_str),
        Some("yes, and add docs for the parser in docs/parser.md")
    );
    assert_eq!(
        cp.last_assistant.as_deref(),
        Some("Writing docs/parser.md now.")
    );
    // The branch comes from the head's session_meta.
    assert_eq!(r.git_branch.as_deref(), Some("feat/parser"));
    assert_eq!(r.tokens, Some(15_000));
    // The work before the compaction is not read again.
    assert!(cp.verification.is_none(), "{:?}", cp.verification);
}

#[test]
fn the_recorded_rollouts_of_the_real_client_read() {
    let r = read_rollout_until(
        &fixture("rollout-excerpt-mid-turn-compaction.jsonl"),
        u64::MAX,
    )
    .unwrap();
    assert_eq!(r.body.goal.as_deref(), Some("RUN_TOOL BIG first prompt"));
    assert_eq!(r.body.last_assistant.as_deref(), Some("MOCK-ANSWER 3"));
    let pre =
        std::fs::read_to_string(fixture("rollout-excerpt-mid-turn-compaction.jsonl")).unwrap();
    let end = pre.find("\"type\": \"compacted\"").unwrap();
    let end = pre[..end].rfind('\n').unwrap() + 1;
    let r = read_rollout_until(
        &fixture("rollout-excerpt-mid-turn-compaction.jsonl"),
        end as u64,
    )
    .unwrap();
    assert!(
        r.body.tools_used.iter().any(|t| t.name == "Bash"),
        "{:?}",
        r.body.tools_used
    );
    assert_eq!(r.tokens, Some(1_250));
}

#[test]
fn command_outputs_give_their_exit_codes() {
    assert_eq!(
        command_output("Chunk ID: a\nProcess exited with code 2\nOutput:\nboom\n"),
        ("boom\n".to_string(), Some(2))
    );
    assert_eq!(
        command_output("Exit code: 0\nWall time: 1s\nOutput:\nok"),
        ("ok".to_string(), Some(0))
    );
    assert_eq!(
        command_output("{\"output\":\"x\",\"metadata\":{\"exit_code\":1}}"),
        ("x".to_string(), Some(1))
    );
    assert_eq!(command_output("plain"), ("plain".to_string(), None));
    // A running command's chunk says no exit code.
    assert_eq!(
        command_output("Chunk ID: a\nProcess running with session ID 3\nOutput:\npartial").1,
        None
    );
}

#[test]
fn shell_argv_and_patches_are_read() {
    assert_eq!(
        command_line("{\"command\":[\"bash\",\"-lc\",\"npm test\"]}").as_deref(),
        Some("npm test")
    );
    assert_eq!(
        command_line("{\"command\":[\"rg\",\"-n\",\"foo\"]}").as_deref(),
        Some("rg -n foo")
    );
    assert_eq!(command_line("{\"cmd\":\"ls\"}").as_deref(), Some("ls"));
    assert_eq!(command_line("not json"), None);
    let files = patch_files(
        "{\"input\":\"*** Begin Patch\\n*** Update File: a.rs\\n*** Add File: b.rs\\n*** Delete File: c.rs\\n*** End Patch\"}",
    );
    assert_eq!(
        files,
        vec![("Edit", "a.rs".to_string()), ("Write", "b.rs".to_string())]
    );
    assert_eq!(absolute("a.rs", Some("/p/")), "/p/a.rs");
    assert_eq!(absolute("/abs/a.rs", Some("/p")), "/abs/a.rs");
}

#[test]
fn codex_text_is_never_an_ask() {
    for text in [
        "<environment_context>\n<cwd>/p</cwd>\n</environment_context>",
        "# AGENTS.md instructions for /p\n\n<INSTRUCTIONS>x</INSTRUCTIONS>",
        "Another language model started to solve this problem and produced a summary",
        "  <turn_aborted>interrupted</turn_aborted>",
        // A newer Codex's context the list does not name, with the next part joined to it.
        "<recommended_plugins>\n- Box\n</recommended_plugins>\n<environment_context>\n</environment_context>",
    ] {
        assert!(is_codex_text(text), "{text}");
    }
    for text in [
        "Fix the <div> in index.html",
        "<div> is broken, fix it",
        "<b>bold</b> is rendered wrong",
        "<my_tag> should close with </my_tag> in the parser",
    ] {
        assert!(!is_codex_text(text), "{text}");
    }
}
