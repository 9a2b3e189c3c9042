//! A receipt in words, written once: `status --session` shows it and the daily log records it
//! with this one function ([`Receipt::describe`]), and `log --json` reads the log's line back
//! into fields ([`read`]). Tokens are exact, grouped (`170,612`); an unknown figure is `?`.
//! No facts is said only with its reason: a manual `/compact` (the user's words steered the
//! summary) or Codex (its summary cannot be steered); otherwise nothing is said of them.

use super::{Arrival, Receipt};
use crate::text::grouped;

/// An unknown figure.
const UNKNOWN: &str = "?";

/// What the log's line of a receipt begins with, after its time and session.
const LOGGED: &str = "recovery of compaction #";

fn tokens(t: Option<u64>) -> String {
    t.map_or_else(|| UNKNOWN.to_string(), grouped)
}

impl Receipt {
    /// `compaction #2 (auto): arrived (in the transcript) · tokens 170,612 → 3,301 · facts 812
    /// characters · summary 1,234 characters`.
    pub fn describe(&self) -> String {
        let trigger = if self.trigger.is_empty() {
            "unknown"
        } else {
            &self.trigger
        };
        let mut parts = vec![
            format!(
                "compaction #{} ({trigger}): {}",
                self.compaction,
                self.arrival_text()
            ),
            format!(
                "tokens {} → {}",
                tokens(self.pre_tokens),
                tokens(self.post_tokens)
            ),
        ];
        if let Some(facts) = self.facts_text() {
            parts.push(facts);
        }
        parts.push(match self.summary_chars {
            Some(c) => format!("summary {} characters", grouped(c as u64)),
            None => "summary not kept".into(),
        });
        if self.precomputed {
            parts.push("summary prepared ahead".into());
        }
        parts.join(" · ")
    }

    /// The facts handed to the summarizer, or why there were none where the reason is known
    /// (`None`: nothing worth saying).
    fn facts_text(&self) -> Option<String> {
        if self.facts_chars > 0 {
            Some(format!(
                "facts {} characters",
                grouped(self.facts_chars as u64)
            ))
        } else if self.codex {
            Some("no facts: Codex's summary cannot be steered".into())
        } else if self.trigger == "manual" {
            Some("no facts: your /compact words steered the summary".into())
        } else {
            None
        }
    }
}

/// A receipt as the log's line gives it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    pub compaction: u64,
    pub trigger: String,
    /// `None`: not arrived yet, or a wording this version does not know.
    pub arrived: Option<Arrival>,
    /// The hook that gave it again.
    pub by: Option<String>,
    pub pre_tokens: Option<u64>,
    pub post_tokens: Option<u64>,
}

/// Reads back what follows the time and session of a receipt's log line
/// (`recovery of compaction #2 (auto): … · tokens 170,612 → 3,301 · …`); `None` when it is no
/// receipt. A figure of an older wording (`170.6k`) is unknown: it was rounded.
pub fn read(rest: &str) -> Option<Logged> {
    let rest = rest.strip_prefix(LOGGED)?;
    let (head, tail) = rest.split_once(": ")?;
    let (number, trigger) = head.split_once(' ')?;
    let trigger = trigger.strip_prefix('(')?.strip_suffix(')')?;
    let mut parts = tail.split(" · ");
    let arrival = parts.next().unwrap_or_default();
    let (arrived, by) = read_arrival(arrival);
    let (mut pre_tokens, mut post_tokens) = (None, None);
    for part in parts {
        // Before this wording, parts were also joined by "; ".
        if let Some((pre, post)) = part
            .strip_prefix("tokens ")
            .and_then(|t| t.split_once(" → "))
        {
            pre_tokens = read_tokens(pre);
            post_tokens = read_tokens(post.split(';').next().unwrap_or_default());
        }
    }
    Some(Logged {
        compaction: number.parse().ok()?,
        trigger: trigger.to_string(),
        arrived,
        by,
        pre_tokens,
        post_tokens,
    })
}

fn read_arrival(text: &str) -> (Option<Arrival>, Option<String>) {
    let of = |arrived, by: Option<&str>| {
        Receipt {
            arrived: Some(arrived),
            by: by.map(str::to_string),
            ..Receipt::default()
        }
        .arrival_text()
    };
    for arrived in [Arrival::Transcript, Arrival::Memory, Arrival::GivenAgain] {
        if text == of(arrived, None) {
            return (Some(arrived), None);
        }
    }
    let given_again = of(Arrival::GivenAgain, Some(""));
    match text.strip_prefix(given_again.as_str()) {
        Some(by) if !by.is_empty() => (Some(Arrival::GivenAgain), Some(by.to_string())),
        _ => (None, None),
    }
}

fn read_tokens(text: &str) -> Option<u64> {
    let digits = text.trim().replace(',', "");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt() -> Receipt {
        Receipt {
            compaction: 2,
            trigger: "auto".into(),
            facts_chars: 812,
            summary_chars: Some(1_234),
            pre_tokens: Some(170_612),
            post_tokens: Some(3_301),
            arrived: Some(Arrival::Transcript),
            ..Receipt::default()
        }
    }

    #[test]
    fn one_wording_with_exact_tokens_and_one_placeholder() {
        assert_eq!(
            receipt().describe(),
            "compaction #2 (auto): arrived (in the transcript) · tokens 170,612 → 3,301 · facts \
             812 characters · summary 1,234 characters"
        );
        let unknown = Receipt {
            post_tokens: None,
            facts_chars: 0,
            summary_chars: None,
            precomputed: true,
            ..receipt()
        };
        assert_eq!(
            unknown.describe(),
            "compaction #2 (auto): arrived (in the transcript) · tokens 170,612 → ? · summary \
             not kept · summary prepared ahead"
        );
    }

    #[test]
    fn no_facts_is_said_only_with_its_reason() {
        let manual = Receipt {
            trigger: "manual".into(),
            facts_chars: 0,
            ..receipt()
        };
        assert!(manual
            .describe()
            .contains(" · no facts: your /compact words steered the summary · "));
        let codex = Receipt {
            codex: true,
            ..manual.clone()
        };
        assert!(codex
            .describe()
            .contains(" · no facts: Codex's summary cannot be steered · "));
        for r in [manual, codex] {
            assert!(!r.describe().contains("facts 0"), "{}", r.describe());
        }
    }

    #[test]
    fn the_log_line_reads_back_into_fields() {
        for (arrived, by) in [
            (Some(Arrival::Transcript), None),
            (Some(Arrival::Memory), None),
            (Some(Arrival::GivenAgain), None),
            (Some(Arrival::GivenAgain), Some("PreToolUse")),
            (None, None),
        ] {
            let r = Receipt {
                arrived,
                by: by.map(str::to_string),
                ..receipt()
            };
            let line = crate::receipt::line("abcdef1234", &r, chrono::Local::now());
            let rest = line.split(" · ").skip(2).collect::<Vec<_>>().join(" · ");
            assert_eq!(
                read(&rest),
                Some(Logged {
                    compaction: 2,
                    trigger: "auto".into(),
                    arrived,
                    by: by.map(str::to_string),
                    pre_tokens: Some(170_612),
                    post_tokens: Some(3_301),
                }),
                "{line}"
            );
        }
        // The wording before this one: rounded figures are unknown, the rest is read.
        let old = "recovery of compaction #1 (manual): arrived (in the transcript) · tokens \
                   170.6k → 3.3k · facts 0 characters · summary not kept";
        let logged = read(old).unwrap();
        assert_eq!(
            (logged.arrived, logged.pre_tokens, logged.post_tokens),
            (Some(Arrival::Transcript), None, None)
        );
        assert_eq!(
            read("context dropped without a compaction (1 → 2 tokens)"),
            None
        );
    }
}
