//! A drop of context without a compaction, as the marker records it (see [`crate::dropped`]):
//! what counts as one, and the record a hook leaves for the next one that can act on it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A drop of context between two main-chain replies of the session's own transcript, with no
/// compaction between them that the hooks or the transcript saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingDrop {
    /// The older reply: its tokens and when it was written.
    pub before: u64,
    pub before_at: DateTime<Utc>,
    /// The newer, smaller one.
    pub after: u64,
    pub after_at: DateTime<Utc>,
}

/// A drop is only looked for from this many tokens: below, a context has little to lose.
const DROP_MIN_BEFORE: u64 = 100_000;
/// It must lose at least this many tokens...
const DROP_MIN_LOST: u64 = 50_000;
/// ...and leave at most this share (in percent) of what was there.
const DROP_MAX_LEFT_PCT: u64 = 60;

/// Is `after` tokens a large enough drop from `before` (pure)?
pub fn is_drop(before: u64, after: u64) -> bool {
    before >= DROP_MIN_BEFORE
        && before.saturating_sub(after) >= DROP_MIN_LOST
        && after.saturating_mul(100) <= before.saturating_mul(DROP_MAX_LEFT_PCT)
}
