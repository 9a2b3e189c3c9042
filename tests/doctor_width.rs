//! `doctor` keeps its ok/FAIL column in sight: no line over 100 characters, each explanation
//! wrapped under its item, indented, in every configuration tried here.

use std::fs;

use crate::util::*;

/// Every line at most 100 characters; a line is an item (`ok`, `info`, `warn`, `FAIL`), a
/// continuation indented under it, or part of the thresholds table.
fn check_lines(what: &str, text: &str) {
    assert!(!text.is_empty(), "{what}: no output");
    let mut items = 0;
    let mut table = false;
    for line in text.lines() {
        let n = line.chars().count();
        assert!(n <= 100, "{what}: {n} characters: {line}\n{text}");
        let item = ["ok   ", "info ", "warn ", "FAIL "]
            .iter()
            .any(|t| line.starts_with(t));
        items += usize::from(item);
        table |= line.starts_with("thresholds ");
        assert!(
            item || table || line.is_empty() || line.starts_with(&" ".repeat(17)),
            "{what}: neither an item nor indented under one: {line}\n{text}"
        );
    }
    assert!(items > 3, "{what}: {text}");
}

#[test]
fn doctor_lines_stay_within_100_characters_in_every_configuration() {
    let env = TestEnv::new();
    // Nothing installed: failures with their fixes.
    let run = env.run(&["doctor"], "");
    assert!(run.stdout.contains("FAIL "), "{}", run.stdout);
    check_lines("not installed", &run.stdout);
    // Installed for the current client, then for 2.1.14 (shell lines, no PostCompact).
    assert_eq!(env.run(&["install"], "").code, 0);
    let run = env.run(&["doctor"], "");
    check_lines("installed", &run.stdout);
    // The long explanations are there, wrapped, not cut.
    assert!(run.stdout.lines().count() > 25, "{}", run.stdout);
    let run = env.run(&["doctor", "--client-version", "2.1.14"], "");
    check_lines("--client-version 2.1.14", &run.stdout);
    // Auto-compaction off in the settings, a status line of the user's wrapped.
    let settings = env.home().join(".claude/settings.json");
    let mut s: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
    s["autoCompactEnabled"] = false.into();
    s["env"] = serde_json::json!({"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "70"});
    fs::write(&settings, s.to_string()).unwrap();
    let run = env.run(&["doctor"], "");
    check_lines("auto-compaction settings", &run.stdout);
    // A Codex home: its checks too, and `--client codex`.
    fs::create_dir_all(env.home().join(".codex")).unwrap();
    fs::write(
        env.home().join(".codex/config.toml"),
        "model_auto_compact_token_limit = 150000\n",
    )
    .unwrap();
    let run = env.run(&["doctor"], "");
    check_lines("with ~/.codex", &run.stdout);
    let run = env.run(&["doctor", "--client", "codex"], "");
    check_lines("--client codex", &run.stdout);
}
