//! Codex CLI sessions through the real binary, without the client: the hooks on Codex 0.169.0's
//! payloads (`fixtures/codex/`), a rollout in `$CODEX_HOME/sessions/`, its `config.toml`. What
//! the real Codex does with them is tests/e2e_codex.rs; this runs everywhere (Windows too).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::*;

const SESSION: &str = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000";

/// A Codex home with a session's rollout (the first `lines` lines of the work fixture) and a
/// `config.toml` setting the auto-compact limit.
struct Codex {
    env: TestEnv,
    rollout: PathBuf,
}

impl Codex {
    fn new(limit: u64) -> Codex {
        let mut env = TestEnv::new();
        let home = env.dir.path().join("codex");
        let day = home.join("sessions/2026/11/25");
        fs::create_dir_all(&day).unwrap();
        fs::write(
            home.join("config.toml"),
            format!("# mine\nmodel_auto_compact_token_limit = {limit}\n"),
        )
        .unwrap();
        let rollout = day.join(format!("rollout-2026-11-25T18-00-00-{SESSION}.jsonl"));
        fs::write(&rollout, "").unwrap();
        env.set("CODEX_HOME", home.to_str().unwrap());
        Codex { env, rollout }
    }

    /// The work fixture up to (not including) its `compacted` line, or whole.
    fn write(&self, whole: bool) {
        let text = fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/codex/rollout-work.jsonl"),
        )
        .unwrap();
        let cut = text.find("\"type\": \"compacted\"").unwrap();
        let cut = text[..cut].rfind('\n').unwrap() + 1;
        fs::write(&self.rollout, if whole { &text[..] } else { &text[..cut] }).unwrap();
    }

    fn payload(&self, event: &str, extra: Value) -> String {
        let mut p = json!({
            "session_id": SESSION,
            "transcript_path": self.rollout.to_str().unwrap(),
            "cwd": "/home/user/proj",
            "hook_event_name": event,
            "model": "gpt-5.1-codex",
        });
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        p.to_string()
    }

    fn hook(&self, name: &str, event: &str, extra: Value) -> Run {
        self.env.run(&[name], self.payload(event, extra))
    }

    fn pretooluse(&self) -> Run {
        self.hook(
            "pretooluse",
            "PreToolUse",
            json!({"turn_id": "t1", "tool_name": "Bash", "tool_input": {"command": "ls"},
                   "tool_use_id": "call_9", "permission_mode": "bypassPermissions"}),
        )
    }
}

fn context_of(stdout: &str, event: &str) -> String {
    let v: Value = serde_json::from_str(stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], event, "{stdout}");
    assert_eq!(
        v.as_object().unwrap().len(),
        1,
        "only hookSpecificOutput: {stdout}"
    );
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn the_nudge_counts_to_codexs_own_limit_from_config_toml_once() {
    let codex = Codex::new(200_000);
    codex.write(false);
    // 180k in context, Codex compacts at 200k (its config.toml): 20k left, past the trigger.
    let run = codex.pretooluse();
    assert_eq!(run.code, 0, "{run:?}");
    let text = context_of(&run.stdout, "PreToolUse");
    assert!(
        text.contains("about 20k tokens are left before auto-compaction, which comes at 200k"),
        "{text}"
    );
    // Where to save: in the project, which Codex's default sandbox (workspace-write) lets the
    // agent write, not under the home directory.
    // (Windows joins the project and the file with a backslash.)
    assert!(
        text.replace('\\', "/")
            .contains("in /home/user/proj/.claude/memory/MEMORY.md (ctxguard shows it again"),
        "{text}"
    );
    // Once per cycle.
    assert_eq!(codex.pretooluse().stdout, "");
    // Codex never compacts an idle session, and fails a Stop hook that answers with context:
    // even at 450k in context (where Claude Code's idle compaction would be near), nothing.
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&codex.rollout)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        b"{\"timestamp\":\"2026-11-25T18:30:00.000Z\",\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\",\"info\":{\"last_token_usage\":{\"total_tokens\":450000},\"model_context_window\":950000}}}\n",
    )
    .unwrap();
    let stop = codex.hook(
        "stop",
        "Stop",
        json!({"turn_id": "t1", "stop_hook_active": false, "last_assistant_message": "done"}),
    );
    assert_eq!((stop.code, stop.stdout.as_str()), (0, ""), "{stop:?}");
    // Without a limit in config.toml: 90% of the model's window (258.4k reported = 272k).
    let codex = Codex::new(0);
    codex.write(false);
    assert_eq!(
        codex.pretooluse().stdout,
        "",
        "180k is below 244.8k less 40k"
    );
}

#[test]
fn precompact_is_silent_and_sessionstart_gives_the_rollouts_facts_once() {
    let codex = Codex::new(200_000);
    codex.write(false);
    let run = codex.hook(
        "precompact",
        "PreCompact",
        json!({"turn_id": "t1", "trigger": "auto"}),
    );
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    codex.write(true);
    // Codex resuming before a turn: `resume` first, then `compact`; the compaction's gives it.
    let resume = codex.hook("sessionstart", "SessionStart", json!({"source": "resume"}));
    assert_eq!((resume.code, resume.stdout.as_str()), (0, ""), "{resume:?}");
    let run = codex.hook("sessionstart", "SessionStart", json!({"source": "compact"}));
    let block = context_of(&run.stdout, "SessionStart");
    for fact in [
        "ctxguard recovery: compaction #1 of this session",
        "Fix the failing parser tests in src/parser.rs and open a PR",
        "branch feat/parser",
        "pull request #57 (created) https://github.com/acme/proj/pull/57",
        "[in_progress] Open a pull request",
        "[passed] cargo test --test parse → test result: ok. 5 passed",
        "src/parser.rs",
        "Bash: cat /nonexistent/file → cat: /nonexistent/file: No such file or directory",
        "Should I also update the changelog?",
    ] {
        assert!(block.contains(fact), "missing {fact:?} in:\n{block}");
    }
    // Nothing Claude Code's: no memory folder, no /compact focus, no summary left out.
    assert!(!block.contains("Claude Code"), "{block}");
    // Once.
    let again = codex.hook("sessionstart", "SessionStart", json!({"source": "compact"}));
    assert_eq!(again.stdout, "");
    // The whole block, as the model gets it.
    let tmp = codex.env.dir.path().to_str().unwrap().to_string();
    compare_golden(
        "recovery-codex.md",
        &block.replace(&tmp, "<TMP>").replace('\\', "/"),
    );
}

#[test]
fn usage_reads_a_rollout_against_codexs_limit() {
    let codex = Codex::new(200_000);
    codex.write(false);
    let out = codex
        .env
        .run(&["usage", codex.rollout.to_str().unwrap(), "--json"], "");
    assert_eq!(out.code, 0, "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["tokens"], 180_000);
    assert_eq!(v["window"], 258_400);
    assert_eq!(v["compact_at"], 200_000);
}

/// Compares `actual` with `fixtures/codex/golden/NAME` (`CTXGUARD_BLESS=1` rewrites it).
fn compare_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/codex/golden")
        .join(name);
    if std::env::var_os("CTXGUARD_BLESS").is_some_and(|v| !v.is_empty()) {
        fs::write(&path, actual).unwrap();
        return;
    }
    let expected = fs::read_to_string(&path)
        .unwrap_or_default()
        .replace("\r\n", "\n");
    assert_eq!(
        actual, expected,
        "{name} differs; if intended: CTXGUARD_BLESS=1 cargo test --test integration codex"
    );
}

/// The nudge promises the memory file comes back after the compaction: it never names one
/// ctxguard would refuse to read back (a link the repository committed, here to the user's
/// shell profile), and names no file at all when the project has no other.
#[cfg(unix)]
#[test]
fn the_nudge_never_names_a_linked_memory_file() {
    let codex = Codex::new(200_000);
    codex.write(false);
    let project = codex.env.dir.path().join("proj");
    fs::create_dir_all(project.join(".claude/memory")).unwrap();
    let bashrc = codex.env.home().join(".bashrc");
    fs::write(&bashrc, "export TOKEN=secret\n").unwrap();
    std::os::unix::fs::symlink(&bashrc, project.join(".claude/memory/MEMORY.md")).unwrap();
    let run = codex.hook(
        "pretooluse",
        "PreToolUse",
        json!({"turn_id": "t1", "tool_name": "Bash", "tool_input": {"command": "ls"},
               "tool_use_id": "call_9", "cwd": project.to_str().unwrap()}),
    );
    let text = context_of(&run.stdout, "PreToolUse");
    assert!(!text.contains("MEMORY.md"), "{text}");
    assert!(!text.contains("shows it again"), "{text}");
    assert!(text.contains("in your memory file or tool"), "{text}");
    assert_eq!(
        fs::read_to_string(&bashrc).unwrap(),
        "export TOKEN=secret\n"
    );
}

/// Compactions are counted by the rollout's `compacted` lines, never by the payload or the
/// time: two compactions whose hooks send identical payloads (Codex compacts again when the
/// user switches to a model with a smaller window, and `SessionStart(compact)` carries no turn
/// id) are two, and one compaction whose `PreCompact` runs twice, minutes apart, is one.
#[test]
fn compactions_are_counted_by_the_rollouts_compacted_lines() {
    let mut codex = Codex::new(200_000);
    codex.write(false);
    let precompact = codex.payload("PreCompact", json!({"turn_id": "t1", "trigger": "auto"}));
    let start = codex.payload("SessionStart", json!({"source": "compact"}));
    let at = |env: &mut TestEnv, time: &str| {
        env.set("CTXGUARD_NOW", time);
    };
    // The work fixture's compaction line is dated 18:00:26; the hooks run at 18:00:20.
    at(&mut codex.env, "2026-11-25T18:00:20Z");
    let run = codex.env.run(&["precompact"], &precompact);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    // The same PreCompact again, five minutes later, before the compaction wrote its line:
    // the same compaction.
    at(&mut codex.env, "2026-11-25T18:05:20Z");
    let run = codex.env.run(&["precompact"], &precompact);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(codex.env.marker(SESSION)["compactions"], 1);
    // It is written; the recovery of compaction #1.
    codex.write(true);
    let first = codex.env.run(&["sessionstart"], &start);
    let block = context_of(&first.stdout, "SessionStart");
    assert!(block.contains("compaction #1 of this session"), "{block}");
    // A second compaction seconds later (the model switched), with the very same payloads:
    // the rollout holds one `compacted` line, the marker counted one: a new one.
    at(&mut codex.env, "2026-11-25T18:05:25Z");
    let run = codex.env.run(&["precompact"], &precompact);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(codex.env.marker(SESSION)["compactions"], 2);
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&codex.rollout)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        b"{\"timestamp\": \"2026-11-25T18:05:26.000Z\", \"type\": \"compacted\", \"payload\": {\"message\": \"summary\", \"replacement_history\": []}}\n",
    )
    .unwrap();
    let second = codex.env.run(&["sessionstart"], &start);
    assert_eq!(
        start,
        codex.payload("SessionStart", json!({"source": "compact"}))
    );
    let block = context_of(&second.stdout, "SessionStart");
    assert!(block.contains("compaction #2 of this session"), "{block}");
    // Two compactions' checkpoints, numbered 1 and 2.
    let dir = codex.env.state().join("checkpoints").join(SESSION);
    let mut numbers: Vec<u64> = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("cp_"))
        .filter_map(|e| {
            let cp: Value = serde_json::from_str(&fs::read_to_string(e.path()).ok()?).ok()?;
            cp["meta"]["compaction"].as_u64()
        })
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, [1, 2]);
}

/// A drop of context counted as a compaction is in no rollout: the real compaction after it is
/// a new one, not the drop's PreCompact run again.
#[test]
fn a_drop_then_a_real_compaction_counts_two() {
    let codex = Codex::new(900_000);
    let count = |tokens: u64, at: &str| {
        format!(
            "{{\"timestamp\":\"{at}\",\"type\":\"event_msg\",\"payload\":{{\"type\":\"token_count\",\"info\":{{\"last_token_usage\":{{\"total_tokens\":{tokens}}},\"model_context_window\":950000}}}}}}\n"
        )
    };
    let meta = format!(
        "{{\"timestamp\":\"2026-11-25T18:00:00.000Z\",\"type\":\"session_meta\",\"payload\":{{\"id\":\"{SESSION}\",\"cwd\":\"/home/user/proj\"}}}}\n"
    );
    let prompt = "{\"timestamp\":\"2026-11-25T18:00:01.000Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"port the parser\"}]}}\n";
    fs::write(
        &codex.rollout,
        format!(
            "{meta}{prompt}{}",
            count(400_000, "2026-11-25T18:05:00.000Z")
        ),
    )
    .unwrap();
    assert_eq!(codex.pretooluse().stdout, "");
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&codex.rollout)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        count(120_000, "2026-11-25T19:05:00.000Z").as_bytes(),
    )
    .unwrap();
    let dropped = codex.pretooluse();
    assert!(
        context_of(&dropped.stdout, "PreToolUse").contains("ctxguard recovery: compaction #1"),
        "{dropped:?}"
    );
    assert_eq!(codex.env.marker(SESSION)["compactions"], 1);
    // Codex compacts for real: its PreCompact comes before its `compacted` line.
    let pre = codex.hook(
        "precompact",
        "PreCompact",
        json!({"turn_id": "t2", "trigger": "auto"}),
    );
    assert_eq!(pre.code, 0, "{pre:?}");
    assert_eq!(codex.env.marker(SESSION)["compactions"], 2);
}

/// A dangling `.claude` link in the project: the memory file behind it does not exist yet, but
/// once written through the link it would be refused when read back, so it is never named.
#[cfg(unix)]
#[test]
fn the_nudge_never_names_a_memory_file_behind_a_dangling_link() {
    let codex = Codex::new(200_000);
    codex.write(false);
    let project = codex.env.dir.path().join("proj");
    fs::create_dir_all(&project).unwrap();
    std::os::unix::fs::symlink("../outside/nowhere", project.join(".claude")).unwrap();
    let run = codex.hook(
        "pretooluse",
        "PreToolUse",
        json!({"turn_id": "t1", "tool_name": "Bash", "tool_input": {"command": "ls"},
               "tool_use_id": "call_9", "cwd": project.to_str().unwrap()}),
    );
    let text = context_of(&run.stdout, "PreToolUse");
    assert!(!text.contains("MEMORY.md"), "{text}");
    assert!(text.contains("in your memory file or tool"), "{text}");
}

/// Issue 37, round 5, item 2: a Codex compaction's receipt says why no facts were given (its
/// summary cannot be steered), never "facts 0 characters".
#[test]
fn a_codex_receipt_says_why_no_facts_were_given() {
    let mut codex = Codex::new(200_000);
    codex.write(false);
    codex.env.set("CTXGUARD_NOW", "2026-11-25T18:00:20Z");
    let precompact = codex.payload("PreCompact", json!({"turn_id": "t1", "trigger": "auto"}));
    let run = codex.env.run(&["precompact"], &precompact);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    codex.write(true);
    codex.env.set("CTXGUARD_NOW", "2026-11-25T18:00:30Z");
    let start = codex.hook("sessionstart", "SessionStart", json!({"source": "compact"}));
    assert!(start.stdout.contains("compaction #1"), "{start:?}");
    codex.env.set("CTXGUARD_NOW", "2026-11-25T18:00:40Z");
    let run = codex.pretooluse();
    assert_eq!(run.code, 0, "{run:?}");
    let status = codex.env.run(&["status", "--session", SESSION], "");
    let receipt = status
        .stdout
        .lines()
        .find(|l| l.starts_with("receipt "))
        .unwrap_or_else(|| panic!("no receipt: {}", status.stdout));
    assert!(
        receipt.contains(" · no facts: Codex's summary cannot be steered · "),
        "{receipt}"
    );
    assert!(!receipt.contains("facts 0"), "{receipt}");
}

/// Codex compacts without running `PreCompact` when the user switches to a model with a
/// smaller window: `SessionStart(compact)` then finds a `compacted` line the marker never
/// counted, takes the checkpoint itself from the rollout up to that line, and gives the
/// recovery block, once per compaction.
/// Codex 0.169+ writes the compaction request's own usage just before its `compacted` line: a
/// checkpoint taken after a compaction that bypassed `PreCompact` keeps the context the hooks
/// last saw before it (180k), not that request's 1,250 tokens.
#[test]
fn a_bypassed_compaction_keeps_the_size_of_the_context_before_it() {
    let codex = Codex::new(200_000);
    codex.write(false);
    assert_eq!(codex.pretooluse().code, 0);
    let text = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/codex/rollout-work.jsonl"),
    )
    .unwrap();
    let cut = text.find("\"type\": \"compacted\"").unwrap();
    let cut = text[..cut].rfind('\n').unwrap() + 1;
    let request = "{\"timestamp\": \"2026-11-25T18:05:59.000Z\", \"type\": \"event_msg\", \"payload\": {\"type\": \"token_count\", \"info\": {\"total_token_usage\": {\"total_tokens\": 541250}, \"last_token_usage\": {\"input_tokens\": 1200, \"output_tokens\": 50, \"total_tokens\": 1250}, \"model_context_window\": 190000}}}\n";
    fs::write(
        &codex.rollout,
        format!("{}{request}{}", &text[..cut], &text[cut..]),
    )
    .unwrap();
    let run = codex.hook("sessionstart", "SessionStart", json!({"source": "compact"}));
    assert!(
        context_of(&run.stdout, "SessionStart").contains("compaction #1"),
        "{run:?}"
    );
    let cp: Value = serde_json::from_str(
        &fs::read_to_string(
            codex
                .env
                .state()
                .join("checkpoints")
                .join(SESSION)
                .join("_latest.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(cp["meta"]["tokens_before"], 180_000, "{cp}");
}

#[test]
fn a_compaction_that_bypassed_precompact_is_checkpointed_at_sessionstart() {
    let codex = Codex::new(200_000);
    codex.write(true);
    let start = || codex.hook("sessionstart", "SessionStart", json!({"source": "compact"}));
    let run = start();
    assert_eq!(run.code, 0, "{run:?}");
    let block = context_of(&run.stdout, "SessionStart");
    for fact in [
        "ctxguard recovery: compaction #1 of this session",
        "Fix the failing parser tests in src/parser.rs and open a PR",
        "branch feat/parser",
        "src/parser.rs",
    ] {
        assert!(block.contains(fact), "missing {fact:?} in:\n{block}");
    }
    assert_eq!(codex.env.marker(SESSION)["compactions"], 1);
    // Once.
    assert_eq!(start().stdout, "");
    // The next one that bypasses it: compaction #2.
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&codex.rollout)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        b"{\"timestamp\": \"2026-11-25T18:09:00.000Z\", \"type\": \"response_item\", \"payload\": {\"type\": \"message\", \"role\": \"user\", \"content\": [{\"type\": \"input_text\", \"text\": \"now port the lexer to the new API\"}]}}\n\
          {\"timestamp\": \"2026-11-25T18:10:00.000Z\", \"type\": \"compacted\", \"payload\": {\"message\": \"summary\", \"replacement_history\": []}}\n",
    )
    .unwrap();
    let second = start();
    let block = context_of(&second.stdout, "SessionStart");
    assert!(block.contains("compaction #2 of this session"), "{block}");
    assert!(
        block.contains("now port the lexer to the new API"),
        "{block}"
    );
    assert_eq!(codex.env.marker(SESSION)["compactions"], 2);
    // Logged as a compaction.
    let logs = codex.env.state().join("logs");
    let log: String = fs::read_dir(&logs)
        .unwrap()
        .flatten()
        .map(|e| fs::read_to_string(e.path()).unwrap())
        .collect();
    assert_eq!(log.matches("compaction #").count(), 2, "{log}");
}
