//! Taking a checkpoint, one way for every occasion ([`take`]): `PreCompact` at a compaction,
//! `SessionStart(compact)` on Codex at a compaction that bypassed `PreCompact`, the first hook
//! that can give context at a drop of context without a compaction, and `SessionEnd` at a
//! session's end. The checkpoint from the hook input, the transcript's reading and the marker,
//! the memories saved since the previous one, what it carries forward from that one, the
//! marker's transition, the session's entry in its directory's index and the daily log.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use chrono::{DateTime, Local, Utc};

use crate::checkpoint::{self, Checkpoint, CheckpointStore, Meta, Reading, Todo};
use crate::config::{Config, Env};
use crate::daily_log;
use crate::diag::Diag;
use crate::files;
use crate::index;
use crate::input::{Client, HookInput};
use crate::marker::{self, Event, Marker, Store};
use crate::memory;
use crate::paths::Paths;
use crate::text::{cut, sanitize};
use crate::usage;

/// What a checkpoint is taken for.
pub enum Occasion<'a> {
    /// The client compacts. `repeat` tells, given the marker under the lock, whether this is the
    /// compaction the marker last counted, run again (`PreCompact` twice); `facts`, what the
    /// hook prints for the summarizer given the checkpoint and the client's version.
    Compaction {
        repeat: &'a dyn Fn(&Marker) -> bool,
        facts: &'a dyn Fn(&Checkpoint, Option<&str>) -> Option<String>,
        /// Taken after the compaction (one no `PreCompact` counted: [`crate::dropped`]): the
        /// rollout's newest reading before its `compacted` line may be the compaction request's
        /// own (Codex 0.169+), so the context before is the larger of it and the hooks' last one.
        after: bool,
        /// The time of the boundary this compaction wrote, when it is known (taken after it):
        /// recorded as counted.
        boundary: Option<DateTime<Utc>>,
        /// The hook taking it gives the recovery itself: nothing is left pending.
        given: bool,
    },
    /// Context dropped without a compaction: the transcript still holds what was there. The
    /// hook that took the drop gives the recovery itself, so none is left pending.
    Drop,
    /// The session ends: a checkpoint for the next session's digest, when it holds anything.
    End,
    /// The checkpoint `old` of this compaction, rebuilt up to its boundary: the session went on
    /// after a summary prepared ahead (`crate::precomputed`). The same compaction, read further:
    /// it keeps what `old` recorded of the compaction ([`read_further`]).
    Rebuild {
        old: &'a Checkpoint,
        /// `SessionStart` hands the rebuilt checkpoint's recovery over in the same update.
        hand: Option<&'a HandOver>,
    },
}

/// A pending recovery as `SessionStart` hands it over: when, to which client process (for the
/// receipt), the boundary it follows (counted), and the model the start names.
#[derive(Debug, Clone)]
pub struct HandOver {
    pub at: DateTime<Utc>,
    pub client_pid: Option<u32>,
    pub boundary: Option<DateTime<Utc>>,
    pub model: Option<String>,
}

/// The marker once `SessionStart` handed over the recovery of `checkpoint` (`None`: consumed
/// even if unreadable, so a broken one is not retried on every start; the next hook checks that
/// it arrived, the receipt): the boundary it follows counted, the model it names recorded.
pub fn hand_over(
    m: &Marker,
    hand: &HandOver,
    checkpoint: Option<String>,
    stale: Duration,
) -> Marker {
    let counted = checkpoint.is_some();
    let handed = Event::Handed(checkpoint.map(|checkpoint| marker::ReceiptPending {
        compaction: m.compactions,
        checkpoint,
        handed_at: hand.at,
        client_pid: hand.client_pid,
    }));
    let mut next = marker::transition(m, &handed, hand.at, stale);
    if let Some(at) = hand.boundary.filter(|_| counted) {
        next = marker::transition(&next, &Event::BoundaryCounted(at), hand.at, stale);
    }
    name_model(&next, hand, stale)
}

/// The marker with the model `SessionStart` names, when it is new.
pub fn name_model(m: &Marker, hand: &HandOver, stale: Duration) -> Marker {
    match &hand.model {
        Some(model) if m.session_model.as_ref() != Some(model) => {
            let named = Event::ModelNamed(model.clone());
            marker::transition(m, &named, hand.at, stale)
        }
        _ => m.clone(),
    }
}

/// How much of the transcript a checkpoint reads (as if it ended at byte `end`), and the file
/// when the hook already opened it for this call (the readers share one open).
pub struct Until<'a> {
    pub end: u64,
    pub opened: Option<&'a mut checkpoint::Opened>,
}

impl Until<'_> {
    /// The whole transcript, opened by the checkpoint.
    pub const WHOLE: Until<'static> = Until {
        end: u64::MAX,
        opened: None,
    };

    /// Up to byte `end`, opened by the checkpoint.
    pub fn at(end: u64) -> Until<'static> {
        Until { end, opened: None }
    }
}

/// A checkpoint taken: the checkpoint and where it is, whether it was written now (a repeat
/// with nothing new keeps the first), the compaction it repeats, and the facts to print.
#[derive(Debug)]
pub struct Taken {
    pub cp: Checkpoint,
    pub path: PathBuf,
    pub written: bool,
    pub facts: Option<String>,
    /// Its recovery was handed over in the same update (a rebuild at `SessionStart`).
    pub handed: bool,
}

/// Takes the checkpoint of this `occasion` for the session of `input` (whose `trigger` says
/// what it is), from its transcript as if it ended at byte `until`: reads the transcript
/// before the lock (the slow part), then under the session's lock builds, saves and records
/// it with the marker's transition, then logs it. `None`: a session end with nothing worth a
/// digest. A transcript that cannot be read gives a checkpoint of metadata only, and a note.
#[allow(clippy::too_many_lines)] // the reading, the one transaction, the log: read it whole
pub fn take(
    paths: &Paths,
    env: &Env,
    config: &Config,
    input: &HookInput,
    until: Until,
    occasion: &Occasion,
    diag: &mut Diag,
) -> Result<Option<Taken>> {
    let now = env.now();
    let stale = config.stale();
    let reading = match (input.transcript_path.is_empty(), until.opened) {
        (true, _) => Err("no transcript_path in the input".to_string()),
        (false, Some(opened)) => {
            checkpoint::read_opened_until(opened, until.end).map_err(|e| format!("{e:#}"))
        }
        (false, None) => {
            checkpoint::read_transcript_until(Path::new(&input.transcript_path), until.end)
                .map_err(|e| format!("{e:#}"))
        }
    };
    if let Err(e) = &reading {
        diag.note(format!("{e}; the checkpoint holds only metadata"));
    }
    let client_version = reading.as_ref().ok().and_then(|r| r.client_version.clone());
    let checkpoints = CheckpointStore::new(paths, &input.session_id);
    // Claude Code's own task store (Codex keeps its plan in the rollout; pi has none).
    let task_store = env
        .client_dir()
        .filter(|_| input.client() == Client::ClaudeCode)
        .and_then(|d| crate::tasks::dir(&d, &input.session_id))
        .and_then(|d| crate::tasks::read(&d));
    let memory_dir = memory::client_dir_for(env, &input.cwd, &input.transcript_path);
    let project = memory::project_of(env, &input.cwd);
    let places = memory::Places {
        home: env.home.as_deref(),
        project: &project,
    };
    let store = Store::new(paths, &input.session_id);
    let taken = store.update(&input.session_id, diag, |current, diag| {
        let repeat = match occasion {
            Occasion::Compaction { repeat, .. } => repeat(current),
            Occasion::Drop | Occasion::End | Occasion::Rebuild { .. } => false,
        };
        let latest = checkpoints.latest().unwrap_or_else(|e| {
            diag.note(format!("{e:#}"));
            None
        });
        // A repeat replaces the previous checkpoint, and a rebuild its own: carry from the one
        // before it.
        let replaced = match occasion {
            Occasion::Rebuild { old, .. } => Some(old.meta.previous.as_deref()),
            _ if repeat => Some(latest.as_ref().and_then(|l| l.meta.previous.as_deref())),
            _ => None,
        };
        let previous = match (occasion, &latest) {
            (Occasion::Rebuild { old, .. }, _) => old.meta.previous.clone(),
            (_, latest) => latest.as_ref().map(|cp| cp.id.clone()),
        };
        let mut cp = build(
            input,
            reading,
            current,
            checkpoints.next_id()?,
            previous,
            config,
            now,
        );
        let carried_from = match replaced {
            Some(id) => id.and_then(|id| checkpoints.load_id(id).ok().flatten()),
            None => latest.clone(),
        };
        note_saved_memories(
            &mut cp,
            memory_dir.as_deref(),
            carried_from.as_ref(),
            &places,
        );
        carry_forward(&mut cp, carried_from.as_ref(), task_store);
        if repeat {
            cp.meta.compaction = current.compactions.max(1);
            cp.meta.cycle = current.cycle.saturating_sub(1);
            cp.meta.previous = carried_from.map(|c| c.id);
        }
        if let Occasion::Compaction { after: true, .. } = occasion {
            cp.meta.tokens_before = cp.meta.tokens_before.max(current.tokens);
        }
        let facts = match occasion {
            Occasion::Compaction { facts, .. } => facts(&cp, client_version.as_deref()),
            Occasion::Drop | Occasion::End | Occasion::Rebuild { .. } => None,
        };
        // What was printed for the summarizer, recorded for the compaction's receipt.
        cp.meta.facts_chars = facts.as_ref().map_or(0, |f| f.chars().count());
        if let Occasion::Rebuild { old, .. } = occasion {
            read_further(&mut cp, old);
        }
        if let Occasion::End = occasion {
            // Not a compaction: it keeps the session's compaction count.
            cp.meta.compaction = current.compactions;
            // Ended again with nothing new (resumed and left at once): the end checkpoint
            // there is stays, given as a digest or not, never offered again.
            let ended_again = latest
                .as_ref()
                .is_some_and(|l| l.meta.at_session_end() && same_content(l, &cp));
            if !worth_a_digest(&cp) || ended_again {
                return Ok((current.clone(), None));
            }
        }
        // A repeat with nothing new since the first run: its checkpoint stays, and nothing is
        // written or logged again (the marker still records this run's time, which the
        // staleness of readings is judged against).
        let first = current
            .last_checkpoint
            .as_ref()
            .filter(|_| repeat && latest.as_ref().is_some_and(|l| same_content(l, &cp)));
        let path = if let Some(first) = first {
            PathBuf::from(first)
        } else {
            let path = checkpoints.save(&cp)?;
            record_in_index(paths, &cp, diag);
            path
        };
        let checkpoint = path.display().to_string();
        let event = match occasion {
            Occasion::End => Event::Ended {
                checkpoint: checkpoint.clone(),
            },
            // The session's newest checkpoint is this one now (the receipt and PostCompact's
            // summary go beside it), unless another compaction came meanwhile.
            Occasion::Rebuild { .. } => Event::CheckpointRebuilt {
                from: current.last_checkpoint.clone().unwrap_or_default(),
                to: checkpoint.clone(),
            },
            Occasion::Compaction { .. } | Occasion::Drop => {
                // A writer killed mid-write leaves its temp file; compaction is rare enough to
                // tidy up.
                for dir in [store.dir(), checkpoints.dir()] {
                    files::sweep_temp_files(dir, Duration::from_secs(60));
                }
                Event::Compacted {
                    checkpoint: checkpoint.clone(),
                    tokens: cp.meta.tokens_before,
                    auto: input.trigger == "auto",
                    repeat,
                    drop: matches!(occasion, Occasion::Drop),
                }
            }
        };
        let mut next = marker::transition(current, &event, now, stale);
        // Handed over with it, unless another start took the recovery meanwhile.
        let hand = match occasion {
            Occasion::Rebuild {
                hand: Some(hand), ..
            } if current.recovery_pending => Some(*hand),
            _ => None,
        };
        if let Some(hand) = hand {
            next = hand_over(&next, hand, Some(checkpoint.clone()), stale);
        }
        if let Occasion::Compaction {
            boundary: Some(at), ..
        } = occasion
        {
            next = marker::transition(&next, &Event::BoundaryCounted(*at), now, stale);
        }
        if matches!(
            occasion,
            Occasion::Drop | Occasion::Compaction { given: true, .. }
        ) {
            // The hook that took it gives its recovery itself: nothing is pending.
            next = marker::transition(&next, &Event::ReceiptSettled, now, stale);
        }
        let retry_of = current.compacted_at.filter(|_| repeat);
        let taken = Taken {
            cp,
            path,
            written: first.is_none(),
            facts,
            handed: hand.is_some(),
        };
        Ok((next, Some((taken, retry_of))))
    })?;
    let Some((taken, retry_of)) = taken else {
        return Ok(None);
    };
    // A compaction's checkpoint in the daily log (a failure costs the entry, never the
    // checkpoint).
    // (A rebuild's line is its own: `crate::precomputed` says why it was rebuilt.)
    if taken.written && matches!(occasion, Occasion::Compaction { .. } | Occasion::Drop) {
        let local = now.with_timezone(&Local);
        let entry = daily_log::entry(&taken.cp, &taken.path, local, retry_of);
        if let Err(e) = daily_log::append(paths, local.date_naive(), &entry) {
            diag.note(format!("{e:#}"));
        }
    }
    Ok(Some(taken))
}

/// What a checkpoint rebuilt for the same compaction keeps of the one it replaces (`old`): the
/// compaction's number and cycle, the usage and window it was taken at, the nudges of its cycle
/// and what `PreCompact` printed for the summarizer (its receipt says whether facts reached it).
fn read_further(cp: &mut Checkpoint, old: &Checkpoint) {
    cp.meta.compaction = old.meta.compaction;
    cp.meta.cycle = old.meta.cycle;
    cp.meta.tokens_before = old.meta.tokens_before.or(cp.meta.tokens_before);
    cp.meta.window = old.meta.window.or(cp.meta.window);
    cp.meta.nudges.clone_from(&old.meta.nudges);
    cp.meta.facts_chars = old.meta.facts_chars;
}

/// Does this checkpoint hold anything a later session could use?
fn worth_a_digest(cp: &Checkpoint) -> bool {
    !cp.asks.is_empty()
        || !cp.earlier_asks.is_empty()
        || cp.todos.iter().any(Todo::is_open)
        || !cp.files_modified.is_empty()
}

/// The checkpoint for this compaction (or session end), from the hook input, what the
/// transcript gave (or why it could not be read), and the session's marker.
pub fn build(
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
fn note_saved_memories(
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
/// ones become earlier asks), the user's decisions that still stand, the open tasks when this
/// part changed none, the last verification when this part ran none, the pull requests and the
/// modified files. `store` is the client's own task store, when it keeps one: then it decides
/// which tasks are open.
fn carry_forward(cp: &mut Checkpoint, previous: Option<&Checkpoint>, store: Option<Vec<Todo>>) {
    if let Some(prev) = previous {
        if prev.goal.is_some() {
            cp.goal.clone_from(&prev.goal);
        }
        if cp.verification.is_none() {
            cp.verification.clone_from(&prev.verification);
        }
        let plan_carried = cp.plan.is_none() && cp.plan_file.is_none();
        let before = [prev.earlier_decisions.as_slice(), &prev.decisions].concat();
        cp.earlier_decisions = checkpoint::carried_decisions(&before, &cp.decisions, plan_carried);
        if plan_carried {
            cp.plan.clone_from(&prev.plan);
            cp.plan_file.clone_from(&prev.plan_file);
        }
        let mut prs = prev.prs.clone();
        for pr in &cp.prs {
            checkpoint::remember_pr(&mut prs, pr, checkpoint::MAX_PRS);
        }
        cp.prs = prs;
        let mut earlier: Vec<String> = prev.earlier_asks.clone();
        // An acknowledgement was the user's newest word then, not a request to carry.
        earlier.extend(
            prev.asks
                .iter()
                .filter(|a| !checkpoint::is_acknowledgement(a))
                .cloned(),
        );
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
fn same_content(a: &Checkpoint, b: &Checkpoint) -> bool {
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
fn record_in_index(paths: &Paths, cp: &Checkpoint, diag: &mut Diag) {
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
