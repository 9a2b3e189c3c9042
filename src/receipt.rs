//! A receipt per compaction: did the recovery reach the conversation, and how?
//!
//! `SessionStart` hands the recovery to the client, but a client may keep that context in memory
//! only (2.1.14 under `-p`), refuse to start the hook (2.1.332, a command too long for Windows),
//! or apply a compaction without running it. So after each compaction the first hook that runs
//! once the next request is under way (`PreToolUse`, `UserPromptSubmit`) looks at what the client
//! recorded after the newest `compact_boundary`:
//!
//! - a line holding the block (2.1.330 and 2.1.332 write `SessionStart`'s context into the
//!   transcript as an `attachment` of type `hook_additional_context`): it arrived;
//! - none, but the `SessionStart` that handed it ran in this same client process (its
//!   `CLAUDE_PID`), or the client names no process (2.1.14 has no `CLAUDE_PID`; it records only a
//!   `hook_progress` line, and `SessionStart(resume)` gives it again in a new process): the client
//!   holds it in memory;
//! - otherwise (never handed, or handed to a client process that is gone): this hook delivers it
//!   by its own route, once, under the session's lock.
//!
//! The marker flags a compaction waiting for its receipt ([`Pending`]), so the tool-call fast
//! path reads nothing more while none is. The receipt itself is kept beside the checkpoint
//! (`cp_NNN.receipt.json`) and logged; `status` shows them.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use chrono::{DateTime, Local, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::checkpoint::{self, Checkpoint};
use crate::daily_log;
use crate::diag::Diag;
use crate::files;
use crate::marker::{self, Marker};
use crate::paths::Paths;
use crate::transcript;

mod words;

pub use words::{read as read_logged, Logged};

/// The text every recovery block starts with (see `recovery::render`).
pub const BLOCK_MARK: &[u8] = b"ctxguard recovery: compaction #";

/// At most this much of the transcript after the newest boundary is read: right after a
/// compaction it is the summary and a few records.
const TAIL: u64 = 4 * 1024 * 1024;

/// A compaction whose recovery still waits for its receipt (kept in the marker).
pub use crate::marker::ReceiptPending as Pending;

/// How a recovery arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// The client wrote it into the transcript after the boundary.
    Transcript,
    /// The client holds it in memory (the process it was handed to is the one running).
    Memory,
    /// It was missing, and a later hook gave it again.
    GivenAgain,
}

/// One compaction's receipt, as `status` and `log` show it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Receipt {
    pub compaction: u64,
    pub trigger: String,
    pub checkpoint: String,
    /// Characters of the facts block `PreCompact` handed the summarizer (0: none).
    pub facts_chars: usize,
    /// Characters of the client's summary, when `PostCompact` kept it.
    pub summary_chars: Option<usize>,
    /// `compactMetadata.preTokens` and `postTokens` of the boundary.
    pub pre_tokens: Option<u64>,
    pub post_tokens: Option<u64>,
    /// The client prepared the summary ahead of the boundary (`compactMetadata` says so).
    pub precomputed: bool,
    pub arrived: Option<Arrival>,
    /// The hook that gave it again (`PreToolUse`, `UserPromptSubmit`), for [`Arrival::GivenAgain`].
    pub by: Option<String>,
    pub at: Option<DateTime<Utc>>,
    /// Codex's compaction (its summary cannot be steered: no facts are handed to it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub codex: bool,
}

impl Receipt {
    /// How it arrived, in words.
    pub fn arrival_text(&self) -> String {
        match (self.arrived, self.by.as_deref()) {
            (Some(Arrival::Transcript), _) => "arrived (in the transcript)".into(),
            (Some(Arrival::Memory), _) => "arrived (held in the client's memory)".into(),
            (Some(Arrival::GivenAgain), Some(by)) => format!("missing, given again by {by}"),
            (Some(Arrival::GivenAgain), None) => "missing, given again".into(),
            (None, _) => "not arrived yet".into(),
        }
    }
}

/// Where a checkpoint's receipt is kept.
pub fn path(checkpoint: &Path) -> PathBuf {
    crate::checkpoint::receipt_path(checkpoint)
}

/// The receipts of a session's checkpoints still kept, oldest first.
pub fn list(paths: &Paths, session_id: &str) -> Vec<Receipt> {
    let dir = paths
        .root()
        .join("checkpoints")
        .join(crate::paths::safe_session_id(session_id));
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut names: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".receipt.json"))
        .collect();
    names.sort();
    names
        .iter()
        .filter_map(|p| {
            files::read_state_file_in(paths.root(), p, "receipt")
                .ok()
                .flatten()
        })
        .filter_map(|bytes| serde_json::from_slice(&bytes).ok())
        .collect()
}

/// What the transcript shows after its newest boundary.
#[derive(Debug, Default, PartialEq)]
pub struct AfterBoundary {
    /// The boundary line's time and `compactMetadata`.
    pub at: Option<DateTime<Utc>>,
    pub metadata: Option<Value>,
    /// The compactions whose recovery block the client recorded after it, as its own record
    /// of a hook's context ([`recorded_block`]).
    pub blocks: Vec<u64>,
}

/// What the transcript shows since the recovery `m` waits for was handed over: after its
/// newest `compact_boundary` ([`after_boundary`]), or, for the block a `/clear` brought into a
/// session that never compacted (number 0, `recovering::full_after_clear`), from its start.
pub fn since_handover(m: &Marker, transcript: &str) -> Option<AfterBoundary> {
    let cleared = m.compactions == 0
        && m.receipt_pending
            .as_ref()
            .is_some_and(|p| p.compaction == 0);
    if !cleared {
        return after_boundary(transcript);
    }
    if transcript.is_empty() {
        return None;
    }
    let (file, _) = files::open_regular(Path::new(transcript), "transcript").ok()?;
    let mut head = Vec::new();
    file.take(TAIL).read_to_end(&mut head).ok()?;
    Some(AfterBoundary {
        blocks: head
            .split(|b| *b == b'\n')
            .filter_map(recorded_block)
            .collect(),
        ..AfterBoundary::default()
    })
}

/// Reads the part of the transcript after its newest `compact_boundary` (bounded); `None` when
/// it has none, or it cannot be read.
pub fn after_boundary(transcript: &str) -> Option<AfterBoundary> {
    if transcript.is_empty() {
        return None;
    }
    let (mut file, len) = files::open_regular(Path::new(transcript), "transcript").ok()?;
    // A Codex rollout's compaction is its `compacted` line; its SessionStart context is written
    // after it, as a developer message.
    scan_with(
        &mut file,
        len,
        crate::rollout::classifier(Path::new(transcript)),
    )
}

/// [`after_boundary`] on a reader of `len` bytes.
#[cfg(test)]
pub fn scan<R: Read + Seek>(reader: &mut R, len: u64) -> Option<AfterBoundary> {
    scan_with(reader, len, transcript::classify)
}

/// [`scan`] with a reader of lines of its own (another client's).
fn scan_with<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    classify: fn(&[u8]) -> transcript::Verdict,
) -> Option<AfterBoundary> {
    // Bounded: right after a compaction the boundary is near the end; one farther away has not
    // landed yet as far as this check goes (a later hook looks again, for at most [`WAIT`]).
    let boundary =
        transcript::newest_boundary_start_within_with(reader, len, TAIL, classify).ok()??;
    reader.seek(SeekFrom::Start(boundary)).ok()?;
    let mut line = Vec::new();
    reader
        .take(transcript::MAX_LINE as u64)
        .read_to_end(&mut line)
        .ok()?;
    let end = line.iter().position(|b| *b == b'\n').unwrap_or(line.len());
    line.truncate(end);
    let start = boundary + end as u64 + 1;
    let boundary: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
    let mut found = AfterBoundary {
        at: boundary
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(|t| t.parse().ok()),
        metadata: boundary.get("compactMetadata").cloned(),
        blocks: Vec::new(),
    };
    let mut rest = Vec::new();
    reader.seek(SeekFrom::Start(start)).ok()?;
    reader.take(TAIL).read_to_end(&mut rest).ok()?;
    found.blocks = rest
        .split(|b| *b == b'\n')
        .filter_map(recorded_block)
        .collect();
    Some(found)
}

/// The compaction number of the recovery block this transcript line records as the client's
/// own record of a hook's context, if it is one: Claude Code's `attachment` of type
/// `hook_additional_context` from `SessionStart` (or from the hook that gave it again), Codex's
/// `developer` message. The block must open the context: a CLAUDE.md or AGENTS.md snapshot, a
/// kept tool result or a prompt that merely quotes its first words is never a delivery.
pub fn recorded_block(line: &[u8]) -> Option<u64> {
    let clear = crate::recovery::CLEAR_HEADER.as_bytes();
    memchr::memmem::find(line, BLOCK_MARK).or_else(|| memchr::memmem::find(line, clear))?;
    let v: Value = serde_json::from_slice(line).ok()?;
    let texts: Vec<&str> = if v.get("type").and_then(Value::as_str) == Some("attachment") {
        let a = v.get("attachment")?;
        if a.get("type").and_then(Value::as_str) != Some("hook_additional_context") {
            return None;
        }
        match a.get("content")? {
            Value::String(s) => vec![s.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => return None,
        }
    } else if v.get("type").and_then(Value::as_str) == Some("response_item") {
        let p = v.get("payload")?;
        if p.get("type").and_then(Value::as_str) != Some("message")
            || p.get("role").and_then(Value::as_str) != Some("developer")
        {
            return None;
        }
        p.get("content")?
            .as_array()?
            .iter()
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect()
    } else {
        return None;
    };
    texts.iter().find_map(|t| block_number(t))
}

/// The compaction number a recovery block opens with (`## ctxguard recovery: compaction #N`).
fn block_number(text: &str) -> Option<u64> {
    // The block a `/clear` brought into a new session, which has not compacted.
    if text.trim_start().starts_with(crate::recovery::CLEAR_HEADER) {
        return Some(0);
    }
    let rest = text.trim_start().strip_prefix("## ")?;
    let rest = rest.strip_prefix(std::str::from_utf8(BLOCK_MARK).ok()?)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Did the client prepare this compaction's summary ahead of its boundary? 2.1.332 marks such a
/// boundary `compactMetadata.precomputed: true`: its rehydration check reads the newest
/// boundary's metadata (`findLast(... subtype==="compact_boundary")?.compactMetadata`) and reports
/// `latestCompactionPrecomputed:Q.precomputed===!0`.
pub fn precomputed(metadata: Option<&Value>) -> bool {
    metadata
        .and_then(|m| m.get("precomputed"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// Is the part after the newest boundary, `seen`, this compaction's (the one `m` waits for)?
/// A boundary older than the checkpoint is the previous compaction's (a summary prepared ahead
/// has its boundary later, never earlier).
pub fn is_of(seen: &AfterBoundary, m: &Marker) -> bool {
    match (seen.at, m.compacted_at) {
        (Some(b), Some(c)) => b + chrono::Duration::seconds(5) >= c,
        _ => true,
    }
}

/// The receipt settled on `m` (pure), from what the client recorded after the newest boundary:
/// the marker with nothing pending any more, and the compaction's checkpoint with how its
/// recovery arrived. Nothing when no compaction waits for its receipt.
pub fn settle(
    m: &Marker,
    seen: &AfterBoundary,
    client_pid: Option<u32>,
    now: DateTime<Utc>,
    stale: std::time::Duration,
) -> (Marker, Option<(String, Arrival)>) {
    if !waiting(m) {
        return (m.clone(), None);
    }
    let checkpoint = m
        .receipt_pending
        .as_ref()
        .map(|p| p.checkpoint.clone())
        .or_else(|| m.last_checkpoint.clone());
    let next = marker::transition(m, &marker::Event::ReceiptSettled, now, stale);
    (next, checkpoint.map(|c| (c, arrival(m, seen, client_pid))))
}

/// The receipt of the compaction whose checkpoint is at `checkpoint`, once settled: written
/// beside the checkpoint and logged (a problem is a note). The checkpoint to give again when its
/// recovery never arrived (`by`: the hook that gives it).
#[allow(clippy::too_many_arguments)]
pub fn record(
    paths: &Paths,
    session_id: &str,
    checkpoint: &str,
    seen: &AfterBoundary,
    arrival: Arrival,
    by: &str,
    now: DateTime<Utc>,
    diag: &mut Diag,
) -> Option<(Checkpoint, PathBuf)> {
    let cp_path = PathBuf::from(checkpoint);
    let cp = checkpoint::load(paths.root(), &cp_path).ok().flatten();
    let receipt = build(
        cp.as_ref(),
        checkpoint,
        seen,
        arrival,
        (arrival == Arrival::GivenAgain).then_some(by),
        checkpoint::summary::load(paths.root(), &cp_path).map(|s| s.chars().count()),
        now,
    );
    if let Err(e) = save(paths.root(), &cp_path, &receipt) {
        diag.note(format!("{e:#}"));
    }
    if let Err(e) = log(paths, session_id, &receipt, now) {
        diag.note(format!("{e:#}"));
    }
    cp.filter(|_| arrival == Arrival::GivenAgain)
        .map(|cp| (cp, cp_path))
}

/// A compaction waits for its receipt at most this long: past it, its boundary never landed
/// where the check can see it, and the hooks stop looking.
const WAIT: std::time::Duration = std::time::Duration::from_secs(3600);

/// Does a compaction wait for its receipt (handed and unchecked, or never taken), as of `now`?
pub fn waiting_at(m: &Marker, now: DateTime<Utc>) -> bool {
    let recent = |t: DateTime<Utc>| marker::within(t, now, WAIT);
    m.receipt_pending
        .as_ref()
        .is_some_and(|p| recent(p.handed_at))
        || (m.recovery_pending && m.compacted_at.is_some_and(recent))
}

/// [`waiting_at`] with no clock: any flag at all (the settling transaction re-checks it).
pub fn waiting(m: &Marker) -> bool {
    m.receipt_pending.is_some() || (m.recovery_pending && m.compacted_at.is_some())
}

/// How the recovery stands, from what the client recorded (pure).
pub fn arrival(m: &Marker, seen: &AfterBoundary, client_pid: Option<u32>) -> Arrival {
    let number = m
        .receipt_pending
        .as_ref()
        .map_or(m.compactions, |p| p.compaction);
    if seen.blocks.contains(&number) {
        return Arrival::Transcript;
    }
    match &m.receipt_pending {
        // Handed to this very process, or to a client that names none (it cannot be told apart,
        // and such a client's `SessionStart(resume)` gives it again in a new process).
        Some(p)
            if !m.recovery_pending && (p.client_pid.is_none() || p.client_pid == client_pid) =>
        {
            Arrival::Memory
        }
        _ => Arrival::GivenAgain,
    }
}

/// The receipt of a compaction (pure).
pub fn build(
    cp: Option<&Checkpoint>,
    checkpoint: &str,
    seen: &AfterBoundary,
    arrival: Arrival,
    by: Option<&str>,
    summary_chars: Option<usize>,
    now: DateTime<Utc>,
) -> Receipt {
    let meta = seen.metadata.as_ref();
    let number = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_u64);
    Receipt {
        compaction: cp.map_or(0, |c| c.meta.compaction),
        trigger: cp.map(|c| c.meta.trigger.clone()).unwrap_or_default(),
        checkpoint: checkpoint.to_string(),
        facts_chars: cp.map_or(0, |c| c.meta.facts_chars),
        summary_chars,
        pre_tokens: number("preTokens"),
        post_tokens: number("postTokens"),
        precomputed: precomputed(meta),
        arrived: Some(arrival),
        by: by.map(str::to_string),
        at: Some(now),
        codex: cp.is_some_and(|c| crate::rollout::is_rollout(Path::new(&c.meta.transcript_path))),
    }
}

/// Keeps `receipt` beside the checkpoint at `checkpoint`.
pub fn save(root: &Path, checkpoint: &Path, receipt: &Receipt) -> Result<()> {
    let target = path(checkpoint);
    let bytes = serde_json::to_vec_pretty(receipt)?;
    if let Some(dir) = target.parent() {
        files::ensure_state_dir(root, dir)?;
    }
    files::write_atomic(&target, &bytes, false)
        .with_context(|| format!("writing receipt {}", target.display()))
}

/// The log line of a receipt, in the words `status` uses ([`Receipt::describe`]).
pub fn line(session_id: &str, receipt: &Receipt, at: DateTime<Local>) -> String {
    format!(
        "- {} · session {} · recovery of {}\n\n",
        at.format("%H:%M"),
        crate::text::sanitize(session_id, true)
            .chars()
            .take(8)
            .collect::<String>(),
        receipt.describe(),
    )
}

fn log(paths: &Paths, session_id: &str, receipt: &Receipt, now: DateTime<Utc>) -> Result<()> {
    let local = now.with_timezone(&Local);
    daily_log::append(paths, local.date_naive(), &line(session_id, receipt, local))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(lines: &[&str]) -> Option<AfterBoundary> {
        let bytes = (lines.join("\n") + "\n").into_bytes();
        let len = bytes.len() as u64;
        scan(&mut std::io::Cursor::new(bytes), len)
    }

    const BOUNDARY: &str = r#"{"type":"system","subtype":"compact_boundary","timestamp":"2026-11-25T10:00:00Z","compactMetadata":{"trigger":"manual","preTokens":120530,"postTokens":2645}}"#;
    const SUMMARY: &str = r#"{"type":"user","isCompactSummary":true,"message":{"content":"..."}}"#;
    const KEPT: &str = r###"{"type":"attachment","attachment":{"type":"hook_additional_context","content":["## ctxguard recovery: compaction #1 of this session"]}}"###;
    const REPLY: &str = r#"{"type":"assistant","message":{"content":[],"usage":{"input_tokens":20000,"output_tokens":5}}}"#;

    #[test]
    fn the_part_after_the_newest_boundary_says_whether_the_block_is_there() {
        let s = seen(&[REPLY, BOUNDARY, SUMMARY, KEPT]).unwrap();
        assert_eq!(s.blocks, [1]);
        assert_eq!(s.metadata.as_ref().unwrap()["preTokens"], 120530);
        assert_eq!(s.at.unwrap().to_rfc3339(), "2026-11-25T10:00:00+00:00");
        assert!(seen(&[REPLY, BOUNDARY, SUMMARY, REPLY])
            .unwrap()
            .blocks
            .is_empty());
        // An older boundary's block does not count.
        assert!(seen(&[BOUNDARY, KEPT, REPLY, BOUNDARY, SUMMARY])
            .unwrap()
            .blocks
            .is_empty());
        assert_eq!(seen(&[REPLY, SUMMARY]), None);
    }

    #[test]
    fn arrival_from_the_transcript_the_process_or_neither() {
        let s = |holds_block: bool| AfterBoundary {
            blocks: if holds_block { vec![1] } else { Vec::new() },
            ..AfterBoundary::default()
        };
        let handed = |pid| Marker {
            receipt_pending: Some(Pending {
                compaction: 1,
                checkpoint: "cp".into(),
                handed_at: Utc::now(),
                client_pid: pid,
            }),
            ..Marker::default()
        };
        assert_eq!(
            arrival(&handed(Some(7)), &s(true), Some(8)),
            Arrival::Transcript
        );
        assert_eq!(
            arrival(&handed(Some(7)), &s(false), Some(7)),
            Arrival::Memory
        );
        assert_eq!(arrival(&handed(None), &s(false), None), Arrival::Memory);
        // Handed to a process that is gone.
        assert_eq!(
            arrival(&handed(Some(7)), &s(false), Some(8)),
            Arrival::GivenAgain
        );
        // Never handed: SessionStart did not run (or was refused).
        let never = Marker {
            recovery_pending: true,
            compacted_at: Some(Utc::now()),
            ..Marker::default()
        };
        assert!(waiting(&never));
        assert_eq!(arrival(&never, &s(false), Some(7)), Arrival::GivenAgain);
        assert!(!waiting(&Marker::default()));
    }

    #[test]
    fn only_the_clients_record_of_a_hooks_context_counts_as_a_delivery() {
        // The client's own records: Claude Code's attachment, Codex's developer message.
        assert_eq!(recorded_block(KEPT.as_bytes()), Some(1));
        let codex = r###"{"type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"## ctxguard recovery: compaction #3 of this session\n..."}]}}"###;
        assert_eq!(recorded_block(codex.as_bytes()), Some(3));
        // Repository text that quotes the block's first words: a CLAUDE.md snapshot in a user
        // message, AGENTS.md as Codex writes it, a kept tool result, a prompt.
        for line in [
            r#"{"type":"user","message":{"content":"Contents of CLAUDE.md: ## ctxguard recovery: compaction #1 of this session"}}"#,
            r###"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"## ctxguard recovery: compaction #1 of this session"}]}}"###,
            r###"{"type":"attachment","attachment":{"type":"nested_memory","content":"## ctxguard recovery: compaction #1 of this session"}}"###,
            r#"{"type":"attachment","attachment":{"type":"hook_additional_context","content":["see CLAUDE.md: ## ctxguard recovery: compaction #1"]}}"#,
            r###"{"type":"user","message":{"content":[{"type":"tool_result","content":"## ctxguard recovery: compaction #1 of this session"}]}}"###,
        ] {
            assert_eq!(recorded_block(line.as_bytes()), None, "{line}");
        }
        // Another compaction's number is not this one's.
        let two = KEPT.replace("#1 ", "#2 ");
        let s = seen(&[REPLY, BOUNDARY, SUMMARY, &two]).unwrap();
        let waiting_for_one = Marker {
            recovery_pending: true,
            compactions: 1,
            compacted_at: Some(Utc::now()),
            ..Marker::default()
        };
        assert_eq!(arrival(&waiting_for_one, &s, None), Arrival::GivenAgain);
    }

    #[test]
    fn a_precomputed_summary_is_told_apart_by_its_metadata() {
        assert!(!precomputed(None));
        assert!(!precomputed(Some(
            &serde_json::json!({"trigger": "auto", "preTokens": 1})
        )));
        assert!(precomputed(Some(
            &serde_json::json!({"trigger": "auto", "preTokens": 1, "precomputed": true})
        )));
    }
}
