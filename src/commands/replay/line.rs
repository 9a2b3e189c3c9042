//! One transcript line as the replay reads it, beyond what [`crate::transcript::classify`]
//! says about usage: who wrote it, its message id, its tool calls, whether it is a prompt the
//! user typed, its usage broken down, and a boundary's trigger.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::report::Trigger;

/// The client's words when it refuses a request as too long (`Dz` in 2.1.332, `Vn` in 2.1.14).
pub const PROMPT_TOO_LONG: &str = "Prompt is too long";
use crate::input::UsageBlock;

/// A line's parts the hooks' events depend on (one reply spans several lines, hence the message
/// id). Read leniently: a line that does not fit is no event.
#[derive(Deserialize)]
pub struct Shape<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    is_sidechain: Option<bool>,
    #[serde(rename = "isMeta", default)]
    is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    is_compact_summary: Option<bool>,
    #[serde(rename = "isVisibleInTranscriptOnly", default)]
    transcript_only: Option<bool>,
    #[serde(rename = "isApiErrorMessage", default)]
    api_error: Option<bool>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub message: Option<Message<'a>>,
    #[serde(rename = "compactMetadata", default)]
    compact: Option<serde_json::Value>,
    /// `cli` for the interactive client, `sdk-cli` for `-p` (2.1.x).
    #[serde(borrow, default)]
    entrypoint: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub struct Message<'a> {
    #[serde(borrow, default)]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    stop_reason: Option<Cow<'a, str>>,
    /// Read apart, so that a usage of the wrong shape leaves the rest of the line.
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

impl Shape<'_> {
    pub fn parse(line: &[u8]) -> Option<Shape<'_>> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        serde_json::from_slice(line).ok()
    }

    pub fn time(&self) -> Option<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(self.timestamp.as_deref()?)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    fn main_chain(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind) && self.is_sidechain != Some(true)
    }

    fn blocks(&self) -> Vec<Block<'_>> {
        self.message
            .as_ref()
            .and_then(|m| m.content)
            .filter(|c| c.get().starts_with('['))
            .and_then(|c| serde_json::from_str(c.get()).ok())
            .unwrap_or_default()
    }

    /// Tool calls a main-chain reply makes: one `PreToolUse` each.
    /// Does this main-chain reply end the agent's turn (`stop_reason: end_turn`), where the
    /// client runs the `Stop` hooks?
    pub fn ends_turn(&self) -> bool {
        self.main_chain("assistant")
            && self.message.as_ref().and_then(|m| m.stop_reason.as_deref()) == Some("end_turn")
    }

    /// Was the session interactive (`Some(true)`), `-p` or the SDK (`Some(false)`), or not said?
    pub fn attended(&self) -> Option<bool> {
        self.entrypoint.as_deref().map(|e| e == "cli")
    }

    /// Is this the client refusing a request as too long: its own error message (`isApiErrorMessage`)
    /// opening with "Prompt is too long", as 2.1.332's `wV` tells it (written at its blocking
    /// limit with auto-compaction off, or when the API refused the request)?
    pub fn is_refusal(&self) -> bool {
        self.main_chain("assistant")
            && self.api_error == Some(true)
            && self.blocks().iter().any(|b| {
                b.kind.as_deref() == Some("text")
                    && b.text
                        .as_deref()
                        .is_some_and(|t| t.starts_with(PROMPT_TOO_LONG))
            })
    }

    pub fn tool_calls(&self) -> usize {
        if !self.main_chain("assistant") {
            return 0;
        }
        self.blocks()
            .iter()
            .filter(|b| b.kind.as_deref() == Some("tool_use"))
            .count()
    }

    /// Is this a prompt the user typed (a `UserPromptSubmit`)? The same test the checkpoint uses
    /// for "the last user requests": not meta, not a compaction summary, not a command's output
    /// or a notification.
    pub fn is_prompt(&self) -> bool {
        if !self.main_chain("user")
            || self.is_meta == Some(true)
            || self.is_compact_summary == Some(true)
            || self.transcript_only == Some(true)
        {
            return false;
        }
        let Some(content) = self.message.as_ref().and_then(|m| m.content) else {
            return false;
        };
        let text = if content.get().starts_with('"') {
            serde_json::from_str::<String>(content.get()).ok()
        } else {
            let texts: Vec<String> = self
                .blocks()
                .into_iter()
                .filter(|b| b.kind.as_deref() == Some("text"))
                .filter_map(|b| b.text.map(Cow::into_owned))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        };
        text.is_some_and(|t| crate::checkpoint::clean_prompt(&t).is_some())
    }

    /// `compactMetadata.trigger` is `auto`: what `PreCompact`'s `trigger` says.
    pub fn trigger(&self) -> Trigger {
        let auto = self
            .compact
            .as_ref()
            .and_then(|c| c.get("trigger")?.as_str().map(|t| t == "auto"))
            .unwrap_or(false);
        if auto {
            Trigger::Auto
        } else {
            Trigger::Manual
        }
    }

    /// A reply's `message.usage`, broken down (input, cache read, cache written).
    pub fn usage(&self) -> Option<UsageBlock> {
        serde_json::from_str(self.message.as_ref()?.usage?.get()).ok()
    }

    pub fn pre_tokens(&self) -> Option<u64> {
        self.compact.as_ref()?.get("preTokens")?.as_u64()
    }
}
