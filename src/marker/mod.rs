//! The per-session flush marker: a small state machine (idle → armed → nudged →
//! critical_nudged → idle in the next cycle).
//!
//! Every change goes through [`transition`], a pure function the unit tests drive with literals.
//! [`store`] persists it: one transaction ([`Store::update`]) locks, loads, decides, saves when
//! worth it and unlocks, so the status line, parallel PreToolUse hooks and PreCompact all agree
//! on one history, and exactly one of 64 parallel hooks sees `armed` and moves it to `nudged`.

mod store;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::usage::Limits;
use crate::window::{CompactSource, WindowSource};

pub use store::{all_sessions, Store};

/// Timestamps alone are written at most this often (the status line redraws many times a
/// second; each write is an fsync).
pub const REFRESH: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    #[default]
    Idle,
    Armed,
    Nudged,
    CriticalNudged,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Armed => "armed",
            State::Nudged => "nudged",
            State::CriticalNudged => "critical_nudged",
        }
    }
}

/// Where the newest usage figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Statusline,
    Transcript,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Statusline => "statusline",
            Source::Transcript => "transcript",
        }
    }
}

/// The two nudges of a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nudge {
    Normal,
    Critical,
}

/// Parallel hooks take `now` before they wait for the lock, so a time written by another one can
/// be this far ahead of theirs; anything further ahead is a clock that was stepped back.
pub const CLOCK_SKEW: Duration = Duration::from_secs(5);

/// Is `at` at most `limit` before `now`, and not more than [`CLOCK_SKEW`] after it?
fn within(at: DateTime<Utc>, now: DateTime<Utc>, limit: Duration) -> bool {
    match now.signed_duration_since(at).to_std() {
        Ok(age) => age <= limit,
        Err(_) => at
            .signed_duration_since(now)
            .to_std()
            .is_ok_and(|ahead| ahead <= CLOCK_SKEW),
    }
}

/// The persisted state of one session. Token thresholds (`compact_at`, `trigger_at`,
/// `critical_at`) are token counts; `*_at` fields holding times are RFC 3339 UTC.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Marker {
    pub session_id: String,
    pub state: State,
    pub cycle: u64,
    pub tokens: Option<u64>,
    pub window: Option<u64>,
    pub compact_at: Option<u64>,
    pub trigger_at: Option<u64>,
    pub critical_at: Option<u64>,
    pub armed_at: Option<DateTime<Utc>>,
    pub nudged_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    pub source: Option<Source>,
    /// When the status line last reported a usage figure (the PreToolUse fast path trusts the
    /// marker without reading the transcript while this is recent).
    pub statusline_at: Option<DateTime<Utc>>,
    /// The window size the status line last reported for this session.
    pub reported_window: Option<u64>,
    /// Compactions PreCompact has checkpointed for this session.
    pub compactions: u64,
    /// Path of the newest checkpoint.
    pub last_checkpoint: Option<String>,
    /// The newest checkpoint has not been injected by SessionStart yet.
    pub recovery_pending: bool,
    /// The newest checkpoint was given to another session as a digest (once, and never instead
    /// of this session's own recovery).
    pub digest_given: bool,
    /// When the compaction gate held an auto-compaction; cleared when a compaction passes.
    /// While set, the gate never holds again.
    pub gate_held_at: Option<DateTime<Utc>>,
    /// The model of the newest reply (the window follows it).
    pub model: Option<String>,
    /// Where `window` came from.
    pub window_source: Option<WindowSource>,
    /// Where `compact_at` came from.
    pub compact_source: Option<CompactSource>,
    /// When the limits were last computed from the config and the client's settings, and a
    /// fingerprint of the config they were computed with.
    pub limits_at: Option<DateTime<Utc>>,
    pub limits_key: Option<u64>,
    /// When PreCompact last ran: a reading from a reply older than this is stale.
    pub compacted_at: Option<DateTime<Utc>>,
    /// The usage when the session last compacted, until a new figure is seen: a status line
    /// that still reports exactly it right after a compaction is reporting the old context.
    pub tokens_at_compaction: Option<u64>,
    /// Where this session's client last auto-compacted: the tokens then, on which window.
    pub auto_compacted_at: Option<(u64, u64)>,
    /// Whether the client's idle compaction is on (from its settings, when last resolved).
    pub idle_compaction: Option<bool>,
    /// The usage when this cycle armed: a later drop is measured from it (arming on growth
    /// can happen far below the trigger).
    pub armed_tokens: Option<u64>,
    /// When SessionEnd wrote the final checkpoint (the session ended: clear, exit, logout):
    /// its checkpoint may be shown once to the next session in the same directory.
    pub ended_at: Option<DateTime<Utc>>,
    /// The largest recent growth from one reply to the next, from the newest transcript
    /// reading: the critical nudge comes early when one more such reply reaches compaction.
    pub growth: Option<u64>,
}

/// The client's idle compaction applies to an attended session from this many tokens on.
pub const IDLE_COMPACTION_TOKENS: u64 = 200_000;

impl Marker {
    /// Can the client compact this session while it waits for the user, before `compact_at`?
    /// It does so from 200k tokens on (unless `idleCompaction` is off), which matters on larger
    /// windows.
    pub fn idle_compaction_applies(&self) -> bool {
        let (Some(t), Some(c)) = (self.tokens, self.compact_at) else {
            return false;
        };
        self.idle_compaction != Some(false) && t >= IDLE_COMPACTION_TOKENS && t < c
    }
}

/// A usage reading, from the status line or the transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Context tokens, `None` when unknown (before the first reply, right after compaction).
    pub tokens: Option<u64>,
    pub limits: Limits,
    pub source: Source,
    /// A `compact_boundary` newer than every reply in the transcript.
    pub boundary_at: Option<DateTime<Utc>>,
    /// The window the status line reported.
    pub reported_window: Option<u64>,
    /// The model of the reply the reading comes from.
    pub model: Option<String>,
    /// When that reply was written, if known: older than the last compaction means stale.
    pub reply_at: Option<DateTime<Utc>>,
    /// Recent replies grew fast enough to reach the compaction point within the configured
    /// number of replies: arm now, whatever the trigger says.
    pub growth_due: bool,
    /// The largest recent growth from one reply to the next, if known.
    pub growth: Option<u64>,
    /// A `compact_boundary` of an automatic compaction says the client compacted at this many
    /// tokens.
    pub auto_pre_tokens: Option<u64>,
    pub window_source: Option<WindowSource>,
    pub compact_source: Option<CompactSource>,
    /// The config fingerprint the limits were resolved with (when resolved afresh).
    pub limits_key: Option<u64>,
    /// Whether the client's idle compaction is on (when resolved afresh).
    pub idle_compaction: Option<bool>,
}

impl Observation {
    /// A reading with these numbers and nothing else known.
    pub fn new(tokens: Option<u64>, limits: Limits, source: Source) -> Observation {
        Observation {
            tokens,
            limits,
            source,
            boundary_at: None,
            reported_window: None,
            model: None,
            reply_at: None,
            growth_due: false,
            growth: None,
            auto_pre_tokens: None,
            window_source: None,
            compact_source: None,
            limits_key: None,
            idle_compaction: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Observe(Observation),
    /// A nudge of this level was emitted.
    Nudged(Nudge),
    /// PreCompact wrote this checkpoint: a new cycle starts and a recovery is pending.
    /// `tokens` were in context; `auto` when the client compacted by itself; `repeat` when it
    /// is the same compaction as the last one (PreCompact ran again before it finished): the
    /// checkpoint is replaced, no new cycle is counted.
    Compacted {
        checkpoint: String,
        tokens: Option<u64>,
        auto: bool,
        repeat: bool,
    },
    /// SessionStart injected the pending recovery.
    Recovered,
    /// Another session's SessionStart showed the newest checkpoint as a digest.
    DigestGiven,
    /// SessionEnd wrote this final checkpoint.
    Ended {
        checkpoint: String,
    },
    /// The compaction gate held an auto-compaction: the nudge is due now.
    GateHeld,
    /// Back to idle by hand.
    Reset,
}

impl Marker {
    pub fn new(session_id: &str) -> Marker {
        Marker {
            session_id: session_id.to_string(),
            ..Marker::default()
        }
    }

    /// Has this marker gone unrefreshed for longer than `stale_after`? A time further in the
    /// future than [`CLOCK_SKEW`] means the clock was stepped back: it is stale too, or the
    /// marker would be trusted for the whole skew.
    pub fn is_stale(&self, now: DateTime<Utc>, stale_after: Duration) -> bool {
        let Some(updated) = self.updated_at else {
            return self.state != State::Idle;
        };
        !within(updated, now, stale_after)
    }

    /// The state to act on: a stale non-idle marker counts as idle.
    pub fn effective_state(&self, now: DateTime<Utc>, stale_after: Duration) -> State {
        if self.is_stale(now, stale_after) {
            State::Idle
        } else {
            self.state
        }
    }

    /// Did the status line report usage within `limit`?
    pub fn statusline_fresh(&self, now: DateTime<Utc>, limit: Duration) -> bool {
        self.statusline_at.is_some_and(|at| within(at, now, limit))
    }

    /// The nudge this marker is waiting for, if any.
    pub fn pending_nudge(&self) -> Option<Nudge> {
        // One more reply growing like the fastest recent one reaches compaction: critical now.
        let one_reply_away = match (self.tokens, self.growth, self.compact_at) {
            (Some(t), Some(g), Some(c)) => g > 0 && t.saturating_add(g) >= c,
            _ => false,
        };
        let critical = one_reply_away
            || match (self.tokens, self.critical_at) {
                (Some(t), Some(c)) => t >= c,
                _ => false,
            };
        match self.state {
            State::Armed if critical => Some(Nudge::Critical),
            State::Armed => Some(Nudge::Normal),
            State::Nudged if critical => Some(Nudge::Critical),
            _ => None,
        }
    }

    fn clear_cycle(&mut self) {
        self.state = State::Idle;
        self.armed_at = None;
        self.armed_tokens = None;
        self.nudged_at = None;
    }
}

/// The tokens of an observation that may be applied: a zero reading is a transient frame, a
/// reading from a reply written before the last compaction is stale (the client may not have
/// flushed the compaction to the transcript yet), and a status line still reporting exactly the
/// usage the session compacted at is reporting the old context.
fn fresh_tokens(m: &Marker, obs: &Observation) -> Option<u64> {
    let t = obs.tokens.filter(|t| *t > 0)?;
    if let (Some(reply), Some(compacted)) = (obs.reply_at, m.compacted_at) {
        if reply < compacted {
            return None;
        }
    }
    if obs.source == Source::Statusline && m.tokens_at_compaction == Some(t) {
        return None;
    }
    Some(t)
}

/// The one place the marker changes.
pub fn transition(
    marker: &Marker,
    event: &Event,
    now: DateTime<Utc>,
    stale_after: Duration,
) -> Marker {
    let mut m = marker.clone();
    if m.is_stale(now, stale_after) {
        m.clear_cycle();
    }
    match event {
        Event::Observe(obs) => {
            let limits = obs.limits;
            let tokens = fresh_tokens(&m, obs);
            if m.state != State::Idle {
                let boundary_after_arming = obs
                    .boundary_at
                    .is_some_and(|b| m.armed_at.is_none_or(|armed| b > armed));
                // A drop is measured from where the cycle armed, when that was below the
                // trigger (arming on growth).
                let floor = m
                    .armed_tokens
                    .map_or(limits.trigger_at, |a| a.min(limits.trigger_at));
                let dropped = tokens.is_some_and(|t| {
                    limits.dropped_below(t) && t.saturating_add(limits.window / 10) < floor
                });
                if boundary_after_arming || dropped {
                    m.clear_cycle();
                    m.cycle += 1;
                    m.tokens = None;
                }
            }
            if tokens.is_some() {
                m.tokens = tokens;
                m.tokens_at_compaction = None;
            } else if obs
                .boundary_at
                .is_some_and(|b| m.armed_at.is_none_or(|a| b > a))
            {
                m.tokens = None;
            }
            m.window = Some(limits.window);
            m.compact_at = Some(limits.compact_at);
            m.trigger_at = Some(limits.trigger_at);
            m.critical_at = limits.critical_at;
            if obs.window_source.is_some() {
                m.window_source = obs.window_source;
                m.compact_source = obs.compact_source.clone();
                m.limits_at = Some(now);
                m.limits_key = obs.limits_key;
                m.idle_compaction = obs.idle_compaction;
            }
            let due = tokens.is_some_and(|t| t >= limits.trigger_at || obs.growth_due);
            if m.state == State::Idle && due {
                m.state = State::Armed;
                m.armed_at = Some(now);
                m.armed_tokens = tokens;
            }
            if obs.source == Source::Statusline && tokens.is_some() {
                m.statusline_at = Some(now);
            }
            if obs.reported_window.is_some() {
                m.reported_window = obs.reported_window;
            }
            if obs.model.is_some() {
                m.model = obs.model.clone();
            }
            if tokens.is_some() {
                m.growth = obs.growth;
            }
            if let Some(pre) = obs.auto_pre_tokens {
                if m.auto_compacted_at.map(|(t, _)| t) != Some(pre) {
                    // Where the client really compacted: resolve the limits again with it.
                    m.auto_compacted_at = Some((pre, limits.window));
                    m.limits_at = None;
                }
            }
            if tokens.is_some() {
                m.source = Some(obs.source);
            }
        }
        Event::Nudged(level) => {
            m.state = match level {
                Nudge::Normal => State::Nudged,
                Nudge::Critical => State::CriticalNudged,
            };
            m.nudged_at = Some(now);
        }
        Event::Compacted {
            checkpoint,
            tokens,
            auto,
            repeat,
        } => {
            let before = tokens.or(m.tokens).or(m.tokens_at_compaction);
            if *auto {
                if let (Some(t), Some(w)) = (before, m.window) {
                    m.auto_compacted_at = Some((t, w));
                }
            }
            m.clear_cycle();
            if !*repeat || m.compactions == 0 {
                m.cycle += 1;
                m.compactions += 1;
            }
            m.tokens = None;
            m.growth = None;
            m.compacted_at = Some(now);
            m.tokens_at_compaction = before;
            // A new compaction point may have been observed: resolve the limits again.
            m.limits_at = None;
            m.last_checkpoint = Some(checkpoint.clone());
            m.recovery_pending = true;
            m.digest_given = false;
            m.gate_held_at = None;
        }
        Event::GateHeld => {
            m.gate_held_at = Some(now);
            if m.state == State::Idle {
                m.state = State::Armed;
                m.armed_at = Some(now);
            }
        }
        Event::Recovered => m.recovery_pending = false,
        Event::DigestGiven => m.digest_given = true,
        Event::Ended { checkpoint } => {
            m.clear_cycle();
            m.ended_at = Some(now);
            m.last_checkpoint = Some(checkpoint.clone());
            m.digest_given = false;
        }
        Event::Reset => m.clear_cycle(),
    }
    m.updated_at = Some(now);
    m
}

/// Does `new` differ from `old` enough to be written? A new usage figure alone, and timestamps
/// alone, are written at most every `refresh` (the status line redraws many times a second and
/// PreToolUse runs on every tool call; each write is an fsync). Anything else (the state, the
/// cycle, the limits, a recovery) is written at once.
pub fn worth_saving(old: &Marker, new: &Marker, refresh: Duration) -> bool {
    let strip = |m: &Marker| Marker {
        updated_at: None,
        statusline_at: None,
        tokens: None,
        source: None,
        limits_at: None,
        growth: None,
        ..m.clone()
    };
    // Crossing the trigger or the critical point matters at once: it decides a nudge.
    let level = |m: &Marker| {
        let t = m.tokens?;
        Some((
            m.trigger_at.is_some_and(|a| t >= a),
            m.critical_at.is_some_and(|c| t >= c),
        ))
    };
    if strip(old) != strip(new) || level(old) != level(new) {
        return true;
    }
    let aged = |a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>| match (a, b) {
        (Some(a), Some(b)) => b.signed_duration_since(a).to_std().unwrap_or_default() >= refresh,
        (None, Some(_)) => true,
        _ => false,
    };
    let moved = old.tokens != new.tokens || old.source != new.source;
    aged(old.updated_at, new.updated_at)
        || aged(old.statusline_at, new.statusline_at)
        || (moved && old.tokens.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::Policy;
    use chrono::TimeZone;

    const STALE: Duration = Duration::from_secs(1800);

    fn t(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
    }

    fn limits() -> Limits {
        Limits::compute(200_000, &Policy::default()) // trigger 127k, critical 152k, compact 167k
    }

    fn observe(tokens: Option<u64>) -> Event {
        Event::Observe(Observation {
            tokens,
            limits: limits(),
            source: Source::Statusline,
            boundary_at: None,
            reported_window: Some(200_000),
            ..Observation::new(None, limits(), Source::Statusline)
        })
    }

    fn run(events: &[(i64, Event)]) -> Marker {
        events.iter().fold(Marker::new("s"), |m, (at, e)| {
            transition(&m, e, t(*at), STALE)
        })
    }

    #[test]
    fn below_the_trigger_stays_idle() {
        let m = run(&[(0, observe(Some(126_999)))]);
        assert_eq!(m.state, State::Idle);
        assert_eq!(m.tokens, Some(126_999));
        assert_eq!(m.trigger_at, Some(127_000));
        assert_eq!(m.pending_nudge(), None);
        assert_eq!(m.statusline_at, Some(t(0)));
        assert_eq!(m.reported_window, Some(200_000));
    }

    #[test]
    fn full_cycle() {
        let m = run(&[(0, observe(Some(130_000)))]);
        assert_eq!((m.state, m.armed_at), (State::Armed, Some(t(0))));
        assert_eq!(m.pending_nudge(), Some(Nudge::Normal));

        let m = transition(&m, &Event::Nudged(Nudge::Normal), t(1), STALE);
        assert_eq!((m.state, m.nudged_at), (State::Nudged, Some(t(1))));
        assert_eq!(m.pending_nudge(), None);

        // Still above the trigger: no new nudge, armed_at kept.
        let m = transition(&m, &observe(Some(140_000)), t(2), STALE);
        assert_eq!((m.state, m.armed_at), (State::Nudged, Some(t(0))));

        // Critical.
        let m = transition(&m, &observe(Some(152_000)), t(3), STALE);
        assert_eq!(m.pending_nudge(), Some(Nudge::Critical));
        let m = transition(&m, &Event::Nudged(Nudge::Critical), t(4), STALE);
        assert_eq!(m.state, State::CriticalNudged);
        assert_eq!(m.pending_nudge(), None);

        // PreCompact: next cycle, usage unknown, a recovery pending.
        let compacted = Event::Compacted {
            checkpoint: "/cp_001.json".into(),
            tokens: None,
            auto: false,
            repeat: false,
        };
        let m = transition(&m, &compacted, t(5), STALE);
        assert_eq!((m.state, m.cycle, m.tokens), (State::Idle, 1, None));
        assert_eq!((m.armed_at, m.nudged_at), (None, None));
        assert_eq!((m.compactions, m.recovery_pending), (1, true));
        assert_eq!(m.last_checkpoint.as_deref(), Some("/cp_001.json"));
        let recovered = transition(&m, &Event::Recovered, t(5), STALE);
        assert!(!recovered.recovery_pending);
        assert_eq!(recovered.state, State::Idle);

        // ... and the next cycle can arm again.
        let m = transition(&m, &observe(Some(128_000)), t(6), STALE);
        assert_eq!((m.state, m.cycle), (State::Armed, 1));
    }

    #[test]
    fn arming_past_critical_nudges_once_at_critical_level() {
        let m = run(&[(0, observe(Some(160_000)))]);
        assert_eq!(m.pending_nudge(), Some(Nudge::Critical));
        let m = transition(&m, &Event::Nudged(Nudge::Critical), t(1), STALE);
        assert_eq!(m.pending_nudge(), None);
    }

    #[test]
    fn critical_disabled_means_one_nudge() {
        let mut l = limits();
        l.critical_at = None;
        let obs = Event::Observe(Observation {
            tokens: Some(166_000),
            limits: l,
            source: Source::Transcript,
            boundary_at: None,
            reported_window: None,
            ..Observation::new(None, limits(), Source::Statusline)
        });
        let m = run(&[(0, obs.clone())]);
        assert_eq!(m.pending_nudge(), Some(Nudge::Normal));
        let m = transition(&m, &Event::Nudged(Nudge::Normal), t(1), STALE);
        let m = transition(&m, &obs, t(2), STALE);
        assert_eq!(m.pending_nudge(), None);
        assert_eq!(
            m.statusline_at, None,
            "transcript readings are not status-line reports"
        );
    }

    #[test]
    fn a_large_drop_starts_a_new_cycle() {
        let m = run(&[
            (0, observe(Some(130_000))),
            (1, Event::Nudged(Nudge::Normal)),
            // 107k is within 10% of the window below the trigger: same cycle.
            (2, observe(Some(107_000))),
        ]);
        assert_eq!((m.state, m.cycle), (State::Nudged, 0));
        let m = transition(&m, &observe(Some(2_600)), t(3), STALE);
        assert_eq!((m.state, m.cycle), (State::Idle, 1));
    }

    #[test]
    fn a_boundary_newer_than_the_arming_starts_a_new_cycle() {
        let boundary = |at: i64| {
            Event::Observe(Observation {
                tokens: None,
                limits: limits(),
                source: Source::Transcript,
                boundary_at: Some(t(at)),
                reported_window: None,
                ..Observation::new(None, limits(), Source::Statusline)
            })
        };
        let armed = run(&[
            (10, observe(Some(130_000))),
            (11, Event::Nudged(Nudge::Normal)),
        ]);
        // An old boundary (before the arming) changes nothing.
        let m = transition(&armed, &boundary(5), t(12), STALE);
        assert_eq!((m.state, m.cycle), (State::Nudged, 0));
        let m = transition(&armed, &boundary(20), t(21), STALE);
        assert_eq!((m.state, m.cycle, m.tokens), (State::Idle, 1, None));
    }

    #[test]
    fn stale_markers_count_as_idle_and_can_rearm() {
        let m = run(&[
            (0, observe(Some(130_000))),
            (1, Event::Nudged(Nudge::Normal)),
        ]);
        assert_eq!(m.effective_state(t(1 + 1800), STALE), State::Nudged);
        assert_eq!(m.effective_state(t(1 + 1801), STALE), State::Idle);
        let m = transition(&m, &observe(Some(130_000)), t(5000), STALE);
        assert_eq!(
            (m.state, m.armed_at, m.cycle),
            (State::Armed, Some(t(5000)), 0)
        );
    }

    #[test]
    fn armed_by_growth_far_below_the_trigger_the_cycle_holds_until_a_real_drop() {
        let grown = |tokens: u64, due: bool| {
            let mut obs = Observation::new(Some(tokens), limits(), Source::Transcript);
            obs.growth_due = due;
            obs.growth = Some(40_000);
            Event::Observe(obs)
        };
        let m = run(&[(0, grown(100_000, true)), (1, Event::Nudged(Nudge::Normal))]);
        assert_eq!((m.state, m.armed_tokens), (State::Nudged, Some(100_000)));
        // 101k, then 95k: no drop from where it armed; no new cycle, no second nudge.
        let m = transition(&m, &grown(101_000, false), t(2), STALE);
        let m = transition(&m, &grown(95_000, false), t(3), STALE);
        assert_eq!((m.state, m.cycle), (State::Nudged, 0));
        // A compaction-sized drop still starts a new cycle.
        let m = transition(&m, &grown(20_000, false), t(4), STALE);
        assert_eq!((m.state, m.cycle), (State::Idle, 1));
    }

    #[test]
    fn one_fast_reply_from_compaction_is_critical() {
        // 140k, below the critical point (152k), but the last replies grew 30k: the next one
        // reaches 167k.
        let mut obs = Observation::new(Some(140_000), limits(), Source::Transcript);
        obs.growth = Some(30_000);
        let m = run(&[(0, Event::Observe(obs))]);
        assert_eq!(m.pending_nudge(), Some(Nudge::Critical));
    }

    #[test]
    fn a_boundary_records_where_the_client_compacted_and_limits_are_resolved_again() {
        let mut obs = Observation::new(None, limits(), Source::Transcript);
        obs.auto_pre_tokens = Some(170_251);
        let m = Marker {
            limits_at: Some(t(0)),
            ..Marker::new("s")
        };
        let m = transition(&m, &Event::Observe(obs), t(1), STALE);
        assert_eq!(
            (m.auto_compacted_at, m.limits_at),
            (Some((170_251, 200_000)), None)
        );
    }

    #[test]
    fn a_time_in_the_future_is_stale_beyond_the_skew() {
        let m = run(&[
            (100, observe(Some(130_000))),
            (101, Event::Nudged(Nudge::Normal)),
        ]);
        // The clock stepped back an hour: the marker is not trusted for that hour.
        assert_eq!(m.effective_state(t(101 - 3600), STALE), State::Idle);
        assert!(!m.statusline_fresh(t(100 - 3600), STALE));
        // A writer a moment ahead of this process (it took its time after we took ours).
        assert_eq!(m.effective_state(t(101 - 5), STALE), State::Nudged);
        assert!(m.statusline_fresh(t(100 - 5), STALE));
        assert_eq!(m.effective_state(t(101 - 6), STALE), State::Idle);
    }

    #[test]
    fn reset_goes_idle_but_keeps_the_cycle() {
        let m = run(&[
            (0, observe(Some(130_000))),
            (
                1,
                Event::Compacted {
                    checkpoint: "x".into(),
                    tokens: None,
                    auto: false,
                    repeat: false,
                },
            ),
            (2, observe(Some(130_000))),
            (3, Event::Reset),
        ]);
        assert_eq!((m.state, m.cycle, m.armed_at), (State::Idle, 1, None));
    }

    #[test]
    fn only_meaningful_changes_are_worth_a_write() {
        let a = run(&[(0, observe(Some(1_000)))]);
        let same = transition(&a, &observe(Some(1_000)), t(5), STALE);
        assert!(!worth_saving(&a, &same, Duration::from_secs(15)));
        let later = transition(&a, &observe(Some(1_000)), t(15), STALE);
        assert!(worth_saving(&a, &later, Duration::from_secs(15)));
        // A new usage figure alone waits for the refresh too (PreToolUse sees one per call)...
        let moved = transition(&a, &observe(Some(1_001)), t(1), STALE);
        assert!(!worth_saving(&a, &moved, Duration::from_secs(15)));
        // ...but the first figure, and anything that changes the state, is written at once.
        let first = transition(&Marker::new("s"), &observe(Some(1_000)), t(0), STALE);
        assert!(worth_saving(
            &Marker::new("s"),
            &first,
            Duration::from_secs(15)
        ));
        let armed = transition(&a, &observe(Some(130_000)), t(1), STALE);
        assert!(worth_saving(&a, &armed, Duration::from_secs(15)));
    }
}
