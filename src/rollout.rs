//! Reading Codex CLI's rollout files (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`), beside
//! the Claude Code transcript reader and in its terms: a line says what it says about usage as a
//! [`Verdict`] (an `event_msg` `token_count` is a reading, a `compacted` line a compaction), and
//! what it says about the work as an [`Item`] (a prompt, a reply, a tool call or its output),
//! which the checkpoint builder reads through the same client-neutral steps as a transcript's.
//!
//! Every line is `{timestamp, type, payload}`; only the fields read here are parsed, lines of
//! other types (`world_state`, `turn_context` aside, `token_usage_record`, ...) are skipped on a
//! cheap text test before any parsing, and anything unexpected is [`Item::Other`], never an
//! error: the format is Codex's, and it changes.

pub mod code_mode;

use std::borrow::Cow;
use std::io::{self, Read, Seek};
use std::path::Path;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::input::Client;
use crate::transcript::{self, TailUsage, Verdict, FIRST_CHUNK, MAX_LINE, MAX_SCAN};

/// Is the file at `path` a Codex rollout (by its name, which Codex gives every rollout)?
pub fn is_rollout(path: &Path) -> bool {
    Client::of_transcript(&path.to_string_lossy()) == Client::Codex
}

/// The session id in a rollout's file stem (`rollout-<time>-<id>`): its last 36 characters, a
/// UUID, when they look like one; else the whole stem.
pub fn session_id_of(stem: &str) -> &str {
    let n = stem.len();
    match stem.get(n.saturating_sub(36)..) {
        Some(id) if n > 36 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') => id,
        _ => stem,
    }
}

/// The line reader for the file at `path`: a rollout's, or a Claude Code transcript's.
pub fn classifier(path: &Path) -> fn(&[u8]) -> Verdict {
    if is_rollout(path) {
        classify
    } else {
        transcript::classify
    }
}

/// One rollout line, reduced to its kind and time; the payload stays raw until a reader needs it
/// (the replay reads its own parts of it).
#[derive(Deserialize)]
pub struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub payload: Option<&'a RawValue>,
    /// Codex's bookkeeping of a history item (0.169.0 writes it beside the payload).
    #[serde(default)]
    pub metadata: Option<ItemMetadata>,
}

/// A history item's bookkeeping, beside its payload (0.169.0) or inside it.
#[derive(Deserialize, Default)]
pub struct ItemMetadata {
    /// The compaction's own summary.
    #[serde(default)]
    pub compaction_output: Option<bool>,
}

/// `token_usage_record`'s payload (0.169.0): the usage of one model response, written as soon
/// as the response completes, before its tool calls run.
#[derive(Deserialize)]
struct UsageRecord {
    #[serde(default)]
    usage: Option<TokenUsage>,
}

/// `event_msg` `token_count`'s payload.
#[derive(Deserialize)]
struct TokenCount {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    info: Option<TokenInfo>,
}

#[derive(Deserialize)]
struct TokenInfo {
    #[serde(default)]
    last_token_usage: Option<TokenUsage>,
    #[serde(default)]
    model_context_window: Option<u64>,
}

#[derive(Deserialize)]
struct TokenUsage {
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

impl TokenUsage {
    /// The tokens in context after the request this usage is of: what Codex compares with its
    /// auto-compact limit (`total_tokens`, its input plus its output).
    fn in_context(&self) -> Option<u64> {
        self.total_tokens
            .or_else(|| Some(self.input_tokens? + self.output_tokens.unwrap_or(0)))
            .filter(|t| *t > 0)
    }
}

/// A line's `timestamp`.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// A rollout line parsed (a trailing CR and a BOM dropped), with its text; `None` when it is not
/// one.
pub fn parse_line(line: &[u8]) -> Option<(Line<'_>, &str)> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let text = std::str::from_utf8(line).ok()?;
    Some((serde_json::from_str::<Line>(text).ok()?, text))
}

/// What a rollout line says about usage: a `token_count` is a reading (the context after the
/// newest request, and the window Codex reported), and so is a `token_usage_record` (the same
/// request's usage, written before its tool calls run, so that `PreToolUse` reads the reply
/// that made the call, not the one before); a `compacted` line is a compaction.
pub fn classify(line: &[u8]) -> Verdict {
    // Most lines are none of these; parsing is the expensive part.
    let counts = memchr::memmem::find(line, b"\"token_count\"").is_some();
    let record = memchr::memmem::find(line, b"\"token_usage_record\"").is_some();
    if !counts && !record && memchr::memmem::find(line, b"\"compacted\"").is_none() {
        return Verdict::Irrelevant;
    }
    let Some((parsed, _)) = parse_line(line) else {
        return Verdict::Irrelevant;
    };
    let at = parsed.timestamp.as_deref().and_then(parse_time);
    match parsed.kind.as_deref() {
        Some("compacted") => Verdict::Boundary {
            at,
            auto_pre_tokens: None,
        },
        Some("token_usage_record") if record => {
            let tokens = parsed
                .payload
                .and_then(|p| serde_json::from_str::<UsageRecord>(p.get()).ok())
                .and_then(|r| r.usage)
                .and_then(|u| u.in_context());
            match tokens {
                Some(tokens) => Verdict::Usage {
                    tokens,
                    model: None,
                    at,
                    version: None,
                    window: None,
                },
                None => Verdict::Irrelevant,
            }
        }
        Some("event_msg") if counts => {
            let Some(count) = parsed
                .payload
                .and_then(|p| serde_json::from_str::<TokenCount>(p.get()).ok())
                .filter(|c| c.kind.as_deref() == Some("token_count"))
            else {
                return Verdict::Irrelevant;
            };
            let Some(info) = count.info else {
                return Verdict::Irrelevant;
            };
            match info
                .last_token_usage
                .as_ref()
                .and_then(TokenUsage::in_context)
            {
                Some(tokens) => Verdict::Usage {
                    tokens,
                    model: None,
                    at,
                    version: None,
                    window: info.model_context_window.filter(|w| *w > 0),
                },
                None => Verdict::Irrelevant,
            }
        }
        _ => Verdict::Irrelevant,
    }
}

/// Scans the rollout at `path` backwards for the current context usage.
pub fn tail_usage(path: &Path) -> Result<TailUsage> {
    let (mut file, len) = crate::files::open_regular(path, "rollout")?;
    transcript::tail_usage_with(&mut file, len, FIRST_CHUNK, classify)
        .with_context(|| format!("reading rollout {}", path.display()))
}

/// Where the newest `compacted` line starts and where the line after it starts, if the rollout
/// has one.
pub fn newest_compaction<R: Read + Seek>(
    reader: &mut R,
    len: u64,
) -> io::Result<Option<(u64, u64)>> {
    let mut found = None;
    transcript::scan_backwards(
        reader,
        len,
        FIRST_CHUNK,
        u64::MAX,
        MAX_LINE,
        |line, offset| {
            if matches!(classify(line), Verdict::Boundary { .. }) {
                found = Some((offset, (offset + line.len() as u64 + 1).min(len)));
                true
            } else {
                false
            }
        },
    )?;
    Ok(found)
}

/// The newest compaction's time, reading backwards at most [`MAX_SCAN`] bytes.
pub fn newest_compaction_time(path: &Path) -> Result<Option<DateTime<Utc>>> {
    let (mut file, len) = crate::files::open_regular(path, "rollout")?;
    let mut found = None;
    transcript::scan_backwards(
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
    .with_context(|| format!("reading rollout {}", path.display()))?;
    Ok(found)
}

/// No more of a rollout is read to count its compactions (a long session's is tens of MB).
const MAX_COUNT_SCAN: u64 = 512 * 1024 * 1024;

/// How much of a line's start is looked at for its `type`, which Codex writes before the
/// payload (a `compacted` line's payload, the replacement history, can be megabytes).
const TYPE_HEAD: usize = 512;

/// How many compactions Codex has written into the rollout at `path`: its whole `compacted`
/// lines. The one count that tells one compaction from the next: two compactions' hook
/// payloads can be identical (`SessionStart(compact)` has no turn id), and Codex also compacts
/// when the user switches to a model with a smaller window, far below its usual limit.
pub fn compaction_count(path: &Path) -> Result<u64> {
    use std::io::BufRead;
    let (file, _) = crate::files::open_regular(path, "rollout")?;
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, file.take(MAX_COUNT_SCAN));
    let mut head = Vec::with_capacity(TYPE_HEAD);
    let mut count = 0;
    loop {
        let buf = reader
            .fill_buf()
            .with_context(|| format!("reading rollout {}", path.display()))?;
        if buf.is_empty() {
            break;
        }
        let end = memchr::memchr(b'\n', buf);
        let part = &buf[..end.unwrap_or(buf.len())];
        let room = TYPE_HEAD.saturating_sub(head.len());
        head.extend_from_slice(&part[..part.len().min(room)]);
        let used = end.map_or(buf.len(), |i| i + 1);
        reader.consume(used);
        // Only a whole line counts: one being written is not a compaction yet.
        if end.is_some() {
            count += u64::from(is_compacted_head(&head));
            head.clear();
        }
    }
    Ok(count)
}

/// Does a line starting with `head` have the type `compacted` (its own, before its payload)?
fn is_compacted_head(head: &[u8]) -> bool {
    let before_payload = memchr::memmem::find(head, b"\"payload\"").map_or(head, |i| &head[..i]);
    [
        &b"\"type\":\"compacted\""[..],
        &b"\"type\": \"compacted\""[..],
    ]
    .iter()
    .any(|p| memchr::memmem::find(before_payload, p).is_some())
}

/// How much of a rollout's first line is read for its `session_meta`.
const META_BYTES: u64 = 256 * 1024;

/// Was the session of the rollout at `path` started by `codex exec` (a scripted run, nobody at
/// the keyboard)? Read from its first line, the `session_meta`; false when unreadable or not
/// written yet.
pub fn is_exec(path: &Path) -> bool {
    #[derive(Deserialize)]
    struct Source {
        #[serde(default)]
        source: Option<serde_json::Value>,
        #[serde(default)]
        originator: Option<String>,
    }
    let Ok((file, _)) = crate::files::open_regular(path, "rollout") else {
        return false;
    };
    let mut lines = transcript::LineReader::new(file.take(META_BYTES), META_BYTES as usize);
    let Ok(Some(transcript::Line::Text(first))) = lines.next_line() else {
        return false;
    };
    let Some((line, _)) = parse_line(first) else {
        return false;
    };
    if line.kind.as_deref() != Some("session_meta") {
        return false;
    }
    line.payload
        .and_then(|p| serde_json::from_str::<Source>(p.get()).ok())
        .is_some_and(|s| {
            s.source.as_ref().and_then(|v| v.as_str()) == Some("exec")
                || s.originator.as_deref() == Some("codex_exec")
        })
}

/// What a rollout line says about the work, in the terms the checkpoint builder reads.
#[derive(Debug, PartialEq)]
pub enum Item {
    /// `session_meta`: the session's id, directory, branch and the Codex version.
    Meta {
        id: Option<String>,
        cwd: Option<String>,
        branch: Option<String>,
        version: Option<String>,
    },
    /// `turn_context`: the directory the turn runs in.
    Cwd(String),
    /// A user message's text (Codex's own wrappers included: the reader of asks drops them).
    User(String),
    /// Codex's `user_message` event: what the user sent, as its TUI shows it (written right after
    /// the prompt's `response_item`; Codex's own context gets none).
    UserEvent(String),
    /// A reply's text (not the compaction's summary).
    Assistant(String),
    /// A tool call: its id, its name, and its arguments as Codex wrote them (a function call's
    /// JSON string, a custom tool's raw input).
    Call {
        id: String,
        name: String,
        arguments: String,
    },
    /// A tool call's output: its id, its text (a function's output string, or its `content`),
    /// and that text's parts as Codex wrote them (a code-mode cell's output has one part per
    /// `text()`; a string is one part).
    Output {
        id: String,
        text: String,
        parts: Vec<String>,
    },
    /// The tokens in context after a request.
    Tokens(u64),
    /// A compaction: the user messages Codex kept in the new context.
    Compacted { retained: Vec<String> },
    /// Anything else.
    Other,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    cli_version: Option<String>,
    #[serde(default)]
    git: Option<Git>,
}

#[derive(Deserialize)]
struct Git {
    #[serde(default)]
    branch: Option<String>,
}

#[derive(Deserialize)]
struct TurnContext {
    #[serde(default)]
    cwd: Option<String>,
}

/// A `response_item`'s payload.
#[derive(Deserialize)]
struct ResponseItem<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    /// A function call's arguments (a JSON string).
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
    /// A custom tool call's input (`apply_patch`'s patch).
    #[serde(borrow, default)]
    input: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    call_id: Option<Cow<'a, str>>,
    /// A function call's output: a string, or an object with `content`.
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
    /// `local_shell_call`'s action (older rollouts): `{command: [...]}`.
    #[serde(borrow, default)]
    action: Option<&'a RawValue>,
    #[serde(borrow, default)]
    metadata: Option<&'a RawValue>,
}

/// A content part: `input_text`, `output_text`, ...
#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

/// An `event_msg` `user_message`'s payload.
#[derive(Deserialize)]
struct UserMessage {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// A `compacted` line's payload. Codex 0.169 and later write the user messages it kept in
/// `retained_context`; every version writes the new context itself in `replacement_history`,
/// whose user messages are the same ones (with Codex's own texts among them), and that is all
/// an older rollout (0.136 to 0.145, the ones people publish) has.
#[derive(Deserialize)]
struct Compacted<'a> {
    #[serde(default)]
    retained_context: Option<Retained>,
    #[serde(borrow, default)]
    replacement_history: Vec<HistoryItem<'a>>,
}

/// An item of a compaction's `replacement_history`.
#[derive(Deserialize)]
struct HistoryItem<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

impl Compacted<'_> {
    /// The user messages Codex kept: `retained_context`'s when written, else the user messages
    /// of `replacement_history`.
    fn retained(self) -> Vec<String> {
        if let Some(r) = self.retained_context {
            return r.user_messages.into_iter().filter_map(|m| m.text).collect();
        }
        self.replacement_history
            .into_iter()
            .filter(|i| i.kind.as_deref() == Some("message") && i.role.as_deref() == Some("user"))
            .filter_map(|i| i.content.and_then(content_text))
            .collect()
    }
}

#[derive(Deserialize)]
struct Retained {
    #[serde(default)]
    user_messages: Vec<RetainedMessage>,
}

#[derive(Deserialize)]
struct RetainedMessage {
    #[serde(default)]
    text: Option<String>,
}

/// The text parts of a message's content, joined by newlines.
fn content_text(raw: &RawValue) -> Option<String> {
    let s = raw.get();
    if s.starts_with('"') {
        return serde_json::from_str::<String>(s).ok();
    }
    let parts = serde_json::from_str::<Vec<Part>>(s).ok()?;
    let texts: Vec<&str> = parts.iter().filter_map(|p| p.text.as_deref()).collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// A function call's output as text: a string, or an object's `content` (a string or parts).
fn output_text(raw: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct Object<'a> {
        #[serde(borrow, default)]
        content: Option<&'a RawValue>,
    }
    let s = raw.get();
    if s.starts_with('"') {
        return serde_json::from_str::<String>(s).ok();
    }
    let object = serde_json::from_str::<Object>(s).ok()?;
    content_text(object.content?)
}

/// A function call's output as its text parts: a string is one, an array its parts' texts, an
/// object its `content`'s.
fn output_parts(raw: &RawValue) -> Vec<String> {
    #[derive(Deserialize)]
    struct Object<'a> {
        #[serde(borrow, default)]
        content: Option<&'a RawValue>,
    }
    let s = raw.get();
    if s.starts_with('"') {
        return serde_json::from_str::<String>(s).into_iter().collect();
    }
    if s.starts_with('{') {
        return serde_json::from_str::<Object>(s)
            .ok()
            .and_then(|o| o.content)
            .map(output_parts)
            .unwrap_or_default();
    }
    serde_json::from_str::<Vec<Part>>(s)
        .map(|parts| {
            parts
                .into_iter()
                .filter_map(|p| p.text.map(Cow::into_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// What one rollout line says about the work.
pub fn item(line: &[u8]) -> Item {
    let Some((parsed, _)) = parse_line(line) else {
        return Item::Other;
    };
    let Some(payload) = parsed.payload else {
        return Item::Other;
    };
    match parsed.kind.as_deref() {
        Some("session_meta") => match serde_json::from_str::<Meta>(payload.get()) {
            Ok(meta) => Item::Meta {
                id: meta.id,
                cwd: meta.cwd,
                branch: meta.git.and_then(|g| g.branch),
                version: meta.cli_version,
            },
            Err(_) => Item::Other,
        },
        Some("turn_context") => serde_json::from_str::<TurnContext>(payload.get())
            .ok()
            .and_then(|t| t.cwd)
            .map_or(Item::Other, Item::Cwd),
        Some("response_item") => {
            let summary = parsed.metadata.and_then(|m| m.compaction_output) == Some(true);
            response_item(payload, summary)
        }
        Some("event_msg") if memchr::memmem::find(line, b"\"user_message\"").is_some() => {
            serde_json::from_str::<UserMessage>(payload.get())
                .ok()
                .filter(|m| m.kind.as_deref() == Some("user_message"))
                .and_then(|m| m.message)
                .map_or(Item::Other, Item::UserEvent)
        }
        Some("event_msg") => match classify(line) {
            Verdict::Usage { tokens, .. } => Item::Tokens(tokens),
            _ => Item::Other,
        },
        Some("compacted") => {
            let retained = serde_json::from_str::<Compacted>(payload.get())
                .map(Compacted::retained)
                .unwrap_or_default();
            Item::Compacted { retained }
        }
        _ => Item::Other,
    }
}

/// A `response_item`'s payload; `summary` when the line's metadata marks it as the compaction's
/// own summary.
fn response_item(payload: &RawValue, summary: bool) -> Item {
    let Ok(item) = serde_json::from_str::<ResponseItem>(payload.get()) else {
        return Item::Other;
    };
    let id = || item.call_id.as_deref().unwrap_or_default().to_string();
    match item.kind.as_deref() {
        Some("message") => {
            // The compaction's own summary is Codex's, not a reply to the user.
            let summary = summary
                || item
                    .metadata
                    .and_then(|m| serde_json::from_str::<ItemMetadata>(m.get()).ok())
                    .and_then(|m| m.compaction_output)
                    == Some(true);
            let Some(text) = item.content.and_then(content_text) else {
                return Item::Other;
            };
            match item.role.as_deref() {
                Some("user") => Item::User(text),
                Some("assistant") if !summary => Item::Assistant(text),
                _ => Item::Other,
            }
        }
        Some("function_call") => Item::Call {
            id: id(),
            name: item.name.as_deref().unwrap_or("tool").to_string(),
            arguments: item.arguments.as_deref().unwrap_or_default().to_string(),
        },
        Some("custom_tool_call") => Item::Call {
            id: id(),
            name: item.name.as_deref().unwrap_or("tool").to_string(),
            arguments: item.input.as_deref().unwrap_or_default().to_string(),
        },
        Some("local_shell_call") => Item::Call {
            id: id(),
            name: "local_shell".into(),
            arguments: item.action.map(|a| a.get().to_string()).unwrap_or_default(),
        },
        Some("function_call_output" | "custom_tool_call_output") => Item::Output {
            id: id(),
            text: item.output.and_then(output_text).unwrap_or_default(),
            parts: item.output.map(output_parts).unwrap_or_default(),
        },
        // A search the model ran through the API's own tool: no output follows.
        Some("web_search_call") => Item::Call {
            id: String::new(),
            name: "web_search".into(),
            arguments: String::new(),
        },
        _ => Item::Other,
    }
}

#[cfg(test)]
mod tests;
