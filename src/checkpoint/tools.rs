//! What a checkpoint keeps of tool calls and their results: how often each tool was used, the
//! files modified, the todo list the todo tools carry, the last failures, the last verification,
//! the pull requests and the plan written in plan mode, each result paired with its call by
//! tool-use id. A call that changes something (an edit, a todo change) counts once its result
//! says it succeeded; one whose result never came counts too, as the newest thing in flight.
//! Inputs are read only for paths, commands, todos and a plan; result bodies only for a
//! failure's one line ([`failures`]), a verdict line ([`verify`]), pull-request numbers, URLs and
//! states ([`prs`]), a created task's id, a background command's id and a plan's file.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::asks;
use super::block::{result_text, Block};
use super::bounded::{Call, Calls, RecentList, ToolCounts};
use super::failures::{self, Failures, BACKGROUND, SUBJECT_CHARS};
use super::prs;
use super::todos::Todos;
use super::verify;
use super::{
    Checkpoint, ToolCount, Verification, MAX_FILES, MAX_PRS, MAX_TOOLS, NAME_CHARS, PATH_CHARS,
    PLAN_CHARS,
};
use crate::text::{cut, holds, sanitize};

/// Background commands remembered by task id, so a later failure can name its command.
const MAX_BACKGROUND: usize = 32;

#[derive(Deserialize)]
struct FileInput<'a> {
    #[serde(borrow, default)]
    file_path: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    notebook_path: Option<Cow<'a, str>>,
}

/// `ExitPlanMode`'s plan, or the content a `Write` gives a plan file.
#[derive(Deserialize)]
struct PlanInput<'a> {
    #[serde(borrow, default)]
    plan: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
}

/// Where the client keeps plans written in plan mode.
const PLANS_DIR: &str = "/.claude/plans/";

/// How `ExitPlanMode`'s result names the plan's file.
const PLAN_SAVED: &str = "Your plan has been saved to: ";

#[derive(Deserialize)]
struct BashInput<'a> {
    #[serde(borrow, default)]
    command: Option<Cow<'a, str>>,
}

/// `TaskOutput` names its task `task_id`; `BashOutput` (2.0) `bash_id` or `shell_id`.
#[derive(Deserialize)]
struct OutputInput<'a> {
    #[serde(borrow, default)]
    task_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    bash_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    shell_id: Option<Cow<'a, str>>,
}

/// A Bash result saying the command went to the background: "Command running in background
/// with ID: c41d9a3. Output is being written to: ...".
const BACKGROUND_STARTED: &str = "running in background with ID: ";

/// Where that result says the command's output goes: "Output is being written to: /tmp/….output".
const OUTPUT_FILE: &str = "Output is being written to: ";

/// A command sent to the background: its task id, and the file its output goes to. A read of
/// either (`TaskOutput`, a `Read` or `tail` of the file) is a read of the command's output.
#[derive(Debug)]
struct Background {
    task: String,
    command: String,
    file: Option<String>,
}

#[derive(Debug)]
pub(super) struct ToolLog {
    counts: ToolCounts,
    calls: Calls,
    modified: RecentList,
    todos: Todos,
    failures: Failures,
    /// Background commands, oldest first.
    background: VecDeque<Background>,
    /// Task ids whose failure a notification already reported (it may come twice: queued,
    /// then delivered).
    notified: VecDeque<String>,
    /// The last verification whose result came.
    verification: Option<Verification>,
    /// Pull requests `gh pr` or `git log` named, oldest first.
    prs: Vec<String>,
    /// The newest plan written in plan mode, and its file.
    plan: Option<String>,
    plan_file: Option<String>,
}

impl Default for ToolLog {
    fn default() -> ToolLog {
        ToolLog {
            counts: ToolCounts::default(),
            calls: Calls::default(),
            modified: RecentList::new(MAX_FILES),
            todos: Todos::default(),
            failures: Failures::default(),
            background: VecDeque::new(),
            notified: VecDeque::new(),
            verification: None,
            prs: Vec::new(),
            plan: None,
            plan_file: None,
        }
    }
}

/// `path` as a failure names it: relative to `cwd` when under it, its end kept when long.
fn shown_path(path: &str, cwd: Option<&str>) -> String {
    let relative = cwd
        .filter(|c| !c.is_empty())
        .and_then(|c| Path::new(path).strip_prefix(c).ok())
        .and_then(Path::to_str)
        .filter(|r| !r.is_empty())
        .unwrap_or(path);
    let n = relative.chars().count();
    if n <= SUBJECT_CHARS {
        relative.to_string()
    } else {
        let tail: String = relative.chars().skip(n - (SUBJECT_CHARS - 1)).collect();
        format!("…{tail}")
    }
}

/// A command as a failure names it: one line, cut. Only its start is cleaned (a heredoc may
/// carry a whole file).
fn command_subject(command: &str) -> String {
    let end = command
        .char_indices()
        .nth(SUBJECT_CHARS * 8)
        .map_or(command.len(), |(i, _)| i);
    cut(&sanitize(&command[..end], true), SUBJECT_CHARS)
}

/// Input keys that name what a tool acts on.
const TARGET_KEYS: &[&str] = &[
    "id", "path", "file", "url", "uri", "name", "repo", "owner", "number", "issue", "pull",
    "project", "table", "key", "branch", "page", "channel",
];

/// What a tool's input names as its target, for tools other than Bash and the file tools (an
/// MCP tool's `path`, `url`, `issue_number`...): the values of its identifying keys, or the
/// whole input when it has none; at most [`SUBJECT_CHARS`] characters.
fn target_of(input: &str) -> Option<String> {
    let serde_json::Value::Object(map) = serde_json::from_str(input).ok()? else {
        return None;
    };
    let ids: Vec<String> = map
        .iter()
        .filter(|(k, _)| {
            let k = k.to_ascii_lowercase();
            TARGET_KEYS.iter().any(|id| k.contains(id))
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let target = if ids.is_empty() {
        serde_json::Value::Object(map).to_string()
    } else {
        ids.join(" ")
    };
    Some(cut(&target, SUBJECT_CHARS))
}

/// Pushes `item` to a small list of recent items, forgetting the oldest past `cap`.
fn remember<T>(list: &mut VecDeque<T>, item: T, cap: usize) {
    list.push_back(item);
    if list.len() > cap {
        list.pop_front();
    }
}

impl ToolLog {
    /// The pull requests a Bash call named (`gh pr …`, `git log`'s merges), as
    /// [`prs::in_command`] reads them; only a call whose command or output can name one is
    /// read.
    fn pull_requests(
        &mut self,
        command: Option<&str>,
        raw: &str,
        text: &dyn Fn() -> String,
        failed: bool,
    ) {
        let Some(command) = command else {
            return;
        };
        // `git log`'s merges, whatever the command (its shown start may not name git).
        let api = command.contains("gh api") && command.contains("/pulls/");
        if !command.contains("gh pr") && !api && !holds(raw, "Merge pull request #") {
            return;
        }
        for pr in prs::in_command(command, &text(), failed) {
            prs::remember(&mut self.prs, &pr, MAX_PRS);
        }
    }

    /// A verification's result: recorded as the last verification with its verdict, unless
    /// the command went to the background (it has not run yet) or a read of its output finds it
    /// still running. Whether it passed.
    fn judge(
        &mut self,
        tool: &str,
        subject: Option<&str>,
        raw: &str,
        text: &dyn Fn() -> String,
        failed: bool,
    ) -> bool {
        // A background run's output, as `TaskOutput` wraps it.
        let read_later = tool != "Bash";
        if holds(raw, BACKGROUND_STARTED) || (read_later && still_running(raw)) {
            return !failed;
        }
        let text = if tool == "Read" {
            unnumbered(&text())
        } else {
            text()
        };
        let output = if read_later {
            background_output(&text)
        } else {
            &text
        };
        let failed = failed || (read_later && exit_code_nonzero(&text));
        let verdict = verify::verdict(output, failed);
        self.verification = Some(Verification {
            command: subject.unwrap_or("Bash").to_string(),
            verdict: verdict.line,
            passed: verdict.passed,
        });
        verdict.passed
    }

    /// A pull request the client's `pr-link` record names.
    pub(super) fn pull_request(&mut self, pr: &str) {
        prs::remember(&mut self.prs, pr, MAX_PRS);
    }

    /// A `tool_use` block: counts the call, reads what its input says about files, commands
    /// or todos, and remembers it for its result. `cwd` is the session's directory then.
    pub(super) fn call(&mut self, block: &Block, cwd: Option<&str>) {
        let name = sanitize(block.name.as_deref().unwrap_or("tool"), true);
        let name = cut(&name, NAME_CHARS);
        self.counts.count(&name);
        let mut call = Call {
            tool: name,
            ..Call::default()
        };
        if let Some(input) = block.input.map(RawValue::get) {
            match call.tool.as_str() {
                "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => {
                    if let Some(path) = file_path(input) {
                        if path.contains(PLANS_DIR) && path.ends_with(".md") {
                            self.plan_written(&call.tool, input, &path);
                        }
                        call.subject = Some(shown_path(&path, cwd));
                        call.file = Some(path);
                    }
                }
                "Read" => {
                    let path = file_path(input);
                    call.subject = path.as_deref().map(|p| shown_path(p, cwd));
                    // Its target is the file as shown (a relative path and the absolute one
                    // under the session's directory alike): a later read of it, with a limit or
                    // by its absolute path, clears a read of it that failed.
                    call.target.clone_from(&call.subject);
                    // A background command's output file: its verdict is known here.
                    if let Some(command) = path.and_then(|p| self.background_command_of(&p)) {
                        call.verify = verify::is_verification(&command);
                        call.subject = Some(command);
                    }
                }
                "Bash" => {
                    let command = serde_json::from_str::<BashInput>(input)
                        .ok()
                        .and_then(|b| b.command);
                    if let Some(command) = command {
                        let start = command
                            .char_indices()
                            .nth(SUBJECT_CHARS * 8)
                            .map_or(command.as_ref(), |(i, _)| &command[..i]);
                        call.verify = verify::is_verification(start);
                        call.command = Some(start.to_string());
                        // A verification is named from its runner on (past `cd /long/path &&`).
                        let shown = if call.verify {
                            verify::from_runner(&command)
                        } else {
                            &command
                        };
                        call.subject = Some(command_subject(shown)).filter(|c| !c.is_empty());
                        // `tail -20 /tmp/…/c41d9a3.output`: a read of a background command's
                        // output, its verdict known here.
                        let reads = ["cat", "tail", "head", "less"]
                            .iter()
                            .any(|r| command.trim_start().starts_with(r));
                        if let Some(bg) = reads
                            .then(|| {
                                command
                                    .split_whitespace()
                                    .find_map(|w| self.background_command_of(w))
                            })
                            .flatten()
                        {
                            call.verify = verify::is_verification(&bg);
                            call.subject = Some(bg);
                            call.command = None;
                        }
                    }
                }
                "TaskOutput" | "BashOutput" => {
                    call.subject = self.background_subject(input);
                    // A background verification's output, read later, holds its verdict.
                    call.verify = call
                        .subject
                        .as_deref()
                        .is_some_and(|c| self.background.iter().any(|b| b.command == c))
                        && call.subject.as_deref().is_some_and(verify::is_verification);
                }
                "ExitPlanMode" => self.plan_written(&call.tool, input, ""),
                "TodoWrite" => call.todo = self.todos.write(input),
                "TaskCreate" => call.todo = self.todos.create(input),
                "TaskUpdate" => call.todo = self.todos.update(input),
                _ => call.target = target_of(input),
            }
        }
        let unpaired = match block.id.as_deref() {
            Some(id) => self.calls.insert(id, call),
            None => Some(call),
        };
        if let Some(call) = unpaired {
            self.unanswered(call);
        }
    }

    /// A call whose result will never be paired with it: its edit counts (its todo change
    /// waits in [`Todos`] and counts there).
    fn unanswered(&mut self, call: Call) {
        if let Some(file) = call.file {
            self.modified.push(file);
        }
    }

    /// A plan written in plan mode: `ExitPlanMode`'s input, or a plan file written (its path;
    /// its steps when written whole).
    fn plan_written(&mut self, tool: &str, input: &str, path: &str) {
        if !path.is_empty() {
            self.plan_file = Some(path.to_string());
        }
        if tool == "Edit" || tool == "MultiEdit" {
            return;
        }
        let Ok(plan) = serde_json::from_str::<PlanInput>(input) else {
            return;
        };
        if let Some(text) = plan.plan.or(plan.content) {
            if let Some(summary) = asks::written_plan(&text, PLAN_CHARS) {
                self.plan = Some(summary);
            }
        }
    }

    /// The background command whose output file is `path`.
    fn background_command_of(&self, path: &str) -> Option<String> {
        let path = path.trim_matches(|c| c == '"' || c == '\'');
        self.background
            .iter()
            .rev()
            .find(|b| b.file.as_deref() == Some(path))
            .map(|b| b.command.clone())
    }

    /// The command a `TaskOutput`/`BashOutput` call asks about, or its task id.
    fn background_subject(&self, input: &str) -> Option<String> {
        let ids = serde_json::from_str::<OutputInput>(input).ok()?;
        let id = ids.task_id.or(ids.bash_id).or(ids.shell_id)?;
        let command = self.background.iter().rev().find(|b| b.task == id);
        Some(match command {
            Some(b) => b.command.clone(),
            None => format!("task {}", cut(&sanitize(&id, true), 40)),
        })
    }

    /// A `tool_result` block: settles its call's edit or todo change, records a failure, or
    /// notes a command that went to the background.
    /// Whether `block` is the user's approval of a plan written in plan mode (a decision).
    pub(super) fn approves_plan(&mut self, block: &Block) -> bool {
        let id = block.tool_use_id.as_deref().unwrap_or_default();
        block.is_error != Some(true)
            && self
                .calls
                .get_mut(id)
                .is_some_and(|c| c.tool == "ExitPlanMode")
            && block
                .content
                .and_then(result_text)
                .is_some_and(|t| super::decisions::plan_approved(&t))
    }

    pub(super) fn result(&mut self, block: &Block) {
        let id = block.tool_use_id.as_deref().unwrap_or_default();
        let mut call = match self.calls.get_mut(id) {
            Some(call) => Call {
                tool: call.tool.clone(),
                subject: call.subject.clone(),
                file: call.file.take(),
                todo: call.todo.take(),
                verify: std::mem::take(&mut call.verify),
                command: call.command.take(),
                target: call.target.take(),
            },
            None => Call {
                tool: "tool".into(),
                ..Call::default()
            },
        };
        let failed = block.is_error == Some(true);
        let raw = block.content.map(RawValue::get).unwrap_or_default();
        let text = || block.content.and_then(result_text).unwrap_or_default();
        if let Some(file) = call.file.take().filter(|_| !failed) {
            self.modified.push(file);
        }
        if let Some(key) = call.todo {
            let text = text();
            // A TaskUpdate of an unknown task answers "Task not found" without `is_error`.
            let refused = call.tool == "TaskUpdate"
                && text.trim_start().starts_with("Task")
                && text.contains("not found");
            self.todos.settle(key, !failed && !refused, &text);
        }
        let subject = call.subject.as_deref();
        // A run the user refused never ran: it says nothing of the code, and the run before it
        // stays the last verification.
        let passed = if call.verify && !failures::rejected(raw) {
            self.judge(&call.tool, subject, raw, &text, failed)
        } else {
            !failed
        };
        if failed {
            if let Some(line) = failures::error_line(&text(), call.tool == "Bash") {
                let (target, run) = (call.target.as_deref(), call.command.as_deref());
                self.failures
                    .push_on(&call.tool, subject, &line, target, run);
            }
            if call.tool == "Bash" {
                self.pull_requests(call.command.as_deref().or(subject), raw, &text, true);
            }
            return;
        }
        self.cleared_by(&call, passed);
        match call.tool.as_str() {
            "Bash" if holds(raw, BACKGROUND_STARTED) => {
                let text = text();
                let task: String = text
                    .split_once(BACKGROUND_STARTED)
                    .map(|(_, rest)| {
                        rest.chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                            .take(40)
                            .collect()
                    })
                    .unwrap_or_default();
                let file = text
                    .split_once(OUTPUT_FILE)
                    .and_then(|(_, rest)| rest.split_whitespace().next())
                    .map(|f| f.trim_end_matches(['.', ',']))
                    .filter(|f| f.len() <= 4096)
                    .map(str::to_string);
                if let Some(command) = subject.filter(|_| !task.is_empty() || file.is_some()) {
                    let command = command.to_string();
                    remember(
                        &mut self.background,
                        Background {
                            task,
                            command,
                            file,
                        },
                        MAX_BACKGROUND,
                    );
                }
            }
            "TaskOutput" | "BashOutput" if holds(raw, "failed") => {
                if let Some(line) = failures::background_output(&text()) {
                    self.failures.push(BACKGROUND, subject, &line);
                }
            }
            "TaskGet" | "TaskList" => self.todos.learn_names(&text()),
            "ExitPlanMode" if holds(raw, PLAN_SAVED) => {
                let text = text();
                let file = text
                    .split_once(PLAN_SAVED)
                    .and_then(|(_, rest)| rest.lines().next())
                    .map(|f| cut(&sanitize(f.trim(), true), PATH_CHARS))
                    .filter(|f| f.contains(PLANS_DIR));
                if file.is_some() {
                    self.plan_file = file;
                }
            }
            _ => {}
        }
        if call.tool == "Bash" {
            self.pull_requests(call.command.as_deref().or(subject), raw, &text, false);
        }
    }

    /// A call that succeeded (`passed`: a verification's verdict too): earlier failures it
    /// fixed are history. The same command again or an edit of the same file; the same run in
    /// another form (piped, other flags, in a compound, the whole suite); another tool on the
    /// same target.
    fn cleared_by(&mut self, call: &Call, passed: bool) {
        let subject = call.subject.as_deref();
        let fixes = matches!(
            call.tool.as_str(),
            "Bash" | "Edit" | "MultiEdit" | "Write" | "NotebookEdit"
        );
        if let Some(subject) = subject.filter(|_| passed && fixes) {
            self.failures.resolve(subject);
        }
        let run = match call.tool.as_str() {
            "Bash" => call.command.as_deref(),
            "TaskOutput" | "BashOutput" if call.verify => subject,
            _ => None,
        };
        if let Some(run) = run.filter(|_| passed) {
            self.failures.resolve_runs(run, call.verify);
        }
        if let Some(target) = call.target.as_deref() {
            self.failures.resolve_target(&call.tool, target);
        }
    }

    /// A task a teammate's message says is done.
    pub(super) fn task_done(&mut self, id: &str) {
        self.todos.done(id);
    }

    /// A task's subject, from a message assigning it (the lead's `task_assignment`).
    pub(super) fn task_named(&mut self, id: &str, subject: &str) {
        self.todos.name(id, subject);
    }

    /// A user message or queued command carrying `<task-notification>`s: each failed task,
    /// once.
    pub(super) fn notification(&mut self, text: &str) {
        for failed in failures::notifications(text) {
            if !failed.task.is_empty() && self.notified.contains(&failed.task) {
                continue;
            }
            let command = self
                .background
                .iter()
                .rev()
                .find(|b| !b.task.is_empty() && b.task == failed.task)
                .map(|b| b.command.clone());
            let tool = if command.is_some() {
                BACKGROUND
            } else {
                "background task"
            };
            self.failures.push(tool, command.as_deref(), &failed.line);
            remember(&mut self.notified, failed.task, MAX_BACKGROUND);
        }
    }

    /// A checkpoint with the fields this log fills: todos, files, tools and failures.
    pub(super) fn finish(self) -> Checkpoint {
        let ToolLog {
            counts,
            calls,
            mut modified,
            todos,
            failures,
            verification,
            prs,
            plan,
            plan_file,
            ..
        } = self;
        // Edits whose results never came: in flight when the compaction started.
        for call in calls.into_unanswered() {
            if let Some(file) = call.file {
                modified.push(file);
            }
        }
        let tools_used = counts
            .most_used(MAX_TOOLS)
            .into_iter()
            .map(|(name, count)| ToolCount { name, count })
            .collect();
        Checkpoint {
            todos: todos.finish(),
            files_modified: modified.newest_first(),
            tools_used,
            failures: failures.finish(),
            verification,
            prs,
            plan,
            plan_file,
            ..Checkpoint::default()
        }
    }
}

/// A `TaskOutput` result of a task not finished yet: it says nothing of how the run went.
fn still_running(raw: &str) -> bool {
    holds(raw, "<status>running</status>")
}

/// A `Read` result without the number the client puts before each line (`    12→…`, or a tab).
fn unnumbered(text: &str) -> String {
    text.lines()
        .map(|l| {
            let t = l.trim_start();
            let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            match t[digits..].strip_prefix(['→', '\t']) {
                Some(line) if digits > 0 => line,
                _ => l,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The output a `TaskOutput` result wraps (`<output>…</output>`), or all of `text`.
fn background_output(text: &str) -> &str {
    text.split_once("<output>").map_or(text, |(_, rest)| {
        rest.split("</output>").next().unwrap_or(rest)
    })
}

/// A `TaskOutput` result naming a non-zero exit code (`<exit_code>1</exit_code>`).
fn exit_code_nonzero(text: &str) -> bool {
    text.split_once("<exit_code>")
        .and_then(|(_, rest)| rest.split('<').next())
        .is_some_and(|code| code.trim() != "0" && !code.trim().is_empty())
}

/// The file an Edit, Write or `NotebookEdit` input names, sanitised and cut.
fn file_path(input: &str) -> Option<String> {
    let file = serde_json::from_str::<FileInput>(input).ok()?;
    let path = file.file_path.or(file.notebook_path)?;
    Some(cut(&sanitize(&normal_path(&path), true), PATH_CHARS))
}

/// `path` with its empty and `.` components gone (`a//b/./c` is `a/b/c`): one entry per file
/// however a tool spelt it. `..` stays (a link may make it mean something else).
fn normal_path(path: &str) -> Cow<'_, str> {
    let messy = path.contains("//") || path.contains("/./") || path.ends_with("/.");
    if !messy {
        return Cow::Borrowed(path);
    }
    // A leading `//` may name a network share: kept.
    let root = if path.starts_with("//") && !path.starts_with("///") {
        "//"
    } else if path.starts_with('/') {
        "/"
    } else {
        ""
    };
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let joined = parts.join("/");
    Cow::Owned(format!("{root}{joined}"))
}

#[cfg(test)]
mod tests;
