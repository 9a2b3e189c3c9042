//! `ctxguard statusline`: Claude Code pipes its status-line JSON here on every refresh. It is the
//! cheapest, freshest source of usage, so this is where the marker is normally armed. It prints one
//! gauge line (or nothing with `--quiet`), and never fails: bad input renders a neutral segment.

use std::time::Duration;

use anyhow::Result;
use chrono::{DateTime, Utc};

use crate::config::{Config, Env};
use crate::hooks::{Diag, Outcome};
use crate::input::{self, StatusLineInput};
use crate::marker::{self, Event, Marker, Observation, Source, Store};
use crate::usage::{self, human, percent, Level, Limits};

/// The segment shown when the input cannot be read.
pub const NEUTRAL: &str = "ctx ?";

/// What the status line knows after reading its input.
#[derive(Debug, Clone, PartialEq)]
pub struct Gauge {
    pub tokens: Option<u64>,
    pub limits: Limits,
}

/// The reading carried by one status-line payload.
pub fn observe(input: &StatusLineInput, config: &Config) -> Observation {
    let reported = input.context_window.context_window_size.filter(|w| *w > 0);
    let tokens = input
        .context_window
        .current_usage
        .map(|u| u.counts().context_tokens());
    let window = usage::window(config.window_tokens, reported, tokens);
    Observation {
        tokens,
        limits: Limits::compute(window, &config.policy()),
        source: Source::Statusline,
        boundary_at: None,
        reported_window: reported,
    }
}

/// The marker after this payload, and the gauge to draw.
pub fn decide(
    marker: &Marker,
    observation: Observation,
    config: &Config,
    now: DateTime<Utc>,
) -> (Marker, Gauge) {
    let gauge = Gauge {
        tokens: observation.tokens,
        limits: observation.limits,
    };
    let stale = Duration::from_secs(config.stale_after_secs);
    let next = marker::transition(marker, &Event::Observe(observation), now, stale);
    (next, gauge)
}

const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

/// `ctx 64% · 128k/200k · compacts in 39k`, coloured by how close compaction is.
pub fn render(gauge: &Gauge, color: bool) -> String {
    let l = &gauge.limits;
    let Some(tokens) = gauge.tokens else {
        return format!("ctx ?/{}", human(l.window));
    };
    let distance = if tokens >= l.compact_at {
        "compaction due".to_string()
    } else {
        format!("compacts in {}", human(l.headroom(tokens)))
    };
    let text = format!(
        "ctx {}% · {}/{} · {distance}",
        percent(tokens, l.window),
        human(tokens),
        human(l.window)
    );
    if !color {
        return text;
    }
    let colour = match l.level(tokens) {
        _ if tokens >= l.compact_at => RED,
        Level::Critical => RED,
        Level::Armed => YELLOW,
        Level::Below => GREEN,
    };
    format!("{colour}{text}{RESET}")
}

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

/// The hook, given its input and environment.
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
    let config = super::config(&paths, env, diag);
    let observation = observe(&input, &config);
    let store = Store::new(&paths, &input.session_id);
    let now = env.now();
    // The gauge is drawn even when the state cannot be recorded.
    let recorded = store.update(&input.session_id, diag, |current, _| {
        Ok(decide(current, observation.clone(), &config, now))
    });
    let gauge = match recorded {
        Ok(gauge) => Some(gauge),
        Err(e) => {
            diag.note(format!("{e:#}"));
            None
        }
    };
    Ok(gauge.unwrap_or(Gauge {
        tokens: observation.tokens,
        limits: observation.limits,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marker::State;

    fn input(json: &str) -> StatusLineInput {
        input::parse(json.as_bytes(), "status line").unwrap()
    }

    fn payload(tokens: u64, window: u64) -> StatusLineInput {
        input(&format!(
            r#"{{"session_id":"s","context_window":{{"context_window_size":{window},"current_usage":{{"input_tokens":{tokens},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":7}}}}}}"#
        ))
    }

    #[test]
    fn arms_past_the_trigger_on_the_reported_window() {
        let config = Config::default();
        let now = Utc::now();
        let (m, g) = decide(
            &Marker::new("s"),
            observe(&payload(930_000, 1_000_000), &config),
            &config,
            now,
        );
        assert_eq!(m.state, State::Armed);
        assert_eq!(m.window, Some(1_000_000));
        assert_eq!(g.limits.compact_at, 967_000);
        let (m, _) = decide(
            &Marker::new("s"),
            observe(&payload(926_999, 1_000_000), &config),
            &config,
            now,
        );
        assert_eq!(m.state, State::Idle);
    }

    #[test]
    fn forced_window_beats_the_reported_one() {
        let config = Config {
            window_tokens: Some(200_000),
            ..Config::default()
        };
        let obs = observe(&payload(130_000, 1_000_000), &config);
        assert_eq!(obs.limits.window, 200_000);
        assert_eq!(obs.reported_window, Some(1_000_000));
    }

    #[test]
    fn null_usage_is_unknown() {
        let config = Config::default();
        let obs = observe(
            &input(
                r#"{"session_id":"s","context_window":{"context_window_size":1000000,"current_usage":null}}"#,
            ),
            &config,
        );
        assert_eq!(obs.tokens, None);
        let g = Gauge {
            tokens: None,
            limits: obs.limits,
        };
        assert_eq!(render(&g, false), "ctx ?/1M");
    }

    #[test]
    fn gauge_text_and_colours() {
        let limits = Limits::compute(200_000, &Default::default());
        let g = |tokens| Gauge {
            tokens: Some(tokens),
            limits,
        };
        assert_eq!(
            render(&g(128_000), false),
            "ctx 64% · 128k/200k · compacts in 39k"
        );
        assert_eq!(
            render(&g(170_000), false),
            "ctx 85% · 170k/200k · compaction due"
        );
        assert!(render(&g(100_000), true).starts_with(GREEN));
        assert!(render(&g(130_000), true).starts_with(YELLOW));
        assert!(render(&g(155_000), true).starts_with(RED));
        assert!(render(&g(155_000), true).ends_with(RESET));
    }
}
