//! Mechanical checkpoints: what the agent was doing, taken from the transcript just before a
//! compaction, with no model and no network. [`Builder`] reads the part of the transcript after
//! the newest `compact_boundary` line by line (bounded memory, whatever the file's size);
//! [`CheckpointStore`] keeps each checkpoint as an immutable `cp_NNN.json` plus `_latest.json`.
//!
//! Everything taken from the transcript is sanitised here (no control characters or escape
//! sequences) and cut to size; tool output bodies are never kept, only the first line of an
//! error.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::files;
use crate::paths::{safe_session_id, Paths};
use crate::text::{cut, sanitize};
use crate::transcript::{self, Entry, EntryMessage, Line, LineReader};

pub const MAX_ASKS: usize = 3;
pub const ASK_CHARS: usize = 200;
pub const MAX_FILES: usize = 30;
pub const MAX_FAILURES: usize = 5;
pub const FAILURE_CHARS: usize = 160;
pub const GIST_CHARS: usize = 300;
pub const TODO_CHARS: usize = 200;
pub const PATH_CHARS: usize = 300;
/// Checkpoints kept per session.
pub const KEEP: usize = 5;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Checkpoint {
    pub id: String,
    pub meta: Meta,
    /// The last real user prompts, oldest first.
    pub asks: Vec<String>,
    /// The newest todo list, open items first.
    pub todos: Vec<Todo>,
    /// Newest first.
    pub files_modified: Vec<String>,
    /// Newest first.
    pub files_read: Vec<String>,
    /// Most used first.
    pub tools_used: Vec<ToolCount>,
    /// Oldest first.
    pub failures: Vec<Failure>,
    pub last_assistant: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Meta {
    pub session_id: String,
    pub cwd: String,
    pub git_branch: Option<String>,
    pub trigger: String,
    pub custom_instructions: Option<String>,
    pub tokens_before: Option<u64>,
    pub window: Option<u64>,
    /// The marker's cycle that this compaction ends.
    pub cycle: u64,
    /// This session's compaction count, this one included.
    pub compaction: u64,
    pub created_at: Option<DateTime<Utc>>,
    pub previous: Option<String>,
    pub transcript_path: String,
    /// Set when the transcript could not be read: the checkpoint holds only metadata.
    pub transcript_error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub content: String,
    pub status: String,
}

impl Todo {
    pub fn is_open(&self) -> bool {
        self.status != "completed"
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCount {
    pub name: String,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub tool: String,
    pub error: String,
}

// ---- reading the transcript -------------------------------------------------------------

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct FileInput<'a> {
    #[serde(borrow, default)]
    file_path: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    notebook_path: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct TodoWriteInput {
    #[serde(default)]
    todos: Vec<TodoItem>,
}

#[derive(Deserialize)]
struct TodoItem {
    #[serde(default)]
    content: String,
    #[serde(default)]
    status: String,
}

#[derive(Deserialize)]
struct TaskInput {
    #[serde(default)]
    subject: Option<String>,
    #[serde(rename = "taskId", default)]
    task_id: Option<serde_json::Value>,
    #[serde(default)]
    status: Option<String>,
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
        match rest[start..].find(&close) {
            Some(end) => rest = &rest[start + end + close.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A real user prompt, cleaned, or `None` for wrappers and empty text.
pub fn clean_prompt(text: &str) -> Option<String> {
    let stripped = strip_tag(text, "system-reminder");
    let t = stripped.trim();
    if t.is_empty() || WRAPPERS.iter().any(|w| t.starts_with(w)) {
        return None;
    }
    let clean = sanitize(t, true);
    (!clean.is_empty()).then(|| cut(&clean, ASK_CHARS))
}

/// The text of a tool result's `content`: a string, or an array of text blocks.
fn result_text(raw: &RawValue) -> Option<String> {
    let s = raw.get();
    if s.starts_with('"') {
        return serde_json::from_str::<String>(s).ok();
    }
    let blocks: Vec<Block> = serde_json::from_str(s).ok()?;
    let texts: Vec<&str> = blocks.iter().filter_map(|b| b.text.as_deref()).collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// Accumulates a checkpoint from transcript lines, oldest first.
#[derive(Debug, Default)]
pub struct Builder {
    asks: VecDeque<String>,
    todo_list: Option<Vec<Todo>>,
    /// Tasks (TaskCreate/TaskUpdate), with their ids once known.
    tasks: Vec<(Option<String>, Todo)>,
    /// Which of the two todo mechanisms was used last.
    tasks_newer: bool,
    pending_creates: HashMap<String, usize>,
    modified: Vec<String>,
    read: Vec<String>,
    tools: BTreeMap<String, u64>,
    tool_names: HashMap<String, String>,
    failures: VecDeque<Failure>,
    last_assistant: Option<String>,
    pub tokens: Option<u64>,
    pub cwd: Option<String>,
    pub git_branch: Option<String>,
    pub lines: u64,
    pub skipped_lines: u64,
}

fn push_recent(list: &mut Vec<String>, path: &str) {
    let path = cut(&sanitize(path, true), PATH_CHARS);
    list.retain(|p| *p != path);
    list.push(path);
}

impl Builder {
    pub fn feed(&mut self, line: &[u8]) {
        self.lines += 1;
        let Ok(line) = std::str::from_utf8(line) else {
            self.skipped_lines += 1;
            return;
        };
        let line = line.strip_prefix('\u{feff}').unwrap_or(line);
        let Ok(entry) = serde_json::from_str::<Entry>(line) else {
            self.skipped_lines += 1;
            return;
        };
        if entry.is_sidechain == Some(true) {
            return;
        }
        if let Some(cwd) = entry.cwd.as_deref().filter(|c| !c.is_empty()) {
            self.cwd = Some(cwd.to_string());
        }
        if let Some(branch) = entry.git_branch.as_deref().filter(|b| !b.is_empty()) {
            self.git_branch = Some(branch.to_string());
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
            if let (true, Ok(text)) = (is_prompt, serde_json::from_str::<String>(raw)) {
                self.ask(&text);
            }
            return;
        }
        let Ok(blocks) = serde_json::from_str::<Vec<Block>>(raw) else {
            return;
        };
        let mut typed = Vec::new();
        for block in &blocks {
            match block.kind.as_deref() {
                Some("text") if is_prompt => typed.extend(block.text.as_deref()),
                Some("tool_result") => self.tool_result(block),
                _ => {}
            }
        }
        if !typed.is_empty() {
            self.ask(&typed.join("\n"));
        }
    }

    fn ask(&mut self, text: &str) {
        if let Some(prompt) = clean_prompt(text) {
            self.asks.push_back(prompt);
            if self.asks.len() > MAX_ASKS {
                self.asks.pop_front();
            }
        }
    }

    fn tool_result(&mut self, block: &Block) {
        let id = block.tool_use_id.as_deref().unwrap_or_default();
        let tool = self
            .tool_names
            .get(id)
            .cloned()
            .unwrap_or_else(|| "tool".to_string());
        if let Some(index) = self.pending_creates.remove(id) {
            // "Task #3 created successfully: ..." carries the id TaskUpdate will use.
            let text = block.content.and_then(result_text).unwrap_or_default();
            if let Some(num) = text
                .split_once('#')
                .map(|(_, rest)| {
                    rest.chars()
                        .take_while(char::is_ascii_digit)
                        .collect::<String>()
                })
                .filter(|n| !n.is_empty())
            {
                if let Some(task) = self.tasks.get_mut(index) {
                    task.0 = Some(num);
                }
            }
        }
        if block.is_error != Some(true) {
            return;
        }
        let text = block.content.and_then(result_text).unwrap_or_default();
        let first = text
            .lines()
            .map(|l| sanitize(l, true))
            .find(|l| !l.is_empty())
            .unwrap_or_else(|| "(no message)".to_string());
        self.failures.push_back(Failure {
            tool,
            error: cut(&first, FAILURE_CHARS),
        });
        if self.failures.len() > MAX_FAILURES {
            self.failures.pop_front();
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
        let Ok(blocks) = serde_json::from_str::<Vec<Block>>(content.get()) else {
            return;
        };
        for block in &blocks {
            match block.kind.as_deref() {
                Some("text") => {
                    if let Some(text) = block.text.as_deref() {
                        let gist = sanitize(text, true);
                        if !gist.is_empty() {
                            self.last_assistant = Some(cut(&gist, GIST_CHARS));
                        }
                    }
                }
                Some("tool_use") => self.tool_use(block),
                _ => {}
            }
        }
    }

    fn tool_use(&mut self, block: &Block) {
        let name = sanitize(block.name.as_deref().unwrap_or("tool"), true);
        let name = cut(&name, 80);
        *self.tools.entry(name.clone()).or_default() += 1;
        if let Some(id) = block.id.as_deref() {
            self.tool_names.insert(id.to_string(), name.clone());
        }
        let Some(input) = block.input.map(RawValue::get) else {
            return;
        };
        match name.as_str() {
            "Edit" | "MultiEdit" | "Write" | "NotebookEdit" | "Read" => {
                let Ok(file) = serde_json::from_str::<FileInput>(input) else {
                    return;
                };
                if let Some(path) = file.file_path.or(file.notebook_path) {
                    let list = if name == "Read" {
                        &mut self.read
                    } else {
                        &mut self.modified
                    };
                    push_recent(list, &path);
                }
            }
            "TodoWrite" => {
                if let Ok(todos) = serde_json::from_str::<TodoWriteInput>(input) {
                    self.todo_list = Some(
                        todos
                            .todos
                            .into_iter()
                            .map(|t| Todo {
                                content: cut(&sanitize(&t.content, true), TODO_CHARS),
                                status: cut(&sanitize(&t.status, true), 20),
                            })
                            .collect(),
                    );
                    self.tasks_newer = false;
                }
            }
            "TaskCreate" => {
                if let Ok(task) = serde_json::from_str::<TaskInput>(input) {
                    let subject = task.subject.unwrap_or_default();
                    self.tasks.push((
                        None,
                        Todo {
                            content: cut(&sanitize(&subject, true), TODO_CHARS),
                            status: "pending".into(),
                        },
                    ));
                    if let Some(id) = block.id.as_deref() {
                        self.pending_creates
                            .insert(id.to_string(), self.tasks.len() - 1);
                    }
                    self.tasks_newer = true;
                }
            }
            "TaskUpdate" => {
                if let Ok(update) = serde_json::from_str::<TaskInput>(input) {
                    let id = match update.task_id {
                        Some(serde_json::Value::String(s)) => s,
                        Some(serde_json::Value::Number(n)) => n.to_string(),
                        _ => return,
                    };
                    let id = cut(&sanitize(&id, true), 40);
                    let status = update.status.map(|s| cut(&sanitize(&s, true), 20));
                    if status.as_deref() == Some("deleted") {
                        self.tasks
                            .retain(|(tid, _)| tid.as_deref() != Some(id.as_str()));
                    } else if let Some((_, todo)) = self
                        .tasks
                        .iter_mut()
                        .find(|(tid, _)| tid.as_deref() == Some(id.as_str()))
                    {
                        if let Some(status) = status {
                            todo.status = status;
                        }
                        if let Some(subject) = update.subject {
                            todo.content = cut(&sanitize(&subject, true), TODO_CHARS);
                        }
                    } else {
                        // Created before the last compaction: known by id only.
                        let content = update
                            .subject
                            .map(|s| cut(&sanitize(&s, true), TODO_CHARS))
                            .unwrap_or_else(|| format!("task #{id}"));
                        self.tasks.push((
                            Some(id),
                            Todo {
                                content,
                                status: status.unwrap_or_else(|| "pending".into()),
                            },
                        ));
                    }
                    self.tasks_newer = true;
                }
            }
            _ => {}
        }
    }

    /// The checkpoint body (everything but `id` and `meta`).
    pub fn finish(self) -> Checkpoint {
        let mut todos: Vec<Todo> = if self.tasks_newer {
            self.tasks.into_iter().map(|(_, t)| t).collect()
        } else {
            self.todo_list.unwrap_or_default()
        };
        let rank = |t: &Todo| match t.status.as_str() {
            "in_progress" => 0,
            "completed" => 2,
            _ => 1,
        };
        todos.sort_by_key(rank); // stable: keeps the list order within a status
        let newest_first = |mut v: Vec<String>| {
            v.reverse();
            v.truncate(MAX_FILES);
            v
        };
        let mut tools_used: Vec<ToolCount> = self
            .tools
            .into_iter()
            .map(|(name, count)| ToolCount { name, count })
            .collect();
        tools_used.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
        Checkpoint {
            asks: self.asks.into(),
            todos,
            files_modified: newest_first(self.modified),
            files_read: newest_first(self.read),
            tools_used,
            failures: self.failures.into(),
            last_assistant: self.last_assistant,
            ..Checkpoint::default()
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
        match line {
            Line::Text(text) if !text.is_empty() => builder.feed(text),
            Line::Text(_) => {}
            Line::TooLong => builder.skipped_lines += 1,
        }
    }
    let (tokens, cwd, git_branch) = (
        builder.tokens,
        builder.cwd.clone(),
        builder.git_branch.clone(),
    );
    Ok(Reading {
        body: builder.finish(),
        tokens,
        cwd,
        git_branch,
    })
}

// ---- storing ----------------------------------------------------------------------------

/// `checkpoints/<safe-session-id>/`: `cp_NNN.json` files, never rewritten, and `_latest.json`.
#[derive(Debug, Clone)]
pub struct CheckpointStore {
    root: PathBuf,
    dir: PathBuf,
}

pub fn checkpoints_dir(paths: &Paths) -> PathBuf {
    paths.root().join("checkpoints")
}

fn number_of(name: &str) -> Option<u64> {
    name.strip_prefix("cp_")?
        .strip_suffix(".json")?
        .parse()
        .ok()
}

impl CheckpointStore {
    pub fn new(paths: &Paths, session_id: &str) -> CheckpointStore {
        CheckpointStore {
            root: paths.root().to_path_buf(),
            dir: checkpoints_dir(paths).join(safe_session_id(session_id)),
        }
    }

    #[cfg(test)]
    pub fn in_dir(root: PathBuf, dir: PathBuf) -> CheckpointStore {
        CheckpointStore { root, dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn latest_path(&self) -> PathBuf {
        self.dir.join("_latest.json")
    }

    /// The numbers of the stored checkpoints, ascending.
    fn numbers(&self) -> Result<Vec<u64>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("listing {}", self.dir.display())),
        };
        let mut numbers: Vec<u64> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(number_of))
            .collect();
        numbers.sort_unstable();
        Ok(numbers)
    }

    pub fn next_id(&self) -> Result<String> {
        let next = self.numbers()?.last().map_or(1, |n| n + 1);
        Ok(format!("cp_{next:03}"))
    }

    /// Writes `cp` as `<id>.json` (refusing to replace an existing one), then `_latest.json`,
    /// then removes all but the newest [`KEEP`]. Returns the path of the new file.
    pub fn save(&self, cp: &Checkpoint) -> Result<PathBuf> {
        files::ensure_state_dir(&self.root, &self.dir)?;
        let path = self.dir.join(format!("{}.json", cp.id));
        let mut bytes = serde_json::to_vec_pretty(cp).context("encoding checkpoint")?;
        bytes.push(b'\n');
        files::write_atomic(&path, &bytes, true)?;
        files::write_atomic(&self.latest_path(), &bytes, false)?;
        let numbers = self.numbers()?;
        for n in numbers.iter().take(numbers.len().saturating_sub(KEEP)) {
            let old = self.dir.join(format!("cp_{n:03}.json"));
            fs::remove_file(&old).with_context(|| format!("removing {}", old.display()))?;
        }
        Ok(path)
    }

    pub fn latest(&self) -> Result<Option<Checkpoint>> {
        load(&self.latest_path())
    }
}

/// Reads a checkpoint file; `Ok(None)` when it does not exist.
pub fn load(path: &Path) -> Result<Option<Checkpoint>> {
    match files::read_state_file(path, "checkpoint")? {
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("checkpoint {} is corrupt", path.display())),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    fn todo_pairs(cp: &Checkpoint) -> Vec<(&str, &str)> {
        cp.todos
            .iter()
            .map(|t| (t.content.as_str(), t.status.as_str()))
            .collect()
    }

    fn build(lines: &[Vec<u8>]) -> (Checkpoint, Builder) {
        let mut b = Builder::default();
        for l in lines {
            b.feed(l);
        }
        let tokens = b.tokens;
        let rest = Builder {
            tokens,
            cwd: b.cwd.clone(),
            git_branch: b.git_branch.clone(),
            ..Builder::default()
        };
        (b.finish(), rest)
    }

    #[test]
    fn asks_are_real_prompts_only_last_three() {
        let (cp, _) = build(&[
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

    #[test]
    fn files_tools_failures_and_gist() {
        let (cp, rest) = build(&[
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
        assert_eq!(cp.files_modified, ["/p/n.ipynb", "/p/a.rs", "/p/b.rs"]);
        assert_eq!(cp.files_read, ["/p/a.rs"]);
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
                    error: "error[E0308]: mismatched types".into()
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
        let text = serde_json::to_string(&cp).unwrap();
        assert!(!text.contains("SECRET BODY") && !text.contains("and more"));
        assert_eq!(rest.tokens, Some(6));
        assert_eq!(
            (rest.cwd.as_deref(), rest.git_branch.as_deref()),
            (Some("/p"), Some("main"))
        );
    }

    #[test]
    fn only_the_last_five_failures() {
        let mut lines = Vec::new();
        for i in 0..8 {
            lines.push(tool_use(&format!("b{i}"), "Bash", json!({})));
            lines.push(tool_result(
                &format!("b{i}"),
                json!(format!("fail {i}")),
                true,
            ));
        }
        let (cp, _) = build(&lines);
        assert_eq!(cp.failures.len(), MAX_FAILURES);
        assert_eq!(cp.failures[0].error, "fail 3");
        assert_eq!(cp.failures[4].error, "fail 7");
    }

    #[test]
    fn todowrite_newest_list_open_first() {
        let (cp, _) = build(&[
            tool_use(
                "a",
                "TodoWrite",
                json!({"todos": [{"content": "old", "status": "pending"}]}),
            ),
            tool_use(
                "b",
                "TodoWrite",
                json!({"todos": [
                    {"content": "done thing", "status": "completed", "activeForm": "x"},
                    {"content": "next thing", "status": "pending"},
                    {"content": "current thing", "status": "in_progress"},
                ]}),
            ),
        ]);
        let list = todo_pairs(&cp);
        assert_eq!(
            list,
            [
                ("current thing", "in_progress"),
                ("next thing", "pending"),
                ("done thing", "completed")
            ]
        );
    }

    #[test]
    fn tasks_are_tracked_through_create_and_update() {
        let (cp, _) = build(&[
            tool_use(
                "c1",
                "TaskCreate",
                json!({"subject": "Parse input", "description": "d"}),
            ),
            tool_result(
                "c1",
                json!("Task #1 created successfully: Parse input"),
                false,
            ),
            tool_use(
                "c2",
                "TaskCreate",
                json!({"subject": "Write tests", "description": "d"}),
            ),
            tool_result(
                "c2",
                json!("Task #2 created successfully: Write tests"),
                false,
            ),
            tool_use(
                "u1",
                "TaskUpdate",
                json!({"taskId": "1", "status": "completed"}),
            ),
            tool_use(
                "u2",
                "TaskUpdate",
                json!({"taskId": "2", "status": "in_progress"}),
            ),
            tool_use(
                "u3",
                "TaskUpdate",
                json!({"taskId": "7", "status": "pending", "subject": "Old task"}),
            ),
            tool_use(
                "u4",
                "TaskUpdate",
                json!({"taskId": 9, "status": "in_progress"}),
            ),
        ]);
        let list = todo_pairs(&cp);
        assert_eq!(
            list,
            [
                ("Write tests", "in_progress"),
                ("task #9", "in_progress"),
                ("Old task", "pending"),
                ("Parse input", "completed"),
            ]
        );
    }

    #[test]
    fn garbage_lines_are_counted_not_fatal() {
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
        assert_eq!((b.lines, b.skipped_lines), (4, 2));
        let cp = b.finish();
        assert!(cp.asks.is_empty() && cp.todos.is_empty());
    }

    #[test]
    fn store_numbers_keeps_five_and_never_rewrites() {
        let dir = tempfile::tempdir().unwrap();
        let store = CheckpointStore::in_dir(dir.path().to_path_buf(), dir.path().join("s"));
        assert!(store.latest().unwrap().is_none());
        for i in 1..=7 {
            let id = store.next_id().unwrap();
            assert_eq!(id, format!("cp_{i:03}"));
            let cp = Checkpoint {
                id: id.clone(),
                ..Checkpoint::default()
            };
            let path = store.save(&cp).unwrap();
            assert!(path.ends_with(format!("{id}.json")));
            assert_eq!(store.latest().unwrap().unwrap().id, id);
            // The same id again is refused, not overwritten.
            assert!(store.save(&cp).is_err());
        }
        let mut names: Vec<_> = fs::read_dir(dir.path().join("s"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "_latest.json",
                "cp_003.json",
                "cp_004.json",
                "cp_005.json",
                "cp_006.json",
                "cp_007.json"
            ]
        );
    }
}
