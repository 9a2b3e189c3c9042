//! Reading a transcript into a checkpoint: [`read_transcript`] scans the part after the newest
//! `compact_boundary` line by line, and a [`Builder`] keeps what the checkpoint needs from each:
//! the user's asks, the last assistant text, and (through [`ToolLog`]) what the tool calls and
//! results say. Everything kept is capped and a line costs time linear in its length, so a
//! transcript of any size or shape gives a small checkpoint in linear time (see [`bounded`]).
//!
//! An ask is a prompt the user typed, or a slash command given arguments (`/fix-issue 12`,
//! a skill), as `/name args`. The client's `last-prompt` records name the newest one too, which
//! matters after an auto-compaction: the prompt itself is then before the boundary. A prompt
//! typed while the agent was working is an ask in its place in time: 2.1.3x–2.1.4x store it only
//! as a `queue-operation` `enqueue` record. One-word acknowledgements are never asks, unless
//! they answer the question the agent's message ended on ("approved"): then they are, with the
//! question. Another agent's message (a peer's, a teammate's status ping) is never one. The
//! session's first substantive request is its goal; when the part read starts after a boundary,
//! the transcript's head is read for it too (bounded, see [`GOAL_SCAN_BYTES`]).

use std::borrow::Cow;
use std::collections::VecDeque;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::asks;
use super::block::{push_line, result_text, tag_text, Block};
use super::bounded;
use super::decisions;
use super::tools::ToolLog;
use super::{
    Checkpoint, ASK_CHARS, BRANCH_CHARS, CWD_CHARS, GIST_CHARS, GOAL_CHARS, MAX_ASKS,
    MAX_DECISIONS, MAX_QUEUED, QUEUED_CHARS,
};
use crate::text::{cut, holds, sanitize};
use crate::transcript::{Entry, EntryMessage};

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

/// An ask as the user gave it, cleaned, or `None` for wrappers, slash commands without
/// arguments, acknowledgements and empty text.
pub fn clean_prompt(text: &str) -> Option<String> {
    prompt_body(text).and_then(|body| ask_text(&body, ASK_CHARS))
}

/// The text of an ask before it is cut: wrappers and reminders removed, a slash command as
/// `/name args`. `None` when it is no ask.
fn prompt_body(text: &str) -> Option<Cow<'_, str>> {
    let stripped = strip_tag(text, "system-reminder");
    let t = stripped.trim();
    if t.starts_with("<command-") {
        return command_ask(t).map(Cow::Owned);
    }
    // Several teammate messages in one record: each read, the lead's kept (a peer's first
    // message does not drop the lead's instruction after it).
    if let Some(parts) = asks::bundled(t) {
        let kept: Vec<String> = parts
            .into_iter()
            .filter(|p| !asks::from_peer(p))
            .filter_map(asks::teammate_message)
            .collect();
        return (!kept.is_empty()).then(|| Cow::Owned(kept.join("\n")));
    }
    if t.is_empty()
        || WRAPPERS.iter().any(|w| t.starts_with(w))
        || asks::is_ack(t)
        || asks::from_peer(t)
    {
        return None;
    }
    Some(Cow::Owned(t.to_string()))
}

/// A slash command given arguments, as `/name args`.
fn command_ask(text: &str) -> Option<String> {
    let name = tag_text(text, "command-name")?.trim();
    let args = tag_text(text, "command-args").unwrap_or_default().trim();
    slash_ask(name, args)
}

/// `/name args`, unless it has no arguments or is one of the client's own commands.
fn slash_ask(name: &str, args: &str) -> Option<String> {
    let bare = name.trim_start_matches('/');
    if args.is_empty() || bare.is_empty() || NOT_ASKS.contains(&bare) {
        return None;
    }
    Some(format!("/{bare} {args}"))
}

/// A prompt typed while the agent was working, as the queue holds it: plain text, or a slash
/// command as typed (`/model`). Machine text in the queue (a background task's JSON, a
/// notification) is not an ask.
fn queued_body(text: &str) -> Option<Cow<'_, str>> {
    let t = text.trim();
    if t.starts_with('{') || t.starts_with('<') {
        return None;
    }
    if let Some(command) = t.strip_prefix('/') {
        let (name, args) = command
            .split_once(char::is_whitespace)
            .unwrap_or((command, ""));
        // `/Users/me/file is broken` is text.
        if !name.contains('/') {
            return slash_ask(name, args.trim()).map(Cow::Owned);
        }
    }
    prompt_body(t)
}

/// `text` on one line, sanitised, and if long its head and its tail (a plan: its steps): the
/// instruction at the end of a long paste survives.
fn ask_text(text: &str, max: usize) -> Option<String> {
    asks::shorten(text, max)
}

/// Whether two asks are the same prompt: the client's `last-prompt` cuts a long one after 200
/// characters, and a checkpoint cuts what it keeps, so only their starts are compared.
pub fn same_ask(a: &str, b: &str) -> bool {
    const START: usize = 100;
    a.chars().take(START).eq(b.chars().take(START))
}

/// The question a short reply answers, at most.
const QUESTION_CHARS: usize = 120;

/// A short reply as typed ("approved", "yes"): an acknowledgement that is not a wrapper.
fn short_reply(text: &str) -> Option<String> {
    let stripped = strip_tag(text, "system-reminder");
    let t = stripped.trim();
    let typed = !t.is_empty() && !t.starts_with('<') && !t.starts_with('[') && asks::is_ack(t);
    typed.then(|| cut(&sanitize(t, true), 40))
}

/// What Claude Code writes beside each `ToolSearch` result, in the same user message.
const TOOL_LOADED: &str = "Tool loaded.";

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

/// A `queue-operation` record: a prompt typed while the agent worked (`enqueue`), or the
/// queue changing (`remove`, `dequeue`, `popAll`).
#[derive(Deserialize)]
struct QueueOperation<'a> {
    #[serde(borrow, default)]
    operation: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

/// A `pr-link` record: the client's note of a pull request the session made.
#[derive(Deserialize)]
struct PrLink {
    #[serde(rename = "prUrl", default)]
    url: Option<String>,
    #[serde(rename = "prNumber", default)]
    number: Option<u64>,
}

/// An ask in the timeline, and whether it was typed while the agent worked.
#[derive(Debug)]
struct Ask {
    text: String,
    queued: bool,
    /// A bare acknowledgement ("ok continue") kept only while it is the newest ask.
    ack: bool,
}

/// Accumulates a checkpoint from transcript lines, oldest first. A Claude Code transcript is
/// fed a line at a time ([`Builder::feed`]); another client's reader (Codex's rollout, see
/// [`super::rollout`]) feeds the same steps through the client-neutral methods (`prompt`,
/// `reply`, `tool_call`, `tool_result`, `place`, `context_tokens`).
#[derive(Debug, Default)]
pub(super) struct Builder {
    asks: VecDeque<Ask>,
    /// The user's answers to the agent's questions, oldest first (`decisions`).
    decisions: VecDeque<String>,
    /// The session's first substantive request, when the part read holds it.
    goal: Option<String>,
    /// Whether an ask was seen yet: the goal is only the first one.
    asked: bool,
    tools: ToolLog,
    last_assistant: Option<String>,
    /// A (non-queued) ask came after `last_assistant`.
    gist_before_ask: bool,
    /// The question the agent's last message ended on, while the user has not replied.
    question: Option<String>,
    /// The last line of the agent's last message, while the user has not replied.
    reply_end: Option<String>,
    tokens: Option<u64>,
    cwd: Option<String>,
    git_branch: Option<String>,
    client_version: Option<String>,
    /// The agent is in a turn ctxguard's own Stop nudge made it take (to save before an idle
    /// compaction): its reply is not the gist, which stays what the agent last told the user.
    forced_turn: bool,
}

/// Is this line ctxguard's Stop nudge, as the client records it: an attachment of a Stop
/// hook's additional context (2.1.330), or an older `decision: block`'s "Stop hook feedback"?
fn is_own_stop_nudge(line: &str, kind: Option<&str>) -> bool {
    // The kind first: most lines are of neither, and a line is searched whole.
    let ours = || holds(line, "ctxguard: ");
    match kind {
        Some("attachment") => {
            ours()
                && holds(line, "\"hook_additional_context\"")
                && holds(line, "\"hookEvent\":\"Stop\"")
        }
        Some("user") => ours() && holds(line, "Stop hook feedback:\\nctxguard: "),
        _ => false,
    }
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
        // `HEAD` names no branch: the client writes it for a folder that is not a git
        // repository (and git for a detached head).
        self.place(entry.cwd.as_deref(), entry.git_branch.as_deref());
        if let Some(version) = entry.version.as_deref().filter(|v| !v.is_empty()) {
            self.client_version = Some(cut(version, 40));
        }
        if is_own_stop_nudge(line, entry.kind.as_deref()) {
            self.forced_turn = true;
            return;
        }
        match entry.kind.as_deref() {
            Some("last-prompt") => return self.last_prompt(line),
            Some("queue-operation") => return self.enqueued(line),
            Some("pr-link") => return self.pr_link(line),
            Some("attachment") if holds(line, NOTIFICATION) => return self.queued(line),
            _ => {}
        }
        let is_reply = entry.is_main_reply();
        let Some(message) = entry.message else {
            return;
        };
        if entry.kind.as_deref() == Some("user") {
            if decisions::may_answer(line) {
                for decision in decisions::in_line(line) {
                    self.decided(decision);
                }
            }
            let is_prompt = entry.is_meta != Some(true)
                && entry.is_compact_summary != Some(true)
                && entry.transcript_only != Some(true);
            self.user(message, is_prompt);
        } else if is_reply {
            self.assistant(message);
        }
    }

    /// A progress record, by the fields [`Builder::feed`] reads from one (for a caller that
    /// parsed the line already, [`progress`]): where the session runs and the client's version,
    /// unless it is a subagent's.
    fn progress(
        &mut self,
        sidechain: Option<bool>,
        cwd: Option<&str>,
        branch: Option<&str>,
        version: Option<&str>,
    ) {
        if sidechain == Some(true) {
            return;
        }
        self.place(cwd, branch);
        if let Some(version) = version.filter(|v| !v.is_empty()) {
            self.client_version = Some(cut(version, 40));
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
        let mut beside_result = false;
        bounded::for_each(raw, |block: Block| match block.kind.as_deref() {
            Some("text") => {
                // The client's own word beside a tool search's result (2.1.70), no request.
                let client =
                    beside_result && block.text.as_deref().map(str::trim) == Some(TOOL_LOADED);
                if let Some(text) = block.text.as_deref().filter(|_| !client) {
                    push_line(&mut typed, text);
                }
            }
            Some("tool_result") => {
                beside_result = true;
                if self.tools.approves_plan(&block) {
                    self.decided(decisions::PLAN_DECISION.to_string());
                }
                self.tools.result(&block);
            }
            _ => {}
        });
        if let Some(typed) = typed {
            self.typed(&typed, is_prompt);
        }
    }

    /// A `queue-operation` record: an `enqueue` of a prompt typed while the agent worked is an
    /// ask; machine text in the queue is not.
    fn enqueued(&mut self, line: &str) {
        let Ok(op) = serde_json::from_str::<QueueOperation>(line) else {
            return;
        };
        if op.operation.as_deref() != Some("enqueue") {
            return;
        }
        let Some(text) = op.content.and_then(result_text) else {
            return;
        };
        if let Some(body) = queued_body(&text) {
            self.ask(&body, true);
        }
    }

    /// A `pr-link` record: the pull request's URL (or number).
    fn pr_link(&mut self, line: &str) {
        let Ok(link) = serde_json::from_str::<PrLink>(line) else {
            return;
        };
        // The URL up to any whitespace: the rest of a hostile value is not read as a number
        // or a state.
        let url = link
            .url
            .as_deref()
            .and_then(|u| u.split_whitespace().next())
            .map(|u| sanitize(u, true));
        let pr = match (url, link.number) {
            (Some(url), Some(n)) => format!("#{n} {url}"),
            (Some(url), None) => url,
            (None, Some(n)) => format!("#{n}"),
            (None, None) => return,
        };
        self.tools.pull_request(&pr);
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
        if let Some(body) = prompt_body(text) {
            let prompt = ask_text(&body, ASK_CHARS).unwrap_or_default();
            if !self.asks.iter().any(|a| same_ask(&a.text, &prompt)) {
                self.ask(&body, false);
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
            self.context_tokens(tokens);
        }
        let Some(content) = message.content else {
            return;
        };
        bounded::for_each(content.get(), |block: Block| match block.kind.as_deref() {
            Some("text") => {
                if let Some(text) = block.text.as_deref() {
                    self.reply(text);
                }
            }
            Some("tool_use") => self.tool_call(&block),
            _ => {}
        });
    }

    /// A decision of the user's, the newest kept.
    fn decided(&mut self, decision: String) {
        self.decisions.retain(|d| *d != decision);
        self.decisions.push_back(decision);
        if self.decisions.len() > MAX_DECISIONS {
            self.decisions.pop_front();
        }
    }

    /// A prompt the user sent (wrappers, notifications and acknowledgements are sorted out here).
    pub(super) fn prompt(&mut self, text: &str) {
        self.typed(text, true);
    }

    /// The agent's text to the user.
    pub(super) fn reply(&mut self, text: &str) {
        if let Some(gist) = gist(text).filter(|_| !self.forced_turn) {
            self.last_assistant = Some(gist);
            self.gist_before_ask = false;
        }
        self.question = asks::question(text, QUESTION_CHARS);
        self.reply_end = asks::last_line(text, QUESTION_CHARS);
    }

    /// A tool call, as a `tool_use` block.
    pub(super) fn tool_call(&mut self, block: &Block) {
        self.question = None;
        self.reply_end = None;
        self.tools.call(block, self.cwd.as_deref());
    }

    /// A tool call's result, as a `tool_result` block.
    pub(super) fn tool_result(&mut self, block: &Block) {
        self.tools.result(block);
    }

    /// A pull request the session made or changed, as the checkpoint keeps it (`#N (state)
    /// URL`): what a Codex GitHub app's tool answered.
    pub(super) fn pull_request(&mut self, pr: &str) {
        self.tools.pull_request(pr);
    }

    /// Where the session runs: its directory and branch, when known.
    pub(super) fn place(&mut self, cwd: Option<&str>, branch: Option<&str>) {
        if let Some(cwd) = cwd.filter(|c| !c.is_empty()) {
            self.cwd = Some(cut(cwd, CWD_CHARS));
        }
        if let Some(branch) = branch.filter(|b| !b.is_empty() && *b != "HEAD") {
            self.git_branch = Some(cut(branch, BRANCH_CHARS));
        }
    }

    /// The tokens in context after the newest request.
    pub(super) fn context_tokens(&mut self, tokens: u64) {
        if tokens > 0 {
            self.tokens = Some(tokens);
        }
    }

    /// Whether the session's first ask was seen: the goal is known.
    pub(super) fn has_goal(&self) -> bool {
        self.asked
    }

    pub(super) fn goal(&self) -> Option<&str> {
        self.goal.as_deref()
    }

    pub(super) fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }

    pub(super) fn branch(&self) -> Option<&str> {
        self.git_branch.as_deref()
    }

    /// The checkpoint body (everything but `id` and `meta`) and what the hook fills `meta` from.
    pub(super) fn finish(self) -> Reading {
        let queued = self
            .asks
            .iter()
            .filter(|a| a.queued)
            .map(|a| a.text.clone())
            .collect();
        let tools = self.tools.finish();
        Reading {
            body: Checkpoint {
                goal: self.goal,
                asks: self.asks.into_iter().map(|a| a.text).collect(),
                decisions: self.decisions.into(),
                queued,
                last_assistant: self.last_assistant,
                gist_before_ask: self.gist_before_ask,
                ..tools
            },
            tokens: self.tokens,
            cwd: self.cwd,
            git_branch: self.git_branch,
            client_version: self.client_version,
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
    /// The version of the client that wrote the newest line that names one.
    pub client_version: Option<String>,
}

/// The gist of an assistant message: all of it when short, else its start and, weighted, its end,
/// where conclusions and next steps usually are. Only those two ends are cleaned.
fn gist(text: &str) -> Option<String> {
    const HEAD: usize = 150;
    let n = text.chars().count();
    let clean = if n <= GIST_CHARS * 4 {
        sanitize(text, true)
    } else {
        let head: String = text.chars().take(GIST_CHARS).collect();
        let tail: String = text.chars().skip(n - GIST_CHARS * 2).collect();
        format!("{} … {}", sanitize(&head, true), sanitize(&tail, true))
    };
    if clean.is_empty() {
        return None;
    }
    Some(super::asks::ends(&clean, GIST_CHARS, GIST_CHARS - HEAD - 1))
}

mod asking;
mod progress;
mod read;
#[cfg(test)]
mod tests;

pub(super) use read::read_claude_until;
