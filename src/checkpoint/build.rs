//! Reading a transcript into a checkpoint: [`read_transcript`] scans the part after the newest
//! `compact_boundary` line by line, and a [`Builder`] keeps what the checkpoint needs from each:
//! the user's asks, the last assistant text, and (through [`ToolLog`]) what the tool calls and
//! results say. Everything kept is capped and a line costs time linear in its length, so a
//! transcript of any size or shape gives a small checkpoint in linear time (see [`bounded`]).
//!
//! An ask is a prompt the user typed, or a slash command given arguments (`/fix-issue 12`,
//! a skill), as `/name args`. The client's `last-prompt` records name the newest one too, which
//! matters after an auto-compaction: the prompt itself is then before the boundary.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::bounded;
use super::tools::ToolLog;
use super::{Checkpoint, ASK_CHARS, ASK_TAIL_CHARS, BRANCH_CHARS, CWD_CHARS, GIST_CHARS, MAX_ASKS};
use crate::files;
use crate::text::{cut, sanitize};
use crate::transcript::{self, Entry, EntryMessage, Line, LineReader};

/// A message content block. Read one at a time (see [`bounded::for_each`]): a line of a
/// million tiny blocks would otherwise cost a hundred times its size.
#[derive(Deserialize)]
pub(super) struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) tool_use_id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) is_error: Option<bool>,
    #[serde(borrow, default)]
    pub(super) content: Option<&'a RawValue>,
}

/// Wrappers Claude Code puts around things that are not typed by the user.
const WRAPPERS: &[&str] = &[
    "<command-",
    "<local-command-",
    "<bash-",
    "<user-prompt-submit-hook",
    "<task-notification",
    "<system-reminder",
    "[Request interrupted",
];

/// Removes `<tag>...</tag>` sections (system reminders appended to a prompt).
fn strip_tag(text: &str, tag: &str) -> String {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        out.push_str(&rest[..start]);
        if let Some(end) = rest[start..].find(&close) {
            rest = &rest[start + end + close.len()..];
        } else {
            rest = "";
            break;
        }
    }
    out.push_str(rest);
    out
}

/// Slash commands whose arguments set the client up rather than ask for work. `/compact`'s
/// are the compaction's own instructions, which the checkpoint keeps apart.
const NOT_ASKS: &[&str] = &[
    "compact",
    "clear",
    "model",
    "config",
    "add-dir",
    "resume",
    "rename",
    "export",
    "mcp",
    "plugin",
    "permissions",
    "login",
    "logout",
    "theme",
    "output-style",
    "effort",
    "color",
];

/// The text between `<name>` and `</name>` in `text` (the first such pair).
pub(super) fn tag_text<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let start = text.find(&open)? + open.len();
    let len = text[start..].find(&format!("</{name}>"))?;
    Some(&text[start..start + len])
}

/// An ask as the user gave it, cleaned, or `None` for wrappers, slash commands without
/// arguments and empty text.
pub fn clean_prompt(text: &str) -> Option<String> {
    let stripped = strip_tag(text, "system-reminder");
    let t = stripped.trim();
    if t.starts_with("<command-") {
        return command_ask(t);
    }
    if t.is_empty() || WRAPPERS.iter().any(|w| t.starts_with(w)) {
        return None;
    }
    ask_text(t)
}

/// A slash command given arguments, as `/name args`.
fn command_ask(text: &str) -> Option<String> {
    let name = tag_text(text, "command-name")?.trim();
    let args = tag_text(text, "command-args").unwrap_or_default().trim();
    let bare = name.trim_start_matches('/');
    if args.is_empty() || bare.is_empty() || NOT_ASKS.contains(&bare) {
        return None;
    }
    ask_text(&format!("/{bare} {args}"))
}

/// `text` on one line, sanitised, and if long its head and its tail: the instruction at the end
/// of a long paste survives.
fn ask_text(text: &str) -> Option<String> {
    let clean = sanitize(text, true);
    let n = clean.chars().count();
    if n == 0 {
        return None;
    }
    if n <= ASK_CHARS {
        return Some(clean);
    }
    let head: String = clean.chars().take(ASK_CHARS - 1 - ASK_TAIL_CHARS).collect();
    let tail: String = clean.chars().skip(n - ASK_TAIL_CHARS).collect();
    Some(format!("{}…{}", head.trim_end(), tail.trim_start()))
}

/// Whether two asks are the same prompt: the client's `last-prompt` cuts a long one after 200
/// characters, so only their starts are compared.
fn same_ask(a: &str, b: &str) -> bool {
    const START: usize = 100;
    a.chars().take(START).eq(b.chars().take(START))
}

/// The text of a tool result's `content`: a string, or an array of text blocks.
pub(super) fn result_text(raw: &RawValue) -> Option<String> {
    let s = raw.get();
    if s.starts_with('"') {
        return serde_json::from_str::<String>(s).ok();
    }
    let mut joined = None;
    let whole = bounded::for_each(s, |block: Block| {
        if let Some(text) = block.text.as_deref() {
            push_line(&mut joined, text);
        }
    });
    joined.filter(|_| whole)
}

/// Appends `text` to `all` as a new line.
fn push_line(all: &mut Option<String>, text: &str) {
    match all {
        Some(all) => {
            all.push('\n');
            all.push_str(text);
        }
        None => *all = Some(text.to_string()),
    }
}

/// How a background task's notification starts.
const NOTIFICATION: &str = "<task-notification>";

/// A `last-prompt` record.
#[derive(Deserialize)]
struct LastPrompt {
    #[serde(rename = "lastPrompt", default)]
    last_prompt: Option<String>,
}

/// An attachment line; a queued command's `prompt` may be a task notification.
#[derive(Deserialize)]
struct Queued<'a> {
    #[serde(borrow, default)]
    attachment: Option<QueuedAttachment<'a>>,
}

#[derive(Deserialize)]
struct QueuedAttachment<'a> {
    #[serde(borrow, default)]
    prompt: Option<&'a RawValue>,
}

/// Accumulates a checkpoint from transcript lines, oldest first.
#[derive(Debug, Default)]
struct Builder {
    asks: VecDeque<String>,
    tools: ToolLog,
    last_assistant: Option<String>,
    tokens: Option<u64>,
    cwd: Option<String>,
    git_branch: Option<String>,
}

impl Builder {
    fn feed(&mut self, line: &[u8]) {
        let Ok(line) = std::str::from_utf8(line) else {
            return;
        };
        let line = line.strip_prefix('\u{feff}').unwrap_or(line);
        let Ok(entry) = serde_json::from_str::<Entry>(line) else {
            return;
        };
        if entry.is_sidechain == Some(true) {
            return;
        }
        if let Some(cwd) = entry.cwd.as_deref().filter(|c| !c.is_empty()) {
            self.cwd = Some(cut(cwd, CWD_CHARS));
        }
        if let Some(branch) = entry.git_branch.as_deref().filter(|b| !b.is_empty()) {
            self.git_branch = Some(cut(branch, BRANCH_CHARS));
        }
        match entry.kind.as_deref() {
            Some("last-prompt") => return self.last_prompt(line),
            Some("attachment") if line.contains(NOTIFICATION) => return self.queued(line),
            _ => {}
        }
        let is_reply = entry.is_main_reply();
        let Some(message) = entry.message else {
            return;
        };
        if entry.kind.as_deref() == Some("user") {
            let is_prompt = entry.is_meta != Some(true)
                && entry.is_compact_summary != Some(true)
                && entry.transcript_only != Some(true);
            self.user(message, is_prompt);
        } else if is_reply {
            self.assistant(message);
        }
    }

    fn user(&mut self, message: EntryMessage, is_prompt: bool) {
        let Some(content) = message.content else {
            return;
        };
        let raw = content.get();
        if raw.starts_with('"') {
            if let Ok(text) = serde_json::from_str::<String>(raw) {
                self.typed(&text, is_prompt);
            }
            return;
        }
        let mut typed = None;
        bounded::for_each(raw, |block: Block| match block.kind.as_deref() {
            Some("text") => {
                if let Some(text) = block.text.as_deref() {
                    push_line(&mut typed, text);
                }
            }
            Some("tool_result") => self.tools.result(&block),
            _ => {}
        });
        if let Some(typed) = typed {
            self.typed(&typed, is_prompt);
        }
    }

    /// A user message's text: notifications of background tasks (whoever the client says sent
    /// them), or an ask.
    fn typed(&mut self, text: &str, is_prompt: bool) {
        if text.trim_start().starts_with(NOTIFICATION) {
            self.tools.notification(text);
        } else if is_prompt {
            if let Some(prompt) = clean_prompt(text) {
                self.push_ask(prompt);
            }
        }
    }

    fn push_ask(&mut self, prompt: String) {
        self.asks.push_back(prompt);
        if self.asks.len() > MAX_ASKS {
            self.asks.pop_front();
        }
    }

    /// A `last-prompt` record: the client's own note of the newest ask (a slash command as
    /// `/name args`, a shell command as `! command`, which is not an ask). New only when the
    /// prompt itself is before the boundary.
    fn last_prompt(&mut self, line: &str) {
        let Ok(record) = serde_json::from_str::<LastPrompt>(line) else {
            return;
        };
        let Some(text) = record.last_prompt.as_deref() else {
            return;
        };
        if text.starts_with("! ") {
            return;
        }
        let text = text.strip_suffix('…').unwrap_or(text);
        if let Some(prompt) = clean_prompt(text) {
            if !self.asks.iter().any(|a| same_ask(a, &prompt)) {
                self.push_ask(prompt);
            }
        }
    }

    /// An attachment line holding a task notification (one delivered while a turn ran).
    fn queued(&mut self, line: &str) {
        let Ok(queued) = serde_json::from_str::<Queued>(line) else {
            return;
        };
        // A string, or text blocks: read as a tool result's content is.
        if let Some(text) = queued
            .attachment
            .and_then(|a| a.prompt)
            .and_then(result_text)
        {
            self.tools.notification(&text);
        }
    }

    fn assistant(&mut self, message: EntryMessage) {
        if let Some(tokens) = message.usage.map(|u| u.counts().context_tokens()) {
            if tokens > 0 {
                self.tokens = Some(tokens);
            }
        }
        let Some(content) = message.content else {
            return;
        };
        bounded::for_each(content.get(), |block: Block| match block.kind.as_deref() {
            Some("text") => {
                if let Some(text) = block.text.as_deref() {
                    let gist = sanitize(text, true);
                    if !gist.is_empty() {
                        self.last_assistant = Some(cut(&gist, GIST_CHARS));
                    }
                }
            }
            Some("tool_use") => self.tools.call(&block, self.cwd.as_deref()),
            _ => {}
        });
    }

    /// The checkpoint body (everything but `id` and `meta`) and what the hook fills `meta` from.
    fn finish(self) -> Reading {
        Reading {
            body: Checkpoint {
                asks: self.asks.into(),
                last_assistant: self.last_assistant,
                ..self.tools.finish()
            },
            tokens: self.tokens,
            cwd: self.cwd,
            git_branch: self.git_branch,
        }
    }
}

/// What reading a transcript for a checkpoint gave.
#[derive(Debug)]
pub struct Reading {
    pub body: Checkpoint,
    pub tokens: Option<u64>,
    pub cwd: Option<String>,
    pub git_branch: Option<String>,
}

/// Reads the part of the transcript after its newest `compact_boundary`, forward, in bounded
/// memory.
pub fn read_transcript(path: &Path) -> Result<Reading> {
    let (mut file, len) = files::open_regular(path, "transcript")?;
    let start = transcript::since_newest_boundary(&mut file, len)
        .with_context(|| format!("reading transcript {}", path.display()))?;
    io::Seek::seek(&mut file, io::SeekFrom::Start(start))
        .with_context(|| format!("reading transcript {}", path.display()))?;
    let mut builder = Builder::default();
    let mut lines = LineReader::new(io::Read::take(file, len - start), transcript::MAX_LINE);
    while let Some(line) = lines
        .next_line()
        .with_context(|| format!("reading transcript {}", path.display()))?
    {
        // A line over `MAX_LINE` is skipped: the checkpoint is a summary, not a copy.
        if let Line::Text(text) = line {
            builder.feed(text);
        }
    }
    Ok(builder.finish())
}

#[cfg(test)]
mod tests;
