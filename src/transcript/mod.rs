//! Reading Claude Code's JSONL transcripts. The usage scan reads the file backwards in growing
//! chunks and stops at the first line that answers, so its cost depends on how far back the
//! newest reply is, not on how long the session has been: a hook can afford it on every call.

use std::borrow::Cow;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::input::UsageBlock;

/// First chunk read from the end of the file.
pub const FIRST_CHUNK: usize = 64 * 1024;
/// Chunks double up to this size (larger buys nothing: the syscalls are already few, and memory
/// is paid for every hook run).
const MAX_CHUNK: usize = 1024 * 1024;
/// Give up (usage unknown) after reading this much without an answer, so a pathological file
/// cannot make a hook slow.
pub const MAX_SCAN: u64 = 64 * 1024 * 1024;
/// Lines longer than this are skipped by both scans, so one huge line cannot make memory grow
/// with it.
pub const MAX_LINE: usize = 8 * 1024 * 1024;

/// What the newest part of a transcript says about context usage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TailUsage {
    /// Context tokens of the newest main-chain reply after the newest compaction, if any.
    pub tokens: Option<u64>,
    /// The model that reply came from: the window follows it.
    pub model: Option<String>,
    /// When that reply was written: a reading older than the last compaction is stale.
    pub reply_at: Option<DateTime<Utc>>,
    /// The client version that wrote it.
    pub version: Option<String>,
    /// The window the client reported with it (Codex's rollout does; a Claude Code transcript
    /// does not).
    pub window: Option<u64>,
    /// Set when a `compact_boundary` is newer than every usable reply: the session has just
    /// compacted and the new usage is not known yet.
    pub boundary_at: Option<DateTime<Utc>>,
    /// The scan hit [`MAX_SCAN`] without an answer.
    pub gave_up: bool,
}

/// One transcript line, reduced to the fields ctxguard reads. Message content is kept as borrowed
/// raw JSON (looked into only by the checkpoint builder) and everything else is skipped by the
/// parser without being allocated.
#[derive(Deserialize)]
pub struct Entry<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub subtype: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    pub is_sidechain: Option<bool>,
    #[serde(rename = "isMeta", default)]
    pub is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    pub is_compact_summary: Option<bool>,
    #[serde(rename = "isVisibleInTranscriptOnly", default)]
    pub transcript_only: Option<bool>,
    #[serde(rename = "isApiErrorMessage", default)]
    pub is_api_error: Option<bool>,
    #[serde(borrow, default)]
    pub timestamp: Option<Cow<'a, str>>,
    /// The client version that wrote the line.
    #[serde(borrow, default)]
    pub version: Option<Cow<'a, str>>,
    #[serde(rename = "gitBranch", borrow, default)]
    pub git_branch: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub cwd: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub message: Option<EntryMessage<'a>>,
    /// A `compact_boundary`'s metadata (`trigger`, `preTokens`), read leniently: a boundary
    /// with odd metadata is still a boundary.
    #[serde(rename = "compactMetadata", default)]
    pub compact: Option<serde_json::Value>,
}

#[derive(Deserialize)]
pub struct EntryMessage<'a> {
    #[serde(borrow, default)]
    pub model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "crate::input::object_or_null")]
    pub usage: Option<UsageBlock>,
}

impl Entry<'_> {
    fn is_boundary(&self) -> bool {
        self.kind.as_deref() == Some("system")
            && self.subtype.as_deref() == Some("compact_boundary")
    }

    /// An assistant reply of the main chain from the model (not a subagent's, not a synthetic
    /// or API-error message).
    pub fn is_main_reply(&self) -> bool {
        self.kind.as_deref() == Some("assistant")
            && self.is_sidechain != Some(true)
            && self.is_api_error != Some(true)
            && self
                .message
                .as_ref()
                .is_some_and(|m| m.model.as_deref() != Some("<synthetic>"))
    }
}

/// What one line means to the usage scan.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    Usage {
        tokens: u64,
        model: Option<String>,
        at: Option<DateTime<Utc>>,
        /// The client version that wrote it.
        version: Option<String>,
        /// The window the client reported with it, when it does (Codex).
        window: Option<u64>,
    },
    Boundary {
        at: Option<DateTime<Utc>>,
        /// For an automatic compaction: the tokens in context when the client compacted.
        auto_pre_tokens: Option<u64>,
    },
    Irrelevant,
}

pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// What a transcript line says about usage: a main-chain reply's tokens, a compaction, or
/// nothing.
pub fn classify(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    // Transcripts are UTF-8; a line that is not cannot be one we want.
    let Ok(line) = std::str::from_utf8(line) else {
        return Verdict::Irrelevant;
    };
    // Cheap pre-filter: only assistant replies and boundaries matter, and most lines (tool
    // results, attachments, request blobs) are neither. Parsing is the expensive part.
    if !line.contains("\"usage\"") && !line.contains("compact_boundary") {
        return Verdict::Irrelevant;
    }
    let Ok(entry) = serde_json::from_str::<Entry>(line) else {
        // A torn last line, a line from some other tool, a type we do not know: not an answer.
        return Verdict::Irrelevant;
    };
    let at = entry.timestamp.as_deref().and_then(parse_time);
    if entry.is_boundary() {
        let auto_pre_tokens = entry
            .compact
            .as_ref()
            .filter(|c| c.get("trigger").and_then(|t| t.as_str()) == Some("auto"))
            .and_then(|c| c.get("preTokens")?.as_u64())
            .filter(|t| *t > 0);
        return Verdict::Boundary {
            at,
            auto_pre_tokens,
        };
    }
    if !entry.is_main_reply() {
        return Verdict::Irrelevant;
    }
    let Some(message) = entry.message else {
        return Verdict::Irrelevant;
    };
    match message.usage.map(|u| u.counts().context_tokens()) {
        Some(tokens) if tokens > 0 => Verdict::Usage {
            tokens,
            model: message.model.map(Cow::into_owned),
            at,
            version: entry.version.map(|v| v.chars().take(32).collect()),
            window: None,
        },
        _ => Verdict::Irrelevant,
    }
}

/// Scans the transcript at `path` for the current context usage.
pub fn tail_usage(path: &Path) -> Result<TailUsage> {
    let (mut file, len) = crate::files::open_regular(path, "transcript")?;
    tail_usage_from(&mut file, len, FIRST_CHUNK)
        .with_context(|| format!("reading transcript {}", path.display()))
}

/// The scan itself, over any seekable reader of `len` bytes; `first_chunk` is a parameter so
/// tests can force lines to straddle chunk boundaries.
pub fn tail_usage_from<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    first_chunk: usize,
) -> io::Result<TailUsage> {
    tail_usage_with(reader, len, first_chunk, classify)
}

/// The tail scan with a reader of lines of its own: Claude Code's [`classify`], or another
/// client's (Codex's rollout) giving the same verdicts.
pub fn tail_usage_with<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    first_chunk: usize,
    classify: fn(&[u8]) -> Verdict,
) -> io::Result<TailUsage> {
    let mut result = TailUsage::default();
    let scan = scan_backwards(
        reader,
        len,
        first_chunk,
        MAX_SCAN,
        MAX_LINE,
        |line, _| match classify(line) {
            Verdict::Usage {
                tokens,
                model,
                at,
                version,
                window,
            } => {
                result.version = version;
                result.window = window;
                result.tokens = Some(tokens);
                result.model = model;
                result.reply_at = at;
                true
            }
            Verdict::Boundary { at, .. } => {
                result.boundary_at = at.or(Some(DateTime::<Utc>::MIN_UTC));
                true
            }
            Verdict::Irrelevant => false,
        },
    )?;
    result.gave_up = scan.gave_up;
    Ok(result)
}

/// How a backward scan ended.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scan {
    pub bytes_read: u64,
    pub gave_up: bool,
}

/// Visits the complete lines of a file newest first, reading backwards in chunks that double
/// from `first_chunk` up to 1 MiB, until `visit(line, offset)` returns true or `max_read` bytes
/// were read. A line is handed over whole however many chunks it spans, unless it is longer
/// than `max_line`: then it is skipped without being kept in memory.
pub fn scan_backwards<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    first_chunk: usize,
    max_read: u64,
    max_line: usize,
    mut visit: impl FnMut(&[u8], u64) -> bool,
) -> io::Result<Scan> {
    let mut scan = Scan::default();
    let mut pos = len;
    let mut chunk = first_chunk.max(1);
    // Bytes of a line whose start lies in a chunk not read yet.
    let mut carry: Vec<u8> = Vec::new();
    // Inside a line longer than `max_line`: its bytes are dropped as they are read.
    let mut skipping = false;
    while pos > 0 {
        if scan.bytes_read >= max_read {
            scan.gave_up = true;
            return Ok(scan);
        }
        let take = (chunk as u64).min(pos);
        pos -= take;
        reader.seek(SeekFrom::Start(pos))?;
        // One allocation per chunk, sized for the carried partial line too, and filled by the
        // read itself (no zeroing first).
        let mut buf = Vec::with_capacity(take as usize + carry.len());
        reader.by_ref().take(take).read_to_end(&mut buf)?;
        if buf.len() as u64 != take {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file shrank while it was read",
            ));
        }
        scan.bytes_read += take;
        buf.extend_from_slice(&carry);
        drop(std::mem::take(&mut carry));
        chunk = (chunk * 2).min(MAX_CHUNK);

        // Complete lines are those after the first newline (or all of them at the start of
        // the file); walk them newest first.
        // The carried bytes hold no newline, so only the fresh chunk is searched.
        let first_complete = if pos == 0 {
            0
        } else {
            match memchr::memchr(b'\n', &buf[..take as usize]) {
                Some(i) => i + 1,
                None if skipping => continue,
                None => {
                    carry = buf;
                    if carry.len() > max_line {
                        skipping = true;
                        carry = Vec::new();
                    }
                    continue;
                }
            }
        };
        let mut end = buf.len();
        if skipping {
            // What follows the chunk's last newline is the start of the skipped line.
            skipping = false;
            end = memchr::memrchr(b'\n', &buf).unwrap_or(0);
        }
        while end > first_complete {
            let start = memchr::memrchr(b'\n', &buf[first_complete..end])
                .map_or(first_complete, |i| first_complete + i + 1);
            let line = &buf[start..end];
            if !line.is_empty() && line.len() <= max_line && visit(line, pos + start as u64) {
                return Ok(scan);
            }
            end = start.saturating_sub(1);
        }
        buf.truncate(first_complete.saturating_sub(1));
        carry = buf;
    }
    Ok(scan)
}

/// The time of the newest `compact_boundary` in the file at `path`, reading backwards at most
/// [`MAX_SCAN`] bytes. `Ok(None)` when there is none that recent (or it has no time).
pub fn newest_boundary_time(path: &Path) -> Result<Option<DateTime<Utc>>> {
    newest_boundary_time_with(path, classify)
}

/// The newest `compact_boundary` of a transcript: where its line starts, when it was written,
/// and whether the client compacted by itself (an automatic one records its `preTokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewestBoundary {
    pub start: u64,
    /// Where the part after it starts (past its line's end).
    pub after: u64,
    pub at: Option<DateTime<Utc>>,
    pub auto: bool,
}

/// A transcript's [`NewestBoundary`], searched for in its tail (at most [`MAX_SCAN`] back, as
/// [`newest_boundary_time`] searches) at most once however many readers of one hook call ask
/// (`SessionStart`: the catch-up, the hand-over, a summary prepared ahead), in a file opened
/// once for them.
pub struct Newest<'a> {
    path: &'a Path,
    file: std::cell::OnceCell<Option<(std::fs::File, u64)>>,
    found: std::cell::OnceCell<Option<NewestBoundary>>,
}

impl<'a> Newest<'a> {
    pub fn of(path: &'a Path) -> Newest<'a> {
        Newest {
            path,
            file: std::cell::OnceCell::new(),
            found: std::cell::OnceCell::new(),
        }
    }

    /// The transcript, opened once (`None`: it cannot be).
    fn file(&self) -> Option<&(std::fs::File, u64)> {
        self.file
            .get_or_init(|| crate::files::open_regular(self.path, "transcript").ok())
            .as_ref()
    }

    /// The newest boundary in the tail (`None`: none there, or the transcript cannot be read).
    pub fn get(&self) -> Option<NewestBoundary> {
        *self.found.get_or_init(|| {
            let (file, len) = self.file()?;
            let mut file = file;
            newest_boundary_in(&mut file, *len, MAX_SCAN).ok().flatten()
        })
    }

    /// The transcript's bytes from `back` before byte `end` up to it (`None`: unreadable).
    pub fn read_before(&self, end: u64, back: u64) -> Option<Vec<u8>> {
        let (file, _) = self.file()?;
        let mut file = file;
        let from = end.saturating_sub(back);
        file.seek(SeekFrom::Start(from)).ok()?;
        let mut region = Vec::new();
        file.take(end - from).read_to_end(&mut region).ok()?;
        Some(region)
    }
}

/// The [`NewestBoundary`] of a transcript of `len` bytes already open, reading back at most
/// `max_read` bytes.
pub fn newest_boundary_in<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    max_read: u64,
) -> io::Result<Option<NewestBoundary>> {
    newest_boundary_from(reader, len, FIRST_CHUNK, max_read)
}

/// [`newest_boundary_in`] with the first chunk size as a parameter, for tests.
fn newest_boundary_from<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    first_chunk: usize,
    max_read: u64,
) -> io::Result<Option<NewestBoundary>> {
    let mut found = None;
    scan_backwards(
        reader,
        len,
        first_chunk,
        max_read,
        MAX_LINE,
        |line, start| {
            found = boundary_line(line, start, start + line.len() as u64 + 1);
            found.is_some()
        },
    )?;
    Ok(found)
}

/// The boundary `line` is, if it is one: its line starts at `start`, the part after it at
/// `after`.
pub fn boundary_line(line: &[u8], start: u64, after: u64) -> Option<NewestBoundary> {
    // A scan for the newest boundary passes every line of a transcript that has none: the bytes
    // are searched before anything is decoded or parsed.
    static NEEDLE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"compact_boundary"));
    NEEDLE.find(line)?;
    let Verdict::Boundary {
        at,
        auto_pre_tokens,
    } = classify(line)
    else {
        return None;
    };
    Some(NewestBoundary {
        start,
        after,
        at,
        auto: auto_pre_tokens.is_some(),
    })
}

/// [`newest_boundary_time`] with a reader of lines of its own (another client's).
pub fn newest_boundary_time_with(
    path: &Path,
    classify: fn(&[u8]) -> Verdict,
) -> Result<Option<DateTime<Utc>>> {
    let (mut file, len) = crate::files::open_regular(path, "transcript")?;
    let mut found = None;
    scan_backwards(
        &mut file,
        len,
        FIRST_CHUNK,
        MAX_SCAN,
        MAX_LINE,
        |line, _| match classify(line) {
            Verdict::Boundary { at, .. } => {
                found = at;
                true
            }
            _ => false,
        },
    )
    .with_context(|| format!("reading transcript {}", path.display()))?;
    Ok(found)
}

/// Does a line after the newest `compact_boundary` satisfy `pred`? Reads backwards at most
/// `max_read` bytes: `Some(true)` at the newest such line, `Some(false)` when the boundary comes
/// first, `None` when neither does within `max_read`.
pub fn any_since_newest_boundary<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    max_read: u64,
    mut pred: impl FnMut(&[u8]) -> bool,
) -> io::Result<Option<bool>> {
    let mut found = None;
    scan_backwards(reader, len, FIRST_CHUNK, max_read, MAX_LINE, |line, _| {
        if is_boundary(line) {
            found = Some(false);
        } else if pred(line) {
            found = Some(true);
        }
        found.is_some()
    })?;
    Ok(found)
}

/// Is this line a `compact_boundary`?
fn is_boundary(line: &[u8]) -> bool {
    // The bytes searched first, as in `boundary_line`.
    memchr::memmem::find(line, b"compact_boundary").is_some()
        && matches!(classify(line), Verdict::Boundary { .. })
}

/// Where the newest `compact_boundary` line starts (as `classify` tells one), reading backwards
/// at most `max_read` bytes (`None` when no boundary lies that close to the end).
pub fn newest_boundary_start_within_with<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    max_read: u64,
    classify: fn(&[u8]) -> Verdict,
) -> io::Result<Option<u64>> {
    let mut start = None;
    scan_backwards(
        reader,
        len,
        FIRST_CHUNK,
        max_read,
        MAX_LINE,
        |line, offset| {
            if matches!(classify(line), Verdict::Boundary { .. }) {
                start = Some(offset);
                true
            } else {
                false
            }
        },
    )?;
    Ok(start)
}

/// The offset where the part of the transcript after its newest `compact_boundary` starts (0
/// when it has none). Reads backwards, so its cost is the size of that part.
pub fn since_newest_boundary<R: Read + Seek>(reader: &mut R, len: u64) -> io::Result<u64> {
    since_newest_boundary_from(reader, len, FIRST_CHUNK)
}

/// [`since_newest_boundary`] with the first chunk size as a parameter, for tests.
fn since_newest_boundary_from<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    first_chunk: usize,
) -> io::Result<u64> {
    let newest = newest_boundary_from(reader, len, first_chunk, u64::MAX)?;
    Ok(newest.map_or(0, |b| b.after.min(len)))
}

/// Reads lines forward with a bounded buffer: a line longer than `max_line` is skipped (reported
/// as `Line::TooLong`), so one huge line cannot make memory grow with it. A line that lies whole
/// in the read buffer is handed out from it, without a copy.
pub struct LineReader<R> {
    reader: io::BufReader<R>,
    buf: Vec<u8>,
    max_line: usize,
    /// The bytes of the line handed out from the read buffer, consumed at the next call.
    lent: usize,
    /// The bytes read so far, lines and their newlines (the next line's offset).
    offset: u64,
}

#[derive(Debug, PartialEq)]
pub enum Line<'a> {
    Text(&'a [u8]),
    TooLong,
}

impl<R: Read> LineReader<R> {
    pub fn new(reader: R, max_line: usize) -> LineReader<R> {
        LineReader {
            reader: io::BufReader::with_capacity(64 * 1024, reader),
            buf: Vec::new(),
            max_line,
            lent: 0,
            offset: 0,
        }
    }

    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        Ok(self.next_line_and_end()?.map(|(line, _)| line))
    }

    /// [`LineReader::next_line`], with where the line after it starts.
    pub fn next_line_and_end(&mut self) -> io::Result<Option<(Line<'_>, u64)>> {
        let Some(read) = self.read_line()? else {
            return Ok(None);
        };
        let line = match read {
            Got::Lent(i) => &self.reader.buffer()[..i],
            Got::Copied => &self.buf[..],
            Got::TooLong => return Ok(Some((Line::TooLong, self.offset))),
        };
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        Ok(Some((Line::Text(line), self.offset)))
    }

    /// Reads the next line: lent from the read buffer when it lies whole in it, else copied.
    fn read_line(&mut self) -> io::Result<Option<Got>> {
        use std::io::BufRead;
        self.reader.consume(std::mem::take(&mut self.lent));
        // Most lines lie whole in the buffer.
        let available = self.reader.fill_buf()?;
        if let Some(i) = memchr::memchr(b'\n', available).filter(|&i| i <= self.max_line) {
            self.lent = i + 1;
            self.offset += i as u64 + 1;
            return Ok(Some(Got::Lent(i)));
        }
        self.buf.clear();
        let mut too_long = false;
        let mut saw_any = false;
        loop {
            let available = self.reader.fill_buf()?;
            if available.is_empty() {
                break;
            }
            saw_any = true;
            let (part, done) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..i], Some(i + 1)),
                None => (available, None),
            };
            if !too_long {
                if self.buf.len() + part.len() > self.max_line {
                    too_long = true;
                    self.buf = Vec::new(); // give the memory back
                } else {
                    self.buf.extend_from_slice(part);
                }
            }
            let used = done.unwrap_or(available.len());
            self.reader.consume(used);
            self.offset += used as u64;
            if done.is_some() {
                break;
            }
        }
        Ok(match (saw_any, too_long) {
            (false, _) => None,
            (true, true) => Some(Got::TooLong),
            (true, false) => Some(Got::Copied),
        })
    }
}

/// Where [`LineReader::read_line`] left the line it read.
enum Got {
    /// The first bytes of the read buffer, this many.
    Lent(usize),
    /// In the line buffer.
    Copied,
    TooLong,
}

#[cfg(test)]
mod tests;
