//! A Codex rollout read into a checkpoint: the part after its newest `compacted` line, a line at a
//! time, each [`Item`] fed to the same [`Builder`] a Claude Code transcript feeds, in its
//! client-neutral steps. Codex's tools become the calls the tool log knows: a shell command
//! (`exec_command`, `shell`, `shell_command`, `local_shell_call`) is a `Bash` command, each file
//! of an `apply_patch` a `Write` (added) or an `Edit`, and `update_plan` the todo list (its steps
//! and their statuses, which are `TodoWrite`'s). The exit code Codex writes in a command's output
//! says whether it failed.

use std::collections::VecDeque;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::json;

use super::block::Block;
use super::build::{Builder, Reading};
use crate::files;
use crate::rollout::{self, Item};
use crate::transcript::{Line, LineReader, MAX_LINE};

/// How user messages Codex writes itself begin (its context, the instructions files, an
/// interrupted turn, the compaction's summary handed to the next model): never asks.
const CODEX_WRAPPERS: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "# AGENTS.md instructions",
    "<turn_aborted>",
    "<user_shell_command>",
    "<skills_instructions>",
    "<permissions instructions>",
    "<collaboration_mode>",
    "<subagent_notification>",
    "<model_switch>",
    "Another language model started to solve this problem",
];

/// Is this user message Codex's own text rather than the user's (`replay` asks it too: only
/// the user's own text is a prompt)?
pub fn is_codex_text(text: &str) -> bool {
    is_known_wrapper(text) || tag_wrapped(text.trim_start())
}

/// Does `text` begin as one of Codex's own texts the list names?
fn is_known_wrapper(text: &str) -> bool {
    let t = text.trim_start();
    CODEX_WRAPPERS.iter().any(|w| t.starts_with(w))
}

/// Is `text` wholly inside a tag of Codex's kind, `<snake_case>` … `</snake_case>` (a newer
/// Codex's context, such as `<recommended_plugins>`, that the list above does not name yet)?
/// Its parts are joined, so the text may end with another such part's closing tag.
fn tag_wrapped(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('<') else {
        return false;
    };
    let Some((name, _)) = rest.split_once('>') else {
        return false;
    };
    let snake = !name.is_empty()
        && name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    snake && text.contains(&format!("</{name}>")) && text.trim_end().ends_with('>')
}

/// `apply_patch` calls whose files wait for the patch's output, at most.
const MAX_PATCHES: usize = 64;
/// Files of one patch read, at most.
const MAX_PATCH_FILES: usize = 50;

/// Feeds rollout items to a [`Builder`].
#[derive(Default)]
struct Feeder {
    builder: Builder,
    /// `apply_patch` calls waiting for their output: the call's id and how many files it has.
    patches: VecDeque<(String, usize)>,
    /// Code mode's cells, and commands left running.
    cells: code_mode::Cells,
    /// A user message wholly in a tag, waiting for the `user_message` event that would show the
    /// user sent it.
    tagged: Option<String>,
    /// The session's id, from its first `session_meta`: a forked session's rollout (a subagent's,
    /// a conversation forked in the IDE) copies its parent's history after its own, the parent's
    /// `session_meta` (its branch then) too.
    session: Option<String>,
}

#[derive(Deserialize)]
struct ExecArgs {
    /// `exec_command`'s command line.
    #[serde(default)]
    cmd: Option<String>,
    /// `shell`'s argv, or `shell_command`'s line.
    #[serde(default)]
    command: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct PlanArgs {
    #[serde(default)]
    plan: Vec<PlanStep>,
}

#[derive(Deserialize)]
struct PlanStep {
    #[serde(default)]
    step: String,
    #[serde(default)]
    status: String,
}

/// A shell call's command line: `exec_command`'s `cmd`, `shell_command`'s `command`, or
/// `shell`'s argv (the script of `bash -lc SCRIPT`, else the words joined).
fn command_line(arguments: &str) -> Option<String> {
    let args = serde_json::from_str::<ExecArgs>(arguments).ok()?;
    if let Some(cmd) = args.cmd {
        return Some(cmd);
    }
    match args.command? {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Array(words) => {
            let words: Vec<&str> = words.iter().filter_map(|w| w.as_str()).collect();
            match words.as_slice() {
                [shell, flag, script]
                    if flag.starts_with('-') && flag.contains('c') && {
                        let name = shell.rsplit('/').next().unwrap_or(shell);
                        matches!(name, "bash" | "sh" | "zsh" | "dash")
                    } =>
                {
                    Some((*script).to_string())
                }
                _ => Some(words.join(" ")),
            }
        }
        _ => None,
    }
}

/// The files an `apply_patch` patch adds or changes, with the tool that would have done it.
fn patch_files(patch: &str) -> Vec<(&'static str, String)> {
    // A function call's arguments hold the patch as `{"input": ...}`.
    let owned;
    let patch = if patch.trim_start().starts_with('{') {
        #[derive(Deserialize)]
        struct Wrapped {
            #[serde(default)]
            input: String,
        }
        owned = serde_json::from_str::<Wrapped>(patch)
            .map(|w| w.input)
            .unwrap_or_default();
        owned.as_str()
    } else {
        patch
    };
    let mut out = Vec::new();
    for line in patch.lines() {
        let (tool, rest) = if let Some(p) = line.strip_prefix("*** Add File: ") {
            ("Write", p)
        } else if let Some(p) = line.strip_prefix("*** Update File: ") {
            ("Edit", p)
        } else if let Some(p) = line.strip_prefix("*** Move to: ") {
            ("Write", p)
        } else {
            continue;
        };
        let path = rest.trim();
        if !path.is_empty() && out.len() < MAX_PATCH_FILES {
            out.push((tool, path.to_string()));
        }
    }
    out
}

/// A path as Codex's patch names it, made absolute against the session's directory.
fn absolute(path: &str, cwd: Option<&str>) -> String {
    match cwd {
        Some(cwd) if !Path::new(path).is_absolute() && !path.starts_with('/') => {
            format!("{}/{}", cwd.trim_end_matches('/'), path)
        }
        _ => path.to_string(),
    }
}

/// A command's output as Codex writes it, without its header, and its exit code when it says
/// one: `exec_command`'s (`Process exited with code N` … `Output:`), `shell_command`'s
/// (`Exit code: N` … `Output:`), or `shell`'s JSON (`{"output", "metadata": {"exit_code"}}`).
fn command_output(text: &str) -> (String, Option<i64>) {
    if text.trim_start().starts_with('{') {
        #[derive(Deserialize)]
        struct Shell {
            #[serde(default)]
            output: Option<String>,
            #[serde(default)]
            metadata: Option<ShellMeta>,
        }
        #[derive(Deserialize)]
        struct ShellMeta {
            #[serde(default)]
            exit_code: Option<i64>,
        }
        if let Ok(shell) = serde_json::from_str::<Shell>(text) {
            if let Some(output) = shell.output {
                return (output, shell.metadata.and_then(|m| m.exit_code));
            }
        }
    }
    let (head, body) = match text.find("\nOutput:\n") {
        Some(i) => (&text[..i], &text[i + "\nOutput:\n".len()..]),
        None => match text.strip_prefix("Output:\n") {
            Some(body) => ("", body),
            None => return (text.to_string(), None),
        },
    };
    let code = head.lines().find_map(|l| {
        l.strip_prefix("Process exited with code ")
            .or_else(|| l.strip_prefix("Exit code: "))
            .and_then(|c| c.trim().parse::<i64>().ok())
    });
    (body.to_string(), code)
}

/// The session of a command Codex left running (`Process running with session ID N`, in the
/// header before `Output:`).
fn running_session(text: &str) -> Option<&str> {
    let head = text.split("\nOutput:\n").next().unwrap_or(text);
    let id = head
        .lines()
        .find_map(|l| l.strip_prefix("Process running with session ID "))?
        .trim();
    (!id.is_empty() && id.len() <= 40 && id.chars().all(|c| c.is_ascii_alphanumeric()))
        .then_some(id)
}

impl Feeder {
    fn feed(&mut self, item: Item) {
        match item {
            Item::Meta {
                id, cwd, branch, ..
            } => {
                match (&self.session, id) {
                    // The parent's, copied into a fork's rollout: where the fork was made, so
                    // its branch only while the session's own named none.
                    (Some(own), Some(id)) if *own != id => {
                        if self.builder.branch().is_none() {
                            self.builder.place(None, branch.as_deref());
                        }
                    }
                    (own, id) => {
                        if own.is_none() {
                            self.session = id;
                        }
                        self.builder.place(cwd.as_deref(), branch.as_deref());
                    }
                }
            }
            Item::Cwd(cwd) => self.builder.place(Some(&cwd), None),
            Item::User(text) => {
                if is_known_wrapper(&text) {
                    // Codex's own text (its context, AGENTS.md, the summary): never an ask.
                } else if tag_wrapped(text.trim_start()) {
                    // Codex's own context, unless its `user_message` event says the user sent
                    // it (an automation's `<heartbeat>` is the user's standing instruction).
                    self.tagged = Some(text);
                } else {
                    self.builder.prompt(&text);
                }
            }
            Item::UserEvent(message) => {
                if let Some(text) = self.tagged.take() {
                    if text.trim() == message.trim() {
                        self.builder.prompt(&text);
                    }
                }
            }
            Item::Assistant(text) => self.builder.reply(&text),
            Item::Call {
                id,
                name,
                arguments,
            } => self.call(&id, &name, &arguments),
            Item::Output { id, text, parts } => {
                if !self.cell_output(&id, &text, &parts) {
                    self.output(&id, &text);
                }
            }
            Item::Tokens(tokens) => self.builder.context_tokens(tokens),
            Item::Compacted { retained } => {
                for text in retained.iter().filter(|t| !is_codex_text(t)) {
                    self.builder.prompt(text);
                }
            }
            Item::Other => {}
        }
    }

    fn call(&mut self, id: &str, name: &str, arguments: &str) {
        let cwd = self.builder.cwd().map(str::to_string);
        let block = |name: &str, id: &str, input: serde_json::Value| {
            json!({"type": "tool_use", "id": id, "name": name, "input": input}).to_string()
        };
        match name {
            "exec_command" | "shell" | "shell_command" | "local_shell" | "container.exec" => {
                let input = match command_line(arguments) {
                    Some(command) => json!({ "command": command }),
                    None => json!({}),
                };
                self.tool_call(&block("Bash", id, input));
            }
            "apply_patch" => {
                let files = patch_files(arguments);
                for (i, (tool, path)) in files.iter().enumerate() {
                    let file = absolute(path, cwd.as_deref());
                    let sub = format!("{id}#{i}");
                    self.tool_call(&block(tool, &sub, json!({ "file_path": file })));
                }
                self.patches.push_back((id.to_string(), files.len()));
                if self.patches.len() > MAX_PATCHES {
                    self.patches.pop_front();
                }
            }
            // Code mode: a JavaScript cell calling the tools above.
            "exec" => self.cell(id, arguments),
            "wait" => self.wait(id, arguments),
            "write_stdin" => self.stdin(id, arguments),
            "update_plan" => {
                let plan = serde_json::from_str::<PlanArgs>(arguments)
                    .map(|p| p.plan)
                    .unwrap_or_default();
                let todos: Vec<serde_json::Value> = plan
                    .into_iter()
                    .map(|s| json!({"content": s.step, "status": s.status}))
                    .collect();
                self.tool_call(&block("TodoWrite", id, json!({ "todos": todos })));
            }
            other => self.tool_call(&block(other, id, json!({}))),
        }
    }

    fn output(&mut self, id: &str, text: &str) {
        let result = |id: &str, content: &str, failed: bool| {
            json!({"type": "tool_result", "tool_use_id": id, "content": content,
                   "is_error": failed})
            .to_string()
        };
        if let Some(at) = self.patches.iter().position(|(p, _)| p == id) {
            let (_, files) = self.patches.remove(at).unwrap_or_default();
            let (body, code) = command_output(text);
            let failed = code.map_or(!body.trim_start().starts_with("Success"), |c| c != 0);
            for i in 0..files {
                self.tool_result(&result(&format!("{id}#{i}"), &body, failed));
            }
            return;
        }
        let (body, code) = command_output(text);
        // Still running after its yield time: its verdict comes with a later `write_stdin`.
        if let Some(session) = running_session(text).filter(|_| code.is_none()) {
            self.tool_result_text(id, &code_mode::backgrounded(session, &body), false);
            return;
        }
        self.tool_result(&result(id, &body, code.is_some_and(|c| c != 0)));
    }

    /// A tool result with this text.
    fn tool_result_text(&mut self, id: &str, content: &str, failed: bool) {
        self.tool_result(
            &json!({"type": "tool_result", "tool_use_id": id, "content": content,
                   "is_error": failed})
            .to_string(),
        );
    }

    fn tool_call(&mut self, json: &str) {
        if let Ok(block) = serde_json::from_str::<Block>(json) {
            self.builder.tool_call(&block);
        }
    }

    fn tool_result(&mut self, json: &str) {
        if let Ok(block) = serde_json::from_str::<Block>(json) {
            self.builder.tool_result(&block);
        }
    }
}

/// Feeds the lines of `reader` (at most `limit` bytes) until `done` says so.
fn feed_lines<R: Read>(
    feeder: &mut Feeder,
    reader: R,
    limit: u64,
    mut done: impl FnMut(&Feeder) -> bool,
) -> io::Result<()> {
    let mut lines = LineReader::new(reader.take(limit), MAX_LINE);
    while let Some(line) = lines.next_line()? {
        // A line over `MAX_LINE` is skipped: the checkpoint is a summary, not a copy.
        if let Line::Text(text) = line {
            feeder.feed(rollout::item(text));
            if done(feeder) {
                break;
            }
        }
    }
    Ok(())
}

/// The head of a rollout: every line until the session's first ask, then only its
/// `session_meta` lines (Codex writes one again at each resume, with the branch then): the
/// newest of the session's own gives its branch and directory (a parent's, copied into a fork,
/// only a branch the session's own did not name).
fn head_lines<R: Read>(feeder: &mut Feeder, reader: R, limit: u64) -> io::Result<()> {
    let mut lines = LineReader::new(reader.take(limit), MAX_LINE);
    while let Some(line) = lines.next_line()? {
        if let Line::Text(text) = line {
            let meta = || memchr::memmem::find(text, b"\"session_meta\"").is_some();
            if !feeder.builder.has_goal() || meta() {
                feeder.feed(rollout::item(text));
            }
        }
    }
    Ok(())
}

/// How much of a rollout's head is read for the session's goal and place when the part after
/// the newest compaction does not start at the beginning.
const HEAD_SCAN_BYTES: u64 = 8 * 1024 * 1024;

/// The rollout read as if it ended at byte `end`: the user messages Codex kept at its newest
/// compaction, then everything after it; and, when that is not the whole file, its head for the
/// session's goal, directory and branch.
pub(super) fn read_rollout_until(path: &Path, end: u64) -> Result<Reading> {
    let context = || format!("reading rollout {}", path.display());
    let (mut file, len) = files::open_regular(path, "rollout")?;
    let len = len.min(end);
    let compaction = rollout::newest_compaction(&mut file, len).with_context(context)?;
    let mut feeder = Feeder::default();
    let mut goal = None;
    if let Some((start, _)) = compaction {
        // The head: the goal (the session's first ask) and where the session runs.
        let (head, _) = files::open_regular(path, "rollout")?;
        let mut first = Feeder::default();
        head_lines(&mut first, head, start.min(HEAD_SCAN_BYTES)).with_context(context)?;
        goal = first.builder.goal().map(str::to_string);
        feeder.session.clone_from(&first.session);
        feeder
            .builder
            .place(first.builder.cwd(), first.builder.branch());
    }
    let start = match compaction {
        Some((start, line_end)) => {
            file.seek(SeekFrom::Start(start)).with_context(context)?;
            feed_lines(&mut feeder, &mut file, line_end - start, |_| false)
                .with_context(context)?;
            line_end
        }
        None => 0,
    };
    file.seek(SeekFrom::Start(start)).with_context(context)?;
    feed_lines(&mut feeder, &mut file, len - start, |_| false).with_context(context)?;
    let mut reading = feeder.builder.finish();
    if goal.is_some() {
        reading.body.goal = goal;
    }
    Ok(reading)
}

mod code_mode;
#[cfg(test)]
mod tests;
