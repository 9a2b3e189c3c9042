//! What a replay found, as `--json` prints it: the timeline of events that matter, and each
//! compaction cycle with its verdict. Typed, so the output is exactly these fields.

use chrono::{DateTime, Utc};
use serde::{Serialize, Serializer};

use super::cost::{Cost, Totals};
use crate::event;
use crate::input::Client;
use crate::usage::Limits;
use crate::window::{CompactSource, WindowSource};

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub transcript: String,
    /// The client that wrote it: `claude_code`, or `codex` for a Codex rollout.
    #[serde(serialize_with = "client_id")]
    pub client: Client,
    /// A status line was simulated.
    pub statusline: bool,
    /// `--window`, when given.
    pub window: Option<u64>,
    pub lines: usize,
    /// Main-chain replies (one per message, however many lines it spans).
    pub replies: usize,
    pub compactions: usize,
    /// The model of the newest reply.
    pub model: Option<String>,
    /// The limits the hooks held at the end, and where they came from.
    pub limits: Option<Limits>,
    pub window_source: Option<WindowSource>,
    pub compact_source: Option<CompactSource>,
    /// What the compactions cost, summed (each one's is its cycle's `compaction.cost`).
    pub cost: Totals,
    pub events: Vec<Event>,
    pub cycles: Vec<Cycle>,
    /// Usage after each reply, for the chart.
    #[serde(skip)]
    pub samples: Vec<Sample>,
    /// Compactions whose recovery never reached the conversation (`replay --all` sums them).
    #[serde(skip)]
    pub recoveries_missing: usize,
}

/// A client as `--json` names it (by reference: serde's `serialize_with` passes one).
#[allow(clippy::trivially_copy_pass_by_ref)]
fn client_id<S: Serializer>(client: &Client, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match client {
        Client::ClaudeCode => "claude_code",
        Client::Codex => "codex",
        Client::Pi => "pi",
    })
}

/// One event of the timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// The transcript line (from 1) that caused it.
    pub line: usize,
    pub at: Option<DateTime<Utc>>,
    /// Main-chain replies so far.
    pub reply: usize,
    /// The compaction cycle (from 1): cycle n ends with the n-th compaction.
    pub cycle: usize,
    #[serde(flatten)]
    pub what: What,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum What {
    /// The marker armed: a nudge is due at the next tool call or prompt. `growth` when usage
    /// was below the trigger (replies grew fast enough to reach the compaction point soon).
    Armed {
        tokens: Option<u64>,
        trigger_at: u64,
        compact_at: u64,
        window: u64,
        growth: bool,
        by: Hook,
    },
    /// A nudge reached the agent. `repeat` when this cycle already had a normal nudge (the
    /// marker went stale and re-armed).
    Nudge {
        level: Level,
        tokens: Option<u64>,
        compact_at: Option<u64>,
        repeat: bool,
        by: Hook,
    },
    /// The end-of-turn nudge before an idle compaction (`Stop`): a level of its own, which the
    /// cycle's verdict (judging the trigger's nudge) does not count.
    IdleNudge { tokens: Option<u64>, by: Hook },
    /// A `compact_boundary`: `pre_tokens` from its metadata, `tokens` the newest reply's, as
    /// `PreCompact` reads them.
    Compaction {
        trigger: Trigger,
        pre_tokens: Option<u64>,
        tokens: Option<u64>,
    },
    /// The marker had not been refreshed for `stale_after_secs`: back to idle.
    Stale { by: Hook },
    /// A new marker cycle without a compaction line (usage dropped far below the trigger).
    NewCycle { tokens: Option<u64>, by: Hook },
    /// The client refused a request as too long ("Prompt is too long"): with auto-compaction
    /// off, at its blocking limit. `tokens` is the newest reply's usage then; `nudged_at` the
    /// usage at this cycle's first nudge, if one came before.
    Refused {
        tokens: Option<u64>,
        nudged_at: Option<u64>,
    },
}

/// The hook whose decision it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Hook {
    Statusline,
    #[serde(rename = "pretooluse")]
    PreToolUse,
    #[serde(rename = "userpromptsubmit")]
    UserPromptSubmit,
    #[serde(rename = "stop")]
    Stop,
}

impl Hook {
    pub fn name(self) -> &'static str {
        match self {
            Hook::Statusline => "status line",
            Hook::PreToolUse => event::PRE_TOOL_USE,
            Hook::UserPromptSubmit => event::USER_PROMPT_SUBMIT,
            Hook::Stop => event::STOP,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Normal,
    Critical,
}

/// What started a compaction: `compactMetadata.trigger`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    Auto,
    Manual,
}

impl Trigger {
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Manual => "manual",
        }
    }
}

/// How a cycle went (see docs/replay.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Nudged, then compacted after at least one more reply.
    InTime,
    /// Nudged, then compacted with no reply in between: the agent never acted on it.
    Late,
    /// Compacted without a nudge: automatically, or by hand after usage had reached the
    /// trigger.
    Missed,
    /// Nudged, but the cycle ended without a compaction and usage never reached the trigger.
    FalseAlarm,
    /// No nudge and no compaction.
    Quiet,
    /// Compacted by hand (`/compact`) before usage reached the trigger: nothing was due.
    Manual,
    /// Nudged with usage past the trigger, and the transcript ends before a compaction.
    Open,
    /// Compacted with no reading of usage before it (a transcript that begins at a compaction,
    /// its history before not published): nothing to judge ctxguard on.
    NoData,
    /// The client stopped accepting requests ("Prompt is too long": auto-compaction off), and
    /// the transcript ends before any compaction.
    Stopped,
}

impl Verdict {
    /// `replies_left`: replies after the first nudge until the cycle ended (`None`: no nudge);
    /// `compaction`: what ended it (`None`: the end of the transcript); `read`: some reply of
    /// the cycle gave its usage.
    pub fn of(
        replies_left: Option<usize>,
        compaction: Option<Trigger>,
        reached_trigger: bool,
        read: bool,
        refused: bool,
    ) -> Verdict {
        match (replies_left, compaction) {
            (_, None) if refused => Verdict::Stopped,
            (None, Some(_)) if !read => Verdict::NoData,
            (Some(0), Some(_)) => Verdict::Late,
            (Some(_), Some(_)) => Verdict::InTime,
            (None, Some(Trigger::Auto)) => Verdict::Missed,
            (None, Some(Trigger::Manual)) if reached_trigger => Verdict::Missed,
            (None, Some(Trigger::Manual)) => Verdict::Manual,
            (Some(_), None) if reached_trigger => Verdict::Open,
            (Some(_), None) => Verdict::FalseAlarm,
            (None, None) => Verdict::Quiet,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Verdict::InTime => "in time",
            Verdict::Late => "late",
            Verdict::Missed => "missed",
            Verdict::FalseAlarm => "false alarm",
            Verdict::Quiet => "quiet",
            Verdict::Manual => "manual",
            Verdict::Open => "open",
            Verdict::NoData => "no data",
            Verdict::Stopped => "stopped",
        }
    }
}

/// One compaction cycle: from the start (or a compaction) to the next compaction (or the end).
#[derive(Debug, Clone, Serialize)]
pub struct Cycle {
    pub cycle: usize,
    pub verdict: Verdict,
    pub first_line: usize,
    pub last_line: usize,
    pub start: Option<DateTime<Utc>>,
    pub end: Option<DateTime<Utc>>,
    pub replies: usize,
    pub peak_tokens: Option<u64>,
    /// Usage reached the trigger (on the limits the hooks held then).
    pub reached_trigger: bool,
    /// Nudges given in this cycle (normal and critical, repeats included).
    pub nudges: usize,
    /// The first of them.
    pub nudge: Option<FirstNudge>,
    /// End-of-turn nudges before an idle compaction (`Stop`), apart from the above.
    pub idle_nudges: usize,
    /// Requests the client refused as too long, and the usage at the first of them.
    pub refusals: usize,
    pub refused_at: Option<u64>,
    /// What ended the cycle; `None` at the end of the transcript.
    pub compaction: Option<Compaction>,
}

/// A nudge as it was given.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NudgeSeen {
    pub level: Level,
    pub tokens: Option<u64>,
    pub compact_at: Option<u64>,
    pub at: Option<DateTime<Utc>>,
    pub line: usize,
    pub by: Hook,
}

/// A cycle's first nudge, and how many replies came after it before the cycle ended (one flat
/// object in JSON).
#[derive(Debug, Clone, Serialize)]
pub struct FirstNudge {
    #[serde(flatten)]
    pub seen: NudgeSeen,
    pub replies_left: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Compaction {
    pub trigger: Trigger,
    pub pre_tokens: Option<u64>,
    pub line: usize,
    pub at: Option<DateTime<Utc>>,
    /// What it cost: the context before and after, the refill, the recovery's size.
    pub cost: Cost,
}

/// Usage after one reply, and the limits the hooks held (or would resolve) then.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub reply: usize,
    pub cycle: usize,
    pub tokens: u64,
    pub limits: Limits,
}
