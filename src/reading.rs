//! The session's current usage from its transcript, read incrementally: the first read scans
//! backwards from the end (only the tail), and every later one reads only what the client
//! appended since, so `PreToolUse` knows the usage of the very reply that made the tool call at
//! the cost of a `stat` and a few kilobytes. What was read is kept per session in
//! `sessions/<id>/reading.json` (file identity, the offset read up to, the reading), replaced
//! atomically but not fsync-ed: it is a cache, and a lost or corrupt one only means a tail scan.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::transcript::{self, Verdict};

/// Replies whose growth is remembered (for arming on the growth rate).
const RECENT: usize = 6;

/// More appended than this is read as a fresh tail scan instead.
const MAX_APPENDED: u64 = 8 * 1024 * 1024;

/// What the transcript says, and how far it was read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Reading {
    /// Identity of the file read (device and inode; a replaced file is read afresh).
    pub dev: u64,
    pub ino: u64,
    /// The end of the last complete line read.
    pub offset: u64,
    /// A hash of the bytes just before `offset`: a file rewritten in place (same inode, not
    /// only appended to) does not match and is read afresh.
    pub seal: u64,
    /// Context tokens of the newest main-chain reply after the newest compaction.
    pub tokens: Option<u64>,
    /// That reply's model.
    pub model: Option<String>,
    /// That reply's time.
    pub reply_at: Option<DateTime<Utc>>,
    /// The version of the client that wrote the newest reply (Claude Code's; a Codex rollout's
    /// is in `codex_version`, so that no Claude Code version rule reads it).
    pub client_version: Option<String>,
    /// The window the client itself reported (Codex's `model_context_window`: the part of the
    /// model's window it lets a conversation use).
    pub window: Option<u64>,
    /// The newest `compact_boundary`, when it is newer than every reply.
    pub boundary_at: Option<DateTime<Utc>>,
    /// Tokens in context when the client last auto-compacted (a boundary's `preTokens`): where
    /// this client really compacts.
    pub auto_compacted_at: Option<u64>,
    /// The context tokens of the last few replies since the newest boundary, oldest first.
    pub recent: Vec<u64>,
    /// The scan gave up before finding anything (a huge tail without replies).
    #[serde(skip)]
    pub gave_up: bool,
}

impl Reading {
    /// Does the client that wrote this transcript pass `PreToolUse`'s `additionalContext` to the
    /// model? 2.0.76 reads only the permission fields of a `PreToolUse` answer; 2.1.14 passes it
    /// on. Unknown versions are taken to pass it (every current client does).
    pub fn client_reads_pretooluse_context(&self) -> bool {
        let Some(v) = &self.client_version else {
            return true;
        };
        let mut parts = v.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
        let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        (major, minor) >= (2, 1)
    }

    /// The largest growth from one reply to the next among the recent ones.
    pub fn max_growth(&self) -> u64 {
        self.recent
            .windows(2)
            .map(|w| w[1].saturating_sub(w[0]))
            .max()
            .unwrap_or(0)
    }

    pub fn apply(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Usage {
                tokens,
                model,
                at,
                version,
                window,
            } => {
                if window.is_some() {
                    self.window = window;
                }
                if version.is_some() {
                    self.client_version = version;
                }
                if self.recent.last() != Some(&tokens) {
                    self.recent.push(tokens);
                    if self.recent.len() > RECENT {
                        self.recent.remove(0);
                    }
                }
                self.tokens = Some(tokens);
                self.model = model.or(self.model.take());
                self.reply_at = at;
                self.boundary_at = None;
            }
            Verdict::Boundary {
                at,
                auto_pre_tokens,
            } => {
                self.tokens = None;
                self.recent.clear();
                self.boundary_at = at.or(Some(DateTime::<Utc>::MIN_UTC));
                if auto_pre_tokens.is_some() {
                    self.auto_compacted_at = auto_pre_tokens;
                }
            }
            Verdict::Irrelevant => {}
        }
    }
}

/// The reading of the transcript at `path`, continuing from `cached` when it is for the same
/// file and the file only grew.
pub fn read(path: &Path, cached: Option<Reading>) -> Result<Reading> {
    let (mut file, len) = crate::files::open_regular(path, "transcript")?;
    let (dev, ino) = crate::files::identity(&file)?;
    let continues = cached
        .filter(|c| (c.dev, c.ino) == (dev, ino) && c.offset <= len)
        .filter(|c| len - c.offset <= MAX_APPENDED)
        .filter(|c| seal(&mut file, c.offset).is_ok_and(|s| s == c.seal));
    // A Codex rollout's lines are read by its own reader, into the same verdicts.
    let classify = crate::rollout::classifier(path);
    let result = match continues {
        Some(c) if c.offset == len => Ok(c),
        Some(c) => forward(&mut file, c, len, classify),
        None => tail(&mut file, len, classify).map(|mut r| {
            r.dev = dev;
            r.ino = ino;
            r
        }),
    };
    let mut reading = result.with_context(|| format!("reading transcript {}", path.display()))?;
    reading.seal = seal(&mut file, reading.offset)
        .with_context(|| format!("reading transcript {}", path.display()))?;
    Ok(reading)
}

/// Bytes hashed before the offset to recognise the same file content.
const SEAL_BYTES: u64 = 64;

/// FNV-1a of the [`SEAL_BYTES`] before `offset`: what tells a file only appended to since it
/// was read up to `offset` from one rewritten in place (pi's session copy keeps it too).
pub fn seal(file: &mut File, offset: u64) -> std::io::Result<u64> {
    let start = offset.saturating_sub(SEAL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::with_capacity(SEAL_BYTES as usize);
    file.take(offset - start).read_to_end(&mut bytes)?;
    Ok(bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    }))
}

/// Reads the lines appended after `from.offset`, up to the last complete one.
fn forward(
    file: &mut File,
    mut from: Reading,
    len: u64,
    classify: fn(&[u8]) -> Verdict,
) -> Result<Reading> {
    file.seek(SeekFrom::Start(from.offset))?;
    let mut bytes = Vec::with_capacity((len - from.offset) as usize);
    file.take(len - from.offset).read_to_end(&mut bytes)?;
    let Some(last_newline) = memchr::memrchr(b'\n', &bytes) else {
        return Ok(from); // only a line still being written
    };
    for line in bytes[..last_newline].split(|b| *b == b'\n') {
        if !line.is_empty() && line.len() <= transcript::MAX_LINE {
            from.apply(classify(line));
        }
    }
    from.offset += last_newline as u64 + 1;
    Ok(from)
}

/// A first reading: the backward tail scan, and the offset of the end of the last complete line.
fn tail(file: &mut File, len: u64, classify: fn(&[u8]) -> Verdict) -> Result<Reading> {
    let scan = transcript::tail_usage_with(file, len, transcript::FIRST_CHUNK, classify)?;
    let last = len.min(64 * 1024);
    file.seek(SeekFrom::Start(len - last))?;
    let mut end = Vec::with_capacity(last as usize);
    file.take(last).read_to_end(&mut end)?;
    let offset = match memchr::memrchr(b'\n', &end) {
        Some(i) => len - last + i as u64 + 1,
        // No newline in the last 64 KiB: a huge line still being written, read it later.
        None if len > last => len - last,
        None => 0,
    };
    Ok(Reading {
        offset,
        tokens: scan.tokens,
        model: scan.model,
        reply_at: scan.reply_at,
        client_version: scan.version,
        window: scan.window,
        boundary_at: scan.boundary_at,
        recent: scan.tokens.into_iter().collect(),
        gave_up: scan.gave_up,
        ..Reading::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn reply(tokens: u64, at: &str) -> String {
        format!(
            r#"{{"type":"assistant","timestamp":"{at}","message":{{"model":"m1","usage":{{"input_tokens":{tokens},"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}}}}"#
        )
    }

    const T1: &str = "2026-11-01T10:00:00Z";
    const T2: &str = "2026-11-01T10:01:00Z";

    #[test]
    fn reads_the_tail_then_only_what_was_appended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut f = File::create(&path).unwrap();
        writeln!(f, "{}", reply(1_000, T1)).unwrap();
        writeln!(f, "{}", reply(5_000, T1)).unwrap();
        let first = read(&path, None).unwrap();
        assert_eq!(first.tokens, Some(5_000));
        assert_eq!(first.model.as_deref(), Some("m1"));
        assert_eq!(first.recent, [5_000]);
        assert_eq!(first.offset, fs_len(&path));

        // Unchanged: the same reading.
        assert_eq!(read(&path, Some(first.clone())).unwrap(), first);

        // Appended: a whole line and half of the next.
        writeln!(f, "{}", reply(35_000, T2)).unwrap();
        let half = reply(40_000, T2);
        write!(f, "{}", &half[..20]).unwrap();
        let next = read(&path, Some(first.clone())).unwrap();
        assert_eq!(next.tokens, Some(35_000));
        assert_eq!(next.recent, [5_000, 35_000]);
        assert_eq!(next.max_growth(), 30_000);
        assert_eq!(
            next.reply_at.unwrap().to_rfc3339(),
            "2026-11-01T10:01:00+00:00"
        );
        // The rest of the half line completes it.
        writeln!(f, "{}", &half[20..]).unwrap();
        let last = read(&path, Some(next)).unwrap();
        assert_eq!(last.tokens, Some(40_000));
        assert_eq!(last.offset, fs_len(&path));
    }

    #[test]
    fn which_clients_pass_pretooluse_context_on() {
        let of = |v: Option<&str>| Reading {
            client_version: v.map(str::to_string),
            ..Reading::default()
        };
        assert!(!of(Some("2.0.76")).client_reads_pretooluse_context());
        assert!(!of(Some("1.0.88")).client_reads_pretooluse_context());
        assert!(of(Some("2.1.14")).client_reads_pretooluse_context());
        assert!(of(Some("2.1.330")).client_reads_pretooluse_context());
        assert!(of(None).client_reads_pretooluse_context());
    }

    #[test]
    fn a_boundary_clears_usage_and_records_where_the_client_compacted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut f = File::create(&path).unwrap();
        writeln!(f, "{}", reply(250_000, T1)).unwrap();
        let first = read(&path, None).unwrap();
        writeln!(
            f,
            r#"{{"type":"system","subtype":"compact_boundary","timestamp":"{T2}","compactMetadata":{{"trigger":"auto","preTokens":281000}}}}"#
        )
        .unwrap();
        let after = read(&path, Some(first)).unwrap();
        assert_eq!((after.tokens, after.recent.len()), (None, 0));
        assert_eq!(after.auto_compacted_at, Some(281_000));
        assert!(after.boundary_at.is_some());
    }

    #[test]
    fn a_replaced_or_truncated_file_is_read_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, reply(9_000, T1) + "\n" + &reply(9_500, T1) + "\n").unwrap();
        let first = read(&path, None).unwrap();
        std::fs::write(&path, reply(2_000, T2) + "\n").unwrap();
        let again = read(&path, Some(first)).unwrap();
        assert_eq!(again.tokens, Some(2_000));
        let mut stale = again.clone();
        stale.ino += 1;
        stale.tokens = Some(1);
        assert_eq!(read(&path, Some(stale)).unwrap().tokens, Some(2_000));
        // Rewritten in place and longer: the seal does not match, so it is not continued.
        std::fs::write(&path, reply(3_000, T2) + "\n" + &reply(4_000, T2) + "\n").unwrap();
        assert_eq!(read(&path, Some(again)).unwrap().tokens, Some(4_000));
    }

    fn fs_len(path: &Path) -> u64 {
        std::fs::metadata(path).unwrap().len()
    }
}
