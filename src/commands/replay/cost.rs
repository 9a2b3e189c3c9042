//! What each compaction cost, which no client shows: the context before it (the boundary's
//! `compactMetadata.preTokens`), the first main-chain reply after it (its input, cache read and
//! cache written tokens: the cache written is the refill, paid on every compaction), and the
//! characters of the recovery block the client recorded after it (recognised by
//! [`crate::receipt::recorded_block`]). Fed line by line by the replay, so a transcript is read
//! once.

use serde::Serialize;
use serde_json::Value;

use crate::input::UsageBlock;

/// One compaction's cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Cost {
    /// Tokens in context before: the boundary's `compactMetadata.preTokens`.
    pub before: Option<u64>,
    /// The first main-chain reply after the boundary.
    pub after: Option<After>,
    /// Tokens written to the cache to refill it: that reply's cache written (Codex does not say).
    pub refill: Option<u64>,
    /// Characters of the recovery block the client recorded after the boundary.
    pub recovery_chars: Option<usize>,
}

/// The context of the first reply after a compaction. A Codex rollout gives only its total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct After {
    pub tokens: u64,
    pub input: Option<u64>,
    pub cache_read: Option<u64>,
    pub cache_written: Option<u64>,
}

/// A figure summed over compactions: the sum of those that know it, and how many do not (a
/// Codex rollout says nothing of what was written to a cache). Never an unknown counted as 0.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sum {
    pub known: u64,
    /// How many compactions gave this figure.
    pub of: usize,
    /// How many did not.
    pub unknown: usize,
}

impl Sum {
    fn push(&mut self, figure: Option<u64>) {
        match figure {
            Some(n) => {
                self.known += n;
                self.of += 1;
            }
            None => self.unknown += 1,
        }
    }

    fn add(&mut self, other: &Sum) {
        self.known += other.known;
        self.of += other.of;
        self.unknown += other.unknown;
    }

    /// The sum, when at least one compaction gave the figure (or there was none to give it).
    pub fn value(&self) -> Option<u64> {
        (self.of > 0 || self.unknown == 0).then_some(self.known)
    }
}

/// The costs of a session's compactions (or of all sessions'), summed over the figures known:
/// in JSON each sum is `null` when no compaction knew it, with `*_unknown` counting those that
/// did not.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    pub compactions: usize,
    pub before: Sum,
    pub after: Sum,
    pub refill: Sum,
    pub recovery_chars: usize,
}

impl Serialize for Totals {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Shown {
            compactions: usize,
            before: Option<u64>,
            before_unknown: usize,
            after: Option<u64>,
            after_unknown: usize,
            refill: Option<u64>,
            refill_unknown: usize,
            recovery_chars: usize,
        }
        Shown {
            compactions: self.compactions,
            before: self.before.value(),
            before_unknown: self.before.unknown,
            after: self.after.value(),
            after_unknown: self.after.unknown,
            refill: self.refill.value(),
            refill_unknown: self.refill.unknown,
            recovery_chars: self.recovery_chars,
        }
        .serialize(serializer)
    }
}

impl Totals {
    pub fn of<'a>(costs: impl IntoIterator<Item = &'a Cost>) -> Totals {
        let mut t = Totals::default();
        for c in costs {
            t.compactions += 1;
            t.before.push(c.before);
            t.after.push(c.after.map(|a| a.tokens));
            t.refill.push(c.refill);
            t.recovery_chars += c.recovery_chars.unwrap_or(0);
        }
        t
    }

    pub fn add(&mut self, other: &Totals) {
        self.compactions += other.compactions;
        self.before.add(&other.before);
        self.after.add(&other.after);
        self.refill.add(&other.refill);
        self.recovery_chars += other.recovery_chars;
    }
}

/// The costs of a transcript's compactions so far, the newest still gathering its figures.
#[derive(Debug, Default)]
pub struct Ledger {
    costs: Vec<Cost>,
    /// The newest compaction's first reply has been seen.
    replied: bool,
}

impl Ledger {
    /// A compaction: its cost starts with the context before it.
    pub fn boundary(&mut self, before: Option<u64>) {
        self.costs.push(Cost {
            before,
            ..Cost::default()
        });
        self.replied = false;
    }

    /// A new main-chain reply of `tokens`, with its usage broken down when the line gives it.
    pub fn reply(&mut self, tokens: u64, usage: Option<UsageBlock>) {
        if self.replied {
            return;
        }
        let Some(cost) = self.costs.last_mut() else {
            return;
        };
        self.replied = true;
        cost.after = Some(After {
            tokens,
            input: usage.map(|u| u.input_tokens),
            cache_read: usage.map(|u| u.cache_read_input_tokens),
            cache_written: usage.map(|u| u.cache_creation_input_tokens),
        });
        cost.refill = usage.map(|u| u.cache_creation_input_tokens);
    }

    /// Any line after a boundary: the first recovery block recorded is the recovery's size.
    pub fn line(&mut self, line: &[u8]) {
        let Some(cost) = self.costs.last_mut() else {
            return;
        };
        if cost.recovery_chars.is_some() || crate::receipt::recorded_block(line).is_none() {
            return;
        }
        cost.recovery_chars = Some(recorded_chars(line));
    }

    pub fn finish(self) -> Vec<Cost> {
        self.costs
    }
}

/// The characters of the context a line [`crate::receipt::recorded_block`] recognised records:
/// Claude Code's attachment `content` (a string, or one per hook), Codex's developer message
/// texts.
fn recorded_chars(line: &[u8]) -> usize {
    let Ok(v) = serde_json::from_slice::<Value>(line) else {
        return 0;
    };
    let content = v
        .pointer("/attachment/content")
        .or_else(|| v.pointer("/payload/content"));
    let chars = |s: &str| s.chars().count();
    match content {
        Some(Value::String(s)) => chars(s),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().or_else(|| i.get("text")?.as_str()))
            .map(chars)
            .sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(n: u64, body: &str) -> String {
        serde_json::json!({
            "type": "attachment",
            "attachment": {
                "type": "hook_additional_context",
                "content": [format!("## ctxguard recovery: compaction #{n}\n{body}")],
                "hookEvent": "SessionStart",
            },
        })
        .to_string()
    }

    fn usage(input: u64, read: u64, written: u64) -> UsageBlock {
        UsageBlock {
            input_tokens: input,
            cache_read_input_tokens: read,
            cache_creation_input_tokens: written,
        }
    }

    #[test]
    fn each_compaction_keeps_its_first_reply_and_first_recovery() {
        let mut ledger = Ledger::default();
        // Before any compaction: nothing is a cost.
        ledger.reply(100, Some(usage(1, 2, 97)));
        ledger.line(block(9, "x").as_bytes());
        ledger.boundary(Some(150_000));
        ledger.line(block(1, "éé").as_bytes());
        ledger.line(block(1, "a longer one, given again").as_bytes());
        ledger.reply(12_003, Some(usage(3, 0, 12_000)));
        ledger.reply(13_000, Some(usage(3, 12_000, 997)));
        ledger.boundary(None);
        ledger.reply(9_000, None);
        let costs = ledger.finish();
        let first = "## ctxguard recovery: compaction #1\néé".chars().count();
        assert_eq!(
            costs,
            vec![
                Cost {
                    before: Some(150_000),
                    after: Some(After {
                        tokens: 12_003,
                        input: Some(3),
                        cache_read: Some(0),
                        cache_written: Some(12_000),
                    }),
                    refill: Some(12_000),
                    recovery_chars: Some(first),
                },
                Cost {
                    before: None,
                    after: Some(After {
                        tokens: 9_000,
                        ..After::default()
                    }),
                    refill: None,
                    recovery_chars: None,
                },
            ]
        );
        let totals = Totals::of(&costs);
        let sum = |known, of, unknown| Sum { known, of, unknown };
        assert_eq!(
            totals,
            Totals {
                compactions: 2,
                before: sum(150_000, 1, 1),
                after: sum(21_003, 2, 0),
                refill: sum(12_000, 1, 1),
                recovery_chars: first,
            }
        );
        // An unknown is never a 0: known only where some compaction gave it.
        assert_eq!(totals.refill.value(), Some(12_000));
        assert_eq!(sum(0, 0, 2).value(), None);
        assert_eq!(Sum::default().value(), Some(0));
    }

    #[test]
    fn a_quoted_block_is_no_recovery() {
        let mut ledger = Ledger::default();
        ledger.boundary(Some(1));
        let prompt = serde_json::json!({
            "type": "user",
            "message": {"content": "## ctxguard recovery: compaction #1 what is this?"},
        });
        ledger.line(prompt.to_string().as_bytes());
        assert_eq!(ledger.finish()[0].recovery_chars, None);
    }
}
