//! The replay on literal transcript lines: one test per verdict, the routes a nudge takes, and
//! the observations it builds held equal to the hooks' own.

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::render;
use super::report::{Hook, Level, Report, Verdict, What};
use super::simulate::{statusline_observation, transcript_observation, Options, Simulation};
use crate::config::{Config, Env};
use crate::facts::Context;
use crate::gauge;
use crate::marker::Marker;
use crate::nudge;
use crate::reading::Reading;

const MODEL: &str = "claude-opus-4-6"; // 200k, at its threshold: compacts at 167k, nudges at 127k, critical 152k

fn t(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 1, 10, 0, 0).unwrap() + Duration::minutes(minutes)
}

fn at(minutes: i64) -> String {
    t(minutes).to_rfc3339()
}

/// A main-chain reply `id` at `minute` with `tokens` in context, making `tools` tool calls.
fn reply(id: &str, minute: i64, tokens: u64, tools: usize) -> String {
    let mut blocks = vec![r#"{"type":"text","text":"working"}"#.to_string()];
    for i in 0..tools {
        blocks.push(format!(
            r#"{{"type":"tool_use","id":"toolu_{id}_{i}","name":"Bash","input":{{"command":"ls"}}}}"#
        ));
    }
    format!(
        r#"{{"type":"assistant","isSidechain":false,"timestamp":"{}","message":{{"id":"{id}","model":"{MODEL}","role":"assistant","content":[{}],"usage":{{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":{},"output_tokens":50}}}}}}"#,
        at(minute),
        blocks.join(","),
        tokens - 10
    )
}

fn prompt(minute: i64, text: &str) -> String {
    format!(
        r#"{{"type":"user","isSidechain":false,"timestamp":"{}","message":{{"role":"user","content":{}}}}}"#,
        at(minute),
        serde_json::to_string(text).unwrap()
    )
}

fn tool_result(minute: i64) -> String {
    format!(
        r#"{{"type":"user","timestamp":"{}","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"x","content":"ok"}}]}}}}"#,
        at(minute)
    )
}

fn boundary(minute: i64, trigger: &str, pre_tokens: u64) -> String {
    format!(
        r#"{{"type":"system","subtype":"compact_boundary","timestamp":"{}","compactMetadata":{{"trigger":"{trigger}","preTokens":{pre_tokens}}}}}"#,
        at(minute)
    )
}

/// What Claude Code writes around a `/compact` typed by the user.
fn slash_compact(minute: i64, pre_tokens: u64) -> Vec<String> {
    vec![
        boundary(minute, "manual", pre_tokens),
        format!(
            r#"{{"type":"user","isCompactSummary":true,"isVisibleInTranscriptOnly":true,"timestamp":"{}","message":{{"role":"user","content":"This session is being continued from a previous conversation"}}}}"#,
            at(minute)
        ),
        prompt(minute, "<command-name>/compact</command-name>"),
        prompt(
            minute,
            "<local-command-stdout>Compacted</local-command-stdout>",
        ),
    ]
}

fn replay_with(config: &Config, options: Options, lines: &[String]) -> Report {
    let mut sim = Simulation::new(config, options);
    for line in lines {
        sim.feed(line.as_bytes());
    }
    sim.finish()
}

fn replay(lines: &[String]) -> Report {
    replay_with(&Config::default(), Options::default(), lines)
}

fn verdicts(report: &Report) -> Vec<Verdict> {
    report.cycles.iter().map(|c| c.verdict).collect()
}

/// The timeline, one short word per event.
fn kinds(report: &Report) -> Vec<String> {
    report
        .events
        .iter()
        .map(|e| match &e.what {
            What::Armed { growth: true, .. } => "armed by growth".into(),
            What::Armed { .. } => "armed".into(),
            What::Nudge {
                level: Level::Critical,
                ..
            } => "critical".into(),
            What::Nudge { repeat: true, .. } => "nudge again".into(),
            What::Nudge { .. } => "nudge".into(),
            What::IdleNudge { .. } => "idle nudge".into(),
            What::Compaction { trigger, .. } => format!("{} compaction", trigger.name()),
            What::Stale { .. } => "stale".into(),
            What::NewCycle { .. } => "new cycle".into(),
            What::Refused { .. } => "refused".into(),
        })
        .collect()
}

#[test]
fn a_cycle_nudged_in_time() {
    let lines = [
        prompt(0, "refactor the parser"),
        reply("m1", 1, 100_000, 1),
        tool_result(1),
        reply("m2", 2, 110_000, 1),
        tool_result(2),
        reply("m3", 3, 120_000, 1),
        tool_result(3),
        reply("m4", 4, 130_000, 1), // past the trigger: nudged on its tool call
        tool_result(4),
        reply("m5", 5, 140_000, 1),
        tool_result(5),
        reply("m6", 6, 150_000, 0),
        boundary(7, "auto", 168_000),
        reply("m7", 8, 30_000, 0),
    ];
    let report = replay(&lines);
    assert_eq!(kinds(&report), ["armed", "nudge", "auto compaction"]);
    assert_eq!(verdicts(&report), [Verdict::InTime, Verdict::Quiet]);
    let cycle = &report.cycles[0];
    let nudge = cycle.nudge.as_ref().unwrap();
    assert_eq!(
        (
            nudge.seen.tokens,
            nudge.seen.by,
            nudge.replies_left,
            nudge.seen.line
        ),
        (Some(130_000), Hook::PreToolUse, 2, 8)
    );
    assert_eq!((cycle.replies, cycle.peak_tokens), (6, Some(150_000)));
    let compaction = cycle.compaction.as_ref().unwrap();
    assert_eq!(
        (compaction.pre_tokens, compaction.line),
        (Some(168_000), 13)
    );
    assert_eq!((report.replies, report.compactions), (7, 1));
    // Every event knows its line, time, reply and cycle.
    let nudge = &report.events[1];
    assert_eq!(
        (nudge.line, nudge.at, nudge.reply, nudge.cycle),
        (8, Some(t(4)), 4, 1)
    );
}

#[test]
fn a_nudge_with_no_reply_before_the_compaction_is_late() {
    let lines = [
        reply("m1", 1, 100_000, 1),
        reply("m2", 2, 110_000, 1),
        reply("m3", 3, 131_000, 1),
        boundary(4, "auto", 168_000),
    ];
    let report = replay(&lines);
    assert_eq!(verdicts(&report), [Verdict::Late]);
    assert_eq!(report.cycles[0].nudge.as_ref().unwrap().replies_left, 0);
}

#[test]
fn a_jump_over_the_compaction_point_without_a_tool_call_is_missed() {
    // 60k, then 100k: growing 40k a reply, 2 more would pass 167k, so growth arms at 100k.
    let lines = [
        reply("m1", 1, 60_000, 1),
        reply("m2", 2, 100_000, 1),
        reply("m3", 3, 140_000, 0),
        boundary(4, "auto", 175_000),
    ];
    let report = replay(&lines);
    assert_eq!(
        kinds(&report),
        ["armed by growth", "nudge", "auto compaction"]
    );
    assert_eq!(verdicts(&report), [Verdict::InTime]);
    // Growth off: 100k is below the trigger, and the reply that crosses it makes no tool
    // call, so no hook runs before the compaction.
    let off = Config {
        growth_replies: 0,
        ..Config::default()
    };
    let report = replay_with(&off, Options::default(), &lines);
    assert_eq!(kinds(&report), ["auto compaction"]);
    assert_eq!(verdicts(&report), [Verdict::Missed]);
    assert!(report.cycles[0].reached_trigger);
    // A status line arms the marker on that reply, but nothing delivers the nudge.
    let with_statusline = Options {
        statusline: true,
        ..Options::default()
    };
    let report = replay_with(&off, with_statusline, &lines);
    assert_eq!(kinds(&report), ["armed", "auto compaction"]);
    assert_eq!(report.events[0].what, armed_by(Hook::Statusline, 140_000));
    assert_eq!(verdicts(&report), [Verdict::Missed]);
}

fn armed_by(by: Hook, tokens: u64) -> What {
    What::Armed {
        tokens: Some(tokens),
        trigger_at: 127_000,
        compact_at: 167_000,
        window: 200_000,
        growth: false,
        by,
    }
}

#[test]
fn the_window_moves_every_threshold() {
    let lines = [
        reply("m1", 1, 100_000, 1),
        reply("m2", 2, 131_000, 1),
        reply("m3", 3, 140_000, 1),
    ];
    assert_eq!(verdicts(&replay(&lines)), [Verdict::Open]);
    let wide = Options {
        window: Some(1_000_000),
        ..Options::default()
    };
    let report = replay_with(&Config::default(), wide, &lines);
    assert_eq!(verdicts(&report), [Verdict::Quiet]);
    assert_eq!(report.limits.map(|l| l.compact_at), Some(967_000));
}

#[test]
fn a_growth_nudge_that_never_comes_near_compaction_is_a_false_alarm() {
    let lines = [
        reply("m1", 1, 60_000, 1),
        reply("m2", 2, 100_000, 1), // growth: 40k a reply
        reply("m3", 3, 101_000, 1),
        reply("m4", 4, 102_000, 0),
    ];
    let report = replay(&lines);
    assert_eq!(verdicts(&report), [Verdict::FalseAlarm]);
    assert_eq!(report.cycles[0].nudge.as_ref().unwrap().replies_left, 2);
    assert!(!report.cycles[0].reached_trigger);
}

/// The hooks as they are (reported as a bug): a marker armed by growth more than 10% of the
/// window below the trigger counts as "usage dropped" at the next reading, so every tool call
/// starts a new marker cycle, re-arms by growth and nudges again, parallel calls included.
#[test]
fn growth_arming_far_below_the_trigger_nudges_once() {
    // Armed by growth at 100k (far below the 127k trigger): the next reading at 101k is no
    // drop (a drop is measured from where the cycle armed), so there is one nudge.
    let lines = [
        reply("m1", 1, 60_000, 1),
        reply("m2", 2, 100_000, 2),
        reply("m3", 3, 101_000, 1),
    ];
    let report = replay(&lines);
    assert_eq!(kinds(&report), ["armed by growth", "nudge"]);
    assert_eq!(report.cycles[0].nudges, 1);
}

#[test]
fn no_nudge_and_no_compaction_is_quiet() {
    let lines = [
        prompt(0, "hello"),
        reply("m1", 1, 20_000, 1),
        reply("m2", 2, 30_000, 0),
    ];
    let report = replay(&lines);
    assert!(report.events.is_empty());
    assert_eq!(verdicts(&report), [Verdict::Quiet]);
    // No reply at all: one quiet cycle of nothing.
    let report = replay(&[]);
    assert_eq!(verdicts(&report), [Verdict::Quiet]);
    assert_eq!(report.cycles[0].replies, 0);
}

#[test]
fn a_manual_compact() {
    // Below the trigger: the user compacted before anything was due.
    let mut lines = vec![reply("m1", 1, 50_000, 1)];
    lines.extend(slash_compact(2, 50_100));
    lines.push(prompt(3, "go on"));
    lines.push(reply("m2", 4, 10_000, 1));
    let report = replay(&lines);
    assert_eq!(kinds(&report), ["manual compaction"]);
    assert_eq!(verdicts(&report), [Verdict::Manual, Verdict::Quiet]);
    // The slash command and its output are not prompts: no UserPromptSubmit ran for them.
    // Past the trigger without a nudge (a text-only reply, no prompt since): a miss.
    let mut lines = vec![reply("m1", 1, 140_000, 0)];
    lines.extend(slash_compact(2, 140_100));
    assert_eq!(verdicts(&replay(&lines)), [Verdict::Missed]);
    // Nudged first: judged like any compaction.
    let mut lines = vec![reply("m1", 1, 130_000, 1), reply("m2", 2, 131_000, 0)];
    lines.extend(slash_compact(3, 131_100));
    let report = replay(&lines);
    assert_eq!(verdicts(&report), [Verdict::InTime]);
    assert_eq!(
        report.cycles[0].compaction.as_ref().unwrap().pre_tokens,
        Some(131_100)
    );
}

#[test]
fn a_text_only_exchange_is_nudged_with_the_next_prompt() {
    let lines = [
        prompt(0, "explain the design"),
        reply("m1", 1, 130_000, 0),
        prompt(2, "and the tradeoffs?"),
        reply("m2", 3, 135_000, 0),
    ];
    let report = replay(&lines);
    assert_eq!(kinds(&report), ["armed", "nudge"]);
    assert_eq!(report.events[1].line, 3);
    assert_eq!(
        report.cycles[0].nudge.as_ref().map(|n| n.seen.by),
        Some(Hook::UserPromptSubmit)
    );
    assert_eq!(verdicts(&report), [Verdict::Open]);
}

#[test]
fn one_reply_over_several_lines_and_parallel_calls_nudge_once() {
    let lines = [
        reply("m1", 1, 130_000, 0),
        reply("m1", 1, 130_000, 3),
        reply("m1", 1, 130_000, 1),
        reply("m2", 2, 140_000, 2),
    ];
    let report = replay(&lines);
    assert_eq!(report.replies, 2);
    assert_eq!(kinds(&report), ["armed", "nudge"]);
    assert_eq!(report.cycles[0].nudges, 1);
}

#[test]
fn the_critical_nudge_follows_and_a_stale_marker_nudges_again() {
    let lines = [
        reply("m1", 0, 130_000, 1),
        reply("m2", 1, 153_000, 1),
        // 40 minutes later (stale_after_secs is 1800): the marker counts as idle again.
        reply("m3", 41, 154_000, 1),
        reply("m4", 42, 155_000, 1),
    ];
    let report = replay(&lines);
    assert_eq!(
        kinds(&report),
        ["armed", "nudge", "critical", "stale", "armed", "critical"]
    );
    assert_eq!(report.cycles[0].nudges, 3);
}

#[test]
fn sidechain_calls_and_synthetic_replies_are_not_the_main_thread() {
    let sidechain =
        reply("s1", 1, 150_000, 2).replace(r#""isSidechain":false"#, r#""isSidechain":true"#);
    let synthetic = reply("x1", 2, 150_000, 1).replace(MODEL, "<synthetic>");
    let report = replay(&[reply("m1", 0, 20_000, 0), sidechain, synthetic]);
    assert_eq!(report.replies, 1);
    assert!(report.events.is_empty());
}

#[test]
fn the_clock_never_goes_back() {
    // Claude Code writes some lines out of time order (the summary before its boundary).
    let lines = [
        reply("m1", 10, 130_000, 1),
        boundary(20, "auto", 168_000),
        prompt(5, "late line"),
        reply("m2", 21, 20_000, 1),
    ];
    let report = replay(&lines);
    let times: Vec<_> = report.events.iter().map(|e| e.at).collect();
    assert_eq!(times, [Some(t(10)), Some(t(10)), Some(t(20))]);
    assert_eq!(report.cycles[1].start, Some(t(20)));
}

#[test]
fn an_observed_auto_compaction_moves_the_next_cycles_limits() {
    // The client compacted at 150.5k (the boundary's preTokens) after a reply at 140k that did
    // not: its point lies in (140k, 150.5k], below the 167k computed for 200k, so the next cycle
    // nudges 40k before 150.5k. The reading PreCompact had (140k) is never taken for the point.
    let lines = [
        reply("m1", 0, 140_000, 1),
        boundary(1, "auto", 150_500),
        reply("m2", 5, 112_000, 1),
    ];
    let report = replay(&lines);
    let armed = report.events.iter().find_map(|e| match &e.what {
        What::Armed {
            trigger_at,
            compact_at,
            ..
        } if e.cycle == 2 => Some((*trigger_at, *compact_at)),
        _ => None,
    });
    assert_eq!(armed, Some((110_500, 150_500)));
}

/// The observations the replay builds are the hooks' own, in an environment without settings,
/// learned windows or a running client.
#[test]
fn observations_match_the_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::isolated(dir.path().join("state"), dir.path().join("home"));
    let paths = env.paths().unwrap();
    let config = Config {
        growth_replies: 3,
        ..Config::default()
    };
    let ctx = Context {
        config: &config,
        env: &env,
        paths: &paths,
        project: None,
        flag: None,
        client_version: None,
        client: crate::input::Client::ClaudeCode,
        pi_window: None,
    };
    let now = t(0);
    let reading = Reading {
        tokens: Some(120_000),
        model: Some(MODEL.into()),
        reply_at: Some(t(0)),
        recent: vec![90_000, 105_000, 120_000],
        ..Reading::default()
    };
    let fresh = Marker::new("s");
    let observed = Marker {
        auto_compacted_at: Some((150_000, 200_000)),
        ..Marker::new("s")
    };
    // Limits resolved 30 s ago for this model and config: reused.
    let cached = Marker {
        model: Some(MODEL.into()),
        window: Some(200_000),
        compact_at: Some(160_000),
        trigger_at: Some(120_000),
        critical_at: Some(145_000),
        limits_at: Some(now - Duration::seconds(30)),
        limits_key: Some(config.limits_key()),
        ..Marker::new("s")
    };
    let payload = |window: u64| {
        crate::input::parse(
            format!(
                r#"{{"session_id":"s","model":{{"id":"{MODEL}"}},"context_window":{{"context_window_size":{window},"current_usage":{{"input_tokens":120000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}}}}"#
            )
            .as_bytes(),
            "status line",
        )
        .unwrap()
    };
    for marker in [&fresh, &observed, &cached] {
        assert_eq!(
            transcript_observation(&reading, marker, &config, &Options::default(), now),
            nudge::observe(&reading, marker, &ctx, now),
            "{marker:?}"
        );
        for window in [200_000, 1_000_000] {
            assert_eq!(
                statusline_observation(
                    120_000,
                    Some(MODEL),
                    Some(window),
                    marker,
                    &config,
                    &Options::default(),
                    now,
                ),
                gauge::observe(&payload(window), marker, &ctx, None, now),
                "{marker:?} {window}"
            );
        }
    }
}

#[test]
fn the_text_report_is_ascii_and_at_most_100_columns() {
    let mut lines = Vec::new();
    for i in 0..90 {
        lines.push(reply(&format!("a{i}"), i, 20_000 + i as u64 * 1_600, 1));
    }
    lines.push(boundary(100, "auto", 168_000));
    for i in 0..30 {
        lines.push(reply(
            &format!("b{i}"),
            101 + i,
            30_000 + i as u64 * 1_000,
            1,
        ));
    }
    let mut report = replay(&lines);
    report.transcript = "t.jsonl".into();
    let text = render::render(&report);
    assert!(text.is_ascii());
    for line in text.lines() {
        assert!(line.len() <= 100, "{line:?} is {} long", line.len());
    }
    let chart = render::chart(&report);
    // 120 replies in rows of 3, a separator, and the legend and scale.
    assert_eq!(chart.len(), 3 + 30 + 1 + 10);
    assert!(
        chart[3].starts_with("        1-3    23k ####"),
        "{}",
        chart[3]
    );
    assert!(chart
        .iter()
        .any(|l| l.contains("-- auto compaction at 168k (cycle 1: ")));
    let nudged = chart.iter().find(|l| l.ends_with(" an")).unwrap();
    assert!(nudged.contains('|') && nudged.contains('!'), "{nudged}");
}

/// Generated names of every hostile kind: what is printed is one line, with no escape
/// sequence, control, bidirectional or tag character, nor the client's wrapper tag, and at most
/// 300 characters.
#[test]
fn generated_transcript_names_print_on_one_clean_line() {
    let pieces = [
        "a",
        "é",
        "\n",
        "\r",
        "\t",
        "\x1b[2J",
        "\x1b]0;t\x07",
        "\u{9b}31m",
        "\u{202e}",
        "\u{e0041}",
        "\u{200b}",
        "<system-reminder>",
        "</ system-reminder",
        " 9 replies, 0 compactions: missed",
        "/",
        "\0",
        "\x7f",
    ];
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for _ in 0..5_000 {
        let mut name = String::new();
        for _ in 0..(seed % 40) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            name.push_str(pieces[(seed >> 11) as usize % pieces.len()]);
        }
        seed = seed.wrapping_add(0x9e37_79b9);
        let shown = super::shown_name(&name);
        assert!(
            !shown
                .chars()
                .any(|c| c.is_control() || matches!(c, '\u{202e}' | '\u{e0041}' | '\u{200b}')),
            "{name:?} → {shown:?}"
        );
        assert!(
            !shown.to_lowercase().contains("<system-reminder"),
            "{shown:?}"
        );
        assert!(!shown.contains("</ system-reminder"), "{shown:?}");
        assert!(shown.chars().count() <= 300, "{shown:?}");
    }
}

/// The client's own error message when it refuses a request as too long (2.1.332, `-p`).
fn refusal(minute: i64) -> String {
    format!(
        r#"{{"type":"assistant","isSidechain":false,"isApiErrorMessage":true,"error":"invalid_request","timestamp":"{}","message":{{"id":"e{minute}","model":"<synthetic>","role":"assistant","content":[{{"type":"text","text":"Prompt is too long"}}],"usage":{{"input_tokens":0,"output_tokens":0}}}}}}"#,
        at(minute)
    )
}

#[test]
fn a_session_the_client_refused_is_stopped_at_that_size() {
    // Auto-compaction off on 200k: the client stops at 177k (its blocking limit), the nudges
    // come 40k and 15k before it. Nudged at 140k, then refused twice at 177.5k.
    let mut options = Options::default();
    options.gathered.client.off = Some("autoCompactEnabled in ~/.claude/settings.json".into());
    let lines = [
        prompt(0, "build the parser"),
        reply("m1", 1, 140_000, 1),
        tool_result(1),
        reply("m2", 2, 177_510, 0),
        prompt(3, "and the tests"),
        refusal(3),
        prompt(4, "go on"),
        refusal(4),
    ];
    let report = replay_with(&Config::default(), options, &lines);
    assert_eq!(kinds(&report), ["armed", "nudge", "refused", "refused"]);
    assert_eq!(verdicts(&report), [Verdict::Stopped]);
    let cycle = &report.cycles[0];
    assert_eq!((cycle.refusals, cycle.refused_at), (2, Some(177_510)));
    assert!(matches!(
        report.events[2].what,
        What::Refused {
            tokens: Some(177_510),
            nudged_at: Some(140_000)
        }
    ));
    assert_eq!(report.limits.map(|l| l.compact_at), Some(177_000));
    let text = render::render(&report);
    assert!(
        text.contains(
            "refused     177,510 tokens: the client stopped accepting requests (\"Prompt is too \
             long\"); nudged before, at 140,000"
        ),
        "{text}"
    );
    assert!(
        text.contains("the client stops accepting requests at 177,000"),
        "{text}"
    );
    assert!(text.contains("refused at 177,510 (2 times)"), "{text}");
    // No nudge before it: said so.
    let quiet = replay(&[reply("m1", 1, 50_000, 0), refusal(2)]);
    assert_eq!(verdicts(&quiet), [Verdict::Stopped]);
    assert!(matches!(
        quiet.events.last().map(|e| &e.what),
        Some(What::Refused {
            nudged_at: None,
            ..
        })
    ));
}
