//! `ctxguard pretooluse`: runs before every tool call. When the marker is armed and this cycle's
//! nudge has not been given, it adds context telling the agent to save durable memories now.
//! Exactly once per level per cycle, however many tool calls run in parallel, because the
//! armed → nudged transition happens under the session lock. It never approves, denies or alters
//! the call: the only thing it ever prints is `additionalContext`.
//!
//! Fast path: when the status line reported usage in the last minute and the marker has nothing
//! pending, the hook answers from one small file read, without the config, the lock or the
//! transcript.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use chrono::{DateTime, Utc};

use crate::config::{render_text, Config, Env};
use crate::hooks::{additional_context, Diag, Outcome};
use crate::marker::{
    self, Event, Marker, Nudge, Observation, Source, State, Store, STATUSLINE_FRESH,
};
use crate::transcript::{self, TailUsage};
use crate::usage::{self, Limits};

/// Does the marker, as it is on disk, already answer without more work?
pub fn fast_path(marker: &Marker, now: DateTime<Utc>) -> bool {
    marker.statusline_fresh(now, STATUSLINE_FRESH) && marker.pending_nudge().is_none()
}

/// The usage reading a transcript scan gives, on the window this session is known to have.
pub fn observe_transcript(scan: &TailUsage, marker: &Marker, config: &Config) -> Observation {
    let window = usage::window(config.window_tokens, marker.reported_window, scan.tokens);
    Observation {
        tokens: scan.tokens,
        limits: Limits::compute(window, &config.policy()),
        source: Source::Transcript,
        boundary_at: scan.boundary_at,
        reported_window: None,
    }
}

/// The marker after this tool call, and the nudge to give (if any). `scan` is the transcript
/// reading, used only when the status line is not reporting.
pub fn decide(
    marker: &Marker,
    scan: Option<&TailUsage>,
    config: &Config,
    now: DateTime<Utc>,
) -> (Marker, Option<Nudge>) {
    let stale = Duration::from_secs(config.stale_after_secs);
    let mut m = marker.clone();
    if !m.statusline_fresh(now, STATUSLINE_FRESH) {
        if let Some(scan) = scan {
            let observation = observe_transcript(scan, &m, config);
            m = marker::transition(&m, &Event::Observe(observation), now, stale);
        }
    }
    if m.effective_state(now, stale) == State::Idle {
        return (m, None);
    }
    match m.pending_nudge() {
        Some(level) => (
            marker::transition(&m, &Event::Nudged(level), now, stale),
            Some(level),
        ),
        None => (m, None),
    }
}

/// The text of a nudge, from the configured template and the marker's numbers.
pub fn nudge_text(level: Nudge, marker: &Marker, config: &Config) -> String {
    let template = match level {
        Nudge::Normal => &config.nudge_text,
        Nudge::Critical => &config.critical_text,
    };
    let tokens = marker.tokens.unwrap_or(0);
    let window = marker.window.unwrap_or(usage::DEFAULT_WINDOW);
    let headroom = marker.compact_at.map_or(0, |c| c.saturating_sub(tokens));
    render_text(template, tokens, window, headroom)
}

/// The hook, given its input and environment.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let input = super::parse_event(bytes, "PreToolUse")?;
    let paths = env.paths()?;
    let store = Store::new(&paths, &input.session_id);
    let now = env.now();

    let peeked = store.peek();
    if let Ok(Some(m)) = &peeked {
        if fast_path(m, now) {
            return Ok(Outcome::Quiet);
        }
    }
    let config = super::config(&paths, env, diag);

    // The transcript is read before the lock is taken, so parallel hooks do not queue behind
    // each other's I/O; the reading is applied to whatever the marker is once locked.
    let statusline_fresh =
        matches!(&peeked, Ok(Some(m)) if m.statusline_fresh(now, STATUSLINE_FRESH));
    let scan = if statusline_fresh {
        None
    } else if input.transcript_path.is_empty() {
        diag.note(
            "no transcript_path in the input and no recent status-line report; usage unknown",
        );
        None
    } else {
        match transcript::tail_usage(Path::new(&input.transcript_path)) {
            Ok(scan) => {
                if scan.gave_up {
                    diag.note(format!(
                        "no usage in the last {} MiB of {}; usage unknown",
                        transcript::MAX_SCAN >> 20,
                        input.transcript_path
                    ));
                }
                Some(scan)
            }
            Err(e) => {
                diag.note(format!("{e:#}; usage unknown"));
                None
            }
        }
    };

    // If the nudge cannot be recorded, it is not given: an unrecorded nudge would repeat on
    // every tool call.
    let (next, nudge) = store.update(&input.session_id, diag, |current, _| {
        let (next, nudge) = decide(current, scan.as_ref(), &config, now);
        Ok((next.clone(), (next, nudge)))
    })?;
    Ok(nudge
        .map(|level| additional_context("PreToolUse", nudge_text(level, &next, &config)))
        .into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
    }

    fn scan(tokens: Option<u64>) -> TailUsage {
        TailUsage {
            tokens,
            ..TailUsage::default()
        }
    }

    #[test]
    fn transcript_reading_arms_and_nudges_once() {
        let config = Config::default();
        let (m, nudge) = decide(&Marker::new("s"), Some(&scan(Some(130_000))), &config, t(0));
        assert_eq!(nudge, Some(Nudge::Normal));
        assert_eq!(
            (m.state, m.source),
            (State::Nudged, Some(Source::Transcript))
        );
        let (m, nudge) = decide(&m, Some(&scan(Some(131_000))), &config, t(1));
        assert_eq!(nudge, None);
        assert_eq!(m.tokens, Some(131_000));
        let (m, nudge) = decide(&m, Some(&scan(Some(153_000))), &config, t(2));
        assert_eq!(nudge, Some(Nudge::Critical));
        assert_eq!(m.state, State::CriticalNudged);
    }

    #[test]
    fn below_the_trigger_nothing() {
        let (m, nudge) = decide(
            &Marker::new("s"),
            Some(&scan(Some(10_000))),
            &Config::default(),
            t(0),
        );
        assert_eq!((m.state, nudge), (State::Idle, None));
    }

    #[test]
    fn transcript_window_uses_the_reported_size() {
        let marker = Marker {
            reported_window: Some(1_000_000),
            ..Marker::new("s")
        };
        // 300k is far below the 1M trigger.
        let (m, nudge) = decide(
            &marker,
            Some(&scan(Some(300_000))),
            &Config::default(),
            t(0),
        );
        assert_eq!((m.window, nudge), (Some(1_000_000), None));
        // Without a report, 180k on the default 200k window arms.
        let (m, nudge) = decide(
            &Marker::new("s"),
            Some(&scan(Some(180_000))),
            &Config::default(),
            t(0),
        );
        assert_eq!((m.window, nudge), (Some(200_000), Some(Nudge::Critical)));
    }

    #[test]
    fn a_fresh_status_line_is_trusted_over_the_transcript() {
        let marker = Marker {
            state: State::Armed,
            tokens: Some(130_000),
            critical_at: Some(152_000),
            statusline_at: Some(t(0)),
            updated_at: Some(t(0)),
            ..Marker::new("s")
        };
        // The scan would say "dropped" but is ignored while the status line reports.
        let (m, nudge) = decide(&marker, Some(&scan(Some(1_000))), &Config::default(), t(30));
        assert_eq!((m.state, nudge), (State::Nudged, Some(Nudge::Normal)));
        assert!(!fast_path(&marker, t(30)));
        assert!(fast_path(&m, t(30)));
        assert!(!fast_path(&m, t(61)));
    }

    #[test]
    fn stale_armed_marker_without_a_reading_does_not_nudge() {
        let marker = Marker {
            state: State::Armed,
            tokens: Some(130_000),
            updated_at: Some(t(0)),
            ..Marker::new("s")
        };
        let (_, nudge) = decide(&marker, None, &Config::default(), t(1801));
        assert_eq!(nudge, None);
        let (_, nudge) = decide(&marker, None, &Config::default(), t(1800));
        assert_eq!(nudge, Some(Nudge::Normal));
    }

    #[test]
    fn output_is_exactly_additional_context() {
        let out = additional_context("PreToolUse", "save \"now\"".into());
        assert_eq!(
            out,
            "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"additionalContext\":\"save \\\"now\\\"\"}}\n"
        );
    }

    #[test]
    fn nudge_text_fills_placeholders() {
        let marker = Marker {
            tokens: Some(128_000),
            window: Some(200_000),
            compact_at: Some(167_000),
            ..Marker::new("s")
        };
        let config = Config {
            nudge_text: "{pct}|{tokens}|{window}|{headroom}".into(),
            ..Config::default()
        };
        assert_eq!(
            nudge_text(Nudge::Normal, &marker, &config),
            "64|128k|200k|39k"
        );
        let default = nudge_text(Nudge::Normal, &marker, &Config::default());
        assert!(default.contains("64% full"), "{default}");
        assert!(default.contains("MEMORY.md"));
    }
}
