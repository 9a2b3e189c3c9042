//! The per-session flush marker: a small state machine (idle → armed → nudged →
//! `critical_nudged` → idle in the next cycle).
//!
//! Every change goes through [`transition`], a pure function the unit tests drive with literals.
//! [`store`] persists it: one transaction ([`Store::update`]) locks, loads, decides, saves when
//! worth it and unlocks, so the status line, parallel `PreToolUse` hooks and `PreCompact` all agree
//! on one history, and exactly one of 64 parallel hooks sees `armed` and moves it to `nudged`.

pub mod activity;
mod drop;
mod observation;
mod store;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::window::{CompactSource, WindowSource};

pub use drop::{is_drop, PendingDrop};
pub use observation::Observation;
pub use store::{all_sessions, lock_within, newest, try_lock, worth_saving, Store};

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

/// How many nudges `cycle_nudges` keeps: a cycle gives at most three (normal, critical, idle).
const MAX_CYCLE_NUDGES: usize = 4;

/// The two nudges of a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nudge {
    Normal,
    Critical,
}

/// Parallel hooks take `now` before they wait for the lock, so a time written by another one can
/// be this far ahead of theirs; anything further ahead is a clock that was stepped back.
const CLOCK_SKEW: Duration = Duration::from_secs(5);

/// Is `at` at most `limit` before `now`, and not more than [`CLOCK_SKEW`] after it?
pub fn within(at: DateTime<Utc>, now: DateTime<Utc>, limit: Duration) -> bool {
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
    /// When the status line last reported a usage figure (the `PreToolUse` fast path trusts the
    /// marker without reading the transcript while this is recent).
    pub statusline_at: Option<DateTime<Utc>>,
    /// The window size the status line last reported for this session.
    pub reported_window: Option<u64>,
    /// Compactions `PreCompact` has checkpointed for this session.
    pub compactions: u64,
    /// Path of the newest checkpoint.
    pub last_checkpoint: Option<String>,
    /// The newest checkpoint has not been injected by `SessionStart` yet.
    pub recovery_pending: bool,
    /// The newest checkpoint was given to another session as a digest (once, and never instead
    /// of this session's own recovery).
    pub digest_given: bool,
    /// When the compaction gate held an auto-compaction; cleared when a compaction passes.
    /// While set, the gate never holds again.
    pub gate_held_at: Option<DateTime<Utc>>,
    /// The model of the newest reply (the window follows it).
    pub model: Option<String>,
    /// The model as `SessionStart` named it, which keeps a `[1m]` suffix the transcript's replies
    /// do not show (see [`crate::window::judged_model`]).
    pub session_model: Option<String>,
    /// Where `window` came from.
    pub window_source: Option<WindowSource>,
    /// Where `compact_at` came from.
    pub compact_source: Option<CompactSource>,
    /// When the limits were last computed from the config and the client's settings, and a
    /// fingerprint of the config they were computed with.
    pub limits_at: Option<DateTime<Utc>>,
    pub limits_key: Option<u64>,
    /// When `PreCompact` last ran: a reading from a reply older than this is stale.
    pub compacted_at: Option<DateTime<Utc>>,
    /// The usage when the session last compacted, until a new figure is seen: a status line
    /// that still reports exactly it right after a compaction is reporting the old context.
    pub tokens_at_compaction: Option<u64>,
    /// Where this session's client last auto-compacted: the tokens then, on which window.
    pub auto_compacted_at: Option<(u64, u64)>,
    /// Whether the client's idle compaction is on (from its settings, when last resolved).
    pub idle_compaction: Option<bool>,
    /// From how many tokens idle compaction takes the session
    /// (`CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS`), when last resolved; 200k when unknown.
    pub idle_from: Option<u64>,
    /// The highest usage this session was seen at without compacting (a reading followed by a
    /// newer reply with no boundary between), and the window then: the client's compaction
    /// point lies above it (see [`crate::window::limits`]).
    pub uncompacted_max: Option<(u64, u64)>,
    /// The newest reply read from the transcript: its tokens, when it was written, the window.
    pub last_reply: Option<(u64, DateTime<Utc>, u64)>,
    /// The usage when this cycle armed: a later drop is measured from it (arming on growth
    /// can happen far below the trigger).
    pub armed_tokens: Option<u64>,
    /// When `SessionEnd` wrote the final checkpoint (the session ended: clear, exit, logout):
    /// its checkpoint may be shown once to the next session in the same directory.
    pub ended_at: Option<DateTime<Utc>>,
    /// The largest recent growth from one reply to the next, from the newest transcript
    /// reading: the critical nudge comes early when one more such reply reaches compaction.
    pub growth: Option<u64>,
    /// The session's working directory, as the status line last reported it (at most
    /// [`MAX_CWD_CHARS`]): `status --cwd` lists by it.
    pub cwd: Option<String>,
    /// The newest nudge of any cycle (`nudged_at` is this cycle's only): what `status` shows.
    pub last_nudge: Option<LastNudge>,
    /// The newest end-of-turn nudge before an idle compaction (`Stop`): a level of its own,
    /// at most once per cycle, which never takes the place of the trigger's and the critical
    /// nudge. This cycle's when it is newer than `compacted_at`.
    pub idle_nudge: Option<LastNudge>,
    /// Every nudge of the newest cycles, oldest first (at most [`MAX_CYCLE_NUDGES`]): what a
    /// checkpoint and the log record of a cycle (those after `compacted_at`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cycle_nudges: Vec<LastNudge>,
    /// A compaction whose recovery `SessionStart` handed over, waiting for the next hook to
    /// check that it arrived (see `receipt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receipt_pending: Option<ReceiptPending>,
    /// The reply that showed the newest drop of context without a compaction, once handled
    /// (see [`crate::dropped`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped_at: Option<DateTime<Utc>>,
    /// A drop of context without a compaction that a reading showed and no hook has acted on
    /// yet: recorded by whichever hook read it first (written at once, never held back by the
    /// refresh interval), acted on by the first hook that can give context (see
    /// [`crate::dropped`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_drop: Option<PendingDrop>,
    /// Of `compactions`, those that were drops of context, not the client's compactions (a
    /// Codex rollout records only the client's: its count is compared with the rest).
    #[serde(skip_serializing_if = "is_zero")]
    pub drops: u64,
    /// The newest `compact_boundary` a counted compaction accounts for (its recovery handed
    /// over, or caught up when no `PreCompact` counted it): a newer one with nothing pending is
    /// a compaction nobody saw ([`crate::dropped::unseen`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boundary_counted: Option<DateTime<Utc>>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A compaction whose recovery still waits for its receipt (kept in the marker).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReceiptPending {
    /// The compaction's number in this session.
    pub compaction: u64,
    /// Its checkpoint.
    pub checkpoint: String,
    /// When `SessionStart` handed the block to the client.
    pub handed_at: DateTime<Utc>,
    /// The client process it was handed to (`CLAUDE_PID`), when the client names one.
    pub client_pid: Option<u32>,
}

/// A nudge as `status` reports it: when, at what usage, which level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastNudge {
    pub at: DateTime<Utc>,
    pub tokens: Option<u64>,
    pub critical: bool,
    /// Given by `Stop` at the end of a turn, before an idle compaction.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idle: bool,
}

/// A working directory longer than this is cut (a checkpoint cuts it the same way).
const MAX_CWD_CHARS: usize = 4096;

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
        self.idle_compaction != Some(false)
            && t >= self.idle_from.unwrap_or(IDLE_COMPACTION_TOKENS)
            && t < c
    }
}

impl Marker {
    /// This cycle's idle nudge, if one was given since the last compaction.
    pub fn idle_nudge_this_cycle(&self) -> Option<&LastNudge> {
        self.idle_nudge
            .as_ref()
            .filter(|n| self.compacted_at.is_none_or(|c| n.at > c))
    }

    /// This marker as it will be once a boundary's `preTokens` (where the client just
    /// auto-compacted) is recorded: the limits of the reading that brings it are resolved with
    /// it, not a reading later.
    pub fn knowing_auto_compaction(&self, pre_tokens: Option<u64>) -> std::borrow::Cow<'_, Marker> {
        use std::borrow::Cow;
        match (pre_tokens, self.window) {
            (Some(pre), Some(window)) if self.auto_compacted_at.map(|(t, _)| t) != Some(pre) => {
                Cow::Owned(Marker {
                    auto_compacted_at: Some((pre, window)),
                    limits_at: None,
                    ..self.clone()
                })
            }
            _ => Cow::Borrowed(self),
        }
    }
}

// One short-lived value per hook call: boxing the observation would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Observe(Observation),
    /// A nudge of this level was emitted.
    Nudged(Nudge),
    /// `Stop` asked the agent to save before an idle compaction (the state does not change:
    /// the trigger's and the critical nudge are still to come).
    IdleNudged,
    /// `PreCompact` wrote this checkpoint: a new cycle starts and a recovery is pending.
    /// `tokens` were in context; `auto` when the client compacted by itself; `repeat` when it
    /// is the same compaction as the last one (`PreCompact` ran again before it finished): the
    /// checkpoint is replaced, no new cycle is counted; `drop` when it is a drop of context
    /// without a compaction (counted in `drops` too).
    Compacted {
        checkpoint: String,
        tokens: Option<u64>,
        auto: bool,
        repeat: bool,
        drop: bool,
    },
    /// `SessionStart` injected the pending recovery, and handed it to the client (the pending one, consumed, or one given
    /// again on resume): the next hook checks that it arrived (`receipt`).
    Handed(Option<ReceiptPending>),
    /// The newest compaction's recovery is settled (its receipt written, or given by a hook):
    /// nothing pending any more.
    ReceiptSettled,
    /// A hook took this drop of context without a compaction, to act on it once.
    DropTaken(PendingDrop),
    /// `SessionStart` named the session's model (limits computed for another are redone).
    ModelNamed(String),
    /// The checkpoint `from` was rebuilt as `to` (a summary prepared ahead): the newest one is
    /// `to`, unless another compaction came meanwhile.
    CheckpointRebuilt {
        from: String,
        to: String,
    },
    /// Another session's `SessionStart` showed the newest checkpoint as a digest.
    DigestGiven,
    /// The compaction whose boundary was written at this time is counted (see
    /// `boundary_counted`).
    BoundaryCounted(DateTime<Utc>),
    /// `SessionEnd` wrote this final checkpoint.
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
            State::Armed | State::Nudged if critical => Some(Nudge::Critical),
            State::Armed => Some(Nudge::Normal),
            _ => None,
        }
    }

    /// Adds `nudge` to `cycle_nudges`, forgetting the oldest past [`MAX_CYCLE_NUDGES`].
    fn remember_nudge(&mut self, nudge: &LastNudge) {
        self.cycle_nudges.push(nudge.clone());
        let over = self.cycle_nudges.len().saturating_sub(MAX_CYCLE_NUDGES);
        self.cycle_nudges.drain(..over);
    }

    fn clear_cycle(&mut self) {
        self.state = State::Idle;
        self.armed_at = None;
        self.armed_tokens = None;
        self.nudged_at = None;
    }
}

/// How long after a reply read from the transcript a status line reporting less is taken for a
/// report of the reply before it, not for a drop. The client gives the status line a request's
/// usage only once the request is done, so for a moment after a reply is written the status line
/// still reports the previous one (seen on 2.1.330: 20-60 ms). A compaction the hooks did not see
/// takes far longer than this (a summary is written in between).
const STALE_REPORT: chrono::Duration = chrono::Duration::seconds(5);

/// The tokens of an observation that may be applied: a zero reading is a transient frame, a
/// reading from a reply written before the last compaction is stale (the client may not have
/// flushed the compaction to the transcript yet), a status line still reporting exactly the
/// usage the session compacted at is reporting the old context, and one reporting less than the
/// reply the transcript showed a moment ago is reporting the reply before it
/// ([`STALE_REPORT`]).
fn fresh_tokens(m: &Marker, obs: &Observation, now: DateTime<Utc>) -> Option<u64> {
    let t = obs.tokens.filter(|t| *t > 0)?;
    if let (Some(reply), Some(compacted)) = (obs.reply_at, m.compacted_at) {
        if reply < compacted {
            return None;
        }
    }
    if obs.source == Source::Statusline {
        if m.tokens_at_compaction == Some(t) {
            return None;
        }
        if let Some((read, at, _)) = m.last_reply {
            if t < read && now.signed_duration_since(at) < STALE_REPORT {
                return None;
            }
        }
    }
    Some(t)
}

/// The one place the marker changes.
#[allow(clippy::too_many_lines)] // one match over the events, each arm short: read it whole
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
            let tokens = fresh_tokens(&m, obs, now);
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
                    m.cycle_nudges.clear();
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
                m.compact_source.clone_from(&obs.compact_source);
                m.limits_at = Some(now);
                m.limits_key = obs.limits_key;
                m.idle_compaction = obs.idle_compaction;
                m.idle_from = obs.idle_from;
            }
            // A newer reply with no boundary since the previous one proves the client checked
            // the previous reading (plus what followed it) and did not compact: its point lies
            // above that reading. A reading alone proves nothing (the check before its request
            // saw less).
            if let (Some(t), Some(at)) = (tokens, obs.reply_at) {
                let w = limits.window;
                if let Some((prev, prev_at, prev_w)) = m.last_reply {
                    // A compaction between the two shows as a drop (and PreCompact forgets the
                    // previous reply): only a reply at least as large counts.
                    let no_boundary = obs.boundary_at.is_none_or(|b| b < prev_at);
                    let higher = m
                        .uncompacted_max
                        .is_none_or(|(max, seen)| seen != w || prev > max);
                    if at > prev_at && prev_w == w && no_boundary && t >= prev && higher {
                        m.uncompacted_max = Some((prev, w));
                    }
                    // Context lost between the two with no compaction the hooks (PreCompact) or
                    // the transcript (a boundary) saw: recorded here, by whichever hook read it.
                    let compacted_since = m.compacted_at.is_some_and(|c| c >= prev_at);
                    if at > prev_at
                        && no_boundary
                        && !compacted_since
                        && is_drop(prev, t)
                        && m.dropped_at != Some(at)
                    {
                        m.pending_drop = Some(PendingDrop {
                            before: prev,
                            before_at: prev_at,
                            after: t,
                            after_at: at,
                        });
                    }
                }
                m.last_reply = Some((t, at, w));
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
                m.model.clone_from(&obs.model);
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
            if let Some(cwd) = obs.cwd.as_deref().filter(|c| !c.is_empty()) {
                if m.cwd.as_deref() != Some(cwd) {
                    m.cwd = Some(crate::text::cut(cwd, MAX_CWD_CHARS));
                }
            }
        }
        Event::Nudged(level) => {
            m.state = match level {
                Nudge::Normal => State::Nudged,
                Nudge::Critical => State::CriticalNudged,
            };
            m.nudged_at = Some(now);
            let nudge = LastNudge {
                at: now,
                tokens: m.tokens,
                critical: *level == Nudge::Critical,
                idle: false,
            };
            m.remember_nudge(&nudge);
            m.last_nudge = Some(nudge);
        }
        Event::IdleNudged => {
            let nudge = LastNudge {
                at: now,
                tokens: m.tokens,
                critical: false,
                idle: true,
            };
            m.remember_nudge(&nudge);
            m.last_nudge = Some(nudge.clone());
            m.idle_nudge = Some(nudge);
        }
        Event::Compacted {
            checkpoint,
            tokens,
            repeat,
            drop,
            ..
        } => {
            if *drop {
                m.drops = m.drops.saturating_add(1);
            }
            let before = tokens.or(m.tokens).or(m.tokens_at_compaction);
            // Where an auto-compaction happened is not learned here: the reading `PreCompact`
            // has is often a reply older than the one that crossed the point. The boundary's
            // exact `preTokens` teaches it, at the next reading (`Observation::auto_pre_tokens`).
            m.clear_cycle();
            if !*repeat || m.compactions == 0 {
                m.cycle += 1;
                m.compactions += 1;
            }
            m.tokens = None;
            m.growth = None;
            m.last_reply = None;
            // The compaction's checkpoint covers a drop no hook had acted on yet.
            m.pending_drop = None;
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
        Event::Handed(receipt) => {
            m.recovery_pending = false;
            m.receipt_pending.clone_from(receipt);
        }
        Event::ReceiptSettled => {
            m.recovery_pending = false;
            m.receipt_pending = None;
        }
        Event::DropTaken(drop) => {
            if m.pending_drop == Some(*drop) {
                m.pending_drop = None;
            }
            m.dropped_at = Some(drop.after_at);
        }
        Event::ModelNamed(model) => {
            m.session_model = Some(model.clone());
            m.limits_at = None;
        }
        Event::CheckpointRebuilt { from, to } => {
            if m.last_checkpoint.as_deref() == Some(from.as_str()) {
                m.last_checkpoint = Some(to.clone());
                if let Some(p) = m.receipt_pending.as_mut() {
                    p.checkpoint.clone_from(to);
                }
            }
        }
        Event::DigestGiven => m.digest_given = true,
        Event::BoundaryCounted(at) => {
            m.boundary_counted = Some(m.boundary_counted.map_or(*at, |c| c.max(*at)));
        }
        Event::Ended { checkpoint } => {
            // The cycle goes on: a session resumed later is the same session (`-p` ends every
            // run), and its nudges were given.
            m.ended_at = Some(now);
            m.last_checkpoint = Some(checkpoint.clone());
            m.digest_given = false;
        }
        Event::Reset => m.clear_cycle(),
    }
    m.updated_at = Some(now);
    m
}

#[cfg(test)]
mod tests;
