//! One Codex rollout line as the replay reads it, beyond what [`crate::rollout::classify`] says
//! about usage and [`crate::rollout::item`] about the work: its time, the thread's running token
//! total (Codex writes one response's usage twice, as a `token_usage_record` and a `token_count`,
//! and repeats a `token_count` on a rate-limit update: only a new total is a new reply), whether
//! it is the compaction's own summary, and the model a turn runs.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::rollout::{self, ItemMetadata};

/// What the replay reads of a rollout line. Read leniently: a line that does not fit says
/// nothing.
#[derive(Debug, Default, PartialEq)]
pub struct Shape {
    pub time: Option<DateTime<Utc>>,
    /// The thread's tokens so far (`total_token_usage` of a `token_count`, `thread_token_usage`
    /// of a `token_usage_record`): the same for both lines of one response.
    pub total: Option<u64>,
    /// The compaction's summary (`metadata.compaction_output`): Codex is compacting, and what
    /// it writes until its `compacted` line is the compaction's own request, not the
    /// conversation's.
    pub summary: bool,
    /// A `turn_context`'s model.
    pub model: Option<String>,
    /// A `task_complete` event: the turn is over.
    pub ends_turn: bool,
}

/// The payloads read here, each field optional: a `token_count`'s `info`, a
/// `token_usage_record`'s `thread_token_usage`, a `turn_context`'s `model`, a `response_item`'s
/// `metadata`.
#[derive(Deserialize, Default)]
struct Payload {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    info: Option<Info>,
    #[serde(default)]
    thread_token_usage: Option<Usage>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    metadata: Option<ItemMetadata>,
}

#[derive(Deserialize)]
struct Info {
    #[serde(default)]
    total_token_usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    total_tokens: Option<u64>,
}

impl Shape {
    pub fn parse(line: &[u8]) -> Shape {
        let Some((parsed, _)) = rollout::parse_line(line) else {
            return Shape::default();
        };
        let time = parsed.timestamp.as_deref().and_then(rollout::parse_time);
        let kind = parsed.kind.as_deref().unwrap_or_default();
        let wanted = matches!(
            kind,
            "event_msg" | "token_usage_record" | "turn_context" | "response_item"
        );
        let payload = parsed
            .payload
            .filter(|_| wanted)
            .and_then(|p| serde_json::from_str::<Payload>(p.get()).ok())
            .unwrap_or_default();
        let total = match kind {
            "event_msg" => payload
                .info
                .and_then(|i| i.total_token_usage)
                .and_then(|u| u.total_tokens),
            "token_usage_record" => payload.thread_token_usage.and_then(|u| u.total_tokens),
            _ => None,
        };
        let summary = kind == "response_item"
            && [parsed.metadata, payload.metadata]
                .into_iter()
                .flatten()
                .any(|m| m.compaction_output == Some(true));
        Shape {
            time,
            total,
            summary,
            ends_turn: kind == "event_msg" && payload.kind.as_deref() == Some("task_complete"),
            model: payload.model.filter(|_| kind == "turn_context"),
        }
    }
}

/// Is this user message text a prompt the user typed (a `UserPromptSubmit`), not Codex's own
/// context, instructions or the compaction's summary handed to the next model?
pub fn is_prompt(text: &str) -> bool {
    !text.trim().is_empty() && !crate::checkpoint::is_codex_text(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXCERPT: &str =
        include_str!("../../../fixtures/codex/rollout-excerpt-mid-turn-compaction.jsonl");

    #[test]
    fn the_recorded_lines_give_their_totals_the_summary_and_the_model() {
        let shapes: Vec<Shape> = EXCERPT
            .lines()
            .map(|l| Shape::parse(l.as_bytes()))
            .collect();
        // A response's record and its token counts carry the same total.
        let totals: Vec<(usize, u64)> = shapes
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((i, s.total?)))
            .collect();
        assert_eq!(
            totals,
            [
                (12, 50_050),
                (15, 50_050),
                (16, 50_050),
                (18, 51_300),
                (19, 51_300),
                (24, 51_300),
                (29, 52_550),
                (30, 52_550)
            ]
        );
        let summaries: Vec<usize> = (0..shapes.len()).filter(|i| shapes[*i].summary).collect();
        assert_eq!(summaries, [17]);
        assert_eq!(shapes[5].model.as_deref(), Some("mock-model"));
        let ends: Vec<usize> = (0..shapes.len()).filter(|i| shapes[*i].ends_turn).collect();
        assert_eq!(ends, [31]);
        assert_eq!(
            shapes[0].time.unwrap().to_rfc3339(),
            "2026-11-25T17:26:56.428+00:00"
        );
        assert_eq!(Shape::parse(b"not json"), Shape::default());
    }

    #[test]
    fn codex_s_own_messages_are_not_prompts() {
        assert!(is_prompt("fix the parser"));
        assert!(is_prompt("ok"));
        for own in [
            "<environment_context>\n  <cwd>/p</cwd>",
            "# AGENTS.md instructions for /p",
            "Another language model started to solve this problem and produced a summary",
            "  ",
        ] {
            assert!(!is_prompt(own), "{own}");
        }
    }
}
