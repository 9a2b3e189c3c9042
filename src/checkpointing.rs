//! Taking a checkpoint, as `PreCompact` does at a compaction and `SessionEnd` at a session's end:
//! the checkpoint from the hook input, the transcript's reading and the marker, the memories
//! saved since the previous one, what it carries forward from that one, and the session's entry
//! in its directory's index.

use std::path::Path;

use anyhow::Result;
use chrono::{DateTime, Utc};

use crate::checkpoint::{self, Checkpoint, Meta, Reading, Todo};
use crate::config::Config;
use crate::diag::Diag;
use crate::index;
use crate::input::HookInput;
use crate::marker::Marker;
use crate::memory;
use crate::paths::Paths;
use crate::text::{cut, sanitize};
use crate::usage;

/// The checkpoint for this compaction (or session end), from the hook input, what the transcript gave (or why it
/// could not be read), and the session's marker.
pub fn decide(
    input: &HookInput,
    reading: Result<Reading, String>,
    marker: &Marker,
    id: String,
    previous: Option<String>,
    config: &Config,
    now: DateTime<Utc>,
) -> Checkpoint {
    let (body, tokens, cwd, branch, error) = match reading {
        Ok(r) => (r.body, r.tokens, r.cwd, r.git_branch, None),
        Err(e) => (Checkpoint::default(), None, None, None, Some(e)),
    };
    let tokens_before = tokens.or(marker.tokens);
    let window = marker.window.or_else(|| {
        Some(usage::window(
            config.window_tokens,
            marker.reported_window,
            tokens_before,
        ))
    });
    let instructions = sanitize(&input.custom_instructions, false);
    let cwd = if input.cwd.is_empty() {
        cwd.unwrap_or_default()
    } else {
        input.cwd.clone()
    };
    Checkpoint {
        id,
        meta: Meta {
            session_id: input.session_id.clone(),
            cwd,
            git_branch: branch,
            trigger: cut(&sanitize(&input.trigger, true), 20),
            custom_instructions: (!instructions.trim().is_empty())
                .then(|| cut(instructions.trim(), 2000)),
            tokens_before,
            window,
            cycle: marker.cycle,
            compaction: marker.compactions + 1,
            created_at: Some(now),
            previous,
            transcript_path: input.transcript_path.clone(),
            transcript_error: error,
            nudges: cycle_nudges(marker),
            // Set by `PreCompact` once it knows what it prints.
            facts_chars: 0,
        },
        ..body
    }
}

/// The nudges of the marker's cycle, oldest first (the trigger's, the critical one, the idle
/// one), each with the usage it was given at. A marker written before `cycle_nudges` existed
/// knows only the idle one and the newest of the others.
fn cycle_nudges(marker: &Marker) -> Vec<String> {
    let this_cycle = |n: &&crate::marker::LastNudge| marker.compacted_at.is_none_or(|c| n.at > c);
    let mut nudges: Vec<&crate::marker::LastNudge> = if marker.cycle_nudges.is_empty() {
        marker
            .idle_nudge
            .iter()
            .chain(marker.last_nudge.iter().filter(|n| !n.idle))
            .filter(this_cycle)
            .collect()
    } else {
        marker.cycle_nudges.iter().filter(this_cycle).collect()
    };
    nudges.sort_by_key(|n| n.at);
    nudges
        .iter()
        .map(|n| {
            let level = if n.idle {
                "idle"
            } else if n.critical {
                "critical"
            } else {
                "normal"
            };
            let tokens = n.tokens.map_or("?".into(), usage::human);
            format!("{level} {tokens}")
        })
        .collect()
}

/// Records in `cp`, read from the part of the transcript since the `previous` checkpoint, the
/// memories the agent saved in Claude Code's memory folder `dir` meanwhile that a recovery block
/// will show (read from `places` as it reads them): never carried forward, so a block shows a
/// saved memory once, and again only when it is edited again.
pub fn note_saved_memories(
    cp: &mut Checkpoint,
    dir: Option<&Path>,
    previous: Option<&Checkpoint>,
    places: &memory::Places,
) {
    let since = previous.and_then(|p| p.meta.created_at);
    cp.memories_saved = dir
        .map(|dir| {
            memory::saved_since(
                dir,
                &cp.files_modified,
                since.map(std::time::SystemTime::from),
                places,
            )
        })
        .unwrap_or_default();
}

/// Asks carried forward from earlier compactions, at most.
const EARLIER_ASKS: usize = 3;
/// Modified files kept across compactions, at most.
const CARRIED_FILES: usize = 30;

/// Carries what must survive a second compaction from the previous checkpoint into `cp`, which
/// was read from the part of the transcript after it: the session's goal, the asks (the previous
/// ones become earlier asks), the open tasks when this part changed none, the last verification
/// when this part ran none, the pull requests and the modified files. `store` is the client's
/// own task store, when it keeps one: then it decides which tasks are open.
pub fn carry_forward(cp: &mut Checkpoint, previous: Option<&Checkpoint>, store: Option<Vec<Todo>>) {
    if let Some(prev) = previous {
        if prev.goal.is_some() {
            cp.goal.clone_from(&prev.goal);
        }
        if cp.verification.is_none() {
            cp.verification.clone_from(&prev.verification);
        }
        if cp.plan.is_none() && cp.plan_file.is_none() {
            cp.plan.clone_from(&prev.plan);
            cp.plan_file.clone_from(&prev.plan_file);
        }
        let mut prs = prev.prs.clone();
        for pr in &cp.prs {
            checkpoint::remember_pr(&mut prs, pr, checkpoint::MAX_PRS);
        }
        cp.prs = prs;
        let mut earlier: Vec<String> = prev.earlier_asks.clone();
        earlier.extend(prev.asks.iter().cloned());
        earlier.retain(|a| !cp.asks.contains(a));
        earlier.dedup();
        let skip = earlier.len().saturating_sub(EARLIER_ASKS);
        cp.earlier_asks = earlier.into_iter().skip(skip).collect();
        if cp.todos.is_empty() {
            cp.todos = prev.todos.iter().filter(|t| t.is_open()).cloned().collect();
        } else if cp.todos.iter().any(|t| t.id.is_some()) {
            carry_tasks(&mut cp.todos, &prev.todos);
        }
        for file in &prev.files_modified {
            if cp.files_modified.len() >= CARRIED_FILES {
                break;
            }
            if !cp.files_modified.contains(file) {
                cp.files_modified.push(file.clone());
            }
        }
    }
    if let Some(tasks) = store {
        let (open, done): (Vec<Todo>, Vec<Todo>) = tasks.into_iter().partition(Todo::is_open);
        cp.todos = open.into_iter().chain(done).collect();
    }
}

/// Tasks (`TaskCreate`/`TaskUpdate`) open before the previous compaction that the part read
/// since did not touch are still open: carried into `todos`, with their subjects. One the part
/// read changed keeps its new status, and its subject from before when it is known here only
/// by its id. A `TodoWrite` list is not carried into tasks: the newer mechanism wins.
fn carry_tasks(todos: &mut Vec<Todo>, previous: &[Todo]) {
    for old in previous.iter().filter(|t| t.is_open()) {
        let Some(id) = old.id.as_deref() else {
            continue;
        };
        match todos.iter_mut().find(|t| t.id.as_deref() == Some(id)) {
            Some(new) => {
                let by_id = new.content == format!("task #{id}");
                if by_id && old.content != new.content {
                    new.content.clone_from(&old.content);
                }
            }
            None => todos.push(old.clone()),
        }
    }
    let rank = |t: &Todo| match t.status.as_str() {
        "in_progress" => 0,
        "completed" => 2,
        _ => 1,
    };
    todos.sort_by_key(rank);
    todos.truncate(CARRIED_TODOS);
}

/// Todos kept across compactions, at most (as many as a checkpoint holds).
const CARRIED_TODOS: usize = 100;

/// The same checkpoint but for when it was written, under which name, after which one, and
/// what triggered it.
pub fn same_content(a: &Checkpoint, b: &Checkpoint) -> bool {
    let plain = |c: &Checkpoint| {
        let mut c = c.clone();
        c.id.clear();
        c.meta.created_at = None;
        c.meta.previous = None;
        c.meta.trigger.clear();
        c.meta.facts_chars = 0;
        c
    };
    plain(a) == plain(b)
}

/// Puts the session that wrote `cp` in its directory's index, for the next session's digest
/// (a failure costs that digest, never the checkpoint).
pub fn record_in_index(paths: &Paths, cp: &Checkpoint, diag: &mut Diag) {
    let at = cp.meta.created_at.unwrap_or_else(Utc::now);
    if let Err(e) = index::record(paths, &cp.meta.cwd, &cp.meta.session_id, at) {
        diag.note(format!("{e:#}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn todo(content: &str, status: &str) -> Todo {
        Todo {
            content: content.into(),
            status: status.into(),
            id: None,
        }
    }

    fn task(id: &str, content: &str, status: &str) -> Todo {
        Todo {
            id: Some(id.into()),
            ..todo(content, status)
        }
    }

    /// Issue 27: a task created before the first boundary and never updated is still open at
    /// the next compaction, with its subject; one closed since is not.
    #[test]
    fn open_tasks_carry_forward_until_closed() {
        let previous = Checkpoint {
            todos: vec![
                task("1", "Fix the parser", "in_progress"),
                task("2", "Deploy to Streamlit Cloud + smoke test", "pending"),
                task("3", "Write the docs", "pending"),
            ],
            ..Checkpoint::default()
        };
        let mut cp = Checkpoint {
            todos: vec![
                task("1", "task #1", "completed"),
                task("3", "task #3", "in_progress"),
                task("4", "Release", "pending"),
            ],
            ..Checkpoint::default()
        };
        carry_forward(&mut cp, Some(&previous), None);
        let shown: Vec<(&str, &str)> = cp
            .todos
            .iter()
            .map(|t| (t.content.as_str(), t.status.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("Write the docs", "in_progress"),
                ("Release", "pending"),
                ("Deploy to Streamlit Cloud + smoke test", "pending"),
                ("Fix the parser", "completed"),
            ]
        );
    }

    #[test]
    fn a_second_compaction_carries_asks_open_tasks_and_files_forward() {
        let previous = Checkpoint {
            id: "cp_001".into(),
            asks: vec!["build the parser".into(), "and the lexer".into()],
            earlier_asks: vec!["set up the repo".into()],
            todos: vec![todo("lexer", "completed"), todo("parser", "in_progress")],
            files_modified: vec!["/p/lexer.rs".into(), "/p/parser.rs".into()],
            ..Checkpoint::default()
        };
        // The part after the first compaction: one new ask, an edit, no task activity.
        let mut cp = Checkpoint {
            asks: vec!["now the tests".into()],
            files_modified: vec!["/p/tests.rs".into(), "/p/parser.rs".into()],
            ..Checkpoint::default()
        };
        carry_forward(&mut cp, Some(&previous), None);
        assert_eq!(cp.asks, ["now the tests"]);
        assert_eq!(
            cp.earlier_asks,
            ["set up the repo", "build the parser", "and the lexer"]
        );
        assert_eq!(cp.todos, [todo("parser", "in_progress")]);
        assert_eq!(
            cp.files_modified,
            ["/p/tests.rs", "/p/parser.rs", "/p/lexer.rs"]
        );

        // The client's own task store decides which tasks are open.
        let mut cp = Checkpoint::default();
        let store = vec![todo("parser", "completed"), todo("tests", "pending")];
        carry_forward(&mut cp, Some(&previous), Some(store));
        assert_eq!(
            cp.todos,
            [todo("tests", "pending"), todo("parser", "completed")]
        );

        // At most three earlier asks, the newest.
        let mut many = previous.clone();
        many.earlier_asks = (0..5).map(|i| format!("old {i}")).collect();
        let mut cp = Checkpoint::default();
        carry_forward(&mut cp, Some(&many), None);
        assert_eq!(
            cp.earlier_asks,
            ["old 4", "build the parser", "and the lexer"]
        );
    }
}
