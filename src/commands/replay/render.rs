//! The replay for a terminal: a header, the timeline, one verdict per cycle, and an ASCII chart
//! of usage against the trigger and the compaction point.

use chrono::{DateTime, Utc};

use super::cost::{Sum, Totals};
use super::report::{Cycle, Event, Level, Report, Sample, What};
use crate::commands::usage::grouped;
use crate::input::Client;
use crate::text::{cut, sanitize};
use crate::usage::human;
use crate::window::CompactSource;

/// Columns of the chart's bar.
const BAR: usize = 70;
/// The chart has at most about this many rows of replies.
const ROWS: usize = 40;
/// Event letters after a row's bar, at most.
const MARKS: usize = 8;

fn time(at: Option<DateTime<Utc>>) -> String {
    at.map_or_else(
        || "-".repeat(19),
        |t| t.format("%Y-%m-%d %H:%M:%S").to_string(),
    )
}

fn tokens(t: Option<u64>) -> String {
    t.map_or_else(|| "unknown".into(), grouped)
}

pub(super) fn plural(n: usize, one: &str) -> String {
    match (n, one.strip_suffix('y')) {
        (1, _) => format!("{n} {one}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        (_, None) => format!("{n} {one}s"),
    }
}

/// The whole text report.
pub fn render(report: &Report) -> String {
    let mut out = Vec::new();
    out.push(format!("ctxguard replay: {}", report.transcript));
    let client = match report.client {
        Client::ClaudeCode => "Claude Code",
        Client::Codex => "Codex",
        Client::Pi => "pi",
    };
    out.push(format!("client       {client}"));
    out.push(if report.client == Client::Codex {
        "mode         no status line (Codex has none): the hooks read the rollout".into()
    } else if report.client == Client::Pi {
        "mode         no status line (pi has none): the hooks read the session file".into()
    } else if report.statusline {
        let window = report
            .window
            .map_or("the model's known window".into(), grouped);
        format!("mode         a status line refreshed on every reply, reporting {window}")
    } else {
        "mode         no status line: the hooks read the transcript (as in -p mode)".into()
    });
    out.push(format!(
        "replies      {} in {} lines; {}, {}",
        report.replies,
        report.lines,
        plural(report.compactions, "compaction"),
        plural(report.cycles.len(), "cycle")
    ));
    if let Some(l) = &report.limits {
        let model = report
            .model
            .as_deref()
            .map(|m| format!("; model {}", cut(&sanitize(m, true), 80)))
            .unwrap_or_default();
        let source = report
            .window_source
            .map(|s| format!(" ({})", s.describe()))
            .unwrap_or_default();
        out.push(format!("window       {}{source}{model}", grouped(l.window)));
        let point = if matches!(report.compact_source, Some(CompactSource::Off(_))) {
            "the client stops accepting requests at"
        } else {
            "compacts at"
        };
        out.push(format!(
            "limits       nudge at {}, critical at {}, {point} {}",
            grouped(l.trigger_at),
            l.critical_at.map_or("off".into(), grouped),
            grouped(l.compact_at)
        ));
        if let Some(s) = &report.compact_source {
            out.push(format!("             (compaction point: {})", s.describe()));
        }
    }
    out.push(String::new());
    out.push("timeline".into());
    if report.events.is_empty() {
        out.push("  (nothing: no arming, nudge or compaction)".into());
    }
    out.extend(report.events.iter().map(|e| format!("  {}", event(e))));
    out.push(String::new());
    out.push("cycles".into());
    out.push(format!("  {}", cycles_header()));
    out.extend(report.cycles.iter().map(|c| format!("  {}", cycle(c))));
    if report.compactions > 0 {
        out.push(String::new());
        out.extend(costs(report));
    }
    let chart = chart(report);
    if !chart.is_empty() {
        out.push(String::new());
        out.extend(chart);
    }
    out.join("\n") + "\n"
}

fn event(e: &Event) -> String {
    let what = match &e.what {
        What::Armed {
            tokens: t,
            trigger_at,
            growth,
            by,
            ..
        } => {
            let why = if *growth {
                "growth, trigger"
            } else {
                "trigger"
            };
            format!(
                "armed       {} tokens ({why} {}; {})",
                tokens(*t),
                grouped(*trigger_at),
                by.name()
            )
        }
        What::Nudge {
            level,
            tokens: t,
            compact_at,
            repeat,
            by,
        } => {
            let name = match (level, repeat) {
                (Level::Critical, _) => "critical",
                (Level::Normal, true) => "nudge again",
                (Level::Normal, false) => "nudge",
            };
            let left = match (t, compact_at) {
                (Some(t), Some(c)) if t < c => format!(", {} before compaction", grouped(c - t)),
                (Some(_), Some(_)) => ", past compaction".into(),
                _ => String::new(),
            };
            format!("{name:<11} {} tokens{left} ({})", tokens(*t), by.name())
        }
        What::IdleNudge { tokens: t, by } => format!(
            "idle nudge  {} tokens, before an idle compaction could take the session ({})",
            tokens(*t),
            by.name()
        ),
        // A Codex rollout says nothing of the tokens a compaction started at.
        What::Compaction {
            trigger,
            pre_tokens: None,
            tokens: t,
        } => format!("compaction  {} (last reply {})", trigger.name(), tokens(*t)),
        What::Compaction {
            trigger,
            pre_tokens,
            tokens: t,
        } => format!(
            "compaction  {} at {} (preTokens; last reply {})",
            trigger.name(),
            tokens(*pre_tokens),
            tokens(*t)
        ),
        What::Stale { by } => format!(
            "stale       idle again: no refresh for stale_after_secs ({})",
            by.name()
        ),
        What::Refused {
            tokens: t,
            nudged_at,
        } => format!(
            "refused     {} tokens: the client stopped accepting requests (\"{}\"); {}",
            tokens(*t),
            super::line::PROMPT_TOO_LONG,
            match nudged_at {
                Some(n) => format!("nudged before, at {}", grouped(*n)),
                None => "no nudge came before it".into(),
            }
        ),
        What::NewCycle { tokens: t, by } => format!(
            "new cycle   usage fell to {} (far below the trigger; {})",
            tokens(*t),
            by.name()
        ),
    };
    format!("{} reply {:<4} {what}", time(e.at), e.reply)
}

fn cycles_header() -> String {
    format!(
        "{:>3}  {:<11}  {:>7}  {:>8}  {:<26}  {}",
        "#", "verdict", "replies", "peak", "first nudge (replies left)", "compaction (preTokens)"
    )
}

fn cycle(c: &Cycle) -> String {
    let nudge = match &c.nudge {
        Some(n) => format!(
            "{}{} ({} left)",
            tokens(n.seen.tokens),
            match n.seen.level {
                Level::Normal => "",
                Level::Critical => " critical",
            },
            n.replies_left
        ),
        None => "-".into(),
    };
    let ended = match &c.compaction {
        Some(comp) => match comp.pre_tokens {
            Some(pre) => format!("{} {}", comp.trigger.name(), grouped(pre)),
            None => comp.trigger.name().into(),
        },
        None => match (c.refusals, c.refused_at) {
            (0, _) => "-".into(),
            (n, at) => format!("refused at {} ({})", tokens(at), plural(n, "time")),
        },
    };
    format!(
        "{:>3}  {:<11}  {:>7}  {:>8}  {nudge:<26}  {ended}",
        c.cycle,
        c.verdict.name(),
        c.replies,
        c.peak_tokens.map_or("-".into(), grouped),
    )
}

/// What each compaction cost, and the session's total.
fn costs(report: &Report) -> Vec<String> {
    let mut out = vec![
        "what each compaction cost (before: preTokens; after: the next reply, input + cache read + \
         written)"
            .to_string(),
        format!(
            "  {:>3}  {:<7}  {:>9}  {:<30}  {:>9}  recovery",
            "#", "trigger", "before", "after", "refill"
        ),
    ];
    let known = |t: Option<u64>| t.map_or("-".into(), grouped);
    for (n, comp) in report
        .cycles
        .iter()
        .filter_map(|c| c.compaction.as_ref())
        .enumerate()
    {
        let cost = &comp.cost;
        let after = match cost.after {
            Some(a) => match (a.input, a.cache_read, a.cache_written) {
                (Some(i), Some(r), Some(w)) => format!(
                    "{} ({} + {} + {})",
                    grouped(a.tokens),
                    grouped(i),
                    grouped(r),
                    grouped(w)
                ),
                _ => grouped(a.tokens),
            },
            None => "no reply yet".into(),
        };
        let recovery = cost.recovery_chars.map_or("none recorded".into(), |c| {
            format!("{} characters", grouped(c as u64))
        });
        out.push(format!(
            "  {:>3}  {:<7}  {:>9}  {after:<30}  {:>9}  {recovery}",
            n + 1,
            comp.trigger.name(),
            known(cost.before),
            known(cost.refill),
        ));
    }
    let t = &report.cost;
    out.push(format!(
        "  {:>3}  {:<7}  {:>9}  {:<30}  {:>9}  {} characters",
        "",
        "total",
        summed(&t.before),
        summed(&t.after),
        summed(&t.refill),
        grouped(t.recovery_chars as u64)
    ));
    out.push(format!("  {}", refilled(t)));
    out
}

/// A total as the table shows it: `-` when no compaction gave the figure, `N + ?` when only
/// some did; an unknown is never counted as 0.
fn summed(sum: &Sum) -> String {
    match (sum.value(), sum.unknown) {
        (None, _) => "-".into(),
        (Some(n), 0) => grouped(n),
        (Some(n), _) => format!("{} + ?", grouped(n)),
    }
}

/// What refilled the cache, in words: `2 compactions refilled the cache with 16,000 tokens`, or
/// what is not known of it.
fn refilled(t: &Totals) -> String {
    let compactions = plural(t.compactions, "compaction");
    match (t.refill.of, t.refill.unknown) {
        (_, 0) => format!(
            "{compactions} refilled the cache with {} tokens",
            grouped(t.refill.known)
        ),
        (0, _) => format!(
            "{compactions}: what refilled the cache is not known (the transcript does not say)"
        ),
        (of, unknown) => format!(
            "{compactions}: {of} refilled the cache with {} tokens, {unknown} more by an amount \
             not known",
            grouped(t.refill.known)
        ),
    }
}

/// One chart row per `per` replies of a cycle: the peak of the row as `#`, the trigger `|` and
/// the compaction point `!` (the row's last limits), then what happened in it.
pub fn chart(report: &Report) -> Vec<String> {
    let samples = &report.samples;
    if samples.is_empty() {
        return Vec::new();
    }
    let per = samples.len().div_ceil(ROWS).max(1);
    let scale = samples
        .iter()
        .map(|s| s.tokens.max(s.limits.compact_at))
        .max()
        .unwrap_or(1)
        .max(1);
    let mut out = vec![
        format!(
            "chart: one row per {}: # usage (the row's peak), | nudge trigger, ! compaction point,",
            plural(per, "reply")
        ),
        "       then a (armed), n (nudge), c (critical nudge), i (idle nudge, at a turn's end)"
            .into(),
        format!(
            "{:>11} {:>6} 0{:>width$}",
            "replies",
            "peak",
            human(scale),
            width = BAR - 1
        ),
    ];
    let mut cycle = 1;
    for cycle_samples in samples.chunk_by(|a, b| a.cycle == b.cycle) {
        let this = cycle_samples[0].cycle;
        // Compactions with no reply in between still show.
        while cycle < this {
            out.push(separator(report, cycle));
            cycle += 1;
        }
        for (i, row) in cycle_samples.chunks(per).enumerate() {
            out.push(chart_row(row, i == 0, scale, &report.events));
        }
    }
    while cycle <= report.compactions {
        out.push(separator(report, cycle));
        cycle += 1;
    }
    out
}

fn separator(report: &Report, cycle: usize) -> String {
    let what = report
        .cycles
        .get(cycle - 1)
        .and_then(|c| c.compaction.as_ref())
        .map(|comp| match comp.pre_tokens {
            Some(pre) => format!(" {} compaction at {} ", comp.trigger.name(), human(pre)),
            None => format!(" {} compaction ", comp.trigger.name()),
        })
        .unwrap_or_default();
    let verdict = report
        .cycles
        .get(cycle - 1)
        .map(|c| format!("(cycle {cycle}: {}) ", c.verdict.name()))
        .unwrap_or_default();
    let line = format!("{:>19}--{what}{verdict}", "");
    format!("{line:-<width$}", width = 19 + BAR)
}

fn column(tokens: u64, scale: u64) -> usize {
    ((u128::from(tokens) * BAR as u128 / u128::from(scale)) as usize).min(BAR - 1)
}

/// One row: `#` to the peak, `|` and `!`, then a letter per event. Events before a cycle's first
/// reply (a prompt right after a compaction) go on its first row.
fn chart_row(row: &[Sample], first_of_cycle: bool, scale: u64, events: &[Event]) -> String {
    let (first, last) = (row[0], row[row.len() - 1]);
    let peak = row.iter().map(|s| s.tokens).max().unwrap_or(0);
    let mut bar = vec![b' '; BAR];
    let filled = ((u128::from(peak) * BAR as u128 / u128::from(scale)) as usize).clamp(1, BAR);
    bar[..filled].fill(b'#');
    bar[column(last.limits.trigger_at, scale)] = b'|';
    bar[column(last.limits.compact_at, scale)] = b'!';
    let mut marks: String = events
        .iter()
        .filter(|e| e.cycle == first.cycle && e.reply <= last.reply)
        .filter(|e| e.reply >= first.reply || first_of_cycle)
        .filter_map(|e| match &e.what {
            What::Armed { .. } => Some('a'),
            What::Nudge {
                level: Level::Normal,
                ..
            } => Some('n'),
            What::Nudge {
                level: Level::Critical,
                ..
            } => Some('c'),
            What::IdleNudge { .. } => Some('i'),
            What::Refused { .. } => Some('r'),
            _ => None,
        })
        .collect();
    // Nudges repeated on every call would overflow the line.
    if marks.len() > MARKS {
        marks.truncate(MARKS - 1);
        marks.push('+');
    }
    let label = if first.reply == last.reply {
        first.reply.to_string()
    } else {
        format!("{}-{}", first.reply, last.reply)
    };
    let bar = String::from_utf8_lossy(&bar).into_owned();
    format!("{label:>11} {:>6} {bar} {marks}", human(peak))
        .trim_end()
        .to_string()
}
