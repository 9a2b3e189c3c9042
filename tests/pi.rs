//! pi sessions through the real binary, without the client: the hook calls pi's extension makes
//! (`pi/ctxguard.ts`: the same payloads as Claude Code's, with pi's session file as the
//! transcript and the model's window), on session files in pi's format 3 (the recorded ones in
//! `fixtures/pi/`, and ones written here), `usage` and `replay` on them. What the real pi does
//! with the answers is tests/e2e_pi.rs.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::*;

const SESSION: &str = "01a2339b-7390-72d2-9bf7-8ed8a20a51ce";

/// A pi agent directory (its `models.json`: one custom model with a 40k window; its
/// `settings.json`: compaction at 4,000 before the end), a project, and the session's file,
/// named and placed as pi names and places it.
struct Pi {
    env: TestEnv,
    agent: PathBuf,
    project: PathBuf,
    file: PathBuf,
    lines: Vec<String>,
    /// Seconds from now of the next entry.
    clock: i64,
}

impl Pi {
    fn new() -> Pi {
        let mut env = TestEnv::new();
        let agent = env.dir.path().join("agent");
        let project = env.dir.path().join("proj");
        fs::create_dir_all(&project).unwrap();
        let folder = agent.join("sessions/--proj--");
        fs::create_dir_all(&folder).unwrap();
        fs::write(
            agent.join("models.json"),
            r#"{"providers":{"mock":{"baseUrl":"http://127.0.0.1:1/v1","api":"openai-completions",
                "models":[{"id":"mock-model","contextWindow":40000}]}}}"#,
        )
        .unwrap();
        fs::write(
            agent.join("settings.json"),
            r#"{"defaultProvider":"mock","defaultModel":"mock-model",
                "compaction":{"enabled":true,"reserveTokens":4000,"keepRecentTokens":100}}"#,
        )
        .unwrap();
        env.set("PI_CODING_AGENT_DIR", agent.to_str().unwrap())
            // A 40k window: nudge 10k before the point.
            .set("CTXGUARD_HEADROOM_TOKENS", "10000")
            .set("CTXGUARD_CRITICAL_HEADROOM_TOKENS", "0");
        let file = folder.join(format!("2026-12-01T21-55-55-409Z_{SESSION}.jsonl"));
        let mut pi = Pi {
            env,
            agent,
            project,
            file,
            lines: Vec::new(),
            clock: -600,
        };
        let header = json!({"type": "session", "version": 3, "id": SESSION,
            "timestamp": time_from_now(-600), "cwd": pi.project.to_str().unwrap()});
        pi.lines.push(header.to_string());
        pi.entry(
            "e0",
            None,
            json!({"type": "model_change", "provider": "mock", "modelId": "mock-model"}),
        );
        pi
    }

    /// Appends an entry (`id`, child of `parent`), as pi appends it, and writes the file.
    fn entry(&mut self, id: &str, parent: Option<&str>, fields: Value) {
        self.clock += 1;
        let mut e = json!({"id": id, "parentId": parent, "timestamp": time_from_now(self.clock)});
        e.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        self.lines.push(e.to_string());
        fs::write(&self.file, self.lines.join("\n") + "\n").unwrap();
    }

    fn prompt(&mut self, id: &str, parent: &str, text: &str) {
        self.entry(
            id,
            Some(parent),
            json!({"type": "message", "message": {"role": "user",
                "content": [{"type": "text", "text": text}]}}),
        );
    }

    fn reply(&mut self, id: &str, parent: &str, tokens: u64, call: Option<(&str, Value)>) {
        let mut content = vec![json!({"type": "text", "text": format!("reply {id}")})];
        if let Some((name, args)) = call {
            content.push(json!({"type": "toolCall", "id": format!("call-{id}"),
                "name": name, "arguments": args}));
        }
        self.entry(
            id,
            Some(parent),
            json!({"type": "message", "message": {"role": "assistant", "content": content,
                "api": "openai-completions", "provider": "mock", "model": "mock-model",
                "usage": {"input": tokens - 20, "output": 20, "cacheRead": 0, "cacheWrite": 0,
                          "totalTokens": tokens},
                "stopReason": "toolUse"}}),
        );
    }

    fn result(&mut self, id: &str, call_of: &str, text: &str, error: bool) {
        self.entry(
            id,
            Some(call_of),
            json!({"type": "message", "message": {"role": "toolResult",
                "toolCallId": format!("call-{call_of}"), "toolName": "bash",
                "content": [{"type": "text", "text": text}], "isError": error}}),
        );
    }

    fn compaction(&mut self, id: &str, parent: &str, tokens_before: u64) {
        self.entry(
            id,
            Some(parent),
            json!({"type": "compaction", "summary": "the user asked for a fix",
                "firstKeptEntryId": parent, "tokensBefore": tokens_before,
                "details": {"readFiles": [], "modifiedFiles": []}, "fromHook": true}),
        );
    }

    /// A hook call as the extension makes it.
    fn hook(&self, command: &str, event: &str, fields: Value) -> Run {
        let mut payload = json!({"session_id": SESSION, "transcript_path": self.file.to_str().unwrap(),
            "cwd": self.project.to_str().unwrap(), "hook_event_name": event,
            "model": "mock/mock-model", "context_window": 40000});
        payload
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        self.env.run(&[command], payload.to_string())
    }

    fn tool(&self) -> Run {
        self.hook(
            "pretooluse",
            "PreToolUse",
            json!({"tool_name": "bash", "tool_input": {"command": "make test"}}),
        )
    }
}

fn context_of(run: &Run) -> Option<String> {
    assert_eq!(run.code, 0, "{run:?}");
    if run.stdout.is_empty() {
        return None;
    }
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    Some(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

#[test]
fn usage_gives_pis_window_and_the_point_where_pi_compacts() {
    let mut pi = Pi::new();
    pi.prompt("u1", "e0", "fix the parser");
    pi.reply("a1", "u1", 30_020, None);
    let file = pi.file.to_str().unwrap().to_string();
    let usage = |pi: &Pi| -> Value {
        let run = pi.env.run(&["usage", &file, "--json"], "");
        assert_eq!(run.code, 0, "{run:?}");
        serde_json::from_str(&run.stdout).unwrap()
    };
    // The model's window from models.json, the point 4,000 before its end (pi's own rule:
    // totalTokens > contextWindow - reserveTokens).
    let u = usage(&pi);
    assert_eq!(
        (u["tokens"].as_u64(), u["window"].as_u64()),
        (Some(30_020), Some(40_000))
    );
    assert_eq!(u["compact_at"], 36_000);
    assert_eq!(u["window_source"], "pi_models");
    assert_eq!(u["model"], "mock/mock-model");
    // The project's settings over the global ones, as pi merges them.
    fs::create_dir_all(pi.project.join(".pi")).unwrap();
    fs::write(
        pi.project.join(".pi/settings.json"),
        r#"{"compaction":{"reserveTokens":6000}}"#,
    )
    .unwrap();
    let u = usage(&pi);
    assert_eq!(u["compact_at"], 34_000);
    let project_file = Path::new(".pi").join("settings.json");
    assert!(
        u["compact_source"]["pi"]
            .as_str()
            .unwrap()
            .contains(project_file.to_str().unwrap()),
        "{u}"
    );
    // Compaction off: pi never compacts, and fails at the window's end.
    fs::write(
        pi.project.join(".pi/settings.json"),
        r#"{"compaction":{"enabled":false}}"#,
    )
    .unwrap();
    let u = usage(&pi);
    assert_eq!(u["compact_at"], 40_000);
    assert!(u["compact_source"]["off"].is_string(), "{u}");
    // A model models.json does not define and no window reported: the default, said so.
    fs::write(pi.agent.join("models.json"), "{}").unwrap();
    assert_eq!(usage(&pi)["window_source"], "default");
}

#[test]
fn the_hooks_nudge_once_checkpoint_once_and_recover_a_pi_session() {
    let mut pi = Pi::new();
    pi.prompt("u1", "e0", "make the parser tests pass");
    pi.reply(
        "a1",
        "u1",
        12_000,
        Some(("bash", json!({"command": "make test"}))),
    );
    // Below the trigger (26k): nothing.
    assert_eq!(context_of(&pi.tool()), None);
    pi.result("r1", "a1", "2 failed\n\nCommand exited with code 2", true);
    pi.reply(
        "a2",
        "r1",
        30_000,
        Some((
            "edit",
            json!({"path": "src/parser.rs",
        "oldText": "a", "newText": "b"}),
        )),
    );
    // Past it: the nudge, once, naming ctxguard's memory file (pi has no memory folder).
    let nudge = context_of(&pi.tool()).expect("a nudge");
    assert!(nudge.contains("save"), "{nudge}");
    assert!(!nudge.contains(".claude/projects"), "{nudge}");
    assert_eq!(context_of(&pi.tool()), None);
    pi.result("r2", "a2", "Successfully replaced text", false);
    pi.reply(
        "a3",
        "r2",
        38_020,
        Some(("bash", json!({"command": "make test"}))),
    );
    pi.result("r3", "a3", "ok: 14 passed", false);
    // The compaction: facts for pi's summarizer, a checkpoint; pi's print mode starts it
    // twice before its entry is written, and it is one compaction.
    let pre = json!({"trigger": "auto", "custom_instructions": ""});
    let facts = pi.hook("precompact", "PreCompact", pre.clone());
    assert!(facts.stdout.starts_with(FACTS), "{facts:?}");
    assert!(
        facts.stdout.contains("make the parser tests pass"),
        "{}",
        facts.stdout
    );
    assert!(facts.stdout.contains("make test"), "{}", facts.stdout);
    let again = pi.hook("precompact", "PreCompact", pre);
    assert!(again.stdout.starts_with(FACTS), "{again:?}");
    pi.compaction("k1", "r3", 38_020);
    let start = pi.hook("sessionstart", "SessionStart", json!({"source": "compact"}));
    let block = context_of(&start).expect("a recovery");
    assert!(
        block.starts_with("## ctxguard recovery: compaction #1 of this session"),
        "{block}"
    );
    assert!(block.contains("make the parser tests pass"), "{block}");
    assert!(block.contains("src/parser.rs"), "{block}");
    // The extension's message lands in the session: its receipt says it arrived.
    pi.entry(
        "m1",
        Some("k1"),
        json!({"type": "custom_message", "customType": "ctxguard", "content": block,
            "display": false}),
    );
    pi.prompt("u2", "m1", "go on");
    pi.reply("a4", "u2", 2_000, Some(("bash", json!({"command": "ls"}))));
    assert_eq!(context_of(&pi.tool()), None, "given once");
    let status = pi.env.run(&["status", "--session", SESSION, "--json"], "");
    assert_eq!(status.code, 0, "{status:?}");
    let s: Value = serde_json::from_str(&status.stdout).unwrap();
    let s = &s["sessions"][0];
    assert_eq!(s["compactions"], 1, "{s}");
    let log = pi.env.run(&["log", "--json"], "");
    let entries: Value = serde_json::from_str(&log.stdout).unwrap();
    let numbers: Vec<u64> = entries["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["compaction"].as_u64())
        .collect();
    assert!(numbers.iter().all(|n| *n == 1), "{numbers:?}");
}

#[test]
fn an_abandoned_branch_is_not_recalled() {
    let mut pi = Pi::new();
    pi.prompt("u1", "e0", "rename the config loader");
    pi.reply("a1", "u1", 5_000, None);
    // A branch the user left with /tree: its prompt and the PR it opened stay in the file.
    pi.prompt(
        "x1",
        "a1",
        "paste the token sk-abandoned-123 into the deploy script",
    );
    pi.reply(
        "x2",
        "x1",
        6_000,
        Some(("bash", json!({"command": "gh pr create --title leaked"}))),
    );
    pi.result("x3", "x2", "https://github.com/o/r/pull/99", false);
    // Back at a1: the active branch goes on from there.
    pi.prompt("u2", "a1", "now update the loader docs");
    pi.reply("a2", "u2", 38_020, None);
    let facts = pi.hook(
        "precompact",
        "PreCompact",
        json!({"trigger": "auto", "custom_instructions": ""}),
    );
    assert!(
        facts.stdout.contains("now update the loader docs"),
        "{facts:?}"
    );
    for gone in ["sk-abandoned-123", "pull/99"] {
        assert!(!facts.stdout.contains(gone), "{gone}: {}", facts.stdout);
    }
    pi.compaction("k1", "a2", 38_020);
    let block = context_of(&pi.hook("sessionstart", "SessionStart", json!({"source": "compact"})))
        .expect("a recovery");
    assert!(block.contains("rename the config loader"), "{block}");
    for gone in ["sk-abandoned-123", "pull/99"] {
        assert!(!block.contains(gone), "{gone}: {block}");
    }
}

/// The recorded session of a scenario in fixtures/pi/.
fn recorded(scenario: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pi")
        .join(scenario);
    fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap()
}

#[test]
fn replay_counts_each_compaction_entry_once() {
    let env = TestEnv::new();
    // threshold: one automatic, one manual; print: two session_before_compact for each of
    // two compactions; overflow: one, then the retry.
    for (scenario, compactions) in [
        ("threshold", 2),
        ("print", 2),
        ("overflow", 1),
        ("v1.6.0-threshold", 2),
    ] {
        let path = recorded(scenario);
        let run = env.run(&["replay", path.to_str().unwrap(), "--json"], "");
        assert_eq!(run.code, 0, "{scenario}: {run:?}");
        let r: Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(r["client"], "pi", "{scenario}");
        assert_eq!(r["compactions"], compactions, "{scenario}");
        let text = env.run(&["replay", path.to_str().unwrap()], "");
        assert!(text.stdout.contains("client       pi"), "{}", text.stdout);
    }
}

#[test]
fn replay_all_takes_pis_sessions_beside_the_others() {
    let mut pi = Pi::new();
    pi.prompt("u1", "e0", "hello");
    pi.reply("a1", "u1", 39_000, None);
    pi.compaction("k1", "a1", 39_000);
    let run = pi.env.run(&["replay", "--all", "--json"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let r: Value = serde_json::from_str(&run.stdout).unwrap();
    let sessions = r["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{r}");
    assert_eq!(sessions[0]["client"], "pi");
    assert_eq!(sessions[0]["compactions"], 1);
}

#[test]
fn a_hostile_or_missing_session_file_is_passed_over() {
    let pi = Pi::new();
    // Not written yet (pi writes its file after the first reply): nothing, no error.
    let run = pi.tool();
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    // Bytes that are no JSON, a line of 9 MB, a torn last line: read past, nothing given.
    let mut junk = b"\x00\xff not json\n".to_vec();
    junk.extend(std::iter::repeat_n(b'x', 9 * 1024 * 1024));
    junk.extend_from_slice(b"\n{\"type\":\"message\",\"id\":\"t\"");
    fs::write(&pi.file, &junk).unwrap();
    let run = pi.tool();
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    // A directory where the file should be: one stderr line, exit 0.
    fs::remove_file(&pi.file).unwrap();
    fs::create_dir(&pi.file).unwrap();
    pi.tool().assert_silent_failure();
}

#[test]
fn replay_all_finds_pis_sessions_where_its_settings_put_them() {
    let mut pi = Pi::new();
    pi.prompt("u1", "e0", "hello");
    pi.reply("a1", "u1", 39_000, None);
    pi.compaction("k1", "a1", 39_000);
    // `sessionDir` in pi's settings, `~` its home: the sessions lie directly in it.
    let flat = pi.env.home().join("pi-sessions");
    fs::create_dir_all(&flat).unwrap();
    fs::rename(&pi.file, flat.join(pi.file.file_name().unwrap())).unwrap();
    fs::write(
        pi.agent.join("settings.json"),
        r#"{"sessionDir":"~/pi-sessions"}"#,
    )
    .unwrap();
    let count = |env: &TestEnv| -> usize {
        let run = env.run(&["replay", "--all", "--json"], "");
        assert_eq!(run.code, 0, "{run:?}");
        let r: Value = serde_json::from_str(&run.stdout).unwrap();
        r["sessions"].as_array().unwrap().len()
    };
    assert_eq!(count(&pi.env), 1);
    // PI_CODING_AGENT_SESSION_DIR wins over the setting.
    let mut env = pi.env;
    env.set("PI_CODING_AGENT_SESSION_DIR", "/nonexistent-pi-sessions");
    let run = env.run(&["replay", "--all", "--json"], "");
    assert_ne!(run.code, 0, "no session anywhere is an error: {run:?}");
}

#[test]
fn a_compaction_no_precompact_saw_is_caught_up_once() {
    let mut pi = Pi::new();
    pi.prompt("u1", "e0", "migrate the users table");
    pi.reply(
        "a1",
        "u1",
        30_000,
        Some(("bash", json!({"command": "make migrate"}))),
    );
    assert!(context_of(&pi.tool()).is_some(), "the nudge");
    pi.result("r1", "a1", "migrated 3 tables", false);
    pi.reply("a2", "r1", 38_500, None);
    // The extension's PreCompact never ran (timed out, or the binary was missing then): pi
    // compacted all the same, and its SessionStart(compact) is the first hook after it.
    pi.compaction("k1", "a2", 38_500);
    let block = context_of(&pi.hook("sessionstart", "SessionStart", json!({"source": "compact"})))
        .or_else(|| {
            pi.prompt("u2", "k1", "go on");
            context_of(&pi.hook(
                "userpromptsubmit",
                "UserPromptSubmit",
                json!({"prompt": "go on"}),
            ))
        })
        .expect("a recovery for the compaction nobody counted");
    assert!(block.contains("compaction #1"), "{block}");
    assert!(block.contains("migrate the users table"), "{block}");
    let status = pi.env.run(&["status", "--session", SESSION, "--json"], "");
    let s: Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(s["sessions"][0]["compactions"], 1, "{s}");
}

#[test]
fn a_long_session_met_midway_is_caught_up_over_several_calls() {
    let mut pi = Pi::new();
    pi.prompt("u1", "e0", "read the logs");
    // ctxguard installed on a session already 36 MB long: one hook reads at most 32 MB of it.
    let mut parent = "u1".to_string();
    for i in 0..9 {
        let id = format!("r{i}");
        pi.reply(
            &format!("a{i}"),
            &parent,
            8_000,
            Some(("read", json!({"path": "log.txt"}))),
        );
        pi.result(&id, &format!("a{i}"), &"x".repeat(4 * 1024 * 1024), false);
        parent = id;
    }
    pi.reply(
        "last",
        &parent,
        30_000,
        Some(("bash", json!({"command": "make test"}))),
    );
    // The first call reads the first 32 MB: the newest reply is not in its share.
    assert_eq!(context_of(&pi.tool()), None);
    // The next reads on, and sees usage past the trigger: the nudge.
    assert!(context_of(&pi.tool()).is_some(), "the nudge once caught up");
    assert_eq!(context_of(&pi.tool()), None, "once");
}
