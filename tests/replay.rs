//! `replay`: the hooks' decisions over real transcripts, with known verdicts. The fixtures are
//! the recorded 2.1.330 transcript and excerpts of published sessions (fixtures/replay/).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::util::*;

/// `replay --json` must have exactly these fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // fields are checked by deserialising
struct Report {
    transcript: String,
    client: String,
    statusline: bool,
    window: Option<u64>,
    lines: usize,
    replies: usize,
    compactions: usize,
    model: Option<String>,
    limits: Option<Limits>,
    window_source: Option<String>,
    compact_source: Option<Value>,
    cost: Value,
    events: Vec<Value>,
    cycles: Vec<Cycle>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Limits {
    window: u64,
    compact_at: u64,
    trigger_at: u64,
    critical_at: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Cycle {
    cycle: usize,
    verdict: String,
    first_line: usize,
    last_line: usize,
    start: Option<String>,
    end: Option<String>,
    replies: usize,
    peak_tokens: Option<u64>,
    reached_trigger: bool,
    nudges: usize,
    nudge: Option<Nudge>,
    idle_nudges: usize,
    refusals: usize,
    refused_at: Option<u64>,
    compaction: Option<Compaction>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Nudge {
    level: String,
    tokens: Option<u64>,
    compact_at: Option<u64>,
    at: Option<String>,
    line: usize,
    by: String,
    replies_left: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Compaction {
    trigger: String,
    pre_tokens: Option<u64>,
    line: usize,
    at: Option<String>,
    cost: Value,
}

/// The fields of each kind of event: exactly these.
fn event_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "armed" => &[
            "trigger_at",
            "compact_at",
            "window",
            "growth",
            "tokens",
            "by",
        ],
        "nudge" => &["level", "tokens", "compact_at", "repeat", "by"],
        "compaction" => &["trigger", "pre_tokens", "tokens"],
        "stale" => &["by"],
        "idle_nudge" => &["tokens", "by"],
        "new_cycle" => &["tokens", "by"],
        "refused" => &["tokens", "nudged_at"],
        other => panic!("unknown event kind {other}"),
    }
}

fn check_event(event: &Value) {
    let kind = event["kind"].as_str().unwrap();
    let keys: BTreeSet<&str> = event
        .as_object()
        .unwrap()
        .keys()
        .map(std::string::String::as_str)
        .collect();
    let mut expected: BTreeSet<&str> = ["line", "at", "reply", "cycle", "kind"].into();
    expected.extend(event_fields(kind));
    assert_eq!(keys, expected, "{event}");
}

/// A fixture of the tree, else an excerpt of a published session in `../shared` (under the path
/// it had in the tree); the tests on those check [`published`] first.
fn fixture_path(name: &str) -> PathBuf {
    let own = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    if own.exists() {
        return own;
    }
    shared_root().join("from-project/fixtures").join(name)
}

/// Are the excerpts of published sessions there (`../shared`)? Says so in one line if not.
fn published() -> bool {
    [AUTO, MANUAL, PAST]
        .iter()
        .all(|name| shared(&format!("from-project/fixtures/{name}")).is_some())
}

const RECORDED: &str = "claude-code-2.1.330/transcript-with-compaction.jsonl";
const AUTO: &str = "replay/spotter-4d5611e5-auto-compaction.jsonl";
const MANUAL: &str = "replay/spotter-ae4a77f8-manual-compact.jsonl";
const PAST: &str = "replay/cctrace-phase0-past-the-compaction-point.jsonl";

/// `replay FIXTURE ARGS --json`, checked field by field.
fn replay(env: &TestEnv, fixture: &str, args: &[&str]) -> Report {
    let path = fixture_path(fixture);
    let mut all = vec!["replay", path.to_str().unwrap()];
    all.extend(args);
    all.push("--json");
    let run = env.run(&all, "");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    let report: Report = serde_json::from_str(&run.stdout).unwrap();
    report.events.iter().for_each(check_event);
    report
}

fn verdicts(report: &Report) -> Vec<&str> {
    report.cycles.iter().map(|c| c.verdict.as_str()).collect()
}

/// Each event as `kind` (and `level` for nudges), with its tokens and hook.
fn timeline(report: &Report) -> Vec<(String, Value, Value)> {
    report
        .events
        .iter()
        .map(|e| {
            let kind = match e["level"].as_str() {
                Some(level) => format!("{} {level}", e["kind"].as_str().unwrap()),
                None => e["kind"].as_str().unwrap().to_string(),
            };
            let tokens = if e["kind"] == "compaction" {
                e["pre_tokens"].clone()
            } else {
                e["tokens"].clone()
            };
            (kind, tokens, e["by"].clone())
        })
        .collect()
}

fn replies_left(report: &Report) -> Vec<Option<usize>> {
    report
        .cycles
        .iter()
        .map(|c| c.nudge.as_ref().map(|n| n.replies_left))
        .collect()
}

#[test]
fn the_recorded_transcript_on_its_own_window_and_on_200k() {
    let env = TestEnv::new();
    // claude-opus-5-5 is a 1M model: its first automatic compaction at 150k (the e2e client
    // compacts early) comes without a nudge, with or without a status line. It shows where
    // this client compacts, so the next two are nudged in time.
    for args in [&[][..], &["--statusline"]] {
        let r = replay(&env, RECORDED, args);
        assert_eq!(
            verdicts(&r),
            ["manual", "missed", "in_time", "in_time", "open"],
            "{args:?}"
        );
        assert_eq!((r.replies, r.compactions, r.lines), (14, 4, 183));
        assert_eq!(r.model.as_deref(), Some("claude-opus-5-5"));
        // Where the client was seen compacting: above the replies at 150,510 that did not
        // compact, at or below the boundaries' preTokens (150,532, 150,533).
        assert_eq!(r.limits.as_ref().map(|l| l.compact_at), Some(150_533));
        assert_eq!(r.statusline, !args.is_empty());
        let triggers: Vec<_> = r
            .cycles
            .iter()
            .map(|c| c.compaction.as_ref().map(|c| c.trigger.as_str()))
            .collect();
        assert_eq!(
            triggers,
            [
                Some("manual"),
                Some("auto"),
                Some("auto"),
                Some("auto"),
                None
            ]
        );
    }
    // On a 200k window every automatic compaction is nudged before it, on the tool call of the
    // first reply past the trigger.
    let r = replay(&env, RECORDED, &["--window", "200000"]);
    assert_eq!(
        verdicts(&r),
        ["manual", "in_time", "in_time", "in_time", "open"]
    );
    assert_eq!(replies_left(&r), [None, Some(2), Some(1), Some(1), Some(0)]);
    let first = r.cycles[1].nudge.as_ref().unwrap();
    assert_eq!(
        (
            first.level.as_str(),
            first.tokens,
            first.by.as_str(),
            first.line
        ),
        ("normal", Some(150_510), "pretooluse", 83)
    );
    assert_eq!(r.window, Some(200_000));
    assert_eq!(r.window_source.as_deref(), Some("config"));
    // The replay is pure: nothing under CTXGUARD_HOME.
    assert!(!env.state().exists());
}

#[test]
fn an_auto_compaction_nudged_in_time() {
    if !published() {
        return;
    }
    let env = TestEnv::new();
    let r = replay(&env, AUTO, &[]);
    assert_eq!(verdicts(&r), ["in_time", "quiet"]);
    let c = &r.cycles[0];
    assert_eq!((c.replies, c.peak_tokens), (7, Some(164_831)));
    assert_eq!(c.compaction.as_ref().unwrap().pre_tokens, Some(170_251));
    assert_eq!(
        timeline(&r),
        [
            ("armed".into(), json!(149_162), json!("pretooluse")),
            ("nudge normal".into(), json!(149_162), json!("pretooluse")),
            ("nudge critical".into(), json!(153_713), json!("pretooluse")),
            ("compaction".into(), json!(170_251), json!(null)),
        ]
    );
    assert_eq!(replies_left(&r), [Some(3), None]);
    // A status line arms on the reply that crosses the trigger (it makes no tool call); the
    // next tool call delivers the nudge.
    let r = replay(&env, AUTO, &["--statusline"]);
    assert_eq!(verdicts(&r), ["in_time", "quiet"]);
    assert_eq!(
        timeline(&r)[..2],
        [
            ("armed".into(), json!(133_202), json!("statusline")),
            ("nudge normal".into(), json!(149_162), json!("pretooluse")),
        ]
    );
    // On a window it does not have, the compaction comes unannounced.
    let r = replay(&env, AUTO, &["--window", "1000000"]);
    assert_eq!(verdicts(&r), ["missed", "quiet"]);
}

#[test]
fn a_manual_compact_after_the_nudge() {
    if !published() {
        return;
    }
    let env = TestEnv::new();
    let r = replay(&env, MANUAL, &[]);
    assert_eq!(verdicts(&r), ["in_time", "quiet"]);
    assert_eq!(replies_left(&r), [Some(2), None]);
    assert_eq!(r.cycles[0].compaction.as_ref().unwrap().trigger, "manual");
    let r = replay(&env, MANUAL, &["--statusline"]);
    assert_eq!(verdicts(&r), ["in_time", "quiet"]);
    // With a 1M window nothing was due: the user compacted by hand.
    let r = replay(&env, MANUAL, &["--window", "1000000"]);
    assert_eq!(verdicts(&r), ["manual", "quiet"]);
    assert!(r.events.iter().all(|e| e["kind"] == "compaction"));
}

#[test]
fn on_a_client_that_drops_pretooluse_context_the_nudge_waits_for_the_next_prompt() {
    if !published() {
        return;
    }
    // A 2.0.76 session: that client drops PreToolUse's additionalContext, so the live hook keeps
    // the nudge for the next prompt (UserPromptSubmit), and the replay does the same.
    let env = TestEnv::new();
    for (args, armed_by) in [(&[][..], "pretooluse"), (&["--statusline"], "statusline")] {
        let r = replay(&env, PAST, args);
        // This client did not compact at 167k; the transcript ends at 180k.
        assert_eq!(verdicts(&r), ["open"], "{args:?}");
        assert_eq!(r.cycles[0].peak_tokens, Some(180_437));
        assert_eq!(
            timeline(&r),
            [
                ("armed".into(), json!(127_370), json!(armed_by)),
                // The next prompt came only after one reply grew from 151k to 169k: past the
                // compaction point at 167k, so the one nudge given is the critical one.
                (
                    "nudge critical".into(),
                    json!(170_823),
                    json!("userpromptsubmit")
                ),
            ],
            "{args:?}"
        );
    }
}

#[test]
fn the_config_and_its_overrides_apply() {
    if !published() {
        return;
    }
    // A trigger at 160k: the 16k jump to 149k arms by growth anyway...
    let mut env = TestEnv::new();
    env.set("CTXGUARD_HEADROOM_TOKENS", "7000");
    let r = replay(&env, AUTO, &[]);
    assert_eq!(verdicts(&r), ["in_time", "quiet"]);
    assert_eq!(
        (&r.events[0]["tokens"], &r.events[0]["growth"]),
        (&json!(149_162), &json!(true))
    );
    // ...and without growth arming the nudge leaves one reply.
    env.set("CTXGUARD_GROWTH_REPLIES", "0");
    let r = replay(&env, AUTO, &[]);
    assert_eq!(verdicts(&r), ["in_time", "quiet"]);
    let nudge = r.cycles[0].nudge.as_ref().unwrap();
    assert_eq!((nudge.tokens, nudge.replies_left), (Some(160_591), 1));
    let env = TestEnv::new();
    std::fs::create_dir_all(env.state()).unwrap();
    std::fs::write(
        env.state().join("config.json"),
        r#"{"window_tokens": 1000000}"#,
    )
    .unwrap();
    let before = env.snapshot();
    let r = replay(&env, AUTO, &[]);
    assert_eq!(verdicts(&r), ["missed", "quiet"]);
    assert_eq!(env.snapshot(), before);
}

#[test]
fn the_text_report() {
    if !published() {
        return;
    }
    let env = TestEnv::new();
    let path = fixture_path(MANUAL);
    let run = env.run(&["replay", path.to_str().unwrap()], "");
    assert_eq!(run.code, 0, "{run:?}");
    let expected = format!(
        "ctxguard replay: {}\n{}",
        path.display(),
        r"client       Claude Code
mode         no status line: the hooks read the transcript (as in -p mode)
replies      5 in 9 lines; 1 compaction, 2 cycles
window       200,000 (known for this model); model claude-opus-4-6
limits       nudge at 127,000, critical at 152,000, compacts at 167,000
             (compaction point: the window)

timeline
  2026-02-12 14:31:18 reply 2    armed       127,312 tokens (trigger 127,000; PreToolUse)
  2026-02-12 14:31:18 reply 2    nudge       127,312 tokens, 39,688 before compaction (PreToolUse)
  2026-02-12 14:48:36 reply 4    compaction  manual at 142,431 (preTokens; last reply 141,787)

cycles
    #  verdict      replies      peak  first nudge (replies left)  compaction (preTokens)
    1  in time            4   141,787  127,312 (2 left)            manual 142,431
    2  quiet              1    45,263  -                           -

what each compaction cost (before: preTokens; after: the next reply, input + cache read + written)
    #  trigger     before  after                              refill  recovery
    1  manual     142,431  45,263 (3 + 21,448 + 23,812)       23,812  none recorded
       total      142,431  45,263                             23,812  0 characters
  1 compaction refilled the cache with 23,812 tokens

chart: one row per 1 reply: # usage (the row's peak), | nudge trigger, ! compaction point,
       then a (armed), n (nudge), c (critical nudge), i (idle nudge, at a turn's end)
    replies   peak 0                                                                 167k
          1   125k #################################################### |               !
          2   127k #####################################################|               ! an
          3   141k #####################################################|#####          !
          4   142k #####################################################|#####          !
                   -- manual compaction at 142k (cycle 1: in time) ----------------------
          5    45k ##################                                   |               !
"
    );
    assert_eq!(run.stdout, expected);
    // Every report stays ASCII within 100 columns.
    for fixture in [RECORDED, AUTO, PAST] {
        let path = fixture_path(fixture);
        let run = env.run(&["replay", path.to_str().unwrap(), "--statusline"], "");
        let text = run.stdout.replace(&path.display().to_string(), "PATH");
        assert!(text.is_ascii(), "{text}");
        assert!(text.lines().all(|l| l.len() <= 100), "{text}");
    }
}

#[test]
fn a_missing_transcript_is_an_error_naming_it() {
    let env = TestEnv::new();
    let missing = env.dir.path().join("nope.jsonl");
    let run = env.run(&["replay", missing.to_str().unwrap()], "");
    assert_eq!(run.code, 1);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.starts_with("ctxguard: opening transcript ")
            && run.stderr.contains("nope.jsonl"),
        "{}",
        run.stderr
    );
    let run = env.run(&["replay", "x.jsonl", "--window", "0"], "");
    assert_eq!(run.code, 1);
}

#[test]
fn replay_all_sums_every_session_of_the_users_history() {
    if !published() {
        return;
    }
    let env = TestEnv::new();
    let projects = env.home().join(".claude").join("projects");
    let put = |project: &str, name: &str, fixture: &str| {
        let dir = projects.join(project);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(name),
            std::fs::read(fixture_path(fixture)).unwrap(),
        )
        .unwrap();
    };
    put("-home-u-app", "s1.jsonl", AUTO);
    put("-home-u-app", "s2.jsonl", MANUAL);
    put("-home-u-other", "s3.jsonl", PAST);
    // A subagent's transcript is not a session.
    std::fs::create_dir_all(projects.join("-home-u-app/s1/subagents")).unwrap();
    std::fs::write(
        projects.join("-home-u-app/s1/subagents/agent-1.jsonl"),
        std::fs::read(fixture_path(PAST)).unwrap(),
    )
    .unwrap();

    let run = env.run(&["replay", "--all"], "");
    assert_eq!(run.code, 0, "{run:?}");
    // One line per session, with the verdicts each single replay gives.
    let line = |name: &str| {
        run.stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name}: {}", run.stdout))
            .to_string()
    };
    let single = |fixture: &str| {
        verdicts(&replay(&env, fixture, &[]))
            .join(", ")
            .replace('_', " ")
    };
    assert!(
        line("-home-u-app/s1.jsonl").ends_with(&single(AUTO)),
        "{}",
        run.stdout
    );
    assert!(
        line("-home-u-app/s2.jsonl").ends_with(&single(MANUAL)),
        "{}",
        run.stdout
    );
    assert!(
        line("-home-u-other/s3.jsonl").ends_with(&single(PAST)),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("\n3 sessions, "), "{}", run.stdout);
    // Counts in words that agree with them: `1 compaction`, never `1 compactions`.
    for l in run.stdout.lines().filter(|l| l.starts_with("-home-u-")) {
        let counts = l.split_once("  ").unwrap().1.split(':').next().unwrap();
        // The costs of its compactions, in brackets, are no count.
        let counts = counts.split(" (").next().unwrap();
        for count in counts.split(", ") {
            let (n, noun) = count.split_once(' ').unwrap();
            assert_eq!(n == "1", !noun.ends_with('s'), "{l}");
        }
    }
    assert!(
        run.stdout
            .contains(" 1 compaction (refilled 23,812 tokens, no recovery recorded): "),
        "{}",
        run.stdout
    );
    // A bar per verdict, and progress on stderr.
    for verdict in [
        "in time",
        "late",
        "missed",
        "false alarm",
        "open",
        "manual",
        "quiet",
    ] {
        assert!(
            run.stdout.lines().any(|l| l.starts_with(verdict)),
            "{verdict}: {}",
            run.stdout
        );
    }
    assert_eq!(
        run.stderr.matches("replaying ").count(),
        3,
        "{}",
        run.stderr
    );

    // --project by a part of the folder name or the project's path; --json.
    for project in ["other", "/home/u/other"] {
        let run = env.run(&["replay", "--all", "--project", project, "--json"], "");
        assert_eq!(run.code, 0, "{run:?}");
        let v: Value = serde_json::from_str(&run.stdout).unwrap();
        let sessions = v["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 1, "{v}");
        assert_eq!(sessions[0]["transcript"], "-home-u-other/s3.jsonl");
        let total: u64 = v["totals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t[1].as_u64().unwrap())
            .sum();
        assert_eq!(
            total as usize,
            sessions[0]["verdicts"].as_array().unwrap().len()
        );
    }
    // Nothing to replay: a clear error.
    let run = env.run(&["replay", "--all", "--project", "nope"], "");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("no session transcript under"),
        "{run:?}"
    );
    assert!(run.stderr.contains("\"nope\""), "{run:?}");
    // A transcript and --all together, or --since without --all: refused.
    assert_eq!(env.run(&["replay", "x.jsonl", "--all"], "").code, 1);
    assert_eq!(env.run(&["replay", "x.jsonl", "--since", "3"], "").code, 1);
}

/// A TUI session (the lines say `entrypoint: cli`) on the default 1M model: its first turn ends
/// at 301k, past idle compaction's 200k, and the Stop hook nudges then; the work goes on, and
/// the regular nudges still come (the idle one never takes their place); the turn's end at
/// 935k, right after them, is left alone. The same session under `-p` (`sdk-cli`) gets no idle nudge.
#[test]
fn the_stop_hooks_idle_nudge_is_replayed_as_a_level_of_its_own() {
    let env = TestEnv::new();
    let line = |n: u32, v: serde_json::Value| {
        let mut v = v;
        v["timestamp"] = json!(format!("2026-11-25T10:{:02}:00Z", n));
        v["sessionId"] = json!(SESSION);
        v["version"] = json!("2.1.330");
        v["entrypoint"] = json!("cli");
        v["isSidechain"] = json!(false);
        v.to_string()
    };
    let reply = |id: &str, tokens: u64, tool: bool| {
        let (content, stop) = if tool {
            (
                json!([{"type": "tool_use", "id": format!("t{id}"), "name": "Bash", "input": {"command": "echo"}}]),
                "tool_use",
            )
        } else {
            (
                json!([{"type": "text", "text": "Done. (A) or (B)?"}]),
                "end_turn",
            )
        };
        json!({"type": "assistant", "message": {"id": format!("msg_{id}"), "model": "claude-opus-5-5",
            "role": "assistant", "content": content, "stop_reason": stop,
            "usage": {"input_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": tokens, "output_tokens": 10}}})
    };
    let prompt = |text: &str| json!({"type": "user", "message": {"role": "user", "content": text}});
    let result = |id: &str| {
        json!({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": format!("t{id}"), "content": "ok"}]}})
    };
    let lines = [
        line(0, prompt("sum up the design")),
        line(1, reply("1", 301_000, false)),
        line(5, prompt("now build it")),
        line(6, reply("2", 600_000, true)),
        line(7, result("2")),
        line(8, reply("3", 930_000, true)),
        line(9, result("3")),
        line(10, reply("4", 935_000, false)),
    ];
    let text = lines.join("\n") + "\n";
    let path = env.write("tui.jsonl", &text);
    let run = |path: &std::path::Path| {
        let run = env.run(&["replay", path.to_str().unwrap(), "--json"], "");
        assert_eq!(run.code, 0, "{run:?}");
        serde_json::from_str::<Report>(&run.stdout).unwrap()
    };
    let r = run(&path);
    let kinds: Vec<(String, Value, Value)> = timeline(&r)
        .into_iter()
        .filter(|(k, _, _)| k.starts_with("idle") || k.starts_with("nudge"))
        .collect();
    assert_eq!(
        kinds,
        [
            ("idle_nudge".into(), json!(301_005), json!("stop")),
            // Armed by growth (300k a reply), then critical: the regular levels as always.
            ("nudge normal".into(), json!(600_005), json!("pretooluse")),
            ("nudge critical".into(), json!(930_005), json!("pretooluse")),
        ],
        "{:?}",
        r.events
    );
    assert_eq!(r.cycles[0].idle_nudges, 1);
    let text = env.run(&["replay", path.to_str().unwrap()], "").stdout;
    assert!(
        text.contains(
            "idle nudge  301,005 tokens, before an idle compaction could take the session (Stop)"
        ),
        "{text}"
    );
    // Under -p: no idle compaction, no idle nudge.
    let p = env.write(
        "p.jsonl",
        &text_of(&lines).replace("\"cli\"", "\"sdk-cli\""),
    );
    let r = run(&p);
    assert_eq!(r.cycles[0].idle_nudges, 0);
    assert!(r.events.iter().all(|e| e["kind"] != "idle_nudge"));
}

fn text_of(lines: &[String]) -> String {
    lines.join("\n") + "\n"
}

/// A real 2.1.330 TUI session (recorded, fixtures/replay/SOURCES.txt): its turn ends at 250k of
/// 1M and the Stop hook nudged once; the agent's extra turn ends again without a second one.
/// The replay reports exactly that.
#[test]
fn a_recorded_tui_session_replays_the_stop_hooks_one_nudge() {
    let env = TestEnv::new();
    let r = replay(&env, "replay/tui-stop-2.1.330.jsonl", &[]);
    let idle: Vec<(String, Value, Value)> = timeline(&r)
        .into_iter()
        .filter(|(k, _, _)| k.contains("nudge"))
        .collect();
    assert_eq!(idle, [("idle_nudge".into(), json!(250_010), json!("stop"))]);
    assert_eq!(r.cycles[0].idle_nudges, 1);
    assert_eq!(r.cycles[0].nudges, 0);
}

/// A transcript that begins at a compaction boundary (its history before it not published):
/// the cycle it closes had no reading, so it is `no data`, not a miss.
#[test]
fn a_cycle_with_no_reading_before_its_compaction_is_no_data() {
    let env = TestEnv::new();
    let mut lines = vec![boundary_line(&time_from_now(-600))];
    for (i, tokens) in [20_000, 40_000, 60_000].into_iter().enumerate() {
        lines.push(assistant_line(tokens, &time_from_now(-500 + i as i64 * 10)));
    }
    let path = env.write("begins-at-a-boundary.jsonl", &(lines.join("\n") + "\n"));
    let run = env.run(&["replay", path.to_str().unwrap(), "--json"], "");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    let report: Report = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(verdicts(&report), ["no_data", "quiet"]);
    let text = env.run(&["replay", path.to_str().unwrap()], "");
    assert!(text.stdout.contains("no data"), "{}", text.stdout);
    assert!(!text.stdout.contains("missed"), "{}", text.stdout);
}

/// A real 2.1.332 session with auto-compaction off (`-p`, recorded against the stand-in API by
/// `e2e::autooff`): nudged at 140k and 164k, then the client refused the request with a tool
/// result at 177.5k, and the next prompt, with "Prompt is too long". The replay names both
/// refusals, the nudge before them, and where the client stops.
#[test]
fn the_recorded_refusal_of_2_1_332_is_named_with_the_nudge_before_it() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::fs::write(
        env.home().join(".claude/settings.json"),
        r#"{"autoCompactEnabled": false}"#,
    )
    .unwrap();
    let fixture = "claude-code-2.1.332/refused.jsonl";
    let r = replay(&env, fixture, &[]);
    assert_eq!(verdicts(&r), ["stopped"]);
    assert_eq!(
        (r.cycles[0].refusals, r.cycles[0].refused_at),
        (2, Some(177_510))
    );
    let refused: Vec<&Value> = r.events.iter().filter(|e| e["kind"] == "refused").collect();
    assert_eq!(refused.len(), 2, "{:?}", r.events);
    assert_eq!(refused[0]["nudged_at"], 140_010);
    let text = env
        .run(&["replay", fixture_path(fixture).to_str().unwrap()], "")
        .stdout;
    assert!(
        text.contains(
            "refused     177,510 tokens: the client stopped accepting requests (\"Prompt is too \
             long\"); nudged before, at 140,010"
        ),
        "{text}"
    );
    assert!(
        text.contains("the client stops accepting requests at 177,000"),
        "{text}"
    );
}
