//! One window on Codex, in every command: `config.toml` sets `model_context_window = 200000`
//! while the session's rollout reports 95% of a smaller window (95,000, written before the file
//! changed). Codex puts the configured window in place of every model's own and counts the
//! context against 95% of it, so `doctor`, `status`, `usage` and `replay` all say 190,000, and
//! compacting at 180,000 (90% of 200,000); no label names config.toml for a number not in it.

use std::fs;
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::util::*;

const SESSION: &str = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0031";

fn rollout_lines() -> String {
    [
        json!({"timestamp": "2026-11-25T18:00:00.000Z", "type": "session_meta",
               "payload": {"id": SESSION, "cwd": "/home/user/proj", "originator": "codex_exec",
                           "cli_version": "0.171.0", "source": "exec"}}),
        json!({"timestamp": "2026-11-25T18:00:01.000Z", "type": "response_item",
               "payload": {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": "Fix the parser"}]}}),
        json!({"timestamp": "2026-11-25T18:00:02.000Z", "type": "event_msg",
               "payload": {"type": "token_count",
                           "info": {"total_token_usage": {"total_tokens": 50000},
                                    "last_token_usage": {"input_tokens": 49900,
                                                         "output_tokens": 100,
                                                         "total_tokens": 50000},
                                    "model_context_window": 95000}}}),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect()
}

fn setup() -> (TestEnv, PathBuf, PathBuf) {
    let mut env = TestEnv::new();
    let home = env.dir.path().join("codex");
    let day = home.join("sessions/2026/11/25");
    fs::create_dir_all(&day).unwrap();
    let config = home.join("config.toml");
    fs::write(&config, "model_context_window = 200000\n").unwrap();
    let rollout = day.join(format!("rollout-2026-11-25T18-00-00-{SESSION}.jsonl"));
    fs::write(&rollout, rollout_lines()).unwrap();
    env.set("CODEX_HOME", home.to_str().unwrap());
    (env, rollout, config)
}

fn json_of(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{run:?}");
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"))
}

#[test]
fn doctor_status_usage_and_replay_give_one_codex_window() {
    let (env, rollout, config) = setup();
    let path = rollout.to_str().unwrap();

    // The hooks' reading, which status shows.
    let payload = json!({"session_id": SESSION, "transcript_path": path,
                         "cwd": "/home/user/proj", "hook_event_name": "PreToolUse",
                         "model": "gpt-5.1-codex", "tool_name": "Bash",
                         "tool_input": {"command": "ls"}, "tool_use_id": "call_1"});
    let hook = env.run(&["pretooluse"], payload.to_string());
    assert_eq!(hook.code, 0, "{hook:?}");
    let status = json_of(&env.run(&["status", "--json"], ""));
    let session = &status["sessions"][0];
    let status_figures = (
        session["window"].as_u64(),
        session["compact_at"].as_u64(),
        session["window_source"].as_str(),
    );

    let usage = json_of(&env.run(&["usage", path, "--json"], ""));
    let usage_figures = (
        usage["window"].as_u64(),
        usage["compact_at"].as_u64(),
        usage["window_source"].as_str(),
    );

    let replay = json_of(&env.run(&["replay", path, "--json"], ""));
    let replay_figures = (
        replay["limits"]["window"].as_u64(),
        replay["limits"]["compact_at"].as_u64(),
        replay["window_source"].as_str(),
    );

    let want = (Some(190_000), Some(180_000), Some("codex_config"));
    assert_eq!(status_figures, want, "status: {status}");
    assert_eq!(usage_figures, want, "usage: {usage}");
    assert_eq!(replay_figures, want, "replay: {replay}");

    // doctor says the same figures, and names the file beside the number that is in it.
    let doctor = env.run(&["doctor", "--client", "codex", "--json"], "");
    let report: Value = serde_json::from_str(&doctor.stdout).unwrap();
    let said: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["message"].as_str())
        .filter(|m| m.contains("counts the context"))
        .collect();
    assert_eq!(
        said,
        [format!(
            "Codex counts the context against 190k tokens, 95% of the 200k-token window \
             (model_context_window in {}), and compacts at 180k, 90% of the window",
            config.display()
        )]
    );
    assert!(fs::read_to_string(&config).unwrap().contains("200000"));

    // The people's view: the same figure, and the label says what was done to the file's.
    for (args, figure) in [
        (vec!["usage", path], "190,000"),
        (vec!["replay", path], "190,000"),
        (vec!["status", "--session", SESSION], "190k"),
    ] {
        let out = env.run(&args, "");
        assert_eq!(out.code, 0, "{out:?}");
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with("window"))
            .unwrap_or_else(|| panic!("no window line: {out:?}"))
            .to_string();
        assert!(
            line.contains(&format!(
                "{figure} (95% of model_context_window in Codex's config.toml"
            )),
            "{args:?}: {line}"
        );
    }
}
