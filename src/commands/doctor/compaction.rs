//! The checks about Claude Code's auto-compaction: whether it is on, and the percent and window
//! overrides, in every form the client accepts; and the policy the thresholds are computed with.

use super::{finding, Context, Finding, Status};
use crate::client::{Origin, Reading, Window, AUTO_COMPACT_WINDOW};
use crate::config::Config;
use crate::facts::ClientCompaction;
use crate::marker::Marker;
use crate::marker::IDLE_COMPACTION_TOKENS;
use crate::usage::Limits;

/// Whether Claude Code compacts on its own at all.
pub fn auto_compaction(ctx: &Context) -> Vec<Finding> {
    vec![match ctx.client.auto_compact_off() {
        Some(origin) => {
            let stop = limits(ctx, 200_000).compact_at;
            let stop_1m = limits(ctx, 1_000_000).compact_at;
            finding(
                "autocompact",
                Status::Info,
                format!(
                    "auto-compaction is off ({origin}): nothing compacts by itself, and Claude Code stops accepting requests at its blocking limit ({} of 200k, {} of 1M: \"Context limit reached\") until you make room. The nudges come 40k and 15k before that point, ask the agent to save, and tell you what comes next: {}",
                    crate::usage::human(stop),
                    crate::usage::human(stop_1m),
                    if ctx.client.compact_off() {
                        "/clear (DISABLE_COMPACT turns /compact off too) starts fresh, and ctxguard brings the session's checkpoint back in full"
                    } else {
                        "/compact summarises in place; /clear starts fresh, and ctxguard brings the session's checkpoint back in full"
                    }
                ),
                None,
            )
        }
        None => finding(
            "autocompact",
            Status::Ok,
            "auto-compaction is on".into(),
            None,
        ),
    }]
    .into_iter()
    .chain(only_when_full(ctx))
    .collect()
}

/// The models this client compacts only when a request no longer fits the window (2.1.153 and
/// later, no compaction window set for them): what the nudge and the gauge do for them.
fn only_when_full(ctx: &Context) -> Option<Finding> {
    let version = match &ctx.claude {
        super::version::Client::Version(_, v) => Some(v.as_str()),
        _ => None,
    };
    if ctx.client.auto_compact_off().is_some()
        || crate::client::reactive_model("claude-sonnet-4-5", version).is_none()
    {
        return None;
    }
    let set = ClientCompaction::from_settings(&ctx.client);
    if set.window_var.is_some()
        || set
            .window_setting
            .as_ref()
            .is_some_and(|(w, _)| w.is_some())
    {
        return None;
    }
    Some(finding(
        "autocompact",
        Status::Info,
        format!(
            "Claude Code{} compacts claude-sonnet-4-5, claude-haiku-4-5, claude-opus-4-5 and older \
             models (and a [1m] window on claude-sonnet/opus-4-6) only when a request no longer \
             fits the window, not at a threshold: for them the nudges come 40k and 15k before \
             that point (4k before the window's end), and the status line shows no countdown to a \
             compaction (`full in`); \
             a compaction window (autoCompactWindow, CLAUDE_CODE_AUTO_COMPACT_WINDOW) makes it \
             compact them at the threshold",
            version.map(|v| format!(" {v}")).unwrap_or_default()
        ),
        None,
    ))
}

/// Where the nudge sends memories: the client's auto memory folder, or ctxguard's own file when
/// auto memory is off (and what turned it off).
pub fn auto_memory(ctx: &Context) -> Vec<Finding> {
    vec![match ctx.client.auto_memory_off() {
        Some(origin) => finding(
            "memory",
            Status::Info,
            format!("Claude Code's auto memory is off ({origin}): the nudges name ctxguard's own memory file (the first of memory_files), which every recovery block shows"),
            None,
        ),
        None => finding(
            "memory",
            Status::Info,
            "Claude Code's auto memory is on: the nudges ask to save in its memory folder, in its format (a file per memory and a pointer in MEMORY.md)".into(),
            None,
        ),
    }]
}

/// The client's window and output variables, when set.
pub fn window_variables(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for (name, meaning) in [
        (
            crate::client::MAX_CONTEXT_TOKENS,
            "the window of a model the client does not know (of every model with DISABLE_COMPACT)",
        ),
        (
            crate::client::MAX_OUTPUT_TOKENS,
            "on clients 2.1.0 to 2.1.14, reserved in full before auto-compaction (the point moves earlier by it)",
        ),
    ] {
        if let Some(raw) = ctx.client.var(name) {
            out.push(match crate::client::window_tokens(&raw) {
                Some(_) => finding("window", Status::Info, format!("{name}={raw}: {meaning}"), None),
                None => finding(
                    "window",
                    Status::Warn,
                    format!("{name}={raw:?} is not a token count; the client ignores it"),
                    Some("use a whole number of tokens"),
                ),
            });
        }
    }
    out
}

/// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`, if set: what it does, or that it is unusable.
pub fn autocompact_pct(ctx: &Context) -> Vec<Finding> {
    let Some(pct) = ctx.client.autocompact_pct() else {
        return Vec::new();
    };
    vec![match pct.value {
        Some(p) => finding(
            "autocompact",
            Status::Info,
            format!("{}={}: compaction comes at {p}% of the window (if earlier than usual); the thresholds below include it", pct.origin, pct.raw),
            None,
        ),
        None => finding(
            "autocompact",
            Status::Warn,
            format!("{}={:?} is not a percent", pct.origin, pct.raw),
            Some("use a number from 1 to 100"),
        ),
    }]
}

/// The auto-compaction window, in each form set: the variable, the top-level setting, and every
/// `modelSettings` entry (what `/autocompact` writes), each with where it came from.
pub fn autocompact_window(ctx: &Context) -> Vec<Finding> {
    // Read as the client reads it: `200k` and `1m` too, anything below 100k raised to 100k.
    let var = ctx.client.compact_window_var().map(|r| Reading {
        origin: r.origin,
        raw: r.raw,
        value: r.value.map(Window::Tokens),
    });
    let top = ctx.client.compact_window();
    let overridden = var.as_ref().is_some_and(|r| r.value.is_some());
    let mut out = Vec::new();
    let mut say = |reading: &Reading<Window>, whom: &str| {
        let origin = &reading.origin;
        let unused = if overridden && !matches!(origin, Origin::Variable(_)) {
            format!(", but {AUTO_COMPACT_WINDOW} is set and wins")
        } else {
            String::new()
        };
        out.push(match reading.value {
            Some(Window::Tokens(w)) => finding(
                "autocompact",
                Status::Info,
                format!(
                    "the auto-compact window {whom}is {w} tokens ({origin}{}): compaction comes at about {} on a larger window{unused}; the thresholds below include it",
                    if reading.raw.trim() == w.to_string() { String::new() } else { format!(", set as {:?}", reading.raw) },
                    crate::usage::human(w.saturating_sub(33_000))
                ),
                None,
            ),
            Some(Window::Auto) => finding(
                "autocompact",
                Status::Info,
                format!("the auto-compact window {whom}is \"auto\" ({origin}): the model's own window{unused}"),
                None,
            ),
            None => finding(
                "autocompact",
                Status::Warn,
                format!("the auto-compact window {whom}{} ({origin}) is not {}", match origin {
                    Origin::Variable(_) => format!("{:?}", reading.raw),
                    Origin::Setting { .. } => reading.raw.clone(),
                }, match origin {
                    Origin::Variable(_) => "a token count",
                    Origin::Setting { .. } => "a token count or \"auto\"",
                }),
                Some(match origin {
                    Origin::Variable(_) => "use a whole number of tokens",
                    Origin::Setting { .. } => "use a whole number of tokens (at least 100000) or \"auto\"",
                }),
            ),
        });
    };
    if let Some(r) = &var {
        say(r, "");
    }
    if let Some(r) = &top {
        say(r, "");
    }
    // As the client merges the files (an entry under a file with a top-level value is gone);
    // a model named again lower down is the first one's.
    let mut named: Vec<String> = Vec::new();
    for (model, r) in ctx.client.model_compact_windows() {
        if named.contains(&model) {
            continue;
        }
        named.push(model.clone());
        let model = crate::text::cut(&crate::text::sanitize(&model, true), 80);
        say(
            &r,
            &format!("for {model} (and its dated, [1m], Bedrock and Vertex ids) "),
        );
    }
    out
}

/// Idle compaction (`idleCompaction`, on by default): the client compacts an attended session of
/// 200k tokens or more (`CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS`) while it is idle, whatever the
/// thresholds say; the `Stop` hook asks the agent to save first.
pub fn idle_compaction(ctx: &Context) -> Vec<Finding> {
    let from = ctx.client.idle_compaction(IDLE_COMPACTION_TOKENS);
    let why_off = if ctx.client.auto_compact_off().is_some() {
        "auto-compaction is off"
    } else {
        "idleCompaction: false"
    };
    vec![match from {
        None => finding(
            "idle",
            Status::Info,
            format!("idle compaction is off ({why_off})"),
            None,
        ),
        Some(from) => {
            let set = ctx
                .client
                .var(crate::client::IDLE_COMPACT_MIN_TOKENS)
                .map_or("the default".to_string(), |v| {
                    format!("{}={v}", crate::client::IDLE_COMPACT_MIN_TOKENS)
                });
            finding(
                "idle",
                Status::Info,
                format!(
                    "idle compaction is on: an attended session with {from} tokens or more ({set}) \
                     may be compacted while it waits for you, before the thresholds below; the \
                     status line marks such a session `idle≥{}`, the Stop hook asks the agent to \
                     save as it ends its turn (idle_nudge), and the checkpoint is still written",
                    crate::usage::human(from)
                ),
                None,
            )
        }
    }]
}

/// Where the hooks take the window and the compaction point from, and the windows learned so far.
pub fn sources(ctx: &Context) -> Vec<Finding> {
    let learned = ctx
        .paths
        .as_ref()
        .map(crate::facts::learned)
        .unwrap_or_default();
    let learned = if learned.is_empty() {
        "none yet".to_string()
    } else {
        learned
            .iter()
            .map(|(m, w)| {
                format!(
                    "{} {}",
                    crate::text::cut(&crate::text::sanitize(m, true), 80),
                    crate::usage::human(*w)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![finding(
        "window",
        Status::Info,
        format!(
            "each hook takes the window from, first match: model_windows and window_tokens in the \
             config, CLAUDE_CODE_MAX_CONTEXT_TOKENS (a model the client does not know), the status \
             line's report, windows learned from status lines ({learned}), the model id, usage \
             over 200k; and the compaction point from CLAUDE_CODE_AUTO_COMPACT_WINDOW, the running \
             client's --autocompact argument, modelSettings.<model>.autoCompactWindow, \
             autoCompactWindow, the client's version (2.1.14 and older reserve more), and where the \
             session was seen auto-compacting. `ctxguard status --session ID` shows what decided \
             for a session"
        ),
        None,
    )]
}

/// The limits on a `window` for a model named nowhere in `modelSettings`, as the hooks resolve
/// them ([`crate::facts::resolve_with`]): ctxguard's configuration (the defaults if it does not
/// load) with the window forced, and the client's settings (the percent, the window variable or
/// top-level setting, compaction off).
pub fn limits(ctx: &Context, window: u64) -> Limits {
    let config = Config {
        window_tokens: Some(window),
        ..match &ctx.config {
            Some(Ok(loaded)) => loaded.config.clone(),
            _ => Config::default(),
        }
    };
    let gathered = crate::facts::Gathered {
        client: ClientCompaction::from_settings(&ctx.client),
        ..crate::facts::Gathered::default()
    };
    crate::facts::resolve_with(&config, &Marker::default(), None, None, None, &gathered).limits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{Scope, AUTOCOMPACT_PCT, AUTO_COMPACT_WINDOW};
    use crate::commands::doctor::tests::{ctx, ctx_env, lines};

    #[test]
    fn auto_compaction_on_or_off() {
        let on = lines(&auto_compaction(&ctx(&[])));
        assert_eq!(on[0], "ok: auto-compaction is on");
        assert!(
            on[1].contains("compacts claude-sonnet-4-5")
                && on[1].contains("only when a request no longer fits"),
            "{on:?}"
        );
        // A compaction window set: every model at the threshold, nothing to say.
        let set = ctx(&[(Scope::User, r#"{"autoCompactWindow": 200000}"#)]);
        assert_eq!(lines(&auto_compaction(&set)).len(), 1);
        let off = ctx(&[(Scope::Project, r#"{"autoCompactEnabled": false}"#)]);
        // The user's choice, stated as a fact with what it means: no warning, no fix to undo.
        let said = lines(&auto_compaction(&off));
        assert!(
            said[0].starts_with(
                "info: auto-compaction is off (autoCompactEnabled in /p/.claude/settings.json): \
                 nothing compacts by itself, and Claude Code stops accepting requests at its \
                 blocking limit (177k of 200k, 977k of 1M"
            ),
            "{said:?}"
        );
        assert!(said[0].contains("/clear starts fresh"), "{said:?}");
        assert!(!said[0].contains("fix:"), "{said:?}");
        let off = ctx(&[(Scope::User, r#"{"env": {"DISABLE_AUTO_COMPACT": "1"}}"#)]);
        assert!(lines(&auto_compaction(&off))[0]
            .starts_with("info: auto-compaction is off (DISABLE_AUTO_COMPACT)"));
    }

    #[test]
    fn the_percent_override() {
        assert!(autocompact_pct(&ctx(&[])).is_empty());
        let set = ctx(&[(
            Scope::User,
            r#"{"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}}"#,
        )]);
        assert!(lines(&autocompact_pct(&set))[0]
            .starts_with("info: CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=50: compaction comes at 50%"));
        assert_eq!(limits(&set, 200_000).compact_at, 90_000);
        let bad = ctx_env(&[], &[(AUTOCOMPACT_PCT, "most")]);
        assert_eq!(
            lines(&autocompact_pct(&bad)),
            ["warn: CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=\"most\" is not a percent"]
        );
        assert_eq!(limits(&bad, 200_000).compact_at, 167_000);
    }

    #[test]
    fn idle_compaction_and_the_sources_are_explained() {
        let on = lines(&idle_compaction(&ctx(&[])));
        assert!(
            on[0].starts_with(
                "info: idle compaction is on: an attended session with 200000 tokens or more (the default)"
            ),
            "{on:?}"
        );
        let raised = lines(&idle_compaction(&ctx_env(
            &[],
            &[("CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS", "300000")],
        )));
        assert!(
            raised[0]
                .contains("300000 tokens or more (CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS=300000)"),
            "{raised:?}"
        );
        let no_auto = lines(&idle_compaction(&ctx_env(
            &[],
            &[("DISABLE_AUTO_COMPACT", "1")],
        )));
        assert_eq!(
            no_auto,
            ["info: idle compaction is off (auto-compaction is off)"]
        );
        // Where the nudge sends memories, and why.
        assert!(lines(&auto_memory(&ctx(&[])))[0].contains("auto memory is on"));
        let off = lines(&auto_memory(&ctx_env(
            &[],
            &[("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")],
        )));
        assert!(
            off[0].starts_with(
                "info: Claude Code's auto memory is off (CLAUDE_CODE_DISABLE_AUTO_MEMORY)"
            ),
            "{off:?}"
        );
        let vars = lines(&window_variables(&ctx_env(
            &[],
            &[
                ("CLAUDE_CODE_MAX_CONTEXT_TOKENS", "400000"),
                ("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "big"),
            ],
        )));
        assert!(
            vars[0].starts_with("info: CLAUDE_CODE_MAX_CONTEXT_TOKENS=400000:"),
            "{vars:?}"
        );
        assert!(
            vars[1].starts_with("warn: CLAUDE_CODE_MAX_OUTPUT_TOKENS=\"big\""),
            "{vars:?}"
        );
        let off = lines(&idle_compaction(&ctx(&[(
            Scope::User,
            r#"{"idleCompaction": false}"#,
        )])));
        assert_eq!(
            off,
            ["info: idle compaction is off (idleCompaction: false)"]
        );
        let sources = lines(&sources(&ctx(&[])));
        assert!(sources[0].contains("--autocompact"), "{sources:?}");
    }

    #[test]
    fn the_window_in_every_form() {
        let window = |json: &str| {
            let c = ctx(&[(Scope::User, &format!(r#"{{"autoCompactWindow": {json}}}"#))]);
            (
                lines(&autocompact_window(&c)).remove(0),
                limits(&c, 1_000_000).compact_at,
            )
        };
        let (line, at) = window("400000");
        assert!(
            line.starts_with("info: the auto-compact window is 400000 tokens (autoCompactWindow in /home/u/.claude/settings.json): compaction comes at about 367k"),
            "{line}"
        );
        assert_eq!(at, 367_000);
        let (line, at) = window(r#""auto""#);
        assert!(
            line.starts_with("info: the auto-compact window is \"auto\" (autoCompactWindow in /home/u/.claude/settings.json)"),
            "{line}"
        );
        assert_eq!(at, 967_000);
        let (line, at) = window(r#""lots""#);
        assert!(
            line.starts_with("warn: the auto-compact window \"lots\" (autoCompactWindow in"),
            "{line}"
        );
        assert_eq!(at, 967_000);
        // A map is not a form the client knows.
        let (line, _) = window(r#"{"claude-opus-5-5": 400000}"#);
        assert!(line.starts_with("warn: "), "{line}");

        // modelSettings, as /autocompact writes it: named with its model and file.
        let per_model = ctx(&[(
            Scope::Project,
            r#"{"modelSettings": {"claude-opus-5-5": {"autoCompactWindow": 300000}}}"#,
        )]);
        assert_eq!(
            lines(&autocompact_window(&per_model)),
            ["info: the auto-compact window for claude-opus-5-5 (and its dated, [1m], Bedrock and Vertex ids) is 300000 tokens (modelSettings.claude-opus-5-5.autoCompactWindow in /p/.claude/settings.json): compaction comes at about 267k on a larger window; the thresholds below include it"]
        );

        // A higher file's top-level value drops the per-model entries of the files below it, as
        // the client merges them and the hooks apply them: doctor lists what applies.
        let dropped = ctx(&[
            (
                Scope::User,
                r#"{"modelSettings": {"claude-opus-5-5": {"autoCompactWindow": 300000}}}"#,
            ),
            (Scope::Project, r#"{"autoCompactWindow": 400000}"#),
        ]);
        let found = lines(&autocompact_window(&dropped));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("is 400000 tokens"), "{found:?}");
        assert_eq!(limits(&dropped, 1_000_000).compact_at, 367_000);
        // Above the top-level value, an entry applies, and is listed once (the higher file's).
        let kept = ctx(&[
            (
                Scope::User,
                r#"{"modelSettings": {"claude-opus-5-5": {"autoCompactWindow": 250000}}}"#,
            ),
            (
                Scope::Project,
                r#"{"autoCompactWindow": 400000, "modelSettings": {"claude-opus-5-5": {"autoCompactWindow": 300000}}}"#,
            ),
        ]);
        let found = lines(&autocompact_window(&kept));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[1].contains("for claude-opus-5-5") && found[1].contains("is 300000 tokens"),
            "{found:?}"
        );

        let var = ctx_env(&[], &[(AUTO_COMPACT_WINDOW, "100000")]);
        assert_eq!(limits(&var, 1_000_000).compact_at, 67_000);
        // As the client reads it, and as the thresholds use it.
        for (raw, line) in [
            ("200k", "is 200000 tokens (CLAUDE_CODE_AUTO_COMPACT_WINDOW, set as \"200k\"): compaction comes at about 167k"),
            ("50000", "is 100000 tokens (CLAUDE_CODE_AUTO_COMPACT_WINDOW, set as \"50000\"): compaction comes at about 67k"),
        ] {
            let c = ctx_env(&[], &[(AUTO_COMPACT_WINDOW, raw)]);
            let found = lines(&autocompact_window(&c)).remove(0);
            assert!(found.contains(line), "{found}");
            assert_eq!(
                limits(&c, 1_000_000).compact_at,
                if raw == "200k" { 167_000 } else { 67_000 }
            );
        }
        let bad = ctx_env(&[], &[(AUTO_COMPACT_WINDOW, "auto")]);
        assert_eq!(
            lines(&autocompact_window(&bad)),
            ["warn: the auto-compact window \"auto\" (CLAUDE_CODE_AUTO_COMPACT_WINDOW) is not a token count"]
        );
        assert!(autocompact_window(&ctx(&[])).is_empty());
    }

    #[test]
    fn with_compaction_off_the_thresholds_are_the_clients_blocking_limit() {
        let off = ctx_env(&[], &[("DISABLE_AUTO_COMPACT", "1")]);
        let l = limits(&off, 200_000);
        assert_eq!(
            (l.trigger_at, l.critical_at, l.compact_at),
            (137_000, Some(162_000), 177_000)
        );
        assert_eq!(limits(&off, 1_000_000).compact_at, 977_000);
        // A smaller output limit moves it, and the variable sets it.
        let small = ctx_env(
            &[],
            &[
                ("DISABLE_AUTO_COMPACT", "1"),
                ("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "8000"),
            ],
        );
        assert_eq!(limits(&small, 200_000).compact_at, 189_000);
        let set = ctx_env(
            &[],
            &[
                ("DISABLE_AUTO_COMPACT", "1"),
                ("CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE", "150000"),
            ],
        );
        assert_eq!(limits(&set, 200_000).compact_at, 150_000);
    }
}
