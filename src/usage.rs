//! Token arithmetic: how full the context is, where Claude Code will auto-compact, and where
//! ctxguard arms its nudges. Pure functions only, so every rule here is unit-tested with literals;
//! the callers (status line, transcript fallback, `ctxguard usage`) feed it numbers.

use serde::{Deserialize, Serialize};

/// The window assumed when nothing better is known.
pub const DEFAULT_WINDOW: u64 = 200_000;
/// The window assumed when observed usage proves the default is too small.
pub const LARGE_WINDOW: u64 = 1_000_000;

/// The part of the client's compaction buffer that is not the reply's output reservation:
/// it compacts at `window − min(max output, 20k) − 13k`.
pub const AUTOCOMPACT_MARGIN: u64 = 13_000;

/// Where a request overflows the window, for a model the client compacts only then: read in
/// 2.1.332's code, a request the API refuses as too long for its `max_tokens` is sent again with
/// `max_tokens` = window − input − 1000 while that is at least `FLOOR_OUTPUT_TOKENS` (3000);
/// below, the refusal counts as a prompt too long, and the client compacts. So the context
/// overflows 4k before the window's end (docs/client-code.md).
pub const OVERFLOW_MARGIN: u64 = 4_000;

/// With auto-compaction off, the client stops accepting requests at its blocking limit: the
/// model's window less the output reservation less this margin (`wfo` in 2.1.332, `dC0` in
/// 2.1.14: 3000), unless `CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE` sets it (docs/client-code.md).
pub const BLOCKING_MARGIN: u64 = 3_000;

/// The usage block of one API reply, as the status line and the transcript both carry it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounts {
    pub input: u64,
    pub cache_creation: u64,
    pub cache_read: u64,
}

impl TokenCounts {
    /// Tokens in context: everything the model was sent, cached or not. `output_tokens` is not
    /// part of it (the next request counts the reply as input), and `total_input_tokens` is a
    /// session-wide running sum in some client versions, so neither is used.
    pub fn context_tokens(&self) -> u64 {
        self.input
            .saturating_add(self.cache_creation)
            .saturating_add(self.cache_read)
    }
}

/// The knobs that move the thresholds; a view of [`crate::config::Config`] plus Claude Code's own
/// auto-compaction overrides.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub headroom_tokens: u64,
    pub threshold_pct: Option<f64>,
    pub critical_headroom_tokens: u64,
    pub compact_buffer_tokens: u64,
    /// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`: compaction at this percent of the window, if lower.
    pub autocompact_pct: Option<f64>,
    /// `CLAUDE_CODE_AUTO_COMPACT_WINDOW`: the window auto-compaction is computed against.
    pub autocompact_window: Option<u64>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            headroom_tokens: 40_000,
            threshold_pct: None,
            critical_headroom_tokens: 15_000,
            compact_buffer_tokens: 33_000,
            autocompact_pct: None,
            autocompact_window: None,
        }
    }
}

/// Where things happen for one window size, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub window: u64,
    /// Claude Code auto-compacts at (about) this many tokens.
    pub compact_at: u64,
    /// ctxguard arms the nudge at this many tokens.
    pub trigger_at: u64,
    /// The second, critical nudge fires at this many tokens; `None` when disabled.
    pub critical_at: Option<u64>,
}

/// How close to compaction a token count is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Below,
    Armed,
    Critical,
}

/// Picks the window: a forced `window_tokens` beats what the status line reported for this
/// session, which beats the guess from observed usage (more than 200k observed means the session
/// cannot be on a 200k window).
pub fn window(forced: Option<u64>, reported: Option<u64>, observed_tokens: Option<u64>) -> u64 {
    if let Some(w) = forced.filter(|w| *w > 0) {
        return w;
    }
    if let Some(w) = reported.filter(|w| *w > 0) {
        return w;
    }
    match observed_tokens {
        Some(t) if t > DEFAULT_WINDOW => LARGE_WINDOW,
        _ => DEFAULT_WINDOW,
    }
}

fn pct_of(value: u64, pct: f64) -> u64 {
    // Percent settings are validated to (0, 100]; the product always fits.
    ((value as f64) * pct / 100.0).floor() as u64
}

impl Limits {
    pub fn compute(window: u64, policy: &Policy) -> Limits {
        // Claude Code computes auto-compaction against its own window when told to, but it can
        // never be larger than the model's.
        let compaction_window = policy
            .autocompact_window
            .filter(|w| *w > 0)
            .map_or(window, |w| w.min(window));
        let mut compact_at = compaction_window.saturating_sub(policy.compact_buffer_tokens);
        if let Some(pct) = policy.autocompact_pct {
            // The override can only bring compaction earlier. It is a percent of the window
            // less the output reservation (the buffer but for the client's fixed 13k), as the
            // client computes it: 50% of 200k compacts at 90k.
            let reserve = policy
                .compact_buffer_tokens
                .saturating_sub(AUTOCOMPACT_MARGIN);
            compact_at = compact_at.min(pct_of(compaction_window.saturating_sub(reserve), pct));
        }
        Limits::with_compact_at(window, compact_at, policy)
    }

    /// These limits with compaction at `compact_at` instead (where the client was seen
    /// compacting), the trigger and critical point moved with it.
    pub fn compacting_at(&self, compact_at: u64, policy: &Policy) -> Limits {
        Limits::with_compact_at(self.window, compact_at, policy)
    }

    fn with_compact_at(window: u64, compact_at: u64, policy: &Policy) -> Limits {
        let trigger_at = match policy.threshold_pct {
            Some(pct) => pct_of(window, pct),
            None => compact_at.saturating_sub(policy.headroom_tokens),
        };
        let critical_at = (policy.critical_headroom_tokens > 0).then(|| {
            compact_at
                .saturating_sub(policy.critical_headroom_tokens)
                .max(trigger_at)
        });
        Limits {
            window,
            compact_at,
            trigger_at,
            critical_at,
        }
    }

    pub fn level(&self, tokens: u64) -> Level {
        match self.critical_at {
            Some(c) if tokens >= c => Level::Critical,
            _ if tokens >= self.trigger_at => Level::Armed,
            _ => Level::Below,
        }
    }

    /// Tokens left before Claude Code compacts (0 when past it).
    pub fn headroom(&self, tokens: u64) -> u64 {
        self.compact_at.saturating_sub(tokens)
    }

    /// Will usage reach the compaction point within `replies` more replies, if each grows by
    /// `growth`? Then the nudge is due now: a fixed headroom is too small when one tool result
    /// can add 30k tokens.
    pub fn due_by_growth(&self, tokens: u64, growth: u64, replies: u64) -> bool {
        replies > 0
            && growth > 0
            && tokens.saturating_add(growth.saturating_mul(replies)) >= self.compact_at
    }

    /// Has usage fallen so far below the trigger that a compaction (or /clear) must have
    /// happened without ctxguard seeing it? "So far" is 10% of the window, which normal context
    /// fluctuation never reaches and a compaction always does.
    pub fn dropped_below(&self, tokens: u64) -> bool {
        tokens.saturating_add(self.window / 10) < self.trigger_at
    }
}

/// Whole percent of the window, rounded to the nearest as the client's `used_percentage` is
/// (100 at or past it).
pub fn percent(tokens: u64, window: u64) -> u64 {
    if window == 0 {
        return 100;
    }
    (tokens.saturating_mul(100).saturating_add(window / 2) / window).min(100)
}

/// Compact human form: `950`, `12k`, `128k`, `1M`, `1.2M`.
pub fn human(tokens: u64) -> String {
    if tokens < 1_000 {
        tokens.to_string()
    } else if tokens < 999_500 {
        format!("{}k", (tokens + 500) / 1_000)
    } else {
        let tenths = (tokens + 50_000) / 100_000;
        if tenths % 10 == 0 {
            format!("{}M", tenths / 10)
        } else {
            format!("{}.{}M", tenths / 10, tenths % 10)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_tokens_sum_the_three_input_fields() {
        let t = TokenCounts {
            input: 10,
            cache_creation: 500,
            cache_read: 150_000,
        };
        assert_eq!(t.context_tokens(), 150_510);
        let huge = TokenCounts {
            input: u64::MAX,
            cache_creation: 1,
            cache_read: 1,
        };
        assert_eq!(huge.context_tokens(), u64::MAX);
    }

    #[test]
    fn window_precedence() {
        assert_eq!(window(Some(500_000), Some(1_000_000), Some(10)), 500_000);
        assert_eq!(window(None, Some(1_000_000), Some(10)), 1_000_000);
        assert_eq!(window(None, None, Some(200_001)), LARGE_WINDOW);
        assert_eq!(window(None, None, Some(200_000)), DEFAULT_WINDOW);
        assert_eq!(window(None, None, None), DEFAULT_WINDOW);
        // Zero is never a window.
        assert_eq!(window(Some(0), Some(0), None), DEFAULT_WINDOW);
    }

    #[test]
    fn default_limits_for_200k_and_1m() {
        let p = Policy::default();
        let l = Limits::compute(200_000, &p);
        assert_eq!(
            l,
            Limits {
                window: 200_000,
                compact_at: 167_000,
                trigger_at: 127_000,
                critical_at: Some(152_000),
            }
        );
        let l = Limits::compute(1_000_000, &p);
        assert_eq!(l.compact_at, 967_000);
        assert_eq!(l.trigger_at, 927_000);
        assert_eq!(l.critical_at, Some(952_000));
    }

    #[test]
    fn threshold_pct_replaces_headroom() {
        let p = Policy {
            threshold_pct: Some(50.0),
            ..Policy::default()
        };
        let l = Limits::compute(200_000, &p);
        assert_eq!(l.trigger_at, 100_000);
        assert_eq!(l.compact_at, 167_000);
    }

    #[test]
    fn critical_disabled_by_zero_and_never_below_trigger() {
        let p = Policy {
            critical_headroom_tokens: 0,
            ..Policy::default()
        };
        assert_eq!(Limits::compute(200_000, &p).critical_at, None);
        let p = Policy {
            critical_headroom_tokens: 100_000,
            ..Policy::default()
        };
        let l = Limits::compute(200_000, &p);
        assert_eq!(l.critical_at, Some(l.trigger_at));
    }

    #[test]
    fn claude_overrides_move_the_compaction_point() {
        let p = Policy {
            autocompact_pct: Some(50.0),
            ..Policy::default()
        };
        // 50% of the window less the 20k output reservation, as the client computes it.
        let l = Limits::compute(200_000, &p);
        assert_eq!(l.compact_at, 90_000);
        assert_eq!(l.trigger_at, 50_000);
        // A percent above the default point cannot raise it.
        let p = Policy {
            autocompact_pct: Some(95.0),
            ..Policy::default()
        };
        assert_eq!(Limits::compute(200_000, &p).compact_at, 167_000);
        // A smaller auto-compact window.
        let p = Policy {
            autocompact_window: Some(100_000),
            ..Policy::default()
        };
        let l = Limits::compute(1_000_000, &p);
        assert_eq!(l.window, 1_000_000);
        assert_eq!(l.compact_at, 67_000);
        assert_eq!(l.trigger_at, 27_000);
        // Never larger than the model's window.
        let p = Policy {
            autocompact_window: Some(5_000_000),
            ..Policy::default()
        };
        assert_eq!(Limits::compute(200_000, &p).compact_at, 167_000);
    }

    #[test]
    fn tiny_windows_saturate_instead_of_wrapping() {
        let l = Limits::compute(10_000, &Policy::default());
        assert_eq!(l.compact_at, 0);
        assert_eq!(l.trigger_at, 0);
        assert_eq!(l.level(0), Level::Critical);
    }

    #[test]
    fn levels_and_boundaries() {
        let l = Limits::compute(200_000, &Policy::default());
        assert_eq!(l.level(126_999), Level::Below);
        assert_eq!(l.level(127_000), Level::Armed);
        assert_eq!(l.level(151_999), Level::Armed);
        assert_eq!(l.level(152_000), Level::Critical);
        assert_eq!(l.headroom(160_000), 7_000);
        assert_eq!(l.headroom(170_000), 0);
    }

    #[test]
    fn drop_detection_needs_ten_percent_of_the_window() {
        let l = Limits::compute(200_000, &Policy::default());
        // trigger 127k, 10% = 20k: below 107k is a drop.
        assert!(!l.dropped_below(107_000));
        assert!(l.dropped_below(106_999));
        assert!(l.dropped_below(2_600));
    }

    #[test]
    fn percent_and_human() {
        assert_eq!(percent(128_000, 200_000), 64);
        // 79.8% is 80, as the client shows it; 79.4% is 79.
        assert_eq!(percent(159_600, 200_000), 80);
        assert_eq!(percent(158_800, 200_000), 79);
        assert_eq!(percent(300_000, 200_000), 100);
        assert_eq!(percent(1, 0), 100);
        assert_eq!(human(950), "950");
        assert_eq!(human(1_499), "1k");
        assert_eq!(human(128_400), "128k");
        assert_eq!(human(150_510), "151k");
        assert_eq!(human(999_499), "999k");
        assert_eq!(human(999_500), "1M");
        assert_eq!(human(1_000_000), "1M");
        assert_eq!(human(1_250_000), "1.3M");
    }
}
