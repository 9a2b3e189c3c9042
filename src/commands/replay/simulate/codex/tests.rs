//! A Codex rollout replayed from literal lines in the 0.169.0 format: the nudge at the tool call
//! of the response that crossed the trigger, on Codex's own limit from a temporary
//! `config.toml`; a text-only cycle nudged at the next prompt; the compaction's own request and
//! repeated token counts left out; the observation held equal to the hooks'.

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::super::super::report::{Hook, Level, Report, Trigger, Verdict, What};
use super::super::{transcript_observation, Options, Simulation};
use crate::config::{Config, Env};
use crate::facts::Context;
use crate::input::Client;
use crate::marker::Marker;
use crate::nudge;
use crate::reading::Reading;

fn at(second: i64) -> String {
    let t: DateTime<Utc> = Utc.with_ymd_and_hms(2026, 11, 25, 17, 0, 0).unwrap();
    (t + Duration::seconds(second)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn line(second: i64, kind: &str, payload: serde_json::Value) -> String {
    serde_json::json!({"timestamp": at(second), "type": kind, "payload": payload}).to_string()
}

fn meta() -> String {
    line(
        0,
        "session_meta",
        serde_json::json!({"id": "01a213bf-087a-7232-abd1-a0247c531c6e", "cwd": "/home/user/proj",
                           "originator": "codex_cli_rs", "cli_version": "0.169.0"}),
    )
}

fn user(second: i64, text: &str) -> String {
    line(
        second,
        "response_item",
        serde_json::json!({"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": text}]}),
    )
}

fn developer(second: i64, text: &str) -> String {
    line(
        second,
        "response_item",
        serde_json::json!({"type": "message", "role": "developer",
                           "content": [{"type": "input_text", "text": text}]}),
    )
}

fn assistant(second: i64, text: &str) -> String {
    line(
        second,
        "response_item",
        serde_json::json!({"type": "message", "role": "assistant",
                           "content": [{"type": "output_text", "text": text}]}),
    )
}

fn call(second: i64, id: &str) -> String {
    line(
        second,
        "response_item",
        serde_json::json!({"type": "function_call", "name": "exec_command",
                           "arguments": "{\"cmd\": \"cargo test\"}", "call_id": id}),
    )
}

fn output(second: i64, id: &str) -> String {
    line(
        second,
        "response_item",
        serde_json::json!({"type": "function_call_output", "call_id": id,
                           "output": "Process exited with code 0\nOutput:\nok\n"}),
    )
}

/// A response's usage as Codex writes it: its `token_usage_record`, then its `token_count`
/// (the thread's running total the same in both).
fn usage(second: i64, last: u64, total: u64) -> Vec<String> {
    vec![
        line(
            second,
            "token_usage_record",
            serde_json::json!({"response_id": format!("resp_{total}"),
                               "usage": {"input_tokens": last - 50, "output_tokens": 50, "total_tokens": last},
                               "thread_token_usage": {"total_tokens": total}}),
        ),
        count(second, last, total),
    ]
}

fn count(second: i64, last: u64, total: u64) -> String {
    line(
        second,
        "event_msg",
        serde_json::json!({"type": "token_count", "info": {
            "total_token_usage": {"total_tokens": total},
            "last_token_usage": {"input_tokens": last - 50, "output_tokens": 50, "total_tokens": last},
            "model_context_window": 95_000}}),
    )
}

fn task_complete(second: i64) -> String {
    line(
        second,
        "event_msg",
        serde_json::json!({"type": "task_complete", "last_agent_message": "done"}),
    )
}

/// A compaction as 0.169.0 writes it: the summary, the compaction request's usage, the
/// `compacted` line, and the estimate of the new context.
fn compaction(second: i64, total: u64) -> Vec<String> {
    let mut lines = vec![line(
        second,
        "response_item",
        serde_json::json!({"type": "message", "role": "assistant",
                           "content": [{"type": "output_text", "text": "SUMMARY"}],
                           "metadata": {"compaction_output": true}}),
    )];
    lines.extend(usage(second, 19_000, total + 19_000));
    lines.push(line(
        second,
        "compacted",
        serde_json::json!({"message": "Another language model started to solve this problem",
                           "replacement_history": [],
                           "retained_context": {"user_messages": [{"text": "build the parser"}]}}),
    ));
    lines.push(count(second, 3_000, total + 19_000));
    lines
}

/// Codex compacting at 20,000 (`config.toml`), with a nudge 8,000 before it and the critical
/// one 3,000 before: trigger 12,000, critical 17,000.
struct Codex {
    _dir: tempfile::TempDir,
    env: Env,
    config: Config,
}

fn codex() -> Codex {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::write(
        home.join(".codex/config.toml"),
        "model_auto_compact_token_limit = 20000\n",
    )
    .unwrap();
    let env = Env::isolated(dir.path().join("state"), home);
    let config = Config {
        headroom_tokens: 8_000,
        critical_headroom_tokens: 3_000,
        ..Config::default()
    };
    Codex {
        _dir: dir,
        env,
        config,
    }
}

impl Codex {
    fn options(&self) -> Options {
        Options {
            codex: Some(crate::facts::codex_facts(&self.env, None)),
            ..Options::default()
        }
    }

    fn replay(&self, lines: &[String]) -> Report {
        let mut sim = Simulation::new(&self.config, self.options());
        for l in lines {
            sim.feed(l.as_bytes());
        }
        sim.finish()
    }
}

/// Each event as (kind, tokens, hook).
fn timeline(report: &Report) -> Vec<(String, Option<u64>, Option<Hook>)> {
    report
        .events
        .iter()
        .map(|e| match &e.what {
            What::Armed { tokens, by, .. } => ("armed".into(), *tokens, Some(*by)),
            What::Nudge {
                level, tokens, by, ..
            } => {
                let name = match level {
                    Level::Normal => "nudge",
                    Level::Critical => "critical",
                };
                (name.into(), *tokens, Some(*by))
            }
            What::Compaction {
                trigger, tokens, ..
            } => (format!("{} compaction", trigger.name()), *tokens, None),
            other => (format!("{other:?}"), None, None),
        })
        .collect()
}

fn verdicts(report: &Report) -> Vec<Verdict> {
    report.cycles.iter().map(|c| c.verdict).collect()
}

/// A turn of tool calls: the response that crosses 12,000 makes a call, and its `PreToolUse`
/// (after the response's usage record, as Codex writes it before running the call) nudges; the
/// critical nudge past 17,000; Codex compacts mid-turn past 20,000, after the call's output.
#[test]
fn a_tool_call_past_the_trigger_nudges_before_codex_compacts() {
    let c = codex();
    let mut lines = vec![meta(), user(1, "build the parser")];
    let mut second = 2;
    let mut total = 0;
    for (i, tokens) in [4_000, 8_000, 12_500, 14_500, 17_500, 20_500]
        .into_iter()
        .enumerate()
    {
        let id = format!("call_{i}");
        total += tokens;
        lines.push(call(second, &id));
        lines.extend(usage(second, tokens, total));
        lines.push(output(second + 1, &id));
        // Codex repeats a count on a rate-limit update: not a reply.
        lines.push(count(second + 1, tokens, total));
        second += 2;
    }
    lines.extend(compaction(second, total));
    lines.push(developer(
        second + 1,
        "## ctxguard recovery: compaction #1 of this session",
    ));
    lines.push(assistant(second + 2, "Continuing."));
    lines.extend(usage(second + 2, 4_000, total + 23_000));
    lines.push(task_complete(second + 3));

    let report = c.replay(&lines);
    assert_eq!(report.client, Client::Codex);
    assert!(!report.statusline);
    assert_eq!(
        timeline(&report),
        [
            ("armed".into(), Some(12_500), Some(Hook::PreToolUse)),
            ("nudge".into(), Some(12_500), Some(Hook::PreToolUse)),
            ("critical".into(), Some(17_500), Some(Hook::PreToolUse)),
            ("auto compaction".into(), Some(20_500), None),
        ]
    );
    assert_eq!(verdicts(&report), [Verdict::InTime, Verdict::Quiet]);
    let first = &report.cycles[0];
    // Six replies: the repeated counts and the compaction's own request are not replies.
    assert_eq!((first.replies, first.peak_tokens), (6, Some(20_500)));
    assert_eq!(first.nudge.as_ref().unwrap().replies_left, 3);
    assert_eq!(first.compaction.as_ref().unwrap().trigger, Trigger::Auto);
    assert_eq!(report.replies, 7);
    // Codex's limits: its own auto-compact limit, against the window the rollout reports.
    let limits = report.limits.unwrap();
    assert_eq!(
        (limits.window, limits.trigger_at, limits.compact_at),
        (95_000, 12_000, 20_000)
    );
    // The recovery came after the compaction.
    assert_eq!(report.recoveries_missing, 0);
}

/// Text-only turns: no tool call, so the nudge comes with the next prompt after the turn that
/// crossed the trigger; the turn that ends past the limit is compacted before the next one
/// (automatic, though not mid-turn: usage reached the limit).
#[test]
fn a_cycle_without_tool_calls_is_nudged_at_the_next_prompt() {
    let c = codex();
    let mut lines = vec![
        meta(),
        developer(
            1,
            "<permissions instructions>sandbox</permissions instructions>",
        ),
        user(
            1,
            "<environment_context>\n  <cwd>/home/user/proj</cwd>\n</environment_context>",
        ),
    ];
    let mut total = 0;
    for (turn, tokens) in [4_000, 8_000, 12_500, 15_000, 20_500]
        .into_iter()
        .enumerate()
    {
        let second = 10 * turn as i64 + 2;
        total += tokens;
        lines.push(user(second, &format!("question {turn}")));
        lines.push(assistant(second + 1, "an answer"));
        lines.extend(usage(second + 1, tokens, total));
        lines.push(task_complete(second + 2));
    }
    lines.extend(compaction(60, total));
    lines.push(user(
        60,
        "Another language model started to solve this problem and produced a summary: SUMMARY",
    ));
    lines.push(user(61, "and now the docs"));
    lines.push(assistant(62, "Writing them."));
    lines.extend(usage(62, 5_000, total + 24_000));

    let report = c.replay(&lines);
    assert_eq!(
        timeline(&report),
        [
            ("armed".into(), Some(12_500), Some(Hook::UserPromptSubmit)),
            ("nudge".into(), Some(12_500), Some(Hook::UserPromptSubmit)),
            ("auto compaction".into(), Some(20_500), None),
        ]
    );
    assert_eq!(verdicts(&report), [Verdict::InTime, Verdict::Quiet]);
    assert_eq!(report.cycles[0].nudge.as_ref().unwrap().replies_left, 2);
    // Codex's own user messages are no prompts, nor its summary handed to the next model.
    assert_eq!(report.cycles[0].replies, 5);
    // A compaction followed by a reply but no recovery block.
    assert_eq!(report.recoveries_missing, 1);
}

/// A compaction between turns with usage below the limit is a `/compact`: manual, nothing was
/// due; a status line asked for is not simulated (Codex has none).
#[test]
fn a_compaction_below_the_limit_between_turns_is_manual() {
    let c = codex();
    let mut lines = vec![meta(), user(1, "look around")];
    lines.push(assistant(2, "Looked."));
    lines.extend(usage(2, 6_000, 6_000));
    lines.push(task_complete(3));
    lines.extend(compaction(4, 6_000));
    let mut sim = Simulation::new(
        &c.config,
        Options {
            statusline: true,
            ..c.options()
        },
    );
    for l in &lines {
        sim.feed(l.as_bytes());
    }
    let report = sim.finish();
    assert!(!report.statusline);
    assert_eq!(
        timeline(&report),
        [("manual compaction".into(), Some(6_000), None)]
    );
    assert_eq!(verdicts(&report), [Verdict::Manual]);
}

/// The observation the replay builds from a rollout's reading is the hooks' own (`PreToolUse`
/// on a Codex session, reading the same `config.toml`).
#[test]
fn a_rollouts_observation_matches_the_hooks() {
    let c = codex();
    let paths = c.env.paths().unwrap();
    let mut ctx = Context::new(&c.config, &c.env, &paths, "/home/user/proj");
    ctx.client = Client::Codex;
    let now = Utc.with_ymd_and_hms(2026, 11, 25, 17, 0, 0).unwrap();
    for (tokens, window) in [
        (13_000, Some(95_000)),
        (13_000, None),
        (50_000, Some(258_400)),
    ] {
        let reading = Reading {
            tokens: Some(tokens),
            window,
            reply_at: Some(now),
            recent: vec![5_000, tokens],
            ..Reading::default()
        };
        let marker = Marker::new("s");
        assert_eq!(
            transcript_observation(&reading, &marker, &c.config, &c.options(), now),
            nudge::observe(&reading, &marker, &ctx, now),
            "{tokens} {window:?}"
        );
    }
}
