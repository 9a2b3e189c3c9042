//! End-to-end recovery against the real client: what a second compaction still knows, what a
//! failing command leaves in the block, the digest after `/clear`, and a memory saved exactly
//! as the nudge says (a topic file and a pointer in Claude Code's memory folder, or ctxguard's
//! own file with auto memory off) coming back after `/compact`, once. The stand-in API scripts
//! the model by keywords in the prompt (`--script agent`: TASKS, FAIL, SAVE, CHAT).

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

/// After `/clear`, the previous session comes back as one line pointing to its checkpoint, not
/// as its digest: the user cleared the context to leave it behind.
#[test]
fn after_clear_a_pointer_to_the_work_arrives_once() {
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
    let pointer = format!(
        "SessionStart hook additional context: ctxguard: the previous session in this \
         directory ({session}) left a checkpoint"
    );
    assert_eq!(count(&requests[0], &pointer), 1, "{}", requests[0]);
    let text = requests[0].to_string();
    assert!(
        text.contains(&format!("`ctxguard checkpoint show --session {session}`")),
        "{text}"
    );
    assert!(!text.contains("[pending] write the parser"), "{text}");
    let digest = "ctxguard: previous session";
    assert_eq!(count(&requests[0], digest), 0, "{}", requests[0]);
    // Once: a second /clear starts another session, which gets the pointer to the session it
    // cleared (if any), never the first one's again.
    let cleared = rig.claude("/clear", Some(&new), &TOOLS);
    let newer = cleared["session_id"].as_str().unwrap().to_string();
    assert!(newer != new && newer != session);
    rig.api.clear();
    rig.claude("hello", Some(&newer), &TOOLS);
    let requests = rig.api.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(count(r, &session), 0, "{r}");
    }
    // A scripted session (-p) starting in the directory is a task of its own: no digest.
    rig.api.clear();
    let fresh = rig.claude("hello", None, &TOOLS);
    assert_ne!(fresh["session_id"], Value::Null);
    assert!(rig.api.requests().iter().all(|r| count(r, digest) == 0));
    rig.assert_hooks_only_added_context();
}

/// Runs `prompt` in `session` (or a new one) with more variables for the client.
fn run(rig: &Rig, prompt: &str, session: Option<&str>, vars: &[(&str, &str)]) -> String {
    let out = rig.claude_with(&rig.settings, prompt, session, &TOOLS, vars);
    out["session_id"].as_str().unwrap().to_string()
}

/// How many times `needle` is in each request since the last `clear`, in order.
fn counts(rig: &Rig, needle: &str) -> Vec<usize> {
    rig.api
        .requests()
        .iter()
        .map(|r| count(r, needle))
        .collect()
}

/// The recovery block a request carries, memory files included (to the end of the JSON string
/// holding it), if any.
fn block(body: &Value) -> Option<String> {
    let text = body.to_string();
    let start = text.find(RECOVERY)?;
    let mut escaped = false;
    let end = text[start..].char_indices().find_map(|(i, c)| {
        let closes = c == '"' && !escaped;
        escaped = c == '\\' && !escaped;
        closes.then_some(start + i)
    })?;
    Some(text[start..end].to_string())
}

/// A session that saved `MARKER-SAVED` as the nudge said (`SAVE`) gets it back after `/compact`:
/// the recovery block in the next request shows it once, and the later requests of the
/// conversation add it no more. The client itself may re-attach a file it wrote a moment ago
/// (2.1.330 does, as a `Read` result), so the conversation can hold it twice; ctxguard's block
/// adds it once. The block of the compaction after that, with nothing saved since, has it
/// `again` times.
fn saved_then_compacted_twice(rig: &Rig, vars: &[(&str, &str)], again: usize) {
    let session = run(rig, "SAVE what matters", None, vars);
    run(rig, "/compact", Some(&session), vars);
    rig.api.clear();
    run(rig, "CHAT go on", Some(&session), vars);
    run(rig, "CHAT and then?", Some(&session), vars);
    let requests = rig.api.requests();
    let first = block(&requests[0]).unwrap_or_else(|| panic!("a block: {}", requests[0]));
    assert_eq!(first.matches("MARKER-SAVED").count(), 1, "{first}");
    let after = counts(rig, "MARKER-SAVED");
    assert!(after.len() >= 2, "{after:?}");
    assert!(
        after.iter().all(|&n| n == after[0]),
        "no later request adds it again: {after:?}"
    );
    assert_eq!(
        counts(rig, RECOVERY),
        vec![1; after.len()],
        "the block, once"
    );
    run(rig, "/compact", Some(&session), vars);
    rig.api.clear();
    run(rig, "CHAT go on", Some(&session), vars);
    let requests = rig.api.requests();
    let second = block(&requests[0]).unwrap_or_else(|| panic!("a block: {}", requests[0]));
    assert!(second.contains("compaction #2 of this session"), "{second}");
    assert_eq!(second.matches("MARKER-SAVED").count(), again, "{second}");
    rig.assert_hooks_only_added_context();
}

#[test]
fn a_memory_saved_exactly_as_the_nudge_says_comes_back_after_compact_once() {
    // 940k of 1M: the nudge is due at the first tool call the client has flushed.
    let Some(rig) = scripted(940_000) else {
        return;
    };
    let session = run(&rig, "SAVE what matters", None, &[]);
    let projects = rig.env.home().join(".claude/projects");
    let folders: Vec<_> = fs::read_dir(&projects)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("memory"))
        .filter(|p| p.join("MEMORY.md").exists())
        .collect();
    assert_eq!(folders.len(), 1, "saved in the folder the nudge named");
    let index = fs::read_to_string(folders[0].join("MEMORY.md")).unwrap();
    let topic = fs::read_to_string(folders[0].join("tabs.md")).unwrap();
    // The client's format: the fact in the topic file, only a pointer in the index.
    assert!(topic.starts_with("---\nname: tabs\n"), "{topic}");
    assert!(topic.contains("MARKER-SAVED"), "{topic}");
    assert!(!index.contains("MARKER-SAVED"), "{index}");
    assert!(index.contains("[tabs](tabs.md)"), "{index}");
    // What the client loads by itself after /compact: the pointer, not the fact; ctxguard's
    // block brings the fact, once.
    run(&rig, "/compact", Some(&session), &[]);
    rig.api.clear();
    run(&rig, "CHAT go on", Some(&session), &[]);
    let first = &rig.api.requests()[0];
    assert_eq!(count(first, "[tabs](tabs.md)"), 1, "{first}");
    let shown = block(first).unwrap_or_else(|| panic!("a block: {first}"));
    assert_eq!(shown.matches("MARKER-SAVED").count(), 1, "{shown}");
    assert!(
        shown.contains("Memories you saved before the compaction"),
        "{shown}"
    );
    assert!(
        !shown.contains("[tabs](tabs.md)"),
        "never the index: {shown}"
    );
    let checkpoint = super::compaction_checkpoint(&rig, &session);
    let saved = checkpoint["memories_saved"].as_array().unwrap();
    assert_eq!(saved.len(), 1, "{checkpoint}");
    assert!(saved[0].as_str().unwrap().ends_with("/memory/tabs.md"));

    // A fresh session, the same save, compacted twice: once, then not again.
    let Some(rig) = scripted(940_000) else {
        return;
    };
    // Shown once, not again at the next compaction: nothing was saved since.
    saved_then_compacted_twice(&rig, &[], 0);
}

#[test]
fn with_auto_memory_off_a_memory_saved_in_ctxguards_file_comes_back_once() {
    let Some(rig) = scripted(940_000) else {
        return;
    };
    let off = [("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")];
    // ctxguard's own file is a memory file every block shows: once in each, never twice.
    saved_then_compacted_twice(&rig, &off, 1);
    let own = rig.env.home().join(".claude-memory/MEMORY.md");
    let text = fs::read_to_string(&own).expect("saved in the file the nudge named");
    assert!(text.contains("MARKER-SAVED"), "{text}");
    assert!(
        !rig.env.home().join(".claude/projects").exists()
            || fs::read_dir(rig.env.home().join(".claude/projects"))
                .unwrap()
                .flatten()
                .all(|e| !e.path().join("memory").exists()),
        "nothing in the client's folder, which is off"
    );
}
