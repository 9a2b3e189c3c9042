//! `replay` and `replay --all`: what each compaction cost (the context before and after, the
//! refill, the recovery's size), on a transcript with two compactions written as Claude Code
//! 2.1.330 writes them (the recorded fixtures were made without ctxguard, so none of them holds
//! a recovery block; transcript-auto-compaction-twice.jsonl holds one boundary).

use serde::Deserialize;
use serde_json::{json, Value};

use crate::util::*;

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Cost {
    before: Option<u64>,
    after: Option<After>,
    refill: Option<u64>,
    recovery_chars: Option<usize>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct After {
    tokens: u64,
    input: Option<u64>,
    cache_read: Option<u64>,
    cache_written: Option<u64>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Totals {
    compactions: usize,
    before: Option<u64>,
    before_unknown: usize,
    after: Option<u64>,
    after_unknown: usize,
    refill: Option<u64>,
    refill_unknown: usize,
    recovery_chars: usize,
}

impl Totals {
    /// Totals every compaction knew.
    fn known(compactions: usize, before: u64, after: u64, refill: u64, chars: usize) -> Totals {
        Totals {
            compactions,
            before: Some(before),
            before_unknown: 0,
            after: Some(after),
            after_unknown: 0,
            refill: Some(refill),
            refill_unknown: 0,
            recovery_chars: chars,
        }
    }
}

const FIRST_BLOCK: &str = "## ctxguard recovery: compaction #1 (auto, 2026-03-02 10:05)\n\n\
    ### The last requests\n- port the parser to Rust — keep the tests green\n";
const SECOND_BLOCK: &str = "## ctxguard recovery: compaction #2 (manual, 2026-03-02 10:20)\n\n\
    ### Files edited\n- src/parser.rs\n";

fn reply(id: &str, at: &str, input: u64, read: u64, written: u64) -> Value {
    json!({
        "type": "assistant", "isSidechain": false, "timestamp": at, "cwd": "/home/u/app",
        "sessionId": "s1", "version": "2.1.330",
        "message": {"id": id, "model": "claude-opus-4-6", "role": "assistant",
                    "content": [{"type": "text", "text": "done"}], "stop_reason": "tool_use",
                    "usage": {"input_tokens": input, "cache_read_input_tokens": read,
                              "cache_creation_input_tokens": written, "output_tokens": 40}}
    })
}

fn boundary(at: &str, trigger: &str, pre: u64) -> Value {
    json!({"type": "system", "subtype": "compact_boundary", "timestamp": at,
           "content": "Conversation compacted", "isSidechain": false,
           "compactMetadata": {"trigger": trigger, "preTokens": pre}})
}

fn recovery(at: &str, block: &str) -> Value {
    json!({"type": "attachment", "timestamp": at, "isSidechain": false,
           "attachment": {"type": "hook_additional_context", "content": [block],
                          "hookName": "SessionStart:compact", "hookEvent": "SessionStart"}})
}

fn summary(at: &str) -> Value {
    json!({"type": "user", "isCompactSummary": true, "timestamp": at,
           "message": {"role": "user", "content": "This session is being continued…"}})
}

/// Two compactions, each followed by its recovery and the replies that refill the cache; a
/// prompt that merely quotes a block, and a sidechain's reply, count for nothing.
fn transcript() -> String {
    let lines = [
        json!({"type": "user", "timestamp": "2026-03-02T10:00:00Z", "cwd": "/home/u/app",
               "message": {"role": "user", "content": "port the parser"}}),
        reply("m1", "2026-03-02T10:01:00Z", 5, 140_000, 2_000),
        boundary("2026-03-02T10:05:00Z", "auto", 142_005),
        recovery("2026-03-02T10:05:01Z", FIRST_BLOCK),
        summary("2026-03-02T10:05:01Z"),
        json!({"type": "assistant", "isSidechain": true, "timestamp": "2026-03-02T10:05:02Z",
               "message": {"id": "side", "role": "assistant", "content": [],
                           "usage": {"input_tokens": 1, "cache_read_input_tokens": 0,
                                     "cache_creation_input_tokens": 50_000}}}),
        reply("m2", "2026-03-02T10:05:03Z", 3, 0, 9_000),
        reply("m3", "2026-03-02T10:06:00Z", 4, 9_000, 500),
        boundary("2026-03-02T10:20:00Z", "manual", 9_504),
        json!({"type": "user", "timestamp": "2026-03-02T10:20:01Z",
               "message": {"role": "user",
                           "content": format!("what is this? {SECOND_BLOCK}")}}),
        recovery("2026-03-02T10:20:01Z", SECOND_BLOCK),
        reply("m4", "2026-03-02T10:20:05Z", 2, 3_000, 7_000),
    ];
    lines.iter().map(|l| l.to_string() + "\n").collect()
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

#[test]
fn replay_gives_what_each_compaction_cost_and_the_sessions_total() {
    let env = TestEnv::new();
    let path = env.write("two-compactions.jsonl", &transcript());
    let run = env.run(&["replay", path.to_str().unwrap(), "--json"], "");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let costs: Vec<Cost> = report["cycles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["compaction"].is_null())
        .map(|c| serde_json::from_value(c["compaction"]["cost"].clone()).unwrap())
        .collect();
    assert_eq!(
        costs,
        vec![
            Cost {
                before: Some(142_005),
                after: Some(After {
                    tokens: 9_003,
                    input: Some(3),
                    cache_read: Some(0),
                    cache_written: Some(9_000),
                }),
                refill: Some(9_000),
                recovery_chars: Some(chars(FIRST_BLOCK)),
            },
            Cost {
                before: Some(9_504),
                after: Some(After {
                    tokens: 10_002,
                    input: Some(2),
                    cache_read: Some(3_000),
                    cache_written: Some(7_000),
                }),
                refill: Some(7_000),
                recovery_chars: Some(chars(SECOND_BLOCK)),
            },
        ]
    );
    let totals: Totals = serde_json::from_value(report["cost"].clone()).unwrap();
    let recovery = chars(FIRST_BLOCK) + chars(SECOND_BLOCK);
    assert_eq!(totals, Totals::known(2, 151_509, 19_005, 16_000, recovery));

    // The text gives the same figures, one row per compaction, then the total.
    let run = env.run(&["replay", path.to_str().unwrap()], "");
    assert_eq!(run.code, 0, "{run:?}");
    let section: Vec<&str> = run
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("what each compaction cost"))
        .take(6)
        .collect();
    let expected = [
        "what each compaction cost (before: preTokens; after: the next reply, input + cache read + \
         written)",
        "    #  trigger     before  after                              refill  recovery",
        &format!(
            "    1  auto       142,005  9,003 (3 + 0 + 9,000)               9,000  {} characters",
            chars(FIRST_BLOCK)
        ),
        &format!(
            "    2  manual       9,504  10,002 (2 + 3,000 + 7,000)          7,000  {} characters",
            chars(SECOND_BLOCK)
        ),
        &format!(
            "       total      151,509  19,005                             16,000  {recovery} \
             characters"
        ),
        "  2 compactions refilled the cache with 16,000 tokens",
    ];
    assert_eq!(section, expected, "{}", run.stdout);
}

#[test]
fn replay_all_sums_the_costs_of_every_session() {
    let env = TestEnv::new();
    let dir = env.home().join(".claude/projects/-home-u-app");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("s1.jsonl"), transcript()).unwrap();
    std::fs::write(dir.join("s2.jsonl"), transcript()).unwrap();
    let run = env.run(&["replay", "--all", "--json"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let summary: Value = serde_json::from_str(&run.stdout).unwrap();
    let recovery = chars(FIRST_BLOCK) + chars(SECOND_BLOCK);
    for session in summary["sessions"].as_array().unwrap() {
        let totals: Totals = serde_json::from_value(session["cost"].clone()).unwrap();
        assert_eq!(
            (totals.refill, totals.recovery_chars),
            (Some(16_000), recovery)
        );
    }
    let overall: Totals = serde_json::from_value(summary["cost"].clone()).unwrap();
    assert_eq!(
        overall,
        Totals::known(4, 2 * 151_509, 2 * 19_005, 32_000, 2 * recovery)
    );
    let run = env.run(&["replay", "--all"], "");
    assert!(
        run.stdout.contains(&format!(
            "-home-u-app/s1.jsonl  4 replies, 2 compactions (refilled 16,000 tokens, recovery \
             {recovery} characters): missed, manual, quiet\n"
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!(
            "what the compactions cost: 32,000 tokens written to the cache to refill it, {} \
             characters of recovery (context 303,018 before, 38,010 after)\n",
            2 * recovery
        )),
        "{}",
        run.stdout
    );
}
