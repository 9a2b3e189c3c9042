//! Mechanical checkpoints: what the agent was doing, taken from the transcript just before a
//! compaction, with no model and no network. This file is the checkpoint itself: its fields, the
//! caps that keep it small whatever the transcript, and [`load`]. Reading a transcript into one
//! is [`build`]'s job, with [`tools`] for tool calls, [`failures`] for what a failed call says,
//! [`todos`] for the todo list and the fixed-size collections of [`bounded`]; keeping
//! checkpoints on disk is [`store`]'s, and the compaction's summary beside one [`summary`]'s.
//!
//! Everything taken from the transcript is sanitised (no control characters or escape sequences)
//! and cut to size; tool output bodies are never kept, only one line of an error.

mod asks;
mod block;
mod bounded;
mod build;
pub mod chain;
mod decisions;
mod failures;
mod prs;
mod rollout;
mod runs;
mod store;
pub mod summary;
mod teammates;
mod todos;
mod tools;
mod verify;

use std::path::Path;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::files;

pub use asks::is_acknowledgement;
pub use build::{clean_prompt, same_ask, Reading};
pub use decisions::carried_decisions;
pub(crate) use prs::acted_on as pr_acted_on;
pub(crate) use prs::remember as remember_pr;
pub use rollout::is_codex_text;
pub use store::{checkpoints_dir, CheckpointStore};

/// Reads the part of a session's file after its newest compaction, forward, in bounded memory
/// (and when that part is not the whole file, its head for the session's goal): a Claude Code
/// transcript, or a Codex rollout, by its name.
#[cfg(test)]
pub fn read_transcript(path: &Path) -> Result<Reading> {
    read_transcript_until(path, u64::MAX)
}

/// [`read_transcript`] as if the file ended at byte `end`: at a boundary that landed after its
/// checkpoint (a summary prepared ahead), the part between the previous boundary and this one.
pub fn read_transcript_until(path: &Path, end: u64) -> Result<Reading> {
    if crate::rollout::is_rollout(path) {
        rollout::read_rollout_until(path, end)
    } else {
        build::read_claude_until(&mut Opened::open(path)?, end)
    }
}

/// [`read_transcript_until`] on a transcript a hook already opened for this call (Claude
/// Code's: a rollout is read by its own reader).
pub fn read_opened_until(opened: &mut Opened, end: u64) -> Result<Reading> {
    if crate::rollout::is_rollout(&opened.path) {
        return rollout::read_rollout_until(&opened.path, end);
    }
    build::read_claude_until(opened, end)
}

/// A Claude Code transcript opened once for a hook call: what reads it whole (the checkpoint,
/// the rewind tree of the part after its newest boundary, that boundary) shares the one open
/// file and its one forward read: the tree is built at most once, and a reading taken ahead for
/// the boundary ([`Opened::newest_boundary_time`]) is the checkpoint's.
pub struct Opened {
    path: std::path::PathBuf,
    file: std::fs::File,
    len: u64,
    /// The tree of the part after the newest boundary, for the file as if it ended at `.0`.
    tree: Option<(u64, chain::Tree)>,
    /// For the file as if it ended at `.0`: where the part after its newest boundary starts
    /// (`0`: it holds none), and when that boundary was written.
    newest: Option<(u64, Segment)>,
    /// The checkpoint's reading of the file as if it ended at `.0`, taken ahead.
    reading: Option<(u64, Reading)>,
}

/// How much of a transcript's end is searched back for its newest boundary before the part
/// after it is read, at least: most compactions are recent. Past that, the file is read forward
/// from its start once, and what was read is dropped at each boundary met
/// ([`build::read_claude_until`]): a transcript with no boundary is not read twice.
const TAIL_MIN: u64 = 8 * 1024 * 1024;

/// Where the part after a transcript's newest boundary starts (`0`: it holds none), and when
/// that boundary was written.
#[derive(Debug, Clone, Copy)]
struct Segment {
    start: u64,
    boundary_at: Option<DateTime<Utc>>,
}

impl Segment {
    fn of(newest: Option<crate::transcript::NewestBoundary>, end: u64) -> Segment {
        Segment {
            start: newest.map_or(0, |b| b.after.min(end)),
            boundary_at: newest.and_then(|b| b.at),
        }
    }
}

impl Opened {
    pub fn open(path: &Path) -> Result<Opened> {
        let (file, len) = files::open_regular(path, "transcript")?;
        Ok(Opened {
            path: path.to_path_buf(),
            file,
            len,
            tree: None,
            newest: None,
            reading: None,
        })
    }

    /// When the newest boundary was written, if the file holds one: found by the checkpoint's
    /// read of the whole file, taken here once and kept for it.
    pub fn newest_boundary_time(&mut self) -> Option<DateTime<Utc>> {
        if self.newest_at(self.len).is_none() {
            let reading = build::read_claude_until(self, u64::MAX).ok()?;
            self.reading = Some((self.len, reading));
        }
        self.newest_at(self.len).and_then(|s| s.boundary_at)
    }

    /// The part after the newest boundary of the file as if it ended at `end` (`end` within
    /// it), when it was found already.
    fn newest_at(&self, end: u64) -> Option<Segment> {
        self.newest.filter(|(at, _)| *at == end).map(|(_, s)| s)
    }

    /// Records the newest boundary of the file as if it ended at `end`, found by a read.
    pub(crate) fn found(&mut self, end: u64, newest: Option<crate::transcript::NewestBoundary>) {
        let end = self.len.min(end);
        self.newest = Some((end, Segment::of(newest, end)));
    }

    /// The reading taken ahead of the file as if it ended at `end`, once.
    pub(crate) fn take_reading(&mut self, end: u64) -> Option<Reading> {
        let end = self.len.min(end);
        match self.reading.take() {
            Some((at, reading)) if at == end => Some(reading),
            other => {
                self.reading = other;
                None
            }
        }
    }

    /// Where the part after the newest boundary starts, the file taken as ending at `end`, when
    /// it is known or the file's end holds that boundary (searched back at most a sixteenth of
    /// the file, [`TAIL_MIN`] at least); `None`: the file is to be read from its start.
    pub(crate) fn known_start(&mut self, end: u64) -> Result<Option<u64>> {
        let end = self.len.min(end);
        if let Some(segment) = self.newest_at(end) {
            return Ok(Some(segment.start));
        }
        let tail = (end / 16).max(TAIL_MIN);
        let found = crate::transcript::newest_boundary_in(&mut self.file, end, tail)
            .with_context(|| format!("reading transcript {}", self.path.display()))?;
        if found.is_none() && tail < end {
            return Ok(None);
        }
        let segment = Segment::of(found, end);
        self.newest = Some((end, segment));
        Ok(Some(segment.start))
    }

    /// Where the part after the newest boundary starts, the file taken as ending at `end`
    /// (found once).
    pub(crate) fn start(&mut self, end: u64) -> Result<u64> {
        let end = self.len.min(end);
        if let Some(segment) = self.newest_at(end) {
            return Ok(segment.start);
        }
        let found = crate::transcript::newest_boundary_in(&mut self.file, end, u64::MAX)
            .with_context(|| format!("reading transcript {}", self.path.display()))?;
        let segment = Segment::of(found, end);
        self.newest = Some((end, segment));
        Ok(segment.start)
    }

    /// The tree of that part, when it was built already.
    pub(crate) fn built(&self, end: u64) -> Option<&chain::Tree> {
        let end = self.len.min(end);
        self.tree
            .as_ref()
            .filter(|(at, _)| *at == end)
            .map(|(_, t)| t)
    }

    /// Keeps the tree of that part, built while reading it.
    pub(crate) fn keep(&mut self, end: u64, tree: chain::Tree) {
        self.tree = Some((self.len.min(end), tree));
    }

    /// The tree of the part after the newest boundary, the file taken as ending at `end`
    /// (built once).
    pub fn tree(&mut self, end: u64) -> Result<&chain::Tree> {
        use std::io::{Seek, SeekFrom};
        let end = self.len.min(end);
        if self.built(end).is_none() {
            let start = self.start(end)?;
            let context = || format!("reading transcript {}", self.path.display());
            self.file
                .seek(SeekFrom::Start(start))
                .with_context(context)?;
            let tree = chain::tree_of(std::io::Read::take(&mut self.file, end - start))
                .with_context(context)?;
            self.keep(end, tree);
        }
        Ok(self.built(end).expect("built above"))
    }
}

// What a checkpoint holds at most, whatever the transcript: the recovery block shows a few
// thousand characters of it, and the file stays tens of KB even with every list full.
/// Asks typed at the prompt, the newest.
const MAX_ASKS: usize = 3;
const ASK_CHARS: usize = 200;
/// Prompts typed while the agent was working (queued), the newest, each kept short.
const MAX_QUEUED: usize = 5;
/// The user's answers to the agent's questions, the newest.
const MAX_DECISIONS: usize = 4;
const QUEUED_CHARS: usize = 160;
/// A plan written in plan mode: its title and step headings.
const PLAN_CHARS: usize = 600;
/// The session's first request: room for a plan's step headings.
const GOAL_CHARS: usize = 540;
pub(crate) const MAX_PRS: usize = 5;
const PR_CHARS: usize = 200;
const MAX_TODOS: usize = 100;
const TODO_CHARS: usize = 200;
const STATUS_CHARS: usize = 20;
const MAX_FILES: usize = 30;
const PATH_CHARS: usize = 300;
const MAX_TOOLS: usize = 30;
const NAME_CHARS: usize = 80;
const MAX_FAILURES: usize = 5;
/// A subject, ` → `, a line of the error and a repeat count.
const FAILURE_CHARS: usize = 280;
/// The last assistant message: its start and, weighted, its end (conclusions, next steps).
const GIST_CHARS: usize = 600;
/// Linux's `PATH_MAX`: a real working directory is never cut (it is matched against a later
/// session's).
const CWD_CHARS: usize = 4096;
const BRANCH_CHARS: usize = 256;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Checkpoint {
    pub id: String,
    pub meta: Meta,
    /// The session's first substantive request, its goal: found at its first checkpoint (from
    /// the transcript's start) and carried forward.
    pub goal: Option<String>,
    /// The last real user prompts, oldest first: typed ones, and those typed while the agent
    /// was working (queued), in their place in time.
    pub asks: Vec<String>,
    /// The user's answers to the agent's questions (`question → answer`) and a plan approved in
    /// plan mode, in the part read, oldest first.
    pub decisions: Vec<String>,
    /// Decisions made before the previous compaction that still stand, oldest first: as many as
    /// `decisions` leaves of [`MAX_DECISIONS`].
    pub earlier_decisions: Vec<String>,
    /// Which of `asks` were typed while the agent was working.
    pub queued: Vec<String>,
    /// Asks carried forward from before the previous compaction, oldest first.
    pub earlier_asks: Vec<String>,
    /// The newest todo list, open items first.
    pub todos: Vec<Todo>,
    /// Files whose edits succeeded (or were still in flight), absolute as the tools named
    /// them, newest first. Files only read are not kept: after a compaction the client attaches
    /// the ones read last itself.
    pub files_modified: Vec<String>,
    /// Most used first.
    pub tools_used: Vec<ToolCount>,
    /// Oldest first.
    pub failures: Vec<Failure>,
    pub last_assistant: Option<String>,
    /// `last_assistant` came before the newest ask: the agent had not answered it in text yet
    /// (a compaction in the middle of its turn), so that message is not its answer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gist_before_ask: bool,
    /// The last test, build, lint or type check and how it went.
    pub verification: Option<Verification>,
    /// The plan the agent wrote in plan mode (its title and steps), when it wrote one.
    pub plan: Option<String>,
    /// Where the client keeps that plan (`~/.claude/plans/…`), when it says.
    pub plan_file: Option<String>,
    /// Pull requests the session created or looked at (`#N (state) URL`), oldest first.
    pub prs: Vec<String>,
    /// Memory files the agent saved since the previous checkpoint in Claude Code's memory
    /// folder (its `MEMORY.md` index aside), absolute, newest first: the block after the
    /// compaction shows their contents, which the client does not load itself.
    pub memories_saved: Vec<String>,
    /// Items left out of the recovery block because the compaction's own summary names them
    /// verbatim (set when rendering; never stored).
    #[serde(skip)]
    pub named_in_summary: usize,
    /// The current contents of `memories_saved`, read safely when rendering (never stored).
    #[serde(skip)]
    pub saved_contents: Vec<Memory>,
}

/// Saved memories a checkpoint records at most, newest first.
pub const MAX_SAVED: usize = 8;

/// Who wrote a memory file, as far as ctxguard can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Under the user's home directory and outside the project: the user's (or the agent's) own.
    User,
    /// Inside the project: it may come from a cloned repository, so it is data, not instructions.
    Project,
}

/// A memory file to show after the checkpoint (a saved memory it recorded, or one of the
/// memory files a recovery shows): sanitised, bounded text.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    /// Where it came from, sanitised to one line (`~/...` or project-relative).
    pub label: String,
    pub content: String,
    pub trust: Trust,
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
    /// The nudges this cycle gave before the compaction (`idle 301k`, `normal 930k`,
    /// `critical 955k`), oldest first: what `log` shows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nudges: Vec<String>,
    /// How many characters of facts `PreCompact` printed for the summarizer with this
    /// checkpoint (none on a manual `/compact`, on Codex, with `summary_facts` off, for a client
    /// that does not take them): what the compaction's receipt reports.
    #[serde(skip_serializing_if = "is_zero")]
    pub facts_chars: usize,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Meta {
    /// Was this checkpoint written when the session ended (`SessionEnd`, trigger `end` or
    /// `end: <reason>`), not at a compaction?
    pub fn at_session_end(&self) -> bool {
        self.trigger.starts_with("end")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub content: String,
    pub status: String,
    /// The client's id of a task (`TaskCreate`/`TaskUpdate`), so a later checkpoint can tell
    /// which carried task a change closes; none for a `TodoWrite` list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl Todo {
    pub fn is_open(&self) -> bool {
        self.status != "completed"
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ToolCount {
    pub name: String,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub tool: String,
    /// What failed and how: `cargo test → test parser::precedence ... FAILED`, with
    /// ` (N times)` when it failed the same way again.
    pub error: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verification {
    /// The command, cut (`bun run test 2>&1 | tail -5`).
    pub command: String,
    /// Its verdict line: `14 doctests, 297 tests, 11 failures`, `All tests passed!`.
    pub verdict: String,
    pub passed: bool,
}

impl Checkpoint {
    /// Whether a later session's digest is worth taking from this checkpoint rather than from an
    /// older one: more than a single exchange (files changed, open tasks, two requests or more,
    /// a verification, a compaction).
    pub fn substantial(&self) -> bool {
        !self.files_modified.is_empty()
            || self.todos.iter().any(Todo::is_open)
            || self.asks.len() + self.earlier_asks.len() >= 2
            || self.verification.is_some()
            || self.meta.compaction > 0
            || self.tools_used.iter().map(|t| t.count).sum::<u64>() >= 5
    }
}

/// Reads a checkpoint file under the state root `root` (refusing a link at any directory between
/// them, and a path outside it); `Ok(None)` when it does not exist.
pub fn load(root: &Path, path: &Path) -> Result<Option<Checkpoint>> {
    match files::read_state_file_in(root, path, "checkpoint")? {
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("checkpoint {} is corrupt", path.display())),
        None => Ok(None),
    }
}

/// Where the receipt of the compaction a checkpoint was written for is kept: beside it.
pub fn receipt_path(checkpoint: &std::path::Path) -> std::path::PathBuf {
    checkpoint.with_extension("receipt.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every list full, every text at its length: what the caps promise about a file's size.
    #[test]
    fn a_full_checkpoint_stays_under_64_kib() {
        let text = |n: usize| "x".repeat(n);
        let cp = Checkpoint {
            id: "cp_999".into(),
            meta: Meta {
                cwd: text(CWD_CHARS),
                git_branch: Some(text(BRANCH_CHARS)),
                // The hook's own cut.
                custom_instructions: Some(text(2000)),
                ..Meta::default()
            },
            goal: Some(text(GOAL_CHARS)),
            asks: [
                vec![text(ASK_CHARS); MAX_ASKS],
                vec![text(QUEUED_CHARS); MAX_QUEUED],
            ]
            .concat(),
            queued: vec![text(QUEUED_CHARS); MAX_QUEUED],
            // A question, ` → ` and an answer (`decisions.rs`).
            decisions: vec![text(260); MAX_DECISIONS],
            // Carried forward by PreCompact into the room the part's own leave (none here).
            earlier_decisions: Vec::new(),
            // Carried forward by PreCompact, capped there.
            earlier_asks: vec![text(ASK_CHARS); MAX_ASKS],
            todos: vec![
                Todo {
                    content: text(TODO_CHARS),
                    status: text(STATUS_CHARS),
                    id: Some(text(40)),
                };
                MAX_TODOS
            ],
            files_modified: vec![text(PATH_CHARS); MAX_FILES],
            tools_used: vec![
                ToolCount {
                    name: text(NAME_CHARS),
                    count: u64::MAX
                };
                MAX_TOOLS
            ],
            failures: vec![
                Failure {
                    tool: text(NAME_CHARS),
                    error: text(FAILURE_CHARS)
                };
                MAX_FAILURES
            ],
            last_assistant: Some(text(GIST_CHARS)),
            gist_before_ask: true,
            verification: Some(Verification {
                command: text(failures::SUBJECT_CHARS),
                verdict: text(verify::VERDICT_CHARS),
                passed: false,
            }),
            prs: vec![text(PR_CHARS); MAX_PRS],
            plan: Some(text(PLAN_CHARS)),
            plan_file: Some(text(PATH_CHARS)),
            memories_saved: vec![text(PATH_CHARS); MAX_SAVED],
            named_in_summary: 0,
            saved_contents: Vec::new(),
        };
        let bytes = serde_json::to_vec_pretty(&cp).unwrap();
        assert!(bytes.len() < 64 * 1024, "{} bytes", bytes.len());
    }

    #[test]
    fn load_missing_is_none_and_corrupt_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cp_001.json");
        assert!(load(dir.path(), &path).unwrap().is_none());
        std::fs::write(&path, "{not json").unwrap();
        let err = format!("{:#}", load(dir.path(), &path).unwrap_err());
        assert!(
            err.contains("cp_001.json") && err.contains("corrupt"),
            "{err}"
        );
    }
}
