//! Every client version people run: payloads recorded from older Claude Code clients (2.0.76 and
//! 2.1.14, `fixtures/claude-code-<version>/`) and 2.1.330's doubled `PreCompact`, fed through the
//! binary. What each version's shapes must give: a status-line frame without usage shows the
//! transcript's numbers; a frame with none to read keeps the last reading (`~`); usage above a
//! reported 200k proves the 1M window; the percent is the client's own when it sends one, else
//! rounded to nearest; one compaction is counted once however often `PreCompact` runs for it.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::*;

/// The older clients recorded; both run `claude-sonnet-4-5-20250929` (200k) by default.
const OLDER: [&str; 2] = ["2.0.76", "2.1.14"];

/// Context tokens of every pre-compaction reply in the recordings (10 input + 150,000 cache reads).
const BEFORE: u64 = 150_010;

fn recorded(version: &str, name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("fixtures/claude-code-{version}"))
        .join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A recorded payload, its `transcript_path` pointing at `transcript`.
fn payload(version: &str, name: &str, transcript: &Path) -> Value {
    let mut p: Value = serde_json::from_str(&recorded(version, name)).unwrap();
    p["transcript_path"] = json!(transcript.to_str().unwrap());
    p
}

/// The first `n` lines of a recorded transcript (all of it with `None`), as a file in `env`.
fn transcript(env: &TestEnv, version: &str, name: &str, n: Option<usize>) -> PathBuf {
    let text = recorded(version, name);
    let lines: Vec<&str> = text.lines().take(n.unwrap_or(usize::MAX)).collect();
    let file = format!("{version}-{}-{}.jsonl", n.unwrap_or(0), name);
    env.write(&file, &(lines.join("\n") + "\n"))
}

/// The lines of a recorded transcript before its first `compact_boundary`.
fn before_boundary(version: &str, name: &str) -> usize {
    recorded(version, name)
        .lines()
        .position(|l| l.contains(r#""subtype":"compact_boundary""#))
        .expect("the recording compacted")
}

/// The transcript of the recorded TUI session up to its `/compact`.
fn before_compact(env: &TestEnv, version: &str) -> PathBuf {
    let n = before_boundary(version, "transcript-with-compaction.jsonl");
    transcript(env, version, "transcript-with-compaction.jsonl", Some(n))
}

/// The same session before any reply: the client has written the prompt only.
fn before_any_reply(env: &TestEnv, version: &str) -> PathBuf {
    let text = recorded(version, "transcript-with-compaction.jsonl");
    let n = text
        .lines()
        .position(|l| l.contains(r#""type":"assistant""#))
        .unwrap();
    transcript(env, version, "transcript-with-compaction.jsonl", Some(n))
}

fn plain_env() -> TestEnv {
    let mut env = TestEnv::new();
    env.set("NO_COLOR", "1");
    env
}

fn session(p: &Value) -> String {
    p["session_id"].as_str().unwrap().to_string()
}

/// Runs `ctxguard HOOK` on `payload`, asserting the contract every hook keeps: exit 0, and
/// nothing on stderr (these are well-formed payloads).
#[track_caller]
fn hook(env: &TestEnv, sub: &str, payload: &Value) -> Run {
    let run = env.run(&[sub], payload.to_string());
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{sub}: {run:?}");
    run
}

/// The status-line frame after the recorded turn, with `tokens` of context (all cache reads) and
/// the client's own percent when this version sends one, computed as it does.
fn frame_with(version: &str, transcript: &Path, tokens: u64) -> Value {
    let mut p = payload(version, "statusline-after-turn.json", transcript);
    let cw = &mut p["context_window"];
    cw["current_usage"] = json!({"input_tokens": 0, "output_tokens": 20,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": tokens});
    if cw.get("used_percentage").is_some() {
        let window = cw["context_window_size"].as_u64().unwrap();
        // Math.round(tokens / window * 100), clamped to 0..=100.
        let used = ((tokens as f64 / window as f64 * 100.0).round() as u64).min(100);
        cw["used_percentage"] = json!(used);
        cw["remaining_percentage"] = json!(100 - used);
    }
    p
}

#[test]
fn every_recorded_payload_goes_through_its_hook() {
    for version in OLDER {
        let env = plain_env();
        let t = before_compact(&env, version);
        for (sub, name) in [
            ("sessionstart", "SessionStart-startup.json"),
            ("statusline", "statusline-first-render.json"),
            ("statusline", "statusline-after-turn.json"),
            ("pretooluse", "PreToolUse.json"),
            ("precompact", "PreCompact-manual.json"),
            ("sessionstart", "SessionStart-compact.json"),
            ("statusline", "statusline-after-compact.json"),
            ("precompact", "PreCompact-auto.json"),
        ] {
            let run = hook(&env, sub, &payload(version, name, &t));
            match sub {
                "statusline" => assert!(
                    run.stdout.starts_with("ctx ") && run.stdout.lines().count() == 1,
                    "{version} {name}: {run:?}"
                ),
                "precompact" => assert!(facts_or_nothing(&run.stdout), "{version} {name}"),
                _ => assert!(
                    run.stdout.is_empty()
                        || serde_json::from_str::<HookOutput>(&run.stdout).is_ok(),
                    "{version} {name}: {run:?}"
                ),
            }
        }
    }
}

/// Tokens left at 150k of 200k: 2.1.14 compacts at 155k (its whole 32k output reserved), the
/// others at 167k.
fn left_at_150k(version: &str) -> &'static str {
    if version == "2.1.14" {
        "5k"
    } else {
        "17k"
    }
}

#[test]
fn a_frame_without_usage_shows_the_numbers_of_the_transcript() {
    for version in OLDER {
        let env = plain_env();
        let t = before_compact(&env, version);
        let first = payload(version, "statusline-first-render.json", &t);
        assert_eq!(first["context_window"]["current_usage"], Value::Null);
        let run = hook(&env, "statusline", &first);
        assert_eq!(
            run.stdout,
            format!("ctx 150k/200k · compacts in {}\n", left_at_150k(version)),
            "{version}"
        );
        let m = env.marker(&session(&first));
        assert_eq!(
            (m["tokens"].as_u64(), m["source"].as_str()),
            (Some(BEFORE), Some("transcript")),
            "{version}"
        );

        // A client older still, that never sends `current_usage` at all: the same.
        let env = plain_env();
        let t = before_compact(&env, version);
        let mut none = payload(version, "statusline-first-render.json", &t);
        let cw = none["context_window"].as_object_mut().unwrap();
        cw.remove("current_usage");
        cw.remove("used_percentage");
        let run = hook(&env, "statusline", &none);
        assert_eq!(
            run.stdout,
            format!("ctx 150k/200k · compacts in {}\n", left_at_150k(version)),
            "{version}"
        );

        // Before the first reply there is nothing to read: unknown, and said so.
        let env = plain_env();
        let t = before_any_reply(&env, version);
        let run = hook(
            &env,
            "statusline",
            &payload(version, "statusline-first-render.json", &t),
        );
        assert_eq!(run.stdout, "ctx ?/200k\n", "{version}");
    }
}

#[test]
fn a_null_or_zero_frame_keeps_the_last_reading() {
    for version in OLDER {
        let env = plain_env();
        // The frames come before the client has flushed any reply to the transcript.
        let t = before_any_reply(&env, version);
        let after = payload(version, "statusline-after-turn.json", &t);
        let id = session(&after);
        let run = hook(&env, "statusline", &after);
        assert_eq!(
            run.stdout,
            format!("ctx 150k/200k · compacts in {}\n", left_at_150k(version)),
            "{version}"
        );
        let before = env.marker(&id);

        let mut null = payload(version, "statusline-first-render.json", &t);
        null["session_id"] = json!(id);
        let mut zero = after.clone();
        for usage in zero["context_window"]["current_usage"]
            .as_object_mut()
            .unwrap()
            .values_mut()
        {
            *usage = json!(0);
        }
        for frame in [&null, &zero] {
            let run = hook(&env, "statusline", frame);
            assert_eq!(
                run.stdout,
                format!("ctx ~150k/200k · compacts in {}\n", left_at_150k(version)),
                "{version}"
            );
            let m = env.marker(&id);
            assert_eq!(
                (&m["cycle"], &m["state"], &m["tokens"]),
                (&before["cycle"], &before["state"], &before["tokens"]),
                "{version}: the cycle goes on"
            );
        }
    }
}

#[test]
fn usage_above_a_reported_200k_proves_the_1m_window() {
    // A 1M session (a `[1m]` model, or a client that misreports) on a frame that says 200k.
    for version in OLDER {
        let env = plain_env();
        let t = before_any_reply(&env, version);
        let frame = frame_with(version, &t, 250_000);
        assert_eq!(frame["context_window"]["context_window_size"], 200_000);
        let run = hook(&env, "statusline", &frame);
        // 1M − 45k (2.1.14) or − 33k; neither client has idle compaction.
        let left = if version == "2.1.14" { "705k" } else { "717k" };
        assert_eq!(
            run.stdout,
            format!("ctx 25% · 250k/1M · compacts in {left}\n"),
            "{version}"
        );
        let m = env.marker(&session(&frame));
        assert_eq!(
            (m["window"].as_u64(), m["state"].as_str()),
            (Some(1_000_000), Some("idle")),
            "{version}: {m}"
        );
        assert_ne!(m["window_source"], "reported", "{version}");
    }
}

#[test]
fn the_percent_is_the_clients_own_or_rounded_to_nearest() {
    // 2.1.14 sends `used_percentage` (Math.round of the exact figure); 2.0.76 sends none, and
    // the gauge rounds the same way: both show what 2.1.14's own status line would.
    for version in OLDER {
        for (tokens, pct) in [
            (1_000, 1),
            (100_999, 50),
            (101_000, 51),
            (120_999, 60),
            (121_000, 61),
        ] {
            let env = plain_env();
            let t = before_any_reply(&env, version);
            let frame = frame_with(version, &t, tokens);
            if version == "2.1.14" {
                assert_eq!(frame["context_window"]["used_percentage"], pct);
            } else {
                assert_eq!(frame["context_window"].get("used_percentage"), None);
            }
            let run = hook(&env, "statusline", &frame);
            assert!(
                run.stdout.starts_with(&format!("ctx {pct}% · ")),
                "{version} {tokens}: {}",
                run.stdout
            );
        }
    }
}

#[test]
fn the_recorded_pretooluse_nudges_once_above_the_trigger() {
    // 150k of the default model's 200k, read from the transcript: past the trigger (127k),
    // short of critical (152k).
    for version in OLDER {
        let env = plain_env();
        let t = before_compact(&env, version);
        let p = payload(version, "PreToolUse.json", &t);
        let first = hook(&env, "pretooluse", &p);
        let nudge = if version == "2.0.76" {
            // 2.0.76 drops PreToolUse's additionalContext: the nudge is not used up there but
            // given with the next prompt, which that client passes on.
            assert_eq!(first.stdout, "", "{version}: kept for the next prompt");
            assert_eq!(env.marker(&session(&p))["state"], "armed");
            let mut ups = p.clone();
            ups["hook_event_name"] = json!("UserPromptSubmit");
            ups["prompt"] = json!("go on");
            let run = hook(&env, "userpromptsubmit", &ups);
            let out: Value = serde_json::from_str(&run.stdout).unwrap();
            assert_eq!(
                out["hookSpecificOutput"]["hookEventName"],
                "UserPromptSubmit"
            );
            out["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .unwrap()
                .to_string()
        } else {
            decode_nudge(&first.stdout)
        };
        // 2.1.14 reserves the reply's whole 32k output: it compacts at 155k, and 150k is past
        // the critical point; 2.0.76 is taken to compact at 167k.
        let expected = if version == "2.1.14" {
            "ctxguard: auto-compaction is imminent: about 5k tokens are left before it comes at 155k tokens (150k are in context now)"
        } else {
            "ctxguard: about 17k tokens are left before auto-compaction, which comes at 167k tokens (150k are in context now)"
        };
        assert!(nudge.starts_with(expected), "{version}: {nudge}");
        assert_eq!(hook(&env, "pretooluse", &p).stdout, "", "{version}: once");
        let m = env.marker(&session(&p));
        assert_eq!(
            (
                m["state"].as_str(),
                m["tokens"].as_u64(),
                m["window"].as_u64()
            ),
            (
                Some(if version == "2.1.14" {
                    "critical_nudged"
                } else {
                    "nudged"
                }),
                Some(BEFORE),
                Some(200_000)
            ),
            "{version}"
        );

        // Below the trigger: the same payload on a transcript at 20k says nothing.
        let env = plain_env();
        let n = recorded(version, "transcript-with-compaction.jsonl")
            .lines()
            .count();
        let after = transcript(&env, version, "transcript-with-compaction.jsonl", Some(n));
        let run = hook(
            &env,
            "pretooluse",
            &payload(version, "PreToolUse.json", &after),
        );
        assert_eq!(run.stdout, "", "{version}");
        assert_eq!(env.marker(&session(&p))["tokens"], 20_010, "{version}");
    }
}

fn latest_checkpoint(env: &TestEnv, session: &str) -> Value {
    let path = env
        .state()
        .join("checkpoints")
        .join(session)
        .join("_latest.json");
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn compact_checkpoints_and_the_recovery_comes_once() {
    for version in OLDER {
        let env = plain_env();
        let t = before_compact(&env, version);
        let startup = payload(version, "SessionStart-startup.json", &t);
        assert_eq!(hook(&env, "sessionstart", &startup).stdout, "", "{version}");

        let pre = payload(version, "PreCompact-manual.json", &t);
        let id = session(&pre);
        // A manual /compact: no facts printed, whatever the client (it would show and echo
        // them); the recovery brings them once.
        let facts = hook(&env, "precompact", &pre).stdout;
        assert_eq!(facts, "", "{version}");
        assert!(facts_or_nothing(&facts), "{version}: {facts}");
        let cp = latest_checkpoint(&env, &id);
        assert_eq!(
            (&cp["meta"]["trigger"], &cp["meta"]["custom_instructions"]),
            (&json!("manual"), &json!("keep the open items")),
            "{version}"
        );
        assert_eq!(cp["asks"], json!(["run a command"]), "{version}");
        assert_eq!(
            cp["tools_used"],
            json!([{"name": "Bash", "count": 1}]),
            "{version}"
        );
        assert_eq!(env.marker(&id)["recovery_pending"], true);

        let start = payload(version, "SessionStart-compact.json", &t);
        let block = decode_block(&hook(&env, "sessionstart", &start).stdout);
        assert!(
            block.starts_with("## ctxguard recovery: compaction #1 of this session"),
            "{version}: {block}"
        );
        assert!(block.contains("run a command") && block.contains("keep the open items"));
        assert_eq!(hook(&env, "sessionstart", &start).stdout, "", "{version}");
        assert_eq!(env.marker(&id)["recovery_pending"], false);

        // The status line after the compaction reports the new context, and that a checkpoint
        // was saved.
        let after = payload(version, "statusline-after-compact.json", &t);
        let run = hook(&env, "statusline", &after);
        assert_eq!(
            run.stdout,
            format!(
                "ctx 10% · 20k/200k · compacts in {} · checkpoint saved\n",
                if version == "2.1.14" { "135k" } else { "147k" }
            ),
            "{version}"
        );
        assert_eq!(env.marker(&id)["compactions"], 1);
    }
}

#[test]
fn an_auto_compaction_is_checkpointed_as_auto() {
    for version in OLDER {
        let env = plain_env();
        let name = "transcript-auto-compaction.jsonl";
        let n = before_boundary(version, name);
        let t = transcript(&env, version, name, Some(n));
        let pre = payload(version, "PreCompact-auto.json", &t);
        assert_eq!(pre["custom_instructions"], Value::Null);
        hook(&env, "precompact", &pre);
        let id = session(&pre);
        let cp = latest_checkpoint(&env, &id);
        assert_eq!(
            (&cp["meta"]["trigger"], &cp["meta"]["custom_instructions"]),
            (&json!("auto"), &Value::Null),
            "{version}"
        );
        let m = env.marker(&id);
        assert_eq!(
            (
                m["compactions"].as_u64(),
                m["tokens_at_compaction"].as_u64()
            ),
            (Some(1), Some(180_010)),
            "{version}: {m}"
        );
    }
}

/// 2.1.330 ran `PreCompact` twice for one auto-compaction (`-p --autocompact 100000`, three tool
/// calls at 150k): the first when its transcript had 25 lines, a tool call, the second at 28
/// lines, the `compact_boundary` at line 31. Replayed at the recorded times (2026-11-22, UTC).
#[test]
fn a_precompact_run_twice_for_one_compaction_is_counted_once() {
    const VERSION: &str = "2.1.330";
    const NAME: &str = "transcript-auto-compaction-twice.jsonl";
    let env = plain_env();
    let at = |time: &str, sub: &str, p: &Value| {
        let mut cmd = env.command(&[sub]);
        cmd.env("CTXGUARD_NOW", format!("2026-11-22T{time}Z"));
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let out = feed(cmd, p.to_string()).wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{sub} at {time}");
        String::from_utf8(out.stdout).unwrap()
    };
    let first = payload(VERSION, "PreCompact-auto-twice-1.json", &PathBuf::new());
    let second = payload(VERSION, "PreCompact-auto-twice-2.json", &PathBuf::new());
    assert_eq!(first, second, "the same payload twice");
    let id = session(&first);
    let with = |p: &Value, lines: usize| {
        let mut p = p.clone();
        p["session_id"] = json!(id);
        p["transcript_path"] = json!(transcript(&env, VERSION, NAME, Some(lines)));
        p
    };
    let tool = fixture_json("PreToolUse.json");

    at("04:16:49.066", "precompact", &with(&first, 25));
    // The tool call between the two: its reply (150k) is the old context.
    assert_eq!(at("04:16:49.253", "pretooluse", &with(&tool, 27)), "");
    at("04:16:49.372", "precompact", &with(&second, 28));
    let m = env.marker(&id);
    assert_eq!(m["compactions"], 1, "{m}");
    assert_eq!(m["tokens"], Value::Null, "{m}");
    // The second run's checkpoint replaces the first's as the same compaction, not a later one.
    let cp = latest_checkpoint(&env, &id);
    assert_eq!(
        (
            &cp["meta"]["compaction"],
            &cp["meta"]["cycle"],
            &cp["meta"]["previous"]
        ),
        (&json!(1), &json!(0), &Value::Null),
        "{cp}"
    );
    assert_eq!(
        cp["tools_used"],
        json!([{"name": "Bash", "count": 2}]),
        "the second run saw the later tool call"
    );

    // The client then starts the compacted session: the recovery, once, as compaction #1.
    let start = with(&fixture_json("SessionStart-compact.json"), 48);
    let block = decode_block(&at("04:16:49.876", "sessionstart", &start));
    assert!(
        block.starts_with("## ctxguard recovery: compaction #1 of this session"),
        "{block}"
    );
    assert_eq!(at("04:16:49.900", "sessionstart", &start), "");
    // The first reply after it (20k) is read.
    assert_eq!(at("04:16:49.970", "pretooluse", &with(&tool, 49)), "");
    assert_eq!(env.marker(&id)["tokens"], 20_010);
    assert_eq!(env.marker(&id)["compactions"], 1);

    // Run twice with nothing in between (the same 25 lines): the first checkpoint stays, and
    // nothing is written or logged again.
    let env = plain_env();
    let at = |time: &str, p: &Value| {
        let mut cmd = env.command(&["precompact"]);
        cmd.env("CTXGUARD_NOW", format!("2026-11-22T{time}Z"));
        let out = feed(cmd, p.to_string()).wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
    };
    let mut p = first.clone();
    p["transcript_path"] = json!(transcript(&env, VERSION, NAME, Some(25)));
    at("04:16:49.066", &p);
    let checkpoints = env.state().join("checkpoints").join(&id);
    let names = || {
        let mut n: Vec<String> = fs::read_dir(&checkpoints)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    let log = || {
        let dir = env.state().join("logs");
        fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| fs::read_to_string(e.path()).unwrap())
            .collect::<String>()
    };
    let (before, logged) = (names(), log());
    assert_eq!(before, ["_latest.json", "cp_001.json"]);
    at("04:16:49.372", &p);
    assert_eq!(names(), before);
    assert_eq!(log(), logged);
    let m = env.marker(&id);
    assert_eq!(
        (&m["compactions"], &m["cycle"], &m["recovery_pending"]),
        (&json!(1), &json!(1), &json!(true))
    );
    assert!(m["last_checkpoint"]
        .as_str()
        .unwrap()
        .ends_with("cp_001.json"));
    // The second run's time is what a reading's staleness is judged against.
    assert_eq!(m["compacted_at"], "2026-11-22T04:16:49.372Z");
}
