//! The state machine, driven with literals.

use super::*;
use crate::usage::Limits;
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
        drop: false,
    };
    let m = transition(&m, &compacted, t(5), STALE);
    assert_eq!((m.state, m.cycle, m.tokens), (State::Idle, 1, None));
    assert_eq!((m.armed_at, m.nudged_at), (None, None));
    assert_eq!((m.compactions, m.recovery_pending), (1, true));
    assert_eq!(m.last_checkpoint.as_deref(), Some("/cp_001.json"));
    let recovered = transition(&m, &Event::Handed(None), t(5), STALE);
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
fn a_status_line_still_reporting_the_previous_reply_is_no_drop() {
    // The transcript shows a 140k reply written at t(10); a route reads it and nudges.
    let mut read = Observation::new(Some(140_000), limits(), Source::Transcript);
    read.reply_at = Some(t(10));
    let m = run(&[
        (10, Event::Observe(read)),
        (10, Event::Nudged(Nudge::Normal)),
    ]);
    assert_eq!(
        (m.state, m.cycle, m.tokens),
        (State::Nudged, 0, Some(140_000))
    );
    // A status line drawn a moment later still reports the reply before it (20k): neither a
    // drop nor a new cycle, so the next report of 140k nudges nobody again.
    let m = transition(&m, &observe(Some(20_000)), t(11), STALE);
    assert_eq!(
        (m.state, m.cycle, m.tokens),
        (State::Nudged, 0, Some(140_000))
    );
    assert_eq!(m.statusline_at, None);
    let m = transition(&m, &observe(Some(140_000)), t(12), STALE);
    assert_eq!(
        (m.state, m.cycle, m.pending_nudge()),
        (State::Nudged, 0, None)
    );
    // Higher reports are taken at once; and past STALE_REPORT a drop is a drop again.
    let m = transition(&m, &observe(Some(145_000)), t(13), STALE);
    assert_eq!(m.tokens, Some(145_000));
    let m = transition(&m, &observe(Some(20_000)), t(16), STALE);
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
                drop: false,
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

#[test]
fn only_a_reading_followed_by_a_newer_reply_is_known_not_to_compact() {
    let reply = |tokens: u64, at: i64| {
        let mut o = Observation::new(Some(tokens), limits(), Source::Transcript);
        o.reply_at = Some(t(at));
        Event::Observe(o)
    };
    // One reading: nothing proven (the check before its request saw less).
    let m = run(&[(0, reply(150_000, 0))]);
    assert_eq!(m.uncompacted_max, None);
    // The same reply read again (another tool call of it): still nothing.
    let m = run(&[(0, reply(150_000, 0)), (1, reply(150_000, 0))]);
    assert_eq!(m.uncompacted_max, None);
    // A newer reply, as large or larger: the client checked 150k and went on.
    let m = run(&[(0, reply(150_000, 0)), (5, reply(160_000, 5))]);
    assert_eq!(m.uncompacted_max, Some((150_000, 200_000)));
    // A drop between them is a compaction: nothing proven.
    let m = run(&[(0, reply(150_000, 0)), (5, reply(20_000, 5))]);
    assert_eq!(m.uncompacted_max, None);
    // PreCompact forgets the previous reply.
    let compacted = Event::Compacted {
        checkpoint: "cp".into(),
        tokens: None,
        auto: true,
        repeat: false,
        drop: false,
    };
    let m = run(&[
        (0, reply(150_000, 0)),
        (1, compacted),
        (5, reply(160_000, 5)),
    ]);
    assert_eq!(m.uncompacted_max, None);
}
