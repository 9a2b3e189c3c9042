//! The replay's tally of the compactions whose recovery never arrived: a boundary followed by a
//! reply but by no line holding a recovery block ([`crate::receipt::recorded_block`]) before the
//! next boundary (`replay --all` counts them).

use crate::receipt::recorded_block;
use crate::transcript;

/// Of the compactions in a transcript read line by line, how many were followed by a reply but
/// by no line holding a recovery block before the next boundary: their recovery never arrived
/// (`replay --all` counts them). A boundary with no reply after it yet is still open.
#[cfg(test)]
fn never_arrived<R: std::io::BufRead>(reader: R) -> std::io::Result<usize> {
    let mut tally = Tally::default();
    let mut lines = transcript::LineReader::new(reader, transcript::MAX_LINE);
    while let Some(line) = lines.next_line()? {
        if let transcript::Line::Text(line) = line {
            tally.feed(line);
        }
    }
    Ok(tally.total())
}

/// The compactions of a transcript whose recovery never arrived, a line at a time (`replay`
/// feeds it the lines it replays, so a transcript is read once).
#[derive(Debug, Default)]
pub struct Tally {
    missing: usize,
    /// Since the newest boundary: (a reply came, a block came).
    open: Option<(bool, bool)>,
}

impl Tally {
    pub fn feed(&mut self, line: &[u8]) {
        match transcript::classify(line) {
            transcript::Verdict::Boundary { .. } => {
                if self.open == Some((true, false)) {
                    self.missing += 1;
                }
                self.open = Some((false, false));
            }
            transcript::Verdict::Usage { .. } => {
                if let Some(o) = self.open.as_mut() {
                    o.0 = true;
                }
            }
            transcript::Verdict::Irrelevant => {}
        }
        if let Some(o) = self.open.as_mut() {
            if !o.1 && recorded_block(line).is_some() {
                o.1 = true;
            }
        }
    }

    /// The compactions so far whose recovery never arrived (the newest counts once a reply
    /// came after it without the block).
    pub fn total(&self) -> usize {
        self.missing + usize::from(self.open == Some((true, false)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDARY: &str = r#"{"type":"system","subtype":"compact_boundary","timestamp":"2026-11-25T10:00:00Z","compactMetadata":{"trigger":"manual","preTokens":120530,"postTokens":2645}}"#;
    const SUMMARY: &str = r#"{"type":"user","isCompactSummary":true,"message":{"content":"..."}}"#;
    const KEPT: &str = r###"{"type":"attachment","attachment":{"type":"hook_additional_context","content":["## ctxguard recovery: compaction #1 of this session"]}}"###;
    const REPLY: &str = r#"{"type":"assistant","message":{"content":[],"usage":{"input_tokens":20000,"output_tokens":5}}}"#;

    #[test]
    fn replay_counts_the_compactions_whose_recovery_never_arrived() {
        let text = |lines: &[&str]| (lines.join("\n") + "\n").into_bytes();
        let count = |bytes: Vec<u8>| never_arrived(std::io::Cursor::new(bytes)).unwrap();
        // Arrived, then lost (a reply and no block), then still open (no reply yet).
        assert_eq!(
            count(text(&[
                REPLY, BOUNDARY, SUMMARY, KEPT, REPLY, BOUNDARY, SUMMARY, REPLY, BOUNDARY, SUMMARY
            ])),
            1
        );
        assert_eq!(count(text(&[REPLY, BOUNDARY, SUMMARY, REPLY])), 1);
        assert_eq!(count(text(&[REPLY, REPLY])), 0);
    }
}
