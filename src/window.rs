//! Which context window a session has, and where its client compacts, from every place the
//! client takes them. Pure rules over facts the callers gather; every choice says where it came
//! from, so `status`, `usage` and `doctor` can show it.
//!
//! The window, first match wins:
//! 1. `model_windows` in the config, for this model;
//! 2. `window_tokens` in the config;
//! 3. `CLAUDE_CODE_MAX_CONTEXT_TOKENS`, for a model the client does not know (for every model
//!    with `DISABLE_COMPACT`), as the client applies it;
//! 4. what the status line reported for this session (unless usage already exceeds it: some
//!    client versions report 200k for 1M sessions);
//! 5. what status lines reported for this model before (learned, kept in the state dir);
//! 6. the model id: a table of known ids, and the `[1m]` suffix (kept by `SessionStart`'s `model`,
//!    dropped by the transcript's replies: [`judged_model`]);
//! 7. usage over 200k proves the window is at least 1M;
//! 8. 200k.
//!
//! The compaction window (what the client computes its compaction point against), first match:
//! `CLAUDE_CODE_AUTO_COMPACT_WINDOW`, the running client's `--autocompact N`, then the settings:
//! `modelSettings.<model>.autoCompactWindow` for this model, else the top-level
//! `autoCompactWindow` (managed, local, project, user settings in that order). Never above the
//! window. Then, when this session's client was seen auto-compacting on the same window, the
//! point is calibrated on it ([`limits`]). With auto-compaction off, the point is where the
//! client stops accepting requests: its blocking limit, the window less the output reservation
//! less 3k (177k of 200k on 2.1.332), whatever compaction window is set.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::usage::{Limits, Policy, DEFAULT_WINDOW, LARGE_WINDOW};

/// Where the window came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    ConfigModel,
    Config,
    /// `CLAUDE_CODE_MAX_CONTEXT_TOKENS`.
    ClientMax,
    Reported,
    /// Codex's `model_context_window`, in its rollout.
    Rollout,
    /// 95% of `model_context_window` in Codex's `config.toml` (the share Codex counts against).
    CodexConfig,
    /// The window of Codex's own models (272k), before the rollout reports one.
    CodexDefault,
    /// The model's `contextWindow`, as pi's extension reported it.
    PiReported,
    /// The model's `contextWindow` in pi's `models.json` (128k for a custom model without one).
    PiModels,
    /// The window pi's extension reported for this model in an earlier call.
    PiLearned,
    Learned,
    Model,
    Usage,
    Default,
}

impl WindowSource {
    pub fn describe(self) -> &'static str {
        match self {
            WindowSource::ConfigModel => "model_windows in the config",
            WindowSource::Config => "window_tokens in the config",
            WindowSource::ClientMax => "CLAUDE_CODE_MAX_CONTEXT_TOKENS",
            WindowSource::Reported => "reported by the status line",
            WindowSource::Rollout => "reported by Codex in its rollout (model_context_window)",
            WindowSource::CodexConfig => {
                "95% of model_context_window in Codex's config.toml, the share Codex counts against"
            }
            WindowSource::CodexDefault => {
                "the window of Codex's own models (272k), until its rollout reports one"
            }
            WindowSource::PiReported => "the model's contextWindow, reported by pi",
            WindowSource::PiLearned => "reported by pi for this model earlier",
            WindowSource::PiModels => {
                "the model's contextWindow in pi's models.json (128k when a custom model sets none)"
            }
            WindowSource::Learned => "learned from an earlier status line for this model",
            WindowSource::Model => "known for this model",
            WindowSource::Usage => "usage above 200k",
            WindowSource::Default => "default (nothing better known)",
        }
    }
}

/// Where the compaction window came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactSource {
    /// The model's window, with the client's default buffer.
    Window,
    /// `--autocompact N` on the running client's command line.
    Flag,
    /// `CLAUDE_CODE_AUTO_COMPACT_WINDOW`.
    Env,
    /// A setting, named with its file (`autoCompactWindow in FILE`,
    /// `modelSettings.<model>.autoCompactWindow in FILE`).
    Setting(String),
    /// This session's client was seen auto-compacting there.
    Observed,
    /// Auto-compaction is off (what turned it off): the point is where the client stops
    /// accepting requests, its blocking limit (23k before the window's end on 2.1.332).
    Off(String),
    /// The client does not compact this model at a threshold (the model, as the client names
    /// it): it sends every request, and compacts when the API refuses one as too long for the
    /// window (its "reactive" compaction). The point is where a request overflows, 4k before
    /// the window's end.
    Reactive(String),
    /// Codex's own default: 90% of the model's window.
    CodexDefault,
    /// pi's: the window less `compaction.reserveTokens` (where it was set, or pi's default).
    Pi(String),
}

impl CompactSource {
    pub fn describe(&self) -> String {
        match self {
            CompactSource::Window => "the window".into(),
            CompactSource::Flag => "the client's --autocompact argument".into(),
            CompactSource::Env => "CLAUDE_CODE_AUTO_COMPACT_WINDOW".into(),
            CompactSource::Setting(origin) => origin.clone(),
            CompactSource::Observed => "where this session last auto-compacted".into(),
            CompactSource::Off(origin) => format!(
                "where the client stops accepting requests (its blocking limit): \
                 auto-compaction is off ({origin})"
            ),
            CompactSource::Reactive(model) => format!(
                "4k before the window's end, where a request no longer fits even with the \
                 smallest reply: Claude Code compacts {model} only then, not at a threshold"
            ),
            CompactSource::CodexDefault => "90% of the model's window (Codex's default)".into(),
            CompactSource::Pi(reserve) => format!("the window less pi's reserveTokens ({reserve})"),
        }
    }

    /// How the session's context ends: compacted at a threshold (a countdown to it is true),
    /// compacted only when the window is full, or never compacted.
    pub fn ending(source: Option<&CompactSource>) -> Ending {
        match source {
            Some(CompactSource::Off(_)) => Ending::Full,
            Some(CompactSource::Reactive(_)) => Ending::CompactsWhenFull,
            _ => Ending::Threshold,
        }
    }
}

/// How a session's context ends, as the client decides: what the gauge and the nudge may say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Auto-compaction at `compact_at`, before the window is full.
    Threshold,
    /// Compaction only when a request no longer fits the window (`compact_at` is where it
    /// overflows, [`crate::usage::OVERFLOW_MARGIN`] before its end).
    CompactsWhenFull,
    /// No auto-compaction: the client stops accepting requests at its blocking limit
    /// (`compact_at`), until the user runs `/compact` or `/clear`.
    Full,
}

/// What is known about a session's window.
#[derive(Debug, Clone, Default)]
pub struct WindowFacts<'a> {
    pub config_models: Option<&'a BTreeMap<String, u64>>,
    pub config: Option<u64>,
    /// `CLAUDE_CODE_MAX_CONTEXT_TOKENS`, when it applies to this model (the client gives it to
    /// models it does not know, and to every model with `DISABLE_COMPACT`).
    pub client_max: Option<u64>,
    pub model: Option<&'a str>,
    pub reported: Option<u64>,
    pub learned: Option<u64>,
    /// The tokens in context now, if known.
    pub tokens: Option<u64>,
}

/// A window and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub tokens: u64,
    pub source: WindowSource,
}

/// The window a model id is known to have: the `[1m]` suffix, a table of families.
pub fn known(model: &str) -> Option<u64> {
    let id = model.trim().to_ascii_lowercase();
    if id.ends_with("[1m]") {
        return Some(LARGE_WINDOW);
    }
    let rest = id.strip_prefix("claude-")?;
    // `claude-3-5-sonnet-...`, `claude-3-opus-...`: the 3.x generation had 200k.
    if rest.starts_with("3-") || rest.starts_with('2') || rest.starts_with("instant") {
        return Some(DEFAULT_WINDOW);
    }
    // `claude-<family>-<major>[-<minor>][-<date>]`.
    let mut parts = rest.split('-');
    let family = parts.next()?;
    if !matches!(family, "opus" | "sonnet" | "haiku") {
        return None;
    }
    let major: u32 = parts.next()?.parse().ok()?;
    Some(if major >= 5 {
        LARGE_WINDOW
    } else {
        DEFAULT_WINDOW
    })
}

/// The model id to judge the window by: the transcript's `message.model` names the model
/// without the `[1m]` suffix the client was started with (`--model sonnet[1m]`), which only
/// `SessionStart`'s `model` and the status line carry. A hint with the suffix for the same model
/// wins; otherwise the model seen in the transcript does.
pub fn judged_model<'a>(seen: Option<&'a str>, hint: Option<&'a str>) -> Option<&'a str> {
    // The same model by the client's own rule for model ids ([`crate::client::same_model`]):
    // dated, Bedrock and Vertex spellings of it too, never a mere prefix of another.
    let hint_1m = |h: &str, m: &str| {
        h.trim().to_ascii_lowercase().ends_with("[1m]") && crate::client::same_model(h, m)
    };
    match (seen, hint) {
        (Some(m), Some(h)) if hint_1m(h, m) => Some(h),
        (m, h) => m.or(h),
    }
}

/// The session's window: see the module documentation for the order.
pub fn resolve(f: &WindowFacts) -> Window {
    let fits = |w: u64| f.tokens.is_none_or(|t| t <= w);
    let pick = |tokens, source| Window { tokens, source };
    if let (Some(models), Some(model)) = (f.config_models, f.model) {
        if let Some(w) = models.get(model).filter(|w| **w > 0) {
            return pick(*w, WindowSource::ConfigModel);
        }
    }
    if let Some(w) = f.config.filter(|w| *w > 0) {
        return pick(w, WindowSource::Config);
    }
    if let Some(w) = f.client_max.filter(|w| *w > 0) {
        return pick(w, WindowSource::ClientMax);
    }
    if let Some(w) = f.reported.filter(|w| *w > 0 && fits(*w)) {
        return pick(w, WindowSource::Reported);
    }
    if let Some(w) = f.learned.filter(|w| *w > 0 && fits(*w)) {
        return pick(w, WindowSource::Learned);
    }
    if let Some(w) = f.model.and_then(known).filter(|w| fits(*w)) {
        return pick(w, WindowSource::Model);
    }
    match f.tokens {
        Some(t) if t > DEFAULT_WINDOW => pick(LARGE_WINDOW.max(t), WindowSource::Usage),
        _ => pick(DEFAULT_WINDOW, WindowSource::Default),
    }
}

/// What is known about where the client compacts.
#[derive(Debug, Clone, Default)]
pub struct CompactFacts {
    /// The compaction window from the client's variable, `--autocompact` or settings, already
    /// chosen for the model (see `facts::ClientCompaction::window_for`).
    pub setting: Option<(u64, CompactSource)>,
    /// What turned auto-compaction off, if anything.
    pub off: Option<String>,
    /// The model, when the client does not compact it at a threshold unless a compaction
    /// window is set for it ([`crate::client::reactive_model`]).
    pub reactive: Option<String>,
    /// This session's last auto-compaction: the boundary's `preTokens`, and the window then.
    pub observed: Option<(u64, u64)>,
    /// The highest reading of this session that did not compact, and the window then.
    pub uncompacted: Option<(u64, u64)>,
    /// With auto-compaction off, how far before the window's end the client stops accepting
    /// requests (its output reservation and [`crate::usage::BLOCKING_MARGIN`]: 23k on 2.1.330
    /// and 2.1.332, 3k on 2.1.14)...
    pub stop_buffer: u64,
    /// ...or where, when `CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE` says.
    pub stop_override: Option<u64>,
}

/// Limits for `window`, with the compaction window from `facts`, and where it came from.
///
/// With auto-compaction off nothing compacts: the point that matters is where the client stops
/// accepting requests (its blocking limit, `stop_buffer` before the window's end), and the
/// session can go no further until `/compact` or `/clear`.
///
/// A seen auto-compaction calibrates the point: the client's threshold lies above the highest
/// reading that did not compact and at or below the boundary's `preTokens` (exact). The computed
/// point is kept when it lies there, else moved to the nearest end of that interval.
pub fn limits(window: u64, policy: &Policy, facts: &CompactFacts) -> (Limits, CompactSource) {
    if let Some(off) = &facts.off {
        // The client's blocking limit is of the model's window: the compaction window and the
        // percent apply only to auto-compaction.
        let mut policy = policy.clone();
        policy.autocompact_window = None;
        policy.autocompact_pct = None;
        policy.compact_buffer_tokens = facts.stop_buffer;
        let mut limits = Limits::compute(window, &policy);
        if let Some(at) = facts.stop_override {
            limits = limits.compacting_at(at.min(window), &policy);
        }
        return (limits, CompactSource::Off(off.clone()));
    }
    // A compaction window set for the model (a variable, a flag, a setting) makes the client
    // compact at its threshold whatever the model; without one, some models compact only when
    // the window is full.
    let reactive = facts
        .reactive
        .clone()
        .filter(|_| facts.setting.as_ref().is_none_or(|(w, _)| *w == 0));
    let chosen = facts.setting.clone().filter(|(w, _)| *w > 0 && *w < window);
    let mut policy = policy.clone();
    policy.autocompact_window = chosen.as_ref().map(|(w, _)| *w);
    let mut source = chosen.map_or(CompactSource::Window, |(_, s)| s);
    if let Some(model) = reactive {
        policy.autocompact_window = None;
        policy.autocompact_pct = None;
        // No threshold: the point is where a request no longer fits, whatever `max_tokens`.
        policy.compact_buffer_tokens = crate::usage::OVERFLOW_MARGIN;
        source = CompactSource::Reactive(model);
    }
    let mut limits = Limits::compute(window, &policy);
    if let Some((pre, seen_window)) = facts.observed {
        if seen_window == window && pre > 0 {
            // Above the highest reading that did not compact (when consistent with `pre`).
            let floor = facts
                .uncompacted
                .filter(|(t, w)| *w == window && *t < pre)
                .map_or(0, |(t, _)| t + 1);
            let at = limits.compact_at.clamp(floor, pre);
            // Compacting when the window is full, the client refused a request near its end:
            // that is no threshold. Only a compaction clearly before the end proves one.
            let near_the_end = matches!(source, CompactSource::Reactive(_))
                && at + crate::usage::AUTOCOMPACT_MARGIN > window;
            if at != limits.compact_at && !near_the_end {
                limits = limits.compacting_at(at, &policy);
                source = CompactSource::Observed;
            }
        }
    }
    (limits, source)
}

mod clients;

pub use clients::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1m_hint_for_the_same_model_wins_over_the_transcripts_id() {
        let seen = Some("claude-sonnet-4-5-20250929");
        assert_eq!(
            judged_model(seen, Some("claude-sonnet-4-5[1m]")),
            Some("claude-sonnet-4-5[1m]")
        );
        // Another model, or no suffix: what the transcript says.
        assert_eq!(judged_model(seen, Some("claude-opus-4-6[1m]")), seen);
        assert_eq!(judged_model(seen, Some("claude-sonnet-4-5")), seen);
        assert_eq!(judged_model(seen, Some("[1m]")), seen);
        // A prefix of another model is not that model.
        for loose in [
            "claude-sonnet-4[1m]",
            "claude-[1m]",
            "c[1m]",
            "claude-sonnet-4-5-2[1m]",
        ] {
            assert_eq!(judged_model(seen, Some(loose)), seen, "{loose}");
        }
        assert_eq!(
            judged_model(Some("claude-sonnet-4-5"), Some("claude-sonnet-4-5[1m]")),
            Some("claude-sonnet-4-5[1m]")
        );
        // The client's spellings of the same model: the hint with its date, the transcript
        // with Bedrock's or Vertex's (one parser of model ids, the client's rule).
        assert_eq!(
            judged_model(
                Some("claude-sonnet-4-5"),
                Some("claude-sonnet-4-5-20250929[1M]")
            ),
            Some("claude-sonnet-4-5-20250929[1M]")
        );
        for spelled in [
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "claude-sonnet-4-5@20250929",
        ] {
            assert_eq!(
                judged_model(Some(spelled), Some("claude-sonnet-4-5[1m]")),
                Some("claude-sonnet-4-5[1m]"),
                "{spelled}"
            );
        }
        // Any model the client runs with `[1m]`, not only a `claude-` one.
        assert_eq!(
            judged_model(Some("acme-large"), Some("acme-large[1m]")),
            Some("acme-large[1m]")
        );
        assert_eq!(judged_model(None, Some("x")), Some("x"));
        assert_eq!(judged_model(seen, None), seen);
    }

    #[test]
    fn known_model_ids() {
        for (id, w) in [
            ("claude-opus-5-5", Some(LARGE_WINDOW)),
            ("claude-sonnet-5", Some(LARGE_WINDOW)),
            ("claude-opus-6-0-20270101", Some(LARGE_WINDOW)),
            ("claude-sonnet-4-5-20250929", Some(DEFAULT_WINDOW)),
            ("claude-sonnet-4-5[1m]", Some(LARGE_WINDOW)),
            ("claude-opus-4-1", Some(DEFAULT_WINDOW)),
            ("claude-haiku-4-5", Some(DEFAULT_WINDOW)),
            ("claude-3-5-sonnet-20241022", Some(DEFAULT_WINDOW)),
            ("claude-3-opus-20240229", Some(DEFAULT_WINDOW)),
            ("gpt-5", None),
            ("claude-newfamily-9", None),
            ("<synthetic>", None),
            ("", None),
        ] {
            assert_eq!(known(id), w, "{id}");
        }
    }

    #[test]
    fn the_window_follows_the_rules_in_order() {
        let models = BTreeMap::from([("claude-opus-5-5".to_string(), 500_000)]);
        let mut f = WindowFacts {
            config_models: Some(&models),
            config: Some(300_000),
            client_max: Some(600_000),
            model: Some("claude-opus-5-5"),
            reported: Some(200_000),
            learned: Some(400_000),
            tokens: Some(100_000),
        };
        let source = |f: &WindowFacts| (resolve(f).tokens, resolve(f).source);
        assert_eq!(source(&f), (500_000, WindowSource::ConfigModel));
        f.config_models = None;
        assert_eq!(source(&f), (300_000, WindowSource::Config));
        f.config = None;
        assert_eq!(source(&f), (600_000, WindowSource::ClientMax));
        f.client_max = None;
        assert_eq!(source(&f), (200_000, WindowSource::Reported));
        f.reported = None;
        assert_eq!(source(&f), (400_000, WindowSource::Learned));
        f.learned = None;
        assert_eq!(source(&f), (1_000_000, WindowSource::Model));
        f.model = Some("something-else");
        assert_eq!(source(&f), (200_000, WindowSource::Default));
        f.tokens = Some(250_000);
        assert_eq!(source(&f), (1_000_000, WindowSource::Usage));
    }

    #[test]
    fn a_reported_window_smaller_than_usage_is_wrong() {
        let f = WindowFacts {
            model: Some("claude-sonnet-4-5"),
            reported: Some(200_000),
            tokens: Some(350_000),
            ..WindowFacts::default()
        };
        // 200k reported and known for the model, but 350k are in context: at least 1M.
        assert_eq!(
            resolve(&f),
            Window {
                tokens: 1_000_000,
                source: WindowSource::Usage
            }
        );
    }

    #[test]
    fn a_1m_model_is_never_200k_without_a_status_line() {
        let f = WindowFacts {
            model: Some("claude-opus-5-5"),
            tokens: Some(151_000),
            ..WindowFacts::default()
        };
        assert_eq!(resolve(&f).tokens, 1_000_000);
    }

    #[test]
    fn the_compaction_window_chosen_for_the_model() {
        let policy = Policy::default();
        let mut f = CompactFacts {
            setting: Some((300_000, CompactSource::Flag)),
            ..CompactFacts::default()
        };
        let (l, s) = limits(1_000_000, &policy, &f);
        assert_eq!(
            (l.compact_at, l.trigger_at, s),
            (267_000, 227_000, CompactSource::Flag)
        );
        // A window at or above the model's changes nothing.
        f.setting = Some((1_000_000, CompactSource::Env));
        assert_eq!(
            limits(1_000_000, &policy, &f),
            (
                limits(1_000_000, &policy, &CompactFacts::default()).0,
                CompactSource::Window
            )
        );
        // The percent override is of the window less the output reservation: 50% of 200k
        // compacts at 90k, as the client computes it.
        let half = Policy {
            autocompact_pct: Some(50.0),
            ..Policy::default()
        };
        assert_eq!(
            limits(200_000, &half, &CompactFacts::default())
                .0
                .compact_at,
            90_000
        );
    }

    #[test]
    fn with_auto_compaction_off_the_point_is_the_windows_end() {
        let f = CompactFacts {
            setting: Some((300_000, CompactSource::Flag)),
            off: Some("DISABLE_AUTO_COMPACT".into()),
            observed: Some((150_000, 1_000_000)),
            ..CompactFacts::default()
        };
        // No stop known: the window's end.
        let (l, s) = limits(1_000_000, &Policy::default(), &f);
        assert_eq!(
            (l.compact_at, l.trigger_at, l.critical_at),
            (1_000_000, 960_000, Some(985_000))
        );
        assert_eq!(s, CompactSource::Off("DISABLE_AUTO_COMPACT".into()));
        assert!(s.describe().contains("auto-compaction is off"));
        assert!(s.describe().contains("stops accepting requests"));
    }

    #[test]
    fn with_auto_compaction_off_the_point_is_the_clients_blocking_limit() {
        // 2.1.332: the window less min(max output, 20k) less 3k, whatever compaction window.
        let f = CompactFacts {
            setting: Some((300_000, CompactSource::Flag)),
            off: Some("autoCompactEnabled".into()),
            stop_buffer: 23_000,
            ..CompactFacts::default()
        };
        let at = |window, f: &CompactFacts| {
            let (l, _) = limits(window, &Policy::default(), f);
            (l.trigger_at, l.critical_at, l.compact_at)
        };
        assert_eq!(at(200_000, &f), (137_000, Some(162_000), 177_000));
        assert_eq!(at(1_000_000, &f), (937_000, Some(962_000), 977_000));
        // The variable that sets it, never past the window's end.
        let set = CompactFacts {
            stop_override: Some(150_000),
            ..f.clone()
        };
        assert_eq!(at(200_000, &set), (110_000, Some(135_000), 150_000));
        let past = CompactFacts {
            stop_override: Some(5_000_000),
            ..f
        };
        assert_eq!(at(200_000, &past).2, 200_000);
    }

    #[test]
    fn an_observed_auto_compaction_calibrates_the_point_within_the_evidence() {
        let policy = Policy::default();
        let at = |observed, uncompacted| {
            let f = CompactFacts {
                observed: Some(observed),
                uncompacted,
                ..CompactFacts::default()
            };
            let (l, s) = limits(1_000_000, &policy, &f);
            (l.compact_at, s)
        };
        // Compacted at 280k: the threshold is at or below it.
        assert_eq!(
            at((280_000, 1_000_000), None),
            (280_000, CompactSource::Observed)
        );
        // Compacted at 975k, the formula's 967k lies between the highest reading that did not
        // compact (950k) and 975k: the evidence agrees with it, so it stays.
        assert_eq!(
            at((975_000, 1_000_000), Some((950_000, 1_000_000))),
            (967_000, CompactSource::Window)
        );
        // 972k did not compact: the threshold is above it.
        assert_eq!(
            at((980_000, 1_000_000), Some((972_000, 1_000_000))),
            (972_001, CompactSource::Observed)
        );
        // A reading above `preTokens` (another configuration then) does not count.
        assert_eq!(
            at((975_000, 1_000_000), Some((990_000, 1_000_000))),
            (967_000, CompactSource::Window)
        );
        let (l, _) = limits(
            1_000_000,
            &policy,
            &CompactFacts {
                observed: Some((280_000, 1_000_000)),
                ..CompactFacts::default()
            },
        );
        assert_eq!((l.trigger_at, l.critical_at), (240_000, Some(265_000)));
        // Seen on another window (the model changed): ignored.
        assert_eq!(at((150_000, 200_000), None).1, CompactSource::Window);
    }
}
