//! Where the other clients compact, as each decides: Codex (its limit, or 90% of the model's
//! window, counted against 95% of it) and pi (its window less `compaction.reserveTokens`).

use super::{CompactSource, WindowSource};
use crate::usage::{Limits, Policy};

/// What is known about a pi session's compaction: its window (with its source) and its
/// settings' `compaction.enabled` and `reserveTokens`.
#[derive(Debug, Clone)]
pub struct PiFacts {
    pub window: (u64, WindowSource),
    /// `compaction.reserveTokens`, and the file that set it (`None`: pi's default).
    pub reserve: (u64, Option<String>),
    /// The file whose `compaction.enabled: false` turns compaction off, if one does.
    pub off: Option<String>,
}

/// Where pi compacts, as it decides (`shouldCompact`, 0.73.1 and 1.6.0): when a reply's context
/// tokens exceed the window less `compaction.reserveTokens` (16,384 by default). With compaction
/// off (`compaction.enabled: false`) it never compacts, and a request fails at the window's end.
pub fn pi_limits(facts: &PiFacts, policy: &Policy) -> (Limits, CompactSource) {
    let (window, _) = facts.window;
    if let Some(origin) = &facts.off {
        let limits = Limits::compute(window, policy).compacting_at(window, policy);
        return (
            limits,
            CompactSource::Off(format!("compaction.enabled is false in {origin}")),
        );
    }
    let reserve = facts.reserve.0;
    let origin = match &facts.reserve.1 {
        Some(file) => format!("{reserve} in {file}"),
        None => format!("{reserve}, pi's default"),
    };
    let compact_at = window.saturating_sub(reserve);
    let limits = Limits::compute(window, policy).compacting_at(compact_at, policy);
    (limits, CompactSource::Pi(origin))
}

/// What is known about a Codex session's compaction: the window Codex reported in its rollout
/// (`model_context_window`, the share of the model's window it lets a conversation use) and its
/// `config.toml`'s `model_context_window` and `model_auto_compact_token_limit`, each with where
/// it was set.
#[derive(Debug, Clone, Default)]
pub struct CodexFacts {
    pub reported: Option<u64>,
    pub window: Option<(u64, String)>,
    pub limit: Option<(u64, String)>,
}

/// The share of the model's window Codex reports as `model_context_window` (its default
/// `effective_context_window_percent`).
pub const CODEX_EFFECTIVE_PCT: u64 = 95;

/// The window of the models Codex 0.169.0 bundles (all but two of its twelve): what a session's
/// first tool call is judged against, before any response has reported a window.
const CODEX_DEFAULT_WINDOW: u64 = 272_000;

/// Where Codex compacts, as it decides (0.169.0 to 0.171.0, read in its source and measured):
/// the model's window is `model_context_window` from `config.toml` when set (Codex puts it in
/// place of every model's own window), else the model's; Codex counts the context against 95%
/// of it (`effective_context_window_percent`, what its rollout reports as
/// `model_context_window`), and compacts at its auto-compact limit: 90% of the model's window
/// unless `model_auto_compact_token_limit` sets a lower one (a higher one is capped at 90%).
///
/// One rule, so every command gives one figure: the window shown is always that effective
/// window. With a configured window it is 95% of it, whatever an older rollout line reported
/// (written before the file changed: Codex reads it again at each start and resume); without
/// one, the window the rollout reported; before any report, that of Codex's own models
/// ([`CODEX_DEFAULT_WINDOW`]).
pub fn codex_limits(facts: &CodexFacts, policy: &Policy) -> Option<(Limits, CompactSource)> {
    let configured = facts.window.as_ref().map(|(w, _)| *w).filter(|w| *w > 0);
    let model_window = configured
        .or_else(|| {
            facts
                .reported
                .map(|r| (r * 100).div_ceil(CODEX_EFFECTIVE_PCT))
        })
        .unwrap_or(CODEX_DEFAULT_WINDOW);
    if model_window == 0 {
        return None;
    }
    let effective = model_window * CODEX_EFFECTIVE_PCT / 100;
    let shown = match configured {
        Some(_) => effective,
        None => facts.reported.unwrap_or(effective),
    };
    let default = model_window * 9 / 10;
    let (compact_at, source) = match &facts.limit {
        Some((limit, origin)) if *limit > 0 && *limit < default => {
            (*limit, CompactSource::Setting(origin.clone()))
        }
        _ => (default, CompactSource::CodexDefault),
    };
    let limits = Limits::compute(shown, policy).compacting_at(compact_at, policy);
    Some((limits, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_compacts_at_its_limit_or_at_90_percent_of_the_model_window() {
        let policy = Policy::default();
        // The recorded run: a 100k window reported as 95k, a limit of 20k.
        let facts = CodexFacts {
            reported: Some(95_000),
            window: None,
            limit: Some((
                20_000,
                "model_auto_compact_token_limit in config.toml".into(),
            )),
        };
        let (limits, source) = codex_limits(&facts, &policy).unwrap();
        assert_eq!((limits.window, limits.compact_at), (95_000, 20_000));
        assert!(matches!(source, CompactSource::Setting(_)));
        // No limit: 90% of the model's window (272k reported as 258.4k).
        let facts = CodexFacts {
            reported: Some(258_400),
            ..CodexFacts::default()
        };
        let (limits, source) = codex_limits(&facts, &policy).unwrap();
        assert_eq!(limits.compact_at, 244_800);
        assert_eq!(limits.trigger_at, 244_800 - policy.headroom_tokens);
        assert_eq!(source, CompactSource::CodexDefault);
        // A limit above 90% is capped there; a configured window wins over the reported one.
        let facts = CodexFacts {
            reported: Some(258_400),
            window: Some((200_000, "model_context_window in config.toml".into())),
            limit: Some((250_000, "x".into())),
        };
        let (limits, source) = codex_limits(&facts, &policy).unwrap();
        assert_eq!((limits.window, limits.compact_at), (190_000, 180_000));
        assert_eq!(source, CompactSource::CodexDefault);
        // A configured window wins over a smaller one an older rollout line reported: the
        // window shown is 95% of it, never the report next to the configured point.
        let facts = CodexFacts {
            reported: Some(95_000),
            window: Some((200_000, "model_context_window in config.toml".into())),
            limit: None,
        };
        let (limits, _) = codex_limits(&facts, &policy).unwrap();
        assert_eq!((limits.window, limits.compact_at), (190_000, 180_000));
        // Nothing known yet (a session's first tool call): Codex's own models' window.
        let (limits, _) = codex_limits(&CodexFacts::default(), &policy).unwrap();
        assert_eq!((limits.window, limits.compact_at), (258_400, 244_800));
    }

    #[test]
    fn pi_compacts_its_reserve_before_the_windows_end_or_never_when_off() {
        let policy = Policy::default();
        let mut facts = PiFacts {
            window: (128_000, WindowSource::PiModels),
            reserve: (16_384, None),
            off: None,
        };
        let (limits, source) = pi_limits(&facts, &policy);
        assert_eq!((limits.window, limits.compact_at), (128_000, 111_616));
        assert_eq!(source, CompactSource::Pi("16384, pi's default".into()));
        facts.off = Some("/p/.pi/settings.json".into());
        let (limits, source) = pi_limits(&facts, &policy);
        assert_eq!(limits.compact_at, 128_000);
        assert!(matches!(source, CompactSource::Off(_)));
    }
}
