//! Tests of `src/facts/`: the client's command line, the limits cache, the limits resolved from
//! gathered facts, and the learned windows.

use super::cmdline::*;
use super::*;

#[test]
fn a_procargs2_buffer_gives_the_arguments() {
    let mut buf = 3i32.to_ne_bytes().to_vec();
    buf.extend_from_slice(
        b"/usr/local/bin/claude\0\0\0\0claude\0--autocompact\x00300000\0HOME=/x\0",
    );
    let args = procargs2(&buf).unwrap();
    assert_eq!(args, ["claude", "--autocompact", "300000"]);
    assert_eq!(autocompact_arg(&args), Some(300_000));
    // Truncated or empty buffers give nothing rather than a guess.
    assert_eq!(procargs2(&buf[..20]), None);
    assert_eq!(procargs2(&buf[..2]), None);
    assert_eq!(procargs2(&[]), None);
}

#[cfg(any(target_os = "linux", target_os = "macos"))]
#[test]
fn this_process_command_line_can_be_read() {
    let args = read_cmdline(std::process::id()).unwrap();
    assert!(args[0].contains("ctxguard"), "{args:?}");
}

#[test]
fn the_autocompact_argument_in_both_spellings() {
    assert_eq!(
        autocompact_arg(&["claude", "-p", "--autocompact", "300000", "hi"]),
        Some(300_000)
    );
    assert_eq!(
        autocompact_arg(&["claude", "--autocompact=250000"]),
        Some(250_000)
    );
    assert_eq!(autocompact_arg(&["claude", "--autocompact"]), None);
    assert_eq!(autocompact_arg(&["claude", "--autocompact", "lots"]), None);
    assert_eq!(autocompact_arg(&["claude", "-p", "300000"]), None);
}

fn t(secs: i64) -> DateTime<Utc> {
    use chrono::TimeZone;
    Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
}

#[test]
fn cached_limits_are_used_while_fresh_and_for_the_same_model() {
    let marker = Marker {
        model: Some("claude-opus-5-5".into()),
        window: Some(1_000_000),
        compact_at: Some(967_000),
        trigger_at: Some(927_000),
        critical_at: Some(952_000),
        limits_at: Some(t(0)),
        reported_window: Some(1_000_000),
        limits_key: Some(7),
        ..Marker::new("s")
    };
    assert_eq!(
        cached_limits(&marker, 7, Some("claude-opus-5-5"), None, None, t(60)).map(|l| l.trigger_at),
        Some(927_000)
    );
    assert_eq!(
        cached_limits(&marker, 7, None, Some(1_000_000), Some(1_000_000), t(60)).map(|l| l.window),
        Some(1_000_000)
    );
    assert_eq!(
        cached_limits(&marker, 7, Some("claude-opus-5-5"), None, None, t(61)),
        None
    );
    assert_eq!(
        cached_limits(&marker, 7, Some("claude-sonnet-4-5"), None, None, t(1)),
        None
    );
    // Another config, a different report, or usage over the window: resolve again.
    assert_eq!(cached_limits(&marker, 8, None, None, None, t(1)), None);
    assert_eq!(
        cached_limits(&marker, 7, None, Some(200_000), None, t(1)),
        None
    );
    assert_eq!(
        cached_limits(&marker, 7, None, None, Some(1_000_001), t(1)),
        None
    );
}

#[test]
fn older_clients_reserve_the_whole_output_and_unknown_models_take_the_clients_max() {
    let config = Config::default();
    let marker = Marker::new("s");
    let at = |version: Option<&str>, client: ClientCompaction, model: &str| {
        let gathered = Gathered {
            client,
            client_version: version.map(str::to_string),
            ..Gathered::default()
        };
        resolve_with(&config, &marker, Some(model), None, None, &gathered)
    };
    // A model every version compacts at its threshold.
    let sonnet = "claude-opus-4-6";
    // 2.1.14: 200k − 32k − 13k; with CLAUDE_CODE_MAX_OUTPUT_TOKENS=64000, 123k.
    let r = at(Some("2.1.14"), ClientCompaction::default(), sonnet);
    assert_eq!(
        (r.limits.compact_at, r.limits.trigger_at),
        (155_000, 115_000)
    );
    let big = ClientCompaction {
        max_output: Some(64_000),
        ..ClientCompaction::default()
    };
    assert_eq!(at(Some("2.1.3"), big, sonnet).limits.compact_at, 123_000);
    // 2.1.330, an unread later or earlier one, or no version: 20k at most.
    for v in [Some("2.1.330"), Some("2.1.200"), Some("2.0.76"), None] {
        assert_eq!(
            at(v, ClientCompaction::default(), sonnet).limits.compact_at,
            167_000
        );
    }
    // A buffer set in the config is kept.
    let own = Config {
        compact_buffer_tokens: 50_000,
        ..Config::default()
    };
    let gathered = Gathered {
        client_version: Some("2.1.14".into()),
        ..Gathered::default()
    };
    let r = resolve_with(&own, &marker, Some(sonnet), None, None, &gathered);
    assert_eq!(r.limits.compact_at, 150_000);
    // CLAUDE_CODE_MAX_CONTEXT_TOKENS: the window of a model the client does not know, of
    // every model with DISABLE_COMPACT.
    let max = ClientCompaction {
        max_context: Some(400_000),
        ..ClientCompaction::default()
    };
    let r = at(None, max.clone(), "my-proxy-model");
    assert_eq!(
        (r.limits.window, r.window_source),
        (400_000, WindowSource::ClientMax)
    );
    assert_eq!(at(None, max.clone(), sonnet).limits.window, 200_000);
    let all = ClientCompaction {
        compact_off: true,
        ..max
    };
    assert_eq!(at(None, all, sonnet).limits.window, 400_000);
}

/// Read in 2.1.330's code and seen on the real client: without a compaction window set,
/// the client compacts claude-sonnet-4-5 and claude-haiku-4-5 (and a 1M window opted into
/// with `[1m]` on a 200k model) only when a request no longer fits; claude-opus-4-6 and the
/// native 1M models at the threshold. 2.1.14 compacts every model at the threshold.
#[test]
fn models_the_client_compacts_only_when_full() {
    let config = Config::default();
    let marker = Marker::new("s");
    let at = |version: &str, client: ClientCompaction, model: &str| {
        let gathered = Gathered {
            client,
            client_version: Some(version.to_string()),
            ..Gathered::default()
        };
        let r = resolve_with(&config, &marker, Some(model), None, None, &gathered);
        (r.limits.compact_at, r.limits.trigger_at, r.compact_source)
    };
    let reactive = |model: &str| CompactSource::Reactive(model.to_string());
    for model in [
        "claude-sonnet-4-5-20250929",
        "claude-haiku-4-5",
        "claude-opus-4-1",
    ] {
        let canonical = crate::client::reactive_model(model, None).unwrap();
        assert_eq!(
            at("2.1.330", ClientCompaction::default(), model),
            (196_000, 156_000, reactive(&canonical)),
            "{model}"
        );
        assert_eq!(
            at("2.1.14", ClientCompaction::default(), model).0,
            155_000,
            "{model}"
        );
        // 2.1.152 was the last to compact them at the threshold; 2.1.153 the first not to.
        assert_eq!(at("2.1.152", ClientCompaction::default(), model).0, 167_000);
        assert_eq!(at("2.1.153", ClientCompaction::default(), model).0, 196_000);
    }
    assert_eq!(
        at("2.1.330", ClientCompaction::default(), "claude-opus-4-6"),
        (167_000, 127_000, CompactSource::Window)
    );
    // 2.1.153 to 2.1.162 compacted it only when full too.
    assert_eq!(
        at("2.1.160", ClientCompaction::default(), "claude-opus-4-6").0,
        196_000
    );
    assert_eq!(
        at(
            "2.1.330",
            ClientCompaction::default(),
            "claude-opus-4-6[1m]"
        ),
        (996_000, 956_000, reactive("claude-opus-4-6"))
    );
    assert_eq!(
        at("2.1.330", ClientCompaction::default(), "claude-opus-5-5").0,
        967_000
    );
    // A compaction window set (the variable, a setting) makes it a threshold again.
    let var = ClientCompaction {
        window_var: Some(200_000),
        ..ClientCompaction::default()
    };
    assert_eq!(
        at("2.1.330", var, "claude-sonnet-4-5"),
        (167_000, 127_000, CompactSource::Window)
    );
    let setting = ClientCompaction {
        window_setting: Some((Some(150_000), "autoCompactWindow in x".into())),
        ..ClientCompaction::default()
    };
    assert_eq!(at("2.1.330", setting, "claude-haiku-4-5").0, 117_000);
    // "auto" is no window: the client's own rule.
    let auto = ClientCompaction {
        window_setting: Some((None, "autoCompactWindow in x".into())),
        ..ClientCompaction::default()
    };
    assert_eq!(at("2.1.330", auto, "claude-haiku-4-5").0, 196_000);
    // Auto-compaction off wins.
    let off = ClientCompaction {
        off: Some("DISABLE_AUTO_COMPACT".into()),
        ..ClientCompaction::default()
    };
    assert!(matches!(
        at("2.1.330", off, "claude-haiku-4-5").2,
        CompactSource::Off(_)
    ));
}

#[test]
fn learned_windows_round_trip_and_stay_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::new(dir.path().join("state"));
    assert!(learned(&paths).is_empty());
    learn(&paths, "claude-opus-5-5", 1_000_000).unwrap();
    learn(&paths, "", 5).unwrap();
    assert_eq!(
        learned(&paths),
        BTreeMap::from([("claude-opus-5-5".to_string(), 1_000_000)])
    );
    for i in 0..100 {
        learn(&paths, &format!("m{i}"), 200_000).unwrap();
    }
    assert_eq!(learned(&paths).len(), MAX_LEARNED);
}
