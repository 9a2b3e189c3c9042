//! End-to-end recovery against the real client: what a second compaction still knows, what a
//! failing command leaves in the block, the digest after `/clear`, and a memory saved exactly
//! where the nudge says coming back after `/compact`. The stand-in API scripts the model by
//! keywords in the prompt (`--script agent`: TASKS, FAIL, SAVE).

use std::fs;

use serde_json::Value;

use super::{count, Rig, Script, RECOVERY};

const TOOLS: [&str; 2] = ["--allowedTools", "TaskCreate TaskUpdate Write"];

fn scripted(context_tokens: u64) -> Option<Rig> {
    Rig::with(Script {
        tool_calls: 0,
        context_tokens,
        after_compact_tokens: None,
        agent: true,
    })
}

/// The recovery block carried by the first request after the last `claude` run.
fn recovery_text(rig: &Rig) -> String {
    let requests = rig.api.requests();
    let first = requests.first().expect("a request").to_string();
    assert_eq!(count(&requests[0], RECOVERY), 1, "the block, once");
    first
}

#[test]
fn two_compactions_with_tasks_open_the_second_block_lists_them() {
    let Some(rig) = scripted(50_000) else {
        return;
    };
    let out = rig.claude("TASKS plan the parser", None, &TOOLS);
    let session = out["session_id"].as_str().unwrap().to_string();
    rig.claude("/compact", Some(&session), &TOOLS);
    rig.claude("keep going", Some(&session), &TOOLS);
    rig.claude("/compact", Some(&session), &TOOLS);
    rig.api.clear();
    rig.claude("what next?", Some(&session), &TOOLS);
    let text = recovery_text(&rig);
    assert!(text.contains("compaction #2 of this session"), "{text}");
    assert!(text.contains("[pending] write the parser"), "{text}");
    assert!(text.contains("[pending] test the parser"), "{text}");
    assert!(
        text.contains("TASKS plan the parser"),
        "the first request, as an earlier one"
    );
    assert_eq!(rig.env.marker(&session)["compactions"], 2);
    rig.assert_hooks_only_added_context();
}

#[test]
fn a_failing_command_leaves_its_informative_line_in_the_block() {
    let Some(rig) = scripted(50_000) else {
        return;
    };
    let out = rig.claude("FAIL build it", None, &TOOLS);
    let session = out["session_id"].as_str().unwrap().to_string();
    rig.claude("/compact", Some(&session), &TOOLS);
    rig.api.clear();
    rig.claude("what happened?", Some(&session), &TOOLS);
    let text = recovery_text(&rig);
    assert!(text.contains("error[E0425]: cannot find value x"), "{text}");
    assert!(
        !text.contains("Bash: Exit code 3\\n"),
        "more than the exit code: {text}"
    );
    rig.assert_hooks_only_added_context();
}

#[test]
fn after_clear_the_digest_of_the_work_arrives_once() {
    let Some(rig) = scripted(50_000) else {
        return;
    };
    let out = rig.claude("TASKS plan the parser", None, &TOOLS);
    let session = out["session_id"].as_str().unwrap().to_string();
    // /clear ends this session (SessionEnd) and starts a new one (SessionStart clear).
    let cleared = rig.claude("/clear", Some(&session), &TOOLS);
    let new = cleared["session_id"].as_str().unwrap().to_string();
    assert_ne!(new, session);
    rig.api.clear();
    rig.claude("where were we?", Some(&new), &TOOLS);
    let requests = rig.api.requests();
    let digest = "SessionStart hook additional context: ## ctxguard: previous session";
    assert_eq!(count(&requests[0], digest), 1, "{}", requests[0]);
    let text = requests[0].to_string();
    assert!(text.contains("TASKS plan the parser"), "{text}");
    assert!(text.contains("[pending] write the parser"), "{text}");
    // Once: a second /clear starts another session, which gets the digest of the session it
    // cleared (if any), never the first one's again.
    let cleared = rig.claude("/clear", Some(&new), &TOOLS);
    let newer = cleared["session_id"].as_str().unwrap().to_string();
    assert!(newer != new && newer != session);
    rig.api.clear();
    rig.claude("hello", Some(&newer), &TOOLS);
    let requests = rig.api.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(count(r, "TASKS plan the parser"), 0, "{r}");
    }
    // A scripted session (-p) starting in the directory is a task of its own: no digest.
    rig.api.clear();
    let fresh = rig.claude("hello", None, &TOOLS);
    assert_ne!(fresh["session_id"], Value::Null);
    assert!(rig.api.requests().iter().all(|r| count(r, digest) == 0));
    rig.assert_hooks_only_added_context();
}

#[test]
fn a_memory_saved_where_the_nudge_says_comes_back_after_compact_once() {
    // 940k of 1M: the nudge is due at the first tool call the client has flushed.
    let Some(rig) = scripted(940_000) else {
        return;
    };
    let out = rig.claude("SAVE what matters", None, &TOOLS);
    let session = out["session_id"].as_str().unwrap().to_string();
    let projects = rig.env.home().join(".claude/projects");
    let saved: Vec<_> = fs::read_dir(&projects)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("memory/MEMORY.md"))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(
        saved.len(),
        1,
        "the agent saved in the folder the nudge named"
    );
    assert!(fs::read_to_string(&saved[0])
        .unwrap()
        .contains("MARKER-SAVED"));
    rig.claude("/compact", Some(&session), &TOOLS);
    rig.api.clear();
    rig.claude("go on", Some(&session), &TOOLS);
    let first = &rig.api.requests()[0];
    assert_eq!(
        count(first, "MARKER-SAVED"),
        1,
        "what it saved, exactly once: {first}"
    );
    rig.assert_hooks_only_added_context();
}
