//! `ctxguard statusline`: Claude Code pipes its status-line JSON here on every refresh. It is the
//! cheapest, freshest source of usage, so this is where the marker is normally armed. It prints one
//! gauge line (or nothing with `--quiet`), and never fails: bad input renders a neutral segment.

use std::path::Path;

use anyhow::Result;

use crate::config::{Config, Env};
use crate::facts::{self, Context};
use crate::gauge::{decide, observe, render, Gauge};
use crate::hooks::{Diag, Outcome};
use crate::input::{self, StatusLineInput};
use crate::marker::{Marker, Source, Store};
use crate::window::CompactSource;

/// The segment shown when the input cannot be read.
const NEUTRAL: &str = "ctx ?";

pub fn run(no_color: bool, quiet: bool, then: Option<&str>, diag: &mut Diag) -> Result<Outcome> {
    let env = Env::from_process();
    // An unreadable stdin is just another bad input: the neutral segment.
    let bytes = crate::input::read_stdin().unwrap_or_else(|e| {
        diag.note(format!("{e:#}"));
        Vec::new()
    });
    // The user's own status line, started first so it runs while the gauge is computed.
    let theirs = then.map(|cmd| wrapped::start(cmd, &bytes));
    let ours = handle(&bytes, &env, no_color, quiet, diag)?;
    let Some(theirs) = theirs else {
        return Ok(ours);
    };
    let their_line = match theirs.and_then(wrapped::finish) {
        Ok(line) => line,
        Err(e) => {
            diag.note(format!("the wrapped status line: {e:#}"));
            String::new()
        }
    };
    let gauge = match ours {
        Outcome::Print(text) => text.trim_end().to_string(),
        _ => String::new(),
    };
    let line = [their_line.trim_end(), gauge.as_str()]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" · ");
    Ok(if line.is_empty() {
        Outcome::Quiet
    } else {
        Outcome::Print(line + "\n")
    })
}

/// Running the user's own status-line command for `--then`.
#[path = "then.rs"]
mod wrapped;

/// The hook, given its input and environment. It never fails (a bad input draws the neutral
/// segment); the `Result` is the signature every hook shares.
#[allow(clippy::unnecessary_wraps)]
pub fn handle(
    bytes: &[u8],
    env: &Env,
    no_color: bool,
    quiet: bool,
    diag: &mut Diag,
) -> Result<Outcome> {
    let color = !no_color && !env.no_color;
    let line = match gauge_and_record(bytes, env, diag) {
        Ok(gauge) => render(&gauge, color),
        Err(e) => {
            diag.note(format!("{e:#}"));
            NEUTRAL.to_string()
        }
    };
    // The gauge is made of numbers only: nothing from the payload reaches the terminal.
    Ok((!quiet).then(|| format!("{line}\n")).into())
}

fn gauge_and_record(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Gauge> {
    let input: StatusLineInput = input::parse(bytes, "status line")?;
    if input.session_id.is_empty() {
        anyhow::bail!("no session_id in the status-line input");
    }
    let paths = env.paths()?;
    let config = Config::for_hook(&paths, env, diag);
    let store = Store::new(&paths, &input.session_id);
    let now = env.now();
    let marker = match store.peek() {
        Ok(Some(m)) => m,
        _ => Marker::new(&input.session_id),
    };
    let no_usage = input
        .context_window
        .current_usage
        .is_none_or(|u| u.counts().context_tokens() == 0);
    let transcript = if no_usage && !input.transcript_path.is_empty() {
        match store.transcript_reading(Path::new(&input.transcript_path)) {
            Ok(r) => Some(r),
            Err(e) => {
                // Before the first reply the client may not have created it yet.
                if !crate::files::is_not_found(&e) {
                    diag.note(format!("{e:#}"));
                }
                None
            }
        }
    } else {
        None
    };
    let mut ctx = Context::new(&config, env, &paths, &input.cwd);
    ctx.client_version = (!input.version.is_empty()).then_some(input.version.as_str());
    let observation = observe(&input, &marker, &ctx, transcript.as_ref(), now);
    // What the client reports for a model is remembered for sessions without a status line.
    if let (Some(model), Some(window)) = (&observation.model, observation.reported_window) {
        if observation.tokens.is_none_or(|t| t <= window) {
            if let Err(e) = facts::learn(&paths, model, window) {
                diag.note(format!("{e:#}"));
            }
        }
    }
    // The gauge is drawn even when the state cannot be recorded.
    // The client's percent, when it describes the same usage on the same window.
    let client_pct = input
        .context_window
        .used_percentage
        .filter(|p| p.is_finite() && (0.0..=100.0).contains(p))
        .filter(|_| observation.source == Source::Statusline)
        .filter(|_| observation.reported_window == Some(observation.limits.window))
        .map(|p| p.round() as u64);
    let recorded = store.update(&input.session_id, diag, |current, _| {
        Ok(decide(current, observation.clone(), &config, now))
    });
    match recorded {
        Ok(gauge) => Ok(Gauge {
            client_pct,
            ..gauge
        }),
        Err(e) => {
            diag.note(format!("{e:#}"));
            Ok(Gauge {
                tokens: observation.tokens,
                limits: observation.limits,
                last_known: false,
                idle_from: None,
                ending: CompactSource::ending(observation.compact_source.as_ref()),
                client_pct,
                trace: None,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gauge::{GREEN, RED, RESET, YELLOW};
    use crate::marker::{Observation, State};
    use crate::reading::Reading;
    use crate::usage::Limits;
    use crate::window::Ending;
    use chrono::Utc;

    fn input(json: &str) -> StatusLineInput {
        input::parse(json.as_bytes(), "status line").unwrap()
    }

    fn payload(tokens: u64, window: u64) -> StatusLineInput {
        input(&format!(
            r#"{{"session_id":"s","model":{{"id":"claude-opus-5-5"}},"context_window":{{"context_window_size":{window},"current_usage":{{"input_tokens":{tokens},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":7}}}}}}"#
        ))
    }

    /// Observes `input` in an empty state dir with `config`.
    fn observed(
        input: &StatusLineInput,
        config: &Config,
        transcript: Option<&Reading>,
    ) -> Observation {
        let dir = tempfile::tempdir().unwrap();
        let env = Env::isolated(dir.path().join("state"), dir.path().join("home"));
        let paths = env.paths().unwrap();
        let ctx = Context {
            config,
            env: &env,
            paths: &paths,
            project: None,
            flag: None,
            client_version: None,
            client: crate::input::Client::ClaudeCode,
            pi_window: None,
        };
        observe(input, &Marker::new("s"), &ctx, transcript, Utc::now())
    }

    #[test]
    fn arms_past_the_trigger_on_the_reported_window() {
        let config = Config::default();
        let now = Utc::now();
        let obs = observed(&payload(930_000, 1_000_000), &config, None);
        assert_eq!(obs.model.as_deref(), Some("claude-opus-5-5"));
        let (m, g) = decide(&Marker::new("s"), obs, &config, now);
        assert_eq!(m.state, State::Armed);
        assert_eq!(m.window, Some(1_000_000));
        assert_eq!(g.limits.compact_at, 967_000);
        let obs = observed(&payload(926_999, 1_000_000), &config, None);
        let (m, _) = decide(&Marker::new("s"), obs, &config, now);
        assert_eq!(m.state, State::Idle);
    }

    #[test]
    fn forced_window_beats_the_reported_one() {
        let config = Config {
            window_tokens: Some(200_000),
            ..Config::default()
        };
        let obs = observed(&payload(130_000, 1_000_000), &config, None);
        assert_eq!(obs.limits.window, 200_000);
        assert_eq!(obs.reported_window, Some(1_000_000));
    }

    #[test]
    fn a_frame_without_usage_keeps_the_last_known_reading_or_reads_the_transcript() {
        let config = Config::default();
        let now = Utc::now();
        let null = input(
            r#"{"session_id":"s","context_window":{"context_window_size":1000000,"current_usage":null}}"#,
        );
        let obs = observed(&null, &config, None);
        assert_eq!(obs.tokens, None);
        // Nothing known yet: unknown.
        let (_, g) = decide(&Marker::new("s"), obs.clone(), &config, now);
        assert_eq!(render(&g, false), "ctx ?/1M");
        // Known before: the last reading, marked, and the cycle goes on.
        let (m, _) = decide(
            &Marker::new("s"),
            observed(&payload(500_000, 1_000_000), &config, None),
            &config,
            now,
        );
        let (m2, g) = decide(&m, obs, &config, now);
        assert_eq!((m2.cycle, m2.tokens), (m.cycle, Some(500_000)));
        assert_eq!(
            render(&g, false),
            "ctx ~50% · 500k/1M · compacts in 467k · idle≥200k"
        );
        // A zero frame is no reading either.
        let zero = observed(&payload(0, 1_000_000), &config, None);
        let (m3, _) = decide(&m2, zero, &config, now);
        assert_eq!((m3.cycle, m3.tokens), (m.cycle, Some(500_000)));
        // An old client without usage: the transcript's reading.
        let reading = Reading {
            tokens: Some(42_000),
            model: Some("claude-sonnet-4-5".into()),
            ..Reading::default()
        };
        let old = input(r#"{"session_id":"s","context_window":{"context_window_size":200000}}"#);
        let obs = observed(&old, &config, Some(&reading));
        assert_eq!((obs.tokens, obs.source), (Some(42_000), Source::Transcript));
        assert_eq!(obs.limits.window, 200_000);
    }

    #[test]
    fn with_auto_compaction_off_the_gauge_counts_to_where_the_client_stops() {
        // Counted to where the client stops accepting requests (177k on 2.1.332), "limit
        // reached" from there, beside the client's "Context limit reached".
        let stop = |tokens| Gauge {
            tokens: Some(tokens),
            limits: Limits::compute(
                200_000,
                &crate::usage::Policy {
                    compact_buffer_tokens: 23_000,
                    ..crate::usage::Policy::default()
                },
            ),
            last_known: false,
            idle_from: None,
            ending: Ending::Full,
            client_pct: None,
            trace: None,
        };
        assert_eq!(
            render(&stop(150_000), false),
            "ctx 75% · 150k/200k · limit in 27k"
        );
        assert_eq!(
            render(&stop(164_000), false),
            "ctx 164k/200k · limit in 13k"
        );
        assert_eq!(
            render(&stop(177_510), false),
            "ctx 178k/200k · limit reached"
        );
        assert_eq!(
            render(&stop(200_000), false),
            "ctx 200k/200k · limit reached"
        );
    }

    #[test]
    fn gauge_text_and_colours() {
        let limits = Limits::compute(200_000, &crate::usage::Policy::default());
        let g = |tokens| Gauge {
            tokens: Some(tokens),
            limits,
            last_known: false,
            idle_from: None,
            ending: Ending::Threshold,
            client_pct: None,
            trace: None,
        };
        assert_eq!(
            render(&g(128_000), false),
            "ctx 64% · 128k/200k · compacts in 39k"
        );
        // Within 20k of the threshold the client shows its own countdown: no second percent.
        assert_eq!(
            render(&g(146_000), false),
            "ctx 73% · 146k/200k · compacts in 21k"
        );
        assert_eq!(
            render(&g(147_000), false),
            "ctx 147k/200k · compacts in 20k"
        );
        assert_eq!(render(&g(170_000), false), "ctx 170k/200k · compaction due");
        // A model the client compacts only when full, and auto-compaction off: no countdown to
        // a compaction, the window's end; the client's indicator from 147k and 160k.
        let at_end = Limits::compute(
            200_000,
            &crate::usage::Policy {
                compact_buffer_tokens: 0,
                ..crate::usage::Policy::default()
            },
        );
        let end = |tokens, ending| Gauge {
            tokens: Some(tokens),
            limits: at_end,
            last_known: false,
            idle_from: None,
            ending,
            client_pct: None,
            trace: None,
        };
        // Compacted only when a request overflows, 4k before the end: counted down to there,
        // but never beside the client's own "N% context used" (100% from about 179k).
        let overflow = |tokens| Gauge {
            limits: Limits::compute(
                200_000,
                &crate::usage::Policy {
                    compact_buffer_tokens: crate::usage::OVERFLOW_MARGIN,
                    ..crate::usage::Policy::default()
                },
            ),
            ..end(tokens, Ending::CompactsWhenFull)
        };
        assert_eq!(
            render(&overflow(146_000), false),
            "ctx 73% · 146k/200k · full in 50k"
        );
        for tokens in [147_000, 171_000, 189_000, 197_000] {
            assert_eq!(
                render(&overflow(tokens), false),
                format!(
                    "ctx {}/200k · compacts when full",
                    crate::usage::human(tokens)
                )
            );
        }
        assert!(render(&g(100_000), true).starts_with(GREEN));
        assert!(render(&g(130_000), true).starts_with(YELLOW));
        assert!(render(&g(155_000), true).starts_with(RED));
        assert!(render(&g(155_000), true).ends_with(RESET));
        let idle = Gauge {
            tokens: Some(250_000),
            limits: Limits::compute(1_000_000, &crate::usage::Policy::default()),
            last_known: false,
            idle_from: Some(200_000),
            ending: Ending::Threshold,
            client_pct: None,
            trace: None,
        };
        assert_eq!(
            render(&idle, false),
            "ctx 25% · 250k/1M · compacts in 717k · idle≥200k"
        );
        // The client's threshold, raised (`CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS`).
        let raised = Gauge {
            tokens: Some(550_000),
            idle_from: Some(500_000),
            ..idle
        };
        assert_eq!(
            render(&raised, false),
            "ctx 55% · 550k/1M · compacts in 417k · idle≥500k"
        );
    }
}
