//! The status line's gauge, below the hook that draws it and `replay`, which simulates it: what
//! a status-line frame tells the marker ([`observe`]), the marker after it and the gauge to draw
//! ([`decide`], pure), and the gauge's text ([`render`]).

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::config::Config;
use crate::facts::{self, Context};
use crate::input::StatusLineInput;
use crate::marker::{self, Event, Marker, Observation, Source, State};
use crate::reading::Reading;
use crate::usage::{human, percent, Level, Limits};
use crate::window::{CompactSource, Ending};

/// What the status line knows after reading its input.
#[derive(Debug, Clone, PartialEq)]
pub struct Gauge {
    pub tokens: Option<u64>,
    pub limits: Limits,
    /// `tokens` is the last known reading of this cycle, not this frame's (which had none).
    pub last_known: bool,
    /// The client may compact this session while it is idle, before the compaction point: from
    /// this many tokens.
    pub idle_from: Option<u64>,
    /// How the context ends (a compaction at a threshold, or the window filling): what the
    /// gauge may count down to.
    pub ending: Ending,
    /// The client's own percent for this frame, shown instead of ctxguard's so the two agree
    /// (only when this frame's usage and the client's window are the ones the gauge shows).
    pub client_pct: Option<u64>,
    /// What ctxguard did for this session lately, shown after the gauge.
    pub trace: Option<Trace>,
}

/// What the user should know ctxguard did: the agent was asked to save this cycle, or a
/// checkpoint was just written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trace {
    Nudged,
    CriticalNudged,
    Saved,
}

/// "checkpoint saved" is shown this long after the compaction that wrote it.
const SAVED_SHOWN_FOR: Duration = Duration::from_secs(10 * 60);

impl Trace {
    /// The trace of a marker: this cycle's nudge, else a checkpoint written by a compaction in
    /// the last [`SAVED_SHOWN_FOR`].
    pub fn of(m: &Marker, now: DateTime<Utc>, stale: Duration) -> Option<Trace> {
        match m.effective_state(now, stale) {
            State::Nudged => return Some(Trace::Nudged),
            State::CriticalNudged => return Some(Trace::CriticalNudged),
            _ if m.idle_nudge_this_cycle().is_some() => return Some(Trace::Nudged),
            _ => {}
        }
        let recent = m.compacted_at.is_some_and(|at| {
            now.signed_duration_since(at)
                .to_std()
                .is_ok_and(|age| age <= SAVED_SHOWN_FOR)
        });
        (recent && m.last_checkpoint.is_some()).then_some(Trace::Saved)
    }

    pub fn text(self) -> &'static str {
        match self {
            Trace::Nudged => "asked to save",
            Trace::CriticalNudged => "asked to save (critical)",
            Trace::Saved => "checkpoint saved",
        }
    }
}

/// The reading carried by one status-line payload. A frame without usage (before the first
/// reply, a transient null at each prompt, or an old client that never sends it) is read from
/// the transcript instead, when the payload names one. A zero reading counts as none.
pub fn observe(
    input: &StatusLineInput,
    marker: &Marker,
    ctx: &Context,
    transcript: Option<&Reading>,
    now: DateTime<Utc>,
) -> Observation {
    let reported = input.context_window.context_window_size.filter(|w| *w > 0);
    let from_payload = input
        .context_window
        .current_usage
        .map(|u| u.counts().context_tokens())
        .filter(|t| *t > 0);
    let (tokens, source, reply_at) = match (from_payload, transcript) {
        (Some(t), _) => (Some(t), Source::Statusline, None),
        (None, Some(r)) => (r.tokens, Source::Transcript, r.reply_at),
        (None, None) => (None, Source::Statusline, None),
    };
    let model = (!input.model.is_empty())
        .then_some(input.model.as_str())
        .or_else(|| transcript.and_then(|r| r.model.as_deref()));
    let limits = facts::limits_for(ctx, marker, model, reported, tokens, now);
    let mut obs = limits.observation(tokens, source);
    obs.reported_window = reported;
    obs.model = model.map(str::to_string);
    obs.reply_at = reply_at;
    obs.cwd = (!input.cwd.is_empty()).then(|| input.cwd.clone());
    obs
}

/// The marker after this payload, and the gauge to draw: this frame's usage, or the last known
/// usage of this cycle when the frame had none.
pub fn decide(
    marker: &Marker,
    observation: Observation,
    config: &Config,
    now: DateTime<Utc>,
) -> (Marker, Gauge) {
    let stale = config.stale();
    let limits = observation.limits;
    let had_tokens = observation.tokens.is_some();
    let next = marker::transition(marker, &Event::Observe(observation), now, stale);
    let gauge = Gauge {
        tokens: next.tokens,
        limits,
        last_known: !had_tokens && next.tokens.is_some(),
        idle_from: next
            .idle_compaction_applies()
            .then(|| next.idle_from.unwrap_or(marker::IDLE_COMPACTION_TOKENS)),
        ending: CompactSource::ending(next.compact_source.as_ref()),
        client_pct: None,
        trace: Trace::of(&next, now, stale),
    };
    (next, gauge)
}

pub(crate) const GREEN: &str = "\x1b[32m";
pub(crate) const YELLOW: &str = "\x1b[33m";
pub(crate) const RED: &str = "\x1b[31m";
pub(crate) const RESET: &str = "\x1b[0m";

/// `ctx 64% · 128k/200k · compacts in 39k`, coloured by how close compaction is, then the
/// trace, uncoloured: `· asked to save`.
pub fn render(gauge: &Gauge, color: bool) -> String {
    let trace = gauge
        .trace
        .map(|t| format!(" · {}", t.text()))
        .unwrap_or_default();
    format!("{}{trace}", render_usage(gauge, color))
}

fn render_usage(gauge: &Gauge, color: bool) -> String {
    let l = &gauge.limits;
    let Some(tokens) = gauge.tokens else {
        return format!("ctx ?/{}", human(l.window));
    };
    // The last known reading is marked, so a frame without usage does not look current.
    let mark = if gauge.last_known { "~" } else { "" };
    let indicator = client_indicator_shown(tokens, l, gauge.ending);
    // Only a compaction the client will do is counted down to; else the window's end.
    let distance = match (gauge.ending, tokens >= l.compact_at) {
        (Ending::Threshold, true) => "compaction due".to_string(),
        (Ending::Threshold, false) => format!("compacts in {}", human(l.headroom(tokens))),
        // The client's "N% context used" counts against the window less a 20k reservation, and
        // reads 100% while requests still fit: beside it, a count of tokens left would
        // contradict it, so none is shown while it is.
        (Ending::CompactsWhenFull, _) if indicator => "compacts when full".to_string(),
        // Auto-compaction off: the client stops accepting requests at its blocking limit, and
        // says "Context limit reached" there; the count is to that point, never to the window's
        // end beyond it.
        (Ending::Full, true) => "limit reached".to_string(),
        (Ending::Full, false) => format!("limit in {}", human(l.headroom(tokens))),
        (_, true) => "window full".to_string(),
        (_, false) => format!("full in {}", human(l.headroom(tokens))),
    };
    // Idle compaction can come before the compaction point: say so, from where.
    let idle = gauge
        .idle_from
        .map(|from| format!(" · idle≥{}", human(from)))
        .unwrap_or_default();
    // Near the end the client shows a percentage of its own, of another base ("N% until
    // auto-compact", "N% context used" of the window less the reply's reservation): two
    // different figures side by side would contradict each other, so ctxguard shows none then.
    let pct = if indicator {
        String::new()
    } else {
        let pct = gauge
            .client_pct
            .filter(|_| !gauge.last_known)
            .unwrap_or_else(|| percent(tokens, l.window));
        format!("{pct}% · ")
    };
    let text = format!(
        "ctx {mark}{pct}{}/{} · {distance}{idle}",
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

/// Does the client's own context indicator show at `tokens`? Read in 2.1.330's code (the TUI's
/// context component; 2.1.332 alike): it appears once the usage is within 20k of the point its
/// countdown is against: the threshold when auto-compaction is on (also for a model it
/// compacts only when full, whose indicator then reads "N% context used"), the window less the
/// reply's 20k reservation when it is off ("Context low").
fn client_indicator_shown(tokens: u64, limits: &Limits, ending: Ending) -> bool {
    const SHOWN_WITHIN: u64 = 20_000;
    const RESERVE: u64 = 20_000;
    let base = match ending {
        Ending::Threshold => limits.compact_at,
        Ending::CompactsWhenFull => limits
            .window
            .saturating_sub(RESERVE + crate::usage::AUTOCOMPACT_MARGIN),
        Ending::Full => limits.window.saturating_sub(RESERVE),
    };
    tokens >= base.saturating_sub(SHOWN_WITHIN)
}
