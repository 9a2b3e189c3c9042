//! `ctxguard precompact`: runs when a compaction starts. It writes a mechanical checkpoint of the
//! part of the transcript the compaction is about to summarise, appends to the daily log, starts
//! a new marker cycle and records that a recovery is pending. Then it prints the checkpoint's
//! facts for the client's summarizer ([`summary_facts`]): the client adds `PreCompact`'s plain
//! stdout to the compaction's instructions, after the user's own. Only on clients known to do
//! so, only with `summary_facts` on, only for an automatic compaction (a manual one would show
//! it to the user and echo it to the model: [`facts`]), and only once the checkpoint is saved: a
//! run that fails prints nothing. A repeated `PreCompact` of one compaction prints the same block.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use chrono::{DateTime, Utc};

use crate::checkpoint::Checkpoint;
use crate::checkpointing;
use crate::config::{Config, Env};
use crate::event;
use crate::hooks::{Diag, Outcome};
use crate::input::{Client, HookInput};
use crate::marker::{self, Event, Marker, State, Store};
use crate::summary_facts;
use crate::transcript;

/// Never hold a compaction when usage is this close to the window: that compaction may be
/// what recovers the session from an overflow.
const GATE_MARGIN: u64 = 5_000;

/// Whether the opt-in gate holds this compaction: only an auto-compaction, only when enabled,
/// only while this cycle's nudge has not been delivered, only when usage is known and not within
/// [`GATE_MARGIN`] of the window, and never twice before a compaction passes.
pub fn gate(
    config: &Config,
    trigger: &str,
    marker: &Marker,
    tokens: Option<u64>,
    window: u64,
    now: DateTime<Utc>,
) -> bool {
    let stale = config.stale();
    let delivered = matches!(
        marker.effective_state(now, stale),
        State::Nudged | State::CriticalNudged
    );
    config.gate_auto_compaction
        && trigger == "auto"
        && !delivered
        && marker.gate_held_at.is_none()
        && tokens.is_some_and(|t| t.saturating_add(GATE_MARGIN) < window)
}

const GATE_REASON: &str = "auto-compaction held once so the agent can save its memories first: ctxguard's nudge for this cycle has not been delivered yet (gate_auto_compaction is on). The next auto-compaction will proceed.";

/// The window the gate may rely on: one the config forces, or one the status line reported for
/// this session within `stale_after`, and only if usage fits in it. Anything else (a guess, a
/// window kept from before a model switch) is in doubt, and a gate in doubt never holds.
fn trusted_window(
    config: &Config,
    marker: &Marker,
    tokens: Option<u64>,
    now: DateTime<Utc>,
) -> Option<u64> {
    let stale = config.stale();
    let window = config.window_tokens.or_else(|| {
        marker
            .reported_window
            .filter(|_| marker.statusline_fresh(now, stale))
    })?;
    (tokens? < window).then_some(window)
}

/// Runs the gate under the session lock; true when it held the compaction.
fn try_gate(
    input: &HookInput,
    store: &Store,
    config: &Config,
    now: DateTime<Utc>,
    diag: &mut Diag,
) -> Result<bool> {
    let scan = transcript::tail_usage(Path::new(&input.transcript_path)).ok();
    let stale = config.stale();
    store.update(&input.session_id, diag, |m, _| {
        let tokens = scan.and_then(|s| s.tokens).or(m.tokens);
        let held = trusted_window(config, m, tokens, now)
            .is_some_and(|window| gate(config, &input.trigger, m, tokens, window, now));
        let next = if held {
            marker::transition(m, &Event::GateHeld, now, stale)
        } else {
            m.clone()
        };
        Ok((next, held))
    })
}

/// A second `PreCompact` this soon after one, with no compaction finished in between (no
/// `compact_boundary` written since), belongs to the same compaction: 2.1.330 runs `PreCompact`
/// twice for one auto-compaction, sometimes with a reply in between.
const REPEAT_WITHIN: Duration = Duration::from_secs(120);

/// Is this `PreCompact` a repeat of the one the marker recorded? `boundary` is the time of the
/// transcript's newest `compact_boundary`, if any.
fn is_repeat(marker: &Marker, boundary: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    let Some(compacted) = marker.compacted_at else {
        return false;
    };
    // Parallel runs take `now` before the lock: the first to record may be a little ahead.
    let recent = marker::within(compacted, now, REPEAT_WITHIN);
    recent && boundary.is_none_or(|b| b < compacted)
}

/// The hook, given its input and environment.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let input = super::parse_event(bytes, event::PRE_COMPACT, env)?;
    let paths = env.paths()?;
    let config = Config::for_hook(&paths, env, diag);
    let store = Store::new(&paths, &input.session_id);
    let now = env.now();
    let codex = input.client() == Client::Codex;
    let pi = input.client() == Client::Pi;
    // The gate holds a compaction by Claude Code's exit code 2; Codex's and pi's extension are
    // not known to, so their compactions are never held.
    if config.gate_auto_compaction && input.trigger == "auto" && !codex && !pi {
        match try_gate(&input, &store, &config, now, diag) {
            Ok(true) => return Ok(Outcome::Block(GATE_REASON.to_string())),
            Ok(false) => {}
            // The gate fails open: compaction proceeds and is checkpointed.
            Err(e) => diag.note(format!("compaction gate: {e:#}")),
        }
    }

    // The newest boundary, to tell a repeated PreCompact from a new compaction. A Claude Code
    // transcript is opened once: this and the checkpoint's read share it.
    let path = Path::new(&input.transcript_path);
    let mut opened = (!codex && !input.transcript_path.is_empty())
        .then(|| crate::checkpoint::Opened::open(path).ok())
        .flatten();
    let boundary = match opened.as_mut() {
        Some(o) => o.newest_boundary_time(),
        None if codex => crate::rollout::newest_compaction_time(path).ok().flatten(),
        None => transcript::newest_boundary_time(path).ok().flatten(),
    };
    // On Codex, the compactions the rollout holds: the one count that tells a new compaction
    // from this one's PreCompact run again (never the payload, nor the time).
    let written_compactions = codex
        .then(|| crate::rollout::compaction_count(Path::new(&input.transcript_path)).ok())
        .flatten();
    // A repeat with a reply since the first run replaces its checkpoint with a fresher one of
    // the same compaction: same number, same cycle.
    let repeat = |current: &Marker| match written_compactions {
        // Its `compacted` line is written once the compaction is done: a compaction counted
        // but not yet in the rollout is this one. (A drop of context counted as one is in no
        // rollout.)
        Some(written) => current.compactions.saturating_sub(current.drops) > written,
        None => is_repeat(current, boundary, now),
    };
    // Codex does not use PreCompact's output: its summary cannot be steered (the recovery
    // brings the facts back instead).
    // pi's extension runs pi's own compaction with them after the user's instructions, manual
    // or not (pi shows them to nobody: they reach only the summarizer's prompt).
    let facts = |cp: &Checkpoint, version: Option<&str>| {
        if pi {
            return config
                .summary_facts
                .then(|| summary_facts::render(cp))
                .flatten();
        }
        facts(cp, version, &config).filter(|_| !codex)
    };
    let occasion = checkpointing::Occasion::Compaction {
        repeat: &repeat,
        facts: &facts,
        after: false,
        boundary: None,
        given: false,
    };
    let until = checkpointing::Until {
        end: u64::MAX,
        opened: opened.as_mut(),
    };
    let taken = checkpointing::take(&paths, env, &config, &input, until, &occasion, diag)?;
    Ok(taken.and_then(|t| t.facts).into())
}

/// What `PreCompact` prints: the facts block for the summarizer, when `summary_facts` is on, the
/// client that wrote the transcript is known to make it part of the compaction's instructions,
/// and the compaction is automatic. On a manual `/compact` the client (2.1.14 to 2.1.332: read
/// in its code, seen on the real 2.1.330) also shows `PreCompact`'s output to the user (`PreCompact
/// [...] completed successfully: ...`, its lines run together) and keeps it in the conversation
/// as `<local-command-stdout>`, so the model would get the facts twice, the recovery block after
/// it being the second; no form of the output avoids that. There the user's own words steer the
/// summary, and the facts come back once, in the recovery block. An automatic compaction (at the
/// threshold, when the window is full, or while idle) shows and echoes nothing.
pub fn facts(cp: &Checkpoint, client_version: Option<&str>, config: &Config) -> Option<String> {
    if !config.summary_facts
        || cp.meta.trigger == "manual"
        || summary_facts::delivery(client_version) != summary_facts::Delivery::Instructions
    {
        return None;
    }
    summary_facts::render(cp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on() -> Config {
        Config {
            gate_auto_compaction: true,
            ..Config::default()
        }
    }

    fn marker(state: State) -> Marker {
        Marker {
            state,
            updated_at: Some(Utc::now()),
            ..Marker::new("s")
        }
    }

    #[test]
    fn a_repeated_precompact_is_recognised() {
        let now = Utc::now();
        let secs = |s: i64| now - chrono::Duration::seconds(s);
        let compacted = Marker {
            compacted_at: Some(secs(5)),
            ..Marker::new("s")
        };
        // No compaction finished since the last PreCompact: a repeat.
        assert!(is_repeat(&compacted, Some(secs(300)), now));
        assert!(is_repeat(&compacted, None, now));
        // Its boundary was written: a new compaction.
        assert!(!is_repeat(&compacted, Some(secs(1)), now));
        // Too long ago, or never compacted: new.
        assert!(!is_repeat(
            &compacted,
            None,
            now + chrono::Duration::seconds(200)
        ));
        assert!(!is_repeat(&Marker::new("s"), None, now));
        // A parallel run that took its time a moment before the recorded one.
        let ahead = Marker {
            compacted_at: Some(now + chrono::Duration::seconds(1)),
            ..Marker::new("s")
        };
        assert!(is_repeat(&ahead, None, now));
    }

    #[test]
    fn gate_branches() {
        let now = Utc::now();
        let idle = marker(State::Idle);
        let t = Some(150_000);
        // Holds: enabled, auto, not delivered, usage known and clear of the window.
        assert!(gate(&on(), "auto", &idle, t, 200_000, now));
        assert!(gate(&on(), "auto", &marker(State::Armed), t, 200_000, now));
        // Off by default.
        assert!(!gate(&Config::default(), "auto", &idle, t, 200_000, now));
        // Never for /compact.
        assert!(!gate(&on(), "manual", &idle, t, 200_000, now));
        assert!(!gate(&on(), "", &idle, t, 200_000, now));
        // Not once the nudge was delivered.
        assert!(!gate(
            &on(),
            "auto",
            &marker(State::Nudged),
            t,
            200_000,
            now
        ));
        assert!(!gate(
            &on(),
            "auto",
            &marker(State::CriticalNudged),
            t,
            200_000,
            now
        ));
        // Never near the window (an overflow recovery), never with usage unknown.
        assert!(!gate(&on(), "auto", &idle, Some(195_000), 200_000, now));
        assert!(gate(&on(), "auto", &idle, Some(194_999), 200_000, now));
        assert!(!gate(&on(), "auto", &idle, None, 200_000, now));
        // Never twice before a compaction passes.
        let held = Marker {
            gate_held_at: Some(now),
            ..marker(State::Armed)
        };
        assert!(!gate(&on(), "auto", &held, t, 200_000, now));
        // A stale nudged marker counts as idle: the nudge belongs to an old cycle.
        let stale = Marker {
            updated_at: Some(now - chrono::Duration::hours(2)),
            ..marker(State::Nudged)
        };
        assert!(gate(&on(), "auto", &stale, t, 200_000, now));
    }
}
