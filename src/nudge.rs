//! The nudge: what a transcript reading tells the marker, whether a nudge is due, and its text.
//! The session step (`step`) of `PreToolUse`, `UserPromptSubmit` and `PostToolBatch` decides it
//! with [`decide_route`], under the session lock, so the routes together give each nudge at
//! most once per level per cycle; `Stop` observes with [`observe`] and decides with
//! [`decide_idle`], and `replay` runs [`observe_with`] and [`decide_route`] over a transcript, so
//! that what it judges is what the hooks do.

use chrono::{DateTime, Utc};

use crate::config::{nudge_templates, render_text, Config, NudgeNumbers};
use crate::event;
use crate::facts::{self, Context, LimitsFor};
use crate::input::Client;
use crate::marker::{self, Event, LastNudge, Marker, Nudge, Observation, Source, State};
use crate::reading::Reading;
use crate::usage;
use crate::window::CompactSource;

/// The observation a transcript reading gives.
pub fn observe(
    reading: &Reading,
    marker: &Marker,
    ctx: &Context,
    now: DateTime<Utc>,
) -> Observation {
    let marker = marker.knowing_auto_compaction(reading.auto_compacted_at);
    // Codex reports its window with every count; Claude Code's transcript reports none.
    let limits = facts::limits_for(
        ctx,
        &marker,
        reading.model.as_deref(),
        reading.window,
        reading.tokens,
        now,
    );
    observe_with(reading, limits, ctx.config.growth_replies)
}

/// The observation a transcript reading gives on these limits (no I/O: `replay` calls it too).
pub fn observe_with(reading: &Reading, limits: LimitsFor, growth_replies: u64) -> Observation {
    let mut obs = limits.observation(reading.tokens, Source::Transcript);
    obs.model.clone_from(&reading.model);
    obs.reply_at = reading.reply_at;
    obs.boundary_at = reading.boundary_at;
    obs.growth = Some(reading.max_growth());
    obs.auto_pre_tokens = reading.auto_compacted_at;
    obs.growth_due = reading.tokens.is_some_and(|t| {
        obs.limits
            .due_by_growth(t, reading.max_growth(), growth_replies)
    });
    obs
}

/// The marker after this call, and the nudge to give (if any). `observation` is the reading of
/// the transcript, when there is one.
pub fn decide(
    marker: &Marker,
    observation: Option<&Observation>,
    config: &Config,
    now: DateTime<Utc>,
) -> (Marker, Option<Nudge>) {
    let stale = config.stale();
    let mut m = marker.clone();
    if let Some(obs) = observation {
        m = marker::transition(&m, &Event::Observe(obs.clone()), now, stale);
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

/// New work, in tokens since this cycle's last nudge, that makes an idle compaction worth a
/// nudge: right after the trigger's or the critical nudge the agent has just saved, and one
/// more turn to save again would cost the user more than the compaction loses.
const IDLE_NEW_WORK: u64 = 100_000;

/// The end-of-turn nudge before an idle compaction (`Stop`, and `replay` at each turn's end):
/// the marker after this Stop, and whether to ask the agent to save now: idle compaction can
/// take the session (on, attended, at or past its threshold, before the compaction point), this
/// cycle had no idle nudge yet, and the work since this cycle's last nudge (if any) is at least
/// [`IDLE_NEW_WORK`].
pub fn decide_idle(
    marker: &Marker,
    observation: Option<&Observation>,
    config: &Config,
    now: DateTime<Utc>,
    attended: bool,
) -> (Marker, bool) {
    let stale = config.stale();
    let m = observation.map_or_else(
        || marker.clone(),
        |o| marker::transition(marker, &Event::Observe(o.clone()), now, stale),
    );
    // Once per cycle whatever the clock says: a nudge given since the last compaction counts
    // even after the marker went stale (the user back after half an hour is not asked again).
    let since_compaction = |n: &&LastNudge| m.compacted_at.is_none_or(|c| n.at > c);
    let worth_it = match (m.tokens, m.last_nudge.as_ref().filter(since_compaction)) {
        (Some(t), Some(last)) => t >= last.tokens.unwrap_or(0).saturating_add(IDLE_NEW_WORK),
        (Some(_), None) => true,
        (None, _) => false,
    };
    if config.idle_nudge
        && attended
        && m.idle_nudge_this_cycle().is_none()
        && worth_it
        && m.idle_compaction_applies()
    {
        return (marker::transition(&m, &Event::IdleNudged, now, stale), true);
    }
    (m, false)
}

/// The text of a nudge, from the configured template, the marker's numbers, where to save, and
/// what the user can run to make room (`/compact or /clear`, or `/clear` alone).
pub fn nudge_text(
    level: Nudge,
    marker: &Marker,
    config: &Config,
    place: &str,
    make_room: &str,
) -> String {
    let ending = CompactSource::ending(marker.compact_source.as_ref());
    let (normal, critical) = nudge_templates(config, ending);
    let template = match level {
        Nudge::Normal => normal,
        Nudge::Critical => critical,
    };
    let window = marker.window.unwrap_or(usage::DEFAULT_WINDOW);
    let numbers = NudgeNumbers {
        tokens: marker.tokens.unwrap_or(0),
        window,
        compact_at: marker.compact_at.unwrap_or(window),
    };
    let template = template.replace("{restart}", &restart(make_room));
    render_text(&template, numbers, place, make_room)
}

/// What comes next for a user whose client does not compact by itself, in the client's own
/// commands (`make_room`: `/compact or /clear`, or `/clear` alone with `DISABLE_COMPACT`): the
/// soft restart. `/clear` after a nudge of the same cycle brings the checkpoint back in full
/// (`recovering::after_clear`).
fn restart(make_room: &str) -> String {
    let clear = "/clear starts a fresh context, and ctxguard brings this session's checkpoint \
                 (goal, last requests, failures, files, the memories just saved) back into it.";
    if make_room.contains("/compact") {
        format!("/compact summarises the conversation in place; {clear}")
    } else {
        clear.to_string()
    }
}

/// Is this transcript reading news to the marker, or older news than the status line's last
/// (fresh) report? A reply stamped before that report is older news as a rule: the report counts
/// it, or a newer reply not on disk yet (the client writes a reply once it is whole, at times
/// after the status line has its usage), and applying it would take the marker back.
///
/// Unless the report is of an earlier reply than this one: the client stamps a reply when its
/// content has streamed, but gives the status line a request's usage only once the request is
/// done, and a report is stamped when `ctxguard statusline` runs, not when the client built its
/// payload. A status line drawn in between reports the previous reply's usage, stamped after
/// this reply (seen on 2.1.330: a 940k reply stamped 20-60 ms before a report still of 300k,
/// which then kept every route of that turn from reading the 940k). So when the marker holds
/// the usage of an earlier reply, and not this one's, the reading is news: an earlier reply of
/// this reading (its `recent`), or the reply the marker last read, stamped before this one (a
/// first reading, a tail scan, knows only the newest reply). `replay` asks the same.
pub fn is_news(reading: &Reading, marker: &Marker, now: DateTime<Utc>) -> bool {
    let reporting = marker.statusline_fresh(now, facts::LIMITS_FRESH);
    match (reading.reply_at, marker.statusline_at) {
        (Some(reply), Some(report)) if reporting && reply < report => {
            let earlier = &reading.recent[..reading.recent.len().saturating_sub(1)];
            let of_an_earlier_reply = |t: u64| {
                earlier.contains(&t)
                    || marker
                        .last_reply
                        .is_some_and(|(tokens, at, _)| tokens == t && at < reply)
            };
            marker
                .tokens
                .is_some_and(|t| reading.tokens != Some(t) && of_an_earlier_reply(t))
        }
        _ => true,
    }
}

/// Is a nudge on this route withheld once usage is past the compaction point (the `at_prompt`
/// of [`decide_route`])? At a prompt, on a client that also reads `PreToolUse`'s context
/// (`modern`): the client compacts before the model sees the prompt (on an older client the
/// prompt is the nudge's only route, and it is never withheld there). On Codex, on every route:
/// Codex compacts as soon as the tool calls of a reply that reached its limit have run, so a
/// nudge with one of them would reach only the summarizer. `replay` asks the same.
pub fn withheld_past_the_point(hook_event: &str, modern: bool, client: Client) -> bool {
    (hook_event == event::USER_PROMPT_SUBMIT && modern) || client == Client::Codex
}

/// Is usage at or past the point where the client auto-compacts, or, with auto-compaction off,
/// where it stops accepting requests (it refuses the prompt: nothing given with it arrives)?
fn past_the_point(marker: &Marker) -> bool {
    matches!((marker.tokens, marker.compact_at), (Some(t), Some(c)) if t >= c)
}

/// [`decide`] for a route that may not reach the model: where the client drops this route's
/// context (`can_deliver` false), the observation is applied and the nudge stays pending for a
/// route it passes on. At a prompt (`at_prompt`) at or past the compaction point, the client
/// compacts before the model sees the prompt: a nudge with it would ask to save history that is
/// already gone (the checkpoint saves what it can), so none is given (callers pass `at_prompt`
/// false on a client before 2.1, where the prompt is the only route and a late nudge beats none).
/// `replay` calls this too.
pub fn decide_route(
    marker: &Marker,
    observation: Option<&Observation>,
    config: &Config,
    now: DateTime<Utc>,
    can_deliver: bool,
    at_prompt: bool,
) -> (Marker, Option<Nudge>) {
    if can_deliver {
        let decided = decide(marker, observation, config, now);
        if !(at_prompt && decided.1.is_some() && past_the_point(&decided.0)) {
            return decided;
        }
    }
    let stale = config.stale();
    let observed = observation.map_or_else(
        || marker.clone(),
        |o| marker::transition(marker, &Event::Observe(o.clone()), now, stale),
    );
    (observed, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
    }

    use crate::usage::Limits;

    fn obs(tokens: u64, window: u64) -> Observation {
        Observation::new(
            Some(tokens),
            Limits::compute(window, &Config::default().policy()),
            Source::Transcript,
        )
    }

    #[test]
    fn a_reading_arms_and_nudges_once_per_level() {
        let config = Config::default();
        let (m, nudge) = decide(
            &Marker::new("s"),
            Some(&obs(130_000, 200_000)),
            &config,
            t(0),
        );
        assert_eq!(nudge, Some(Nudge::Normal));
        assert_eq!(
            (m.state, m.source),
            (State::Nudged, Some(Source::Transcript))
        );
        let (m, nudge) = decide(&m, Some(&obs(131_000, 200_000)), &config, t(1));
        assert_eq!(nudge, None);
        assert_eq!(m.tokens, Some(131_000));
        let (m, nudge) = decide(&m, Some(&obs(153_000, 200_000)), &config, t(2));
        assert_eq!(nudge, Some(Nudge::Critical));
        assert_eq!(m.state, State::CriticalNudged);
    }

    #[test]
    fn below_the_trigger_nothing_unless_growth_says_so() {
        let config = Config::default();
        let (m, nudge) = decide(
            &Marker::new("s"),
            Some(&obs(100_000, 200_000)),
            &config,
            t(0),
        );
        assert_eq!((m.state, nudge), (State::Idle, None));
        // 100k with replies growing 35k each: 2 more replies reach 167k.
        let mut fast = obs(100_000, 200_000);
        fast.growth_due = fast.limits.due_by_growth(100_000, 35_000, 2);
        assert!(fast.growth_due);
        let (m, nudge) = decide(&Marker::new("s"), Some(&fast), &config, t(0));
        assert_eq!((m.state, nudge), (State::Nudged, Some(Nudge::Normal)));
    }

    #[test]
    fn a_reading_from_before_the_last_compaction_is_never_applied() {
        let config = Config::default();
        let compacted = Marker {
            compacted_at: Some(t(100)),
            tokens_at_compaction: Some(176_000),
            updated_at: Some(t(100)),
            ..Marker::new("s")
        };
        // The client has not flushed the compaction yet: the newest reply is the old one.
        let mut old = obs(176_000, 200_000);
        old.reply_at = Some(t(90));
        let (m, nudge) = decide(&compacted, Some(&old), &config, t(101));
        assert_eq!((m.state, m.tokens, nudge), (State::Idle, None, None));
        // The first reply after it counts.
        let mut new = obs(20_000, 200_000);
        new.reply_at = Some(t(110));
        let (m, nudge) = decide(&compacted, Some(&new), &config, t(111));
        assert_eq!((m.tokens, nudge), (Some(20_000), None));
    }

    #[test]
    fn a_reply_before_the_status_lines_report_is_news_only_if_the_report_is_of_an_earlier_reply() {
        // The status line reported 300k at t(10); the transcript read incrementally: a 300k reply
        // at t(0), then a 940k one at t(9).
        let reported = Marker {
            tokens: Some(300_000),
            statusline_at: Some(t(10)),
            ..Marker::new("s")
        };
        let reading = Reading {
            tokens: Some(940_000),
            reply_at: Some(t(9)),
            recent: vec![300_000, 940_000],
            ..Reading::default()
        };
        assert!(is_news(&reading, &reported, t(11)));
        // The report ahead of the transcript (a reply not on disk yet): older news.
        let ahead = Marker {
            tokens: Some(960_000),
            ..reported.clone()
        };
        assert!(!is_news(&reading, &ahead, t(11)));
        // The report of this very reply: nothing new.
        let same = Marker {
            tokens: Some(940_000),
            ..reported.clone()
        };
        assert!(!is_news(&reading, &same, t(11)));
        // A first reading knows only the newest reply: the reply the marker last read tells.
        let tail = Reading {
            recent: vec![940_000],
            ..reading.clone()
        };
        assert!(!is_news(&tail, &reported, t(11)));
        let read_before = Marker {
            last_reply: Some((300_000, t(0), 1_000_000)),
            ..reported.clone()
        };
        assert!(is_news(&tail, &read_before, t(11)));
        let read_after = Marker {
            last_reply: Some((300_000, t(9) + chrono::Duration::milliseconds(1), 1_000_000)),
            ..reported.clone()
        };
        assert!(!is_news(&tail, &read_after, t(11)));
        // A reply at or after the report, no report, or one no longer fresh: news.
        let later = Reading {
            reply_at: Some(t(10)),
            ..reading.clone()
        };
        assert!(is_news(&later, &ahead, t(11)));
        assert!(is_news(&reading, &Marker::new("s"), t(11)));
        assert!(is_news(&reading, &ahead, t(71)));
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
    fn nudge_text_fills_placeholders() {
        let marker = Marker {
            tokens: Some(128_000),
            window: Some(200_000),
            compact_at: Some(167_000),
            ..Marker::new("s")
        };
        let config = Config {
            nudge_text: "{pct}|{tokens}|{window}|{compact_at}|{headroom}|{where}|{make_room}"
                .into(),
            ..Config::default()
        };
        assert_eq!(
            nudge_text(Nudge::Normal, &marker, &config, "here", "/clear"),
            "77|128k|200k|167k|39k|here|/clear"
        );
    }
}
