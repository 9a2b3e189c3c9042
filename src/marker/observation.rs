//! A usage reading as the marker takes it ([`super::Event::Observe`]): from the status line or
//! the transcript, with the limits it was judged on and what else its source knew.

use chrono::{DateTime, Utc};

use super::Source;
use crate::usage::Limits;
use crate::window::{CompactSource, WindowSource};

/// A usage reading, from the status line or the transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Context tokens, `None` when unknown (before the first reply, right after compaction).
    pub tokens: Option<u64>,
    pub limits: Limits,
    pub source: Source,
    /// A `compact_boundary` newer than every reply in the transcript.
    pub boundary_at: Option<DateTime<Utc>>,
    /// The window the status line reported.
    pub reported_window: Option<u64>,
    /// The model of the reply the reading comes from.
    pub model: Option<String>,
    /// When that reply was written, if known: older than the last compaction means stale.
    pub reply_at: Option<DateTime<Utc>>,
    /// Recent replies grew fast enough to reach the compaction point within the configured
    /// number of replies: arm now, whatever the trigger says.
    pub growth_due: bool,
    /// The largest recent growth from one reply to the next, if known.
    pub growth: Option<u64>,
    /// A `compact_boundary` of an automatic compaction says the client compacted at this many
    /// tokens.
    pub auto_pre_tokens: Option<u64>,
    pub window_source: Option<WindowSource>,
    pub compact_source: Option<CompactSource>,
    /// The config fingerprint the limits were resolved with (when resolved afresh).
    pub limits_key: Option<u64>,
    /// Whether the client's idle compaction is on (when resolved afresh).
    pub idle_compaction: Option<bool>,
    /// From how many tokens idle compaction applies (when resolved afresh and on).
    pub idle_from: Option<u64>,
    /// The session's working directory, when the reading's source knows it.
    pub cwd: Option<String>,
}

impl Observation {
    /// A reading with these numbers and nothing else known.
    pub fn new(tokens: Option<u64>, limits: Limits, source: Source) -> Observation {
        Observation {
            tokens,
            limits,
            source,
            boundary_at: None,
            reported_window: None,
            model: None,
            reply_at: None,
            growth_due: false,
            growth: None,
            auto_pre_tokens: None,
            window_source: None,
            compact_source: None,
            limits_key: None,
            idle_compaction: None,
            idle_from: None,
            cwd: None,
        }
    }
}
