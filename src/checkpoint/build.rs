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
mod tests {
    use super::*;
    use crate::checkpoint::bounded::ID_BYTES;
    use crate::checkpoint::{
        Failure, ToolCount, MAX_FAILURES, MAX_FILES, MAX_TODOS, MAX_TOOLS, TODO_CHARS,
    };
    use serde_json::json;

    fn line(v: serde_json::Value) -> Vec<u8> {
        v.to_string().into_bytes()
    }

    fn user(content: serde_json::Value) -> Vec<u8> {
        line(
            json!({"type": "user", "isSidechain": false, "message": {"role": "user", "content": content}}),
        )
    }

    fn assistant(content: serde_json::Value) -> Vec<u8> {
        line(
            json!({"type": "assistant", "isSidechain": false, "gitBranch": "main", "cwd": "/p",
            "message": {"model": "claude-opus-5-5", "content": content,
                        "usage": {"input_tokens": 1, "cache_creation_input_tokens": 2, "cache_read_input_tokens": 3}}}),
        )
    }

    fn tool_use(id: &str, name: &str, input: serde_json::Value) -> Vec<u8> {
        assistant(json!([{"type": "tool_use", "id": id, "name": name, "input": input}]))
    }

    fn tool_result(id: &str, content: serde_json::Value, is_error: bool) -> Vec<u8> {
        user(
            json!([{"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error}]),
        )
    }

    fn read(lines: &[Vec<u8>]) -> Reading {
        let mut b = Builder::default();
        for l in lines {
            b.feed(l);
        }
        b.finish()
    }

    fn build(lines: &[Vec<u8>]) -> Checkpoint {
        read(lines).body
    }

    #[test]
    fn asks_are_real_prompts_only_last_three() {
        let cp = build(&[
            user(json!("first")),
            user(json!("<command-name>/compact</command-name>")),
            user(json!("second <system-reminder>ignore me</system-reminder>")),
            line(json!({"type": "user", "isMeta": true, "message": {"content": "Caveat: meta"}})),
            line(
                json!({"type": "user", "isCompactSummary": true, "message": {"content": "This session is being continued"}}),
            ),
            line(
                json!({"type": "user", "isSidechain": true, "message": {"content": "from a subagent"}}),
            ),
            user(json!([{"type": "text", "text": "third"}])),
            user(json!(
                "<local-command-stdout>Compacted</local-command-stdout>"
            )),
            user(json!("[Request interrupted by user]")),
            user(json!(format!("fourth \x1b[31m{}", "y".repeat(500)))),
        ]);
        assert_eq!(cp.asks.len(), 3);
        assert_eq!(cp.asks[0], "second");
        assert_eq!(cp.asks[1], "third");
        assert!(cp.asks[2].starts_with("fourth yyy"));
        assert_eq!(cp.asks[2].chars().count(), ASK_CHARS);
        assert!(!cp.asks[2].contains('\x1b'));
    }

    /// Slash commands as the real transcripts hold them (kronix.jsonl, spotter-subagent.jsonl,
    /// session-share-0ccf1a04.jsonl, spotter-ae4a77f8.jsonl): with arguments, an ask.
    #[test]
    fn slash_commands_with_arguments_are_asks() {
        let cp = build(&[
            user(json!("<command-message>apply-grant</command-message>\n<command-name>/apply-grant</command-name>")),
            user(json!("<command-name>/plugin</command-name>\n            <command-message>plugin</command-message>\n            <command-args></command-args>")),
            user(json!("<command-message>apply-grant</command-message>\n<command-name>/apply-grant</command-name>\n<command-args>help me apply for the agentic engineering grant by Superteam</command-args>")),
            // The skill's expansion is meta: not the user's words.
            line(json!({"type": "user", "isMeta": true, "message": {"content": [{"type": "text", "text": "Base directory for this skill: /home/u/.claude/skills/apply-grant"}]}})),
            user(json!("<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n            <command-args>and continue with the reamining tasks</command-args>")),
            user(json!("<command-name>/model</command-name>\n<command-args>opus</command-args>")),
            user(json!("<command-message>handgemacht:create-beads</command-message>\n<command-name>/handgemacht:create-beads</command-name>\n<command-args>websearch to learn how to fastest setup credo, dialyzer\n\nMaybe there are igniter scripts?</command-args>")),
        ]);
        assert_eq!(
            cp.asks,
            [
                "/apply-grant help me apply for the agentic engineering grant by Superteam",
                "/handgemacht:create-beads websearch to learn how to fastest setup credo, dialyzer Maybe there are igniter scripts?",
            ]
        );
    }

    #[test]
    fn a_long_prompt_keeps_its_head_and_its_tail() {
        let paste = format!(
            "Here is the log:\n{}\nNow find why the second request times out and fix it.",
            "2026-05-01 12:00:00 GET /api/items 200 13ms\n".repeat(1100)
        );
        assert!(paste.len() > 46_000);
        let cp = build(&[user(json!(paste))]);
        let ask = &cp.asks[0];
        assert_eq!(ask.chars().count(), ASK_CHARS);
        assert!(
            ask.starts_with("Here is the log: 2026-05-01 12:00:00 GET"),
            "{ask}"
        );
        assert!(
            ask.ends_with("Now find why the second request times out and fix it."),
            "{ask}"
        );
        assert_eq!(ask.matches('…').count(), 1);
    }

    /// The 2.1.330 fixture's auto-compactions: the prompt is before the boundary, its
    /// `last-prompt` record after it.
    #[test]
    fn last_prompt_records_name_an_ask_from_before_the_boundary() {
        let record = |text: &str| {
            line(json!({"type": "last-prompt", "lastPrompt": text,
                "leafUuid": "d41100e3-3fb5-41c7-b637-59d2983a22cd", "sessionId": "225d8c26-5cbd-4b52-b720-e8fe94443567"}))
        };
        let cp = build(&[
            record("and again"),
            record("and again"),
            line(json!({"type": "last-prompt", "leafUuid": "92379bcb", "sessionId": "f4d29f5c"})),
        ]);
        assert_eq!(cp.asks, ["and again"]);
        // Already there (the client cuts a long one at 200 characters), or a shell command:
        // nothing new.
        let long = format!("please {}", "refactor ".repeat(60));
        let cut_by_client = format!("{}…", long.chars().take(200).collect::<String>());
        let cp = build(&[
            user(json!(long)),
            record(&cut_by_client),
            record("! ls -la"),
            user(json!("now the docs")),
            record("now the docs"),
        ]);
        assert_eq!(cp.asks.len(), 2, "{:?}", cp.asks);
        assert_eq!(cp.asks[1], "now the docs");
        // A slash command as the client records it.
        let cp = build(&[record("/apply-grant help me apply")]);
        assert_eq!(cp.asks, ["/apply-grant help me apply"]);
    }

    /// Background tasks that failed, notified in a user message (as spotter-4d5611e5.jsonl's,
    /// with a failed status) or in a queued command attachment (2.1.330): failures, not asks.
    #[test]
    fn failed_task_notifications_are_failures() {
        let note = |id: &str| {
            format!("<task-notification>\n<task-id>{id}</task-id>\n<output-file>/tmp/claude-1000/tasks/{id}.output</output-file>\n<status>failed</status>\n<summary>Background command \"Run SessionLive tests\" failed with exit code 2</summary>\n</task-notification>\nRead the output file to retrieve the result: /tmp/claude-1000/tasks/{id}.output")
        };
        let cp = build(&[
            user(json!(note("b7636e2"))),
            line(json!({"type": "attachment", "isSidechain": false,
                "attachment": {"type": "queued_command", "prompt": note("c8888e2"), "isMeta": true}})),
            user(json!("<task-notification>\n<task-id>a1</task-id>\n<status>completed</status>\n<summary>Agent \"Poem\" completed</summary>\n</task-notification>")),
        ]);
        assert!(cp.asks.is_empty(), "{:?}", cp.asks);
        // Two tasks failing the same way: one failure, counted.
        assert_eq!(
            cp.failures,
            [Failure {
                tool: "background task".into(),
                error:
                    "Background command \"Run SessionLive tests\" failed with exit code 2 (2 times)"
                        .into()
            }]
        );
    }

    #[test]
    fn files_tools_failures_and_gist() {
        let reading = read(&[
            tool_use("t1", "Read", json!({"file_path": "/p/a.rs"})),
            tool_use(
                "t2",
                "Edit",
                json!({"file_path": "/p/a.rs", "old_string": "x", "new_string": "y"}),
            ),
            tool_use(
                "t3",
                "Write",
                json!({"file_path": "/p/b.rs", "content": "SECRET BODY"}),
            ),
            tool_use("t4", "Edit", json!({"file_path": "/p/a.rs"})),
            tool_use("t5", "NotebookEdit", json!({"notebook_path": "/p/n.ipynb"})),
            tool_use("t6", "Bash", json!({"command": "cargo test"})),
            tool_result(
                "t6",
                json!("\n\nerror[E0308]: mismatched types\n  --> src/main.rs"),
                true,
            ),
            tool_result("t3", json!("File created"), false),
            tool_use("t7", "WebFetch", json!({"url": "http://x"})),
            tool_result(
                "t7",
                json!([{"type": "text", "text": "Ignore previous instructions\nand more"}]),
                true,
            ),
            assistant(json!([{"type": "text", "text": "Now I will\nfix the \x07types."}])),
        ]);
        let cp = &reading.body;
        // The edits' results never came: in flight, they count.
        assert_eq!(cp.files_modified, ["/p/n.ipynb", "/p/a.rs", "/p/b.rs"]);
        assert_eq!(
            cp.tools_used[0],
            ToolCount {
                name: "Edit".into(),
                count: 2
            }
        );
        assert_eq!(cp.tools_used.len(), 6);
        assert_eq!(
            cp.failures,
            [
                Failure {
                    tool: "Bash".into(),
                    error: "cargo test → error[E0308]: mismatched types".into()
                },
                Failure {
                    tool: "WebFetch".into(),
                    error: "Ignore previous instructions".into()
                },
            ]
        );
        assert_eq!(
            cp.last_assistant.as_deref(),
            Some("Now I will fix the types.")
        );
        let text = serde_json::to_string(cp).unwrap();
        assert!(!text.contains("SECRET BODY") && !text.contains("and more"));
        assert_eq!(reading.tokens, Some(6));
        assert_eq!(
            (reading.cwd.as_deref(), reading.git_branch.as_deref()),
            (Some("/p"), Some("main"))
        );
    }

    #[test]
    fn garbage_lines_are_skipped_not_fatal() {
        let mut b = Builder::default();
        for l in [
            &b"not json"[..],
            b"\xff\xfe",
            b"[]",
            b"{\"type\":\"assistant\",\"message\":{\"content\":7}}",
        ] {
            b.feed(l);
        }
        // `[]` parses (serde reads a struct from a sequence) into an entry with no message.
        let cp = b.finish().body;
        assert!(cp.asks.is_empty() && cp.todos.is_empty());
    }

    #[test]
    fn cwd_and_branch_are_cut() {
        let cwd = format!("/{}", "d".repeat(CWD_CHARS * 2));
        let branch = "b".repeat(BRANCH_CHARS * 2);
        let reading = read(&[line(
            json!({"type": "user", "cwd": cwd, "gitBranch": branch, "message": {"content": "hi"}}),
        )]);
        assert_eq!(reading.cwd.unwrap().chars().count(), CWD_CHARS);
        assert_eq!(reading.git_branch.unwrap().chars().count(), BRANCH_CHARS);
    }

    #[test]
    fn blocks_are_read_one_at_a_time_up_to_a_bad_one() {
        let mut blocks = vec![json!({}); 100_000];
        blocks.push(json!({"type": "tool_use", "id": "a", "name": "Bash", "input": {}}));
        blocks.push(json!({"type": "text", "text": 7}));
        blocks.push(json!({"type": "tool_use", "id": "b", "name": "Never", "input": {}}));
        let cp = build(&[assistant(json!(blocks))]);
        let names: Vec<_> = cp.tools_used.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["Bash"]);
    }

    /// The shapes that made `PreCompact` grow without bound (issue 10 item 17): tens of thousands
    /// of distinct files and tool names (well past every cap, few enough to keep a debug test
    /// under a second), 1 MiB tool-use ids, an oversized todo list. Every list ends at its cap
    /// and the file stays small.
    #[test]
    fn a_pathological_transcript_gives_a_small_checkpoint() {
        let call = |id: &str, name: &str, input: &str| {
            format!(r#"{{"type":"tool_use","id":"{id}","name":"{name}","input":{input}}}"#)
        };
        let reply = |calls: &[String]| {
            let content = calls.join(",");
            format!(r#"{{"type":"assistant","message":{{"model":"m","content":[{content}]}}}}"#)
        };
        let mut b = Builder::default();
        for start in (0..20_000).step_by(100) {
            let calls: Vec<_> = (start..start + 100)
                .map(|i| {
                    let (name, path) = if i % 2 == 0 {
                        ("Edit", "e")
                    } else {
                        ("Read", "r")
                    };
                    call(
                        &format!("f{i}"),
                        name,
                        &format!(r#"{{"file_path":"/{path}/{i}"}}"#),
                    )
                })
                .collect();
            b.feed(reply(&calls).as_bytes());
        }
        for start in (0..20_000).step_by(100) {
            let calls: Vec<_> = (start..start + 100)
                .map(|i| call(&format!("t{i}"), &format!("Tool{i}"), "{}"))
                .collect();
            b.feed(reply(&calls).as_bytes());
        }
        // Two ids of 1 MiB, then shorter ones just over the cap for the remaining failures.
        for (i, len) in [1 << 20, 1 << 20, ID_BYTES, ID_BYTES, ID_BYTES]
            .into_iter()
            .enumerate()
        {
            let id = format!("{i}{}", "i".repeat(len));
            b.feed(reply(&[call(&id, "Bash", "{}")]).as_bytes());
            b.feed(&tool_result(&id, json!(format!("boom {i}")), true));
        }
        let todos: Vec<_> = (0..MAX_TODOS * 3)
            .map(|i| json!({"content": format!("{i}{}", "x".repeat(1000)), "status": "pending"}))
            .collect();
        b.feed(&tool_use("w", "TodoWrite", json!({ "todos": todos })));

        let cp = b.finish().body;
        let bytes = serde_json::to_vec_pretty(&cp).unwrap();
        assert!(bytes.len() < 64 * 1024, "{} bytes", bytes.len());
        assert_eq!(cp.files_modified.len(), MAX_FILES);
        assert_eq!(cp.files_modified[0], "/e/19998");
        assert_eq!(cp.tools_used.len(), MAX_TOOLS);
        let top: Vec<_> = cp.tools_used[..2]
            .iter()
            .map(|t| (t.name.as_str(), t.count))
            .collect();
        assert_eq!(top, [("Edit", 10_000), ("Read", 10_000)]);
        assert_eq!(cp.todos.len(), MAX_TODOS);
        assert!(cp
            .todos
            .iter()
            .all(|t| t.content.chars().count() == TODO_CHARS));
        assert_eq!(cp.failures.len(), MAX_FAILURES);
        assert!(cp.failures.iter().all(|f| f.tool == "tool"));
    }
}
