//! Tests of `src/config.rs`: config resolution: defaults, file, variables, validation.

use super::*;
use std::fs;

fn env_with(overrides: &[(&str, &str)]) -> Env {
    let key = |name: &str| KEYS.iter().find(|k| k.name == name).unwrap();
    Env {
        overrides: overrides
            .iter()
            .map(|(k, v)| (key(k), v.to_string()))
            .collect::<Vec<_>>()
            .into(),
        ..Env::default()
    }
}

fn load_json(json: &str, env: &Env) -> Result<Loaded> {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("config.json"), json).unwrap();
    Config::load(&Paths::new(dir.path().to_path_buf()), env)
}

#[test]
fn missing_file_gives_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = Config::load(&Paths::new(dir.path().into()), &Env::default()).unwrap();
    assert_eq!(loaded.config, Config::default());
    assert!(loaded.warnings.is_empty());
}

#[test]
fn file_values_apply_and_env_overrides_them() {
    let json = r#"{"headroom_tokens": 1000, "threshold_pct": 70, "window_tokens": 500000,
                       "critical_headroom_tokens": 0, "nudge_text": "save {pct}", "stale_after_secs": null}"#;
    let env = env_with(&[("headroom_tokens", "2000")]);
    let c = load_json(json, &env).unwrap().config;
    assert_eq!(c.headroom_tokens, 2000);
    assert_eq!(c.threshold_pct, Some(70.0));
    assert_eq!(c.window_tokens, Some(500_000));
    assert_eq!(c.critical_headroom_tokens, 0);
    assert_eq!(c.nudge_text, "save {pct}");
    assert_eq!(c.stale_after_secs, 1800);
}

#[test]
fn recovery_keys_from_file_and_env() {
    let json = r#"{"recover_on": ["compact"], "memory_files": ["~/a.md", "/b.md"],
                       "recovery_budget_chars": 1000}"#;
    let env = env_with(&[
        ("total_budget_chars", "5000"),
        ("recover_on", "compact, startup"),
    ]);
    let c = load_json(json, &env).unwrap().config;
    assert_eq!(c.recover_on, ["compact", "startup"]);
    assert_eq!(c.memory_files.unwrap(), ["~/a.md", "/b.md"]);
    assert_eq!(
        (c.recovery_budget_chars, c.total_budget_chars),
        (1000, 5000)
    );
    assert_eq!(
        Config::default().recover_on,
        ["compact", "resume", "clear", "startup"]
    );
    assert!(!Config::default().gate_auto_compaction);
    let env = env_with(&[("gate_auto_compaction", "on")]);
    let c = load_json(r#"{"gate_auto_compaction": false}"#, &env)
        .unwrap()
        .config;
    assert!(c.gate_auto_compaction, "the environment overrides the file");
}

#[test]
fn unknown_keys_warn() {
    let loaded = load_json(r#"{"headroom": 5}"#, &Env::default()).unwrap();
    assert_eq!(loaded.warnings.len(), 1);
    assert!(loaded.warnings[0].contains("unknown key `headroom`"));
}

#[test]
fn invalid_values_are_errors_naming_file_and_key() {
    for (json, needle) in [
        (
            r#"{"headroom_tokens": "lots"}"#,
            "`headroom_tokens` must be",
        ),
        (r#"{"headroom_tokens": -1}"#, "`headroom_tokens` must be"),
        (r#"{"threshold_pct": 150}"#, "`threshold_pct` must be"),
        (r#"{"window_tokens": 0}"#, "`window_tokens` must be"),
        (r#"{"nudge_text": 3}"#, "`nudge_text` must be a string"),
        (
            r#"{"recover_on": ["compact", "reboot"]}"#,
            "`recover_on` must be a list",
        ),
        (
            r#"{"memory_files": "a.md"}"#,
            "`memory_files` must be a list",
        ),
        (
            r#"{"total_budget_chars": 10}"#,
            "`total_budget_chars` must be",
        ),
        (
            r#"{"gate_auto_compaction": "yes"}"#,
            "`gate_auto_compaction` must be true or false",
        ),
        (r"[1,2]", "expected a JSON object"),
        (r#"{"headroom_tokens": 1"#, "not valid JSON"),
    ] {
        let err = format!("{:#}", load_json(json, &Env::default()).unwrap_err());
        assert!(err.contains("config.json"), "{err}");
        assert!(err.contains(needle), "{json}: {err}");
    }
}

#[test]
fn invalid_env_override_names_the_variable() {
    let env = env_with(&[("stale_after_secs", "soon")]);
    let err = format!("{:#}", load_json("{}", &env).unwrap_err());
    assert!(err.contains("CTXGUARD_STALE_AFTER_SECS"), "{err}");
}

#[test]
fn lenient_load_falls_back_and_warns() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("config.json"), "{not json").unwrap();
    let env = env_with(&[("headroom_tokens", "5")]);
    let loaded = Config::load_or_default(&Paths::new(dir.path().into()), &env);
    assert_eq!(loaded.config.headroom_tokens, 5);
    assert_eq!(loaded.config.stale_after_secs, 1800);
    assert!(loaded.warnings[0].contains("using the defaults"));
}

#[test]
fn every_key_is_documented_and_its_rule_matches_its_message() {
    let docs = include_str!("../../docs/configuration.md");
    for key in KEYS {
        assert!(
            docs.contains(&format!("| `{}` |", key.name)),
            "docs/configuration.md has no row for `{}`",
            key.name
        );
    }
    for source in SOURCES {
        assert!(RECOVER_ON.expected.contains(source), "{source}");
    }
    let names: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
    assert_eq!(names.len(), 18);
    assert_eq!(names[0], "headroom_tokens");
}

#[test]
fn every_key_can_be_set_from_the_environment() {
    let values = [
        ("headroom_tokens", "1"),
        ("threshold_pct", "50"),
        ("critical_headroom_tokens", "2"),
        ("window_tokens", "300000"),
        ("model_windows", "claude-x-1=500000, claude-y=200000"),
        ("growth_replies", "3"),
        ("compact_buffer_tokens", "3"),
        ("stale_after_secs", "4"),
        ("nudge_text", "n"),
        ("critical_text", "c"),
        ("recover_on", "fork"),
        ("memory_files", "a.md,b.md"),
        ("recovery_budget_chars", "500"),
        ("total_budget_chars", "600"),
        ("gate_auto_compaction", "yes"),
        ("idle_nudge", "no"),
        ("summary_facts", "no"),
        ("retention_days", "7"),
    ];
    assert_eq!(values.len(), KEYS.len());
    let c = load_json("{}", &env_with(&values)).unwrap().config;
    let expected = Config {
        headroom_tokens: 1,
        threshold_pct: Some(50.0),
        critical_headroom_tokens: 2,
        window_tokens: Some(300_000),
        model_windows: BTreeMap::from([
            ("claude-x-1".to_string(), 500_000),
            ("claude-y".to_string(), 200_000),
        ]),
        growth_replies: 3,
        compact_buffer_tokens: 3,
        stale_after_secs: 4,
        nudge_text: "n".into(),
        critical_text: "c".into(),
        recover_on: vec!["fork".into()],
        memory_files: Some(vec!["a.md".into(), "b.md".into()]),
        recovery_budget_chars: 500,
        total_budget_chars: 600,
        gate_auto_compaction: true,
        idle_nudge: false,
        summary_facts: false,
        retention_days: 7,
    };
    assert_eq!(c, expected);
}

#[test]
fn placeholders_render() {
    assert_eq!(
        render_text(
            "{pct}% of {compact_at}: {tokens}/{window}, {headroom} left; save {where}; {make_room}",
            NudgeNumbers {
                tokens: 128_000,
                window: 200_000,
                compact_at: 167_000,
            },
            "in /m",
            "/compact"
        ),
        "77% of 167k: 128k/200k, 39k left; save in /m; /compact"
    );
}
