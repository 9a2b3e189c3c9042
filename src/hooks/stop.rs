//! `ctxguard stop`: the nudge before an idle compaction. The client compacts an attended session
//! of 200k tokens or more (`CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS`) while it waits for the user,
//! about 54 minutes after its last request, unless `idleCompaction` is off. No tool call comes
//! before such a compaction, so neither `PreToolUse` nor `UserPromptSubmit` can ask the agent to
//! save first. `Stop` runs when the agent ends its turn: when idle compaction could take the
//! session and it would cost something (no nudge this cycle, or enough new work since the last
//! one), it answers with `additionalContext`, which the client (2.1.330, 2.1.332: read in its
//! code, seen on the real TUI) gives the model once as `Stop hook additional context: …` and lets
//! it go on once, showing the user a neutral `Stop hook says: …` (a `decision: block` reaches the
//! model twice and shows "Stop hook reported a problem"). The idle nudge is a level of its own:
//! at most once per cycle, and it never takes the place of the trigger's or the critical nudge.
//! Never while a Stop hook already keeps the turn going (`stop_hook_active`), never for a
//! subagent, never under `-p` or the SDK (no idle compaction there), and not with `idle_nudge`
//! off.

use anyhow::Result;

use crate::config::{Config, Env};
use crate::event;
use crate::hooks::{additional_context, Diag, Outcome};
#[cfg(test)]
use crate::marker::Marker;
#[cfg(test)]
use crate::nudge::decide_idle as decide;

/// The hook, given its input and environment: the session step on the `Stop` route
/// ([`crate::step::take`]), which reads the transcript as the other hooks do (a reading older
/// than the status line's is no news) and decides the idle nudge.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let input = super::parse_event(bytes, event::STOP, env)?;
    // Codex never compacts an idle session, and fails a Stop hook that answers with context.
    let codex = input.client() == crate::input::Client::Codex;
    if !input.agent_id.is_empty() || input.stop_hook_active || env.unattended || codex {
        return Ok(Outcome::Quiet);
    }
    let paths = env.paths()?;
    if !Config::for_hook(&paths, env, diag).idle_nudge {
        return Ok(Outcome::Quiet);
    }
    let text = crate::step::take(&input, env, crate::step::Route::Stop, diag)?;
    Ok(text
        .map(|text| additional_context(event::STOP, text))
        .into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marker::{self, Event, LastNudge, Observation, State};
    use crate::usage::Limits;
    use chrono::TimeZone;
    use chrono::{DateTime, Utc};

    fn t(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
    }

    fn obs(tokens: u64) -> Observation {
        let mut o = Observation::new(
            Some(tokens),
            Limits::compute(1_000_000, &Config::default().policy()),
            marker::Source::Transcript,
        );
        o.idle_compaction = Some(true);
        o.idle_from = Some(200_000);
        o.window_source = Some(crate::window::WindowSource::Model);
        o
    }

    #[test]
    fn once_per_cycle_past_the_idle_threshold_and_only_when_attended() {
        let config = Config::default();
        let m = Marker::new("s");
        // Below 200k: idle compaction cannot take the session.
        assert!(!decide(&m, Some(&obs(150_000)), &config, t(0), true).1);
        // 250k of 1M: it can, and no nudge was given.
        let (next, yes) = decide(&m, Some(&obs(250_000)), &config, t(0), true);
        assert!(yes);
        // A level of its own: the state (and so the trigger's nudge) is untouched.
        assert_eq!(next.state, State::Idle);
        assert_eq!(
            next.idle_nudge.as_ref().map(|n| n.tokens),
            Some(Some(250_000))
        );
        // Once: the next Stop of the cycle says nothing, even 600k later.
        let (after, again) = decide(&next, Some(&obs(850_000)), &config, t(10), true);
        assert!(!again);
        assert_eq!(after.cycle, next.cycle);
        // Not after the marker went stale either (the user back after 31 minutes, before the
        // client's idle compaction at about an hour).
        let (_, again) = decide(&next, Some(&obs(260_000)), &config, t(31 * 60), true);
        assert!(!again);
        // After a compaction, the next cycle may be asked again.
        let compacted = marker::transition(
            &next,
            &Event::Compacted {
                checkpoint: "cp".into(),
                tokens: None,
                auto: true,
                repeat: false,
                drop: false,
            },
            t(40 * 60),
            config.stale(),
        );
        assert!(decide(&compacted, Some(&obs(250_000)), &config, t(41 * 60), true).1);
        // Unattended (`-p`, the SDK), or turned off: never.
        assert!(!decide(&m, Some(&obs(250_000)), &config, t(0), false).1);
        let off = Config {
            idle_nudge: false,
            ..Config::default()
        };
        assert!(!decide(&m, Some(&obs(250_000)), &off, t(0), true).1);
        // idleCompaction off, or a threshold above the usage.
        let mut no_idle = obs(250_000);
        no_idle.idle_compaction = Some(false);
        assert!(!decide(&m, Some(&no_idle), &config, t(0), true).1);
        let mut higher = obs(250_000);
        higher.idle_from = Some(300_000);
        assert!(!decide(&m, Some(&higher), &config, t(0), true).1);
    }

    /// Right after the trigger's nudge the agent has saved: an idle nudge then costs a turn
    /// for little. With enough new work since, it is worth one.
    #[test]
    fn only_with_enough_new_work_since_this_cycles_nudge() {
        let config = Config::default();
        let mut m = Marker::new("s");
        m.last_nudge = Some(LastNudge {
            at: t(0),
            tokens: Some(300_000),
            critical: false,
            idle: false,
        });
        assert!(!decide(&m, Some(&obs(350_000)), &config, t(10), true).1);
        assert!(decide(&m, Some(&obs(400_000)), &config, t(10), true).1);
        // A nudge of an earlier cycle does not count.
        m.compacted_at = Some(t(5));
        assert!(decide(&m, Some(&obs(350_000)), &config, t(10), true).1);
    }
}
