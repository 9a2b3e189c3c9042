//! Retention: what a long-lived state directory lets go of. A session no hook has updated for
//! more than `retention_days` is removed with its checkpoints, and the daily logs of days that
//! long ago; a session whose recovery is still pending is always kept, and so is one whose marker
//! cannot be read (nobody can tell whether it is pending).
//!
//! A **pass** goes through every session directory (and checkpoint directory) in name order. The
//! automatic one runs from `SessionEnd`, at most once a day ([`run_if_due`]), under
//! `retention.lock`, in steps of at most [`EXAMINE_PER_RUN`] directories and
//! [`REMOVE_PER_RUN`] removals: a pass over many sessions continues at the next `SessionEnd` from
//! where the last step stopped (`retention.json` keeps the cursor). `ctxguard prune` runs a whole
//! pass at once ([`pass`]). Each removal happens under the session's own lock, taken only if it
//! is free right now, with the marker read again under it: a session a hook is working on is
//! never removed.
//!
//! The first full pass also puts every session it keeps in the activity buckets and the
//! directory index (sessions from before they existed), then marks both complete. The end of
//! every pass removes old logs and the buckets' and index's entries of sessions that are gone.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result};
use chrono::{DateTime, Duration, Local, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use crate::checkpoint::{self, checkpoints_dir};
use crate::config::Config;
use crate::daily_log;
use crate::diag::Diag;
use crate::files;
use crate::index;
use crate::marker::{self, activity, Marker, Store};
use crate::paths::Paths;

/// Directories one automatic step looks at, at most.
const EXAMINE_PER_RUN: usize = 1000;
/// Sessions one automatic step removes, at most.
const REMOVE_PER_RUN: usize = 200;
/// The automatic pass runs at most this often.
const EVERY: Duration = Duration::hours(24);

/// What the automatic pass remembers between runs: `retention.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Progress {
    /// When the last complete pass ended.
    #[serde(default)]
    last_pass: Option<DateTime<Utc>>,
    /// The last directory name a pass in progress has examined.
    #[serde(default)]
    cursor: Option<String>,
}

fn progress_path(paths: &Paths) -> PathBuf {
    paths.root().join("retention.json")
}

fn lock_path(paths: &Paths) -> PathBuf {
    paths.root().join("retention.lock")
}

fn load_progress(paths: &Paths) -> Progress {
    files::read_state_file_in(paths.root(), &progress_path(paths), "retention progress")
        .ok()
        .flatten()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn save_progress(paths: &Paths, progress: &Progress) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(progress).context("encoding retention progress")?;
    files::write_atomic(&progress_path(paths), &bytes, false)
}

/// What a pass removes: sessions idle since before `cutoff`, logs of days before `log_cutoff`.
/// `None`: nothing is removed (the pass only completes the indexes).
#[derive(Debug, Clone, Copy)]
pub struct Cutoff {
    pub idle_before: DateTime<Utc>,
    pub logs_before: NaiveDate,
}

impl Cutoff {
    /// Sessions idle more than `days` days and logs of days more than `days` ago, from `now`;
    /// `None` for 0 (keep everything).
    pub fn days(days: u64, now: DateTime<Utc>) -> Option<Cutoff> {
        (days > 0).then(|| Cutoff::age(days, now))
    }

    /// Sessions idle more than `days` days and logs of days more than `days` ago, from `now`;
    /// 0 is every idle session and every log before today (`prune --older-than 0`).
    pub fn age(days: u64, now: DateTime<Utc>) -> Cutoff {
        let age = Duration::days(i64::try_from(days).unwrap_or(i64::MAX).min(365_000));
        Cutoff {
            idle_before: now - age,
            logs_before: now.with_timezone(&Local).date_naive() - age,
        }
    }
}

/// One session directory a pass removed (or, in a dry run, would remove).
#[derive(Debug, Clone, Serialize)]
pub struct Removed {
    /// The session id when the marker says it, else the directory name.
    pub session: String,
    pub last_active: Option<DateTime<Utc>>,
    pub checkpoints: usize,
}

/// A session kept although idle past the cutoff, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Kept {
    pub session: String,
    pub reason: String,
}

/// What a pass did.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub removed: Vec<Removed>,
    pub logs: Vec<PathBuf>,
    pub kept: Vec<Kept>,
    /// The pass went through every directory (false: the step's budget ran out first).
    pub done: bool,
}

/// How much one step may do.
#[derive(Debug, Clone, Copy)]
struct Budget {
    pub examine: usize,
    pub remove: usize,
}

impl Budget {
    const UNLIMITED: Budget = Budget {
        examine: usize::MAX,
        remove: usize::MAX,
    };
    const STEP: Budget = Budget {
        examine: EXAMINE_PER_RUN,
        remove: REMOVE_PER_RUN,
    };
}

/// Runs a step of the automatic pass if one is due: the last pass ended a day ago or more (or
/// never), or a pass is in progress. Never fails the hook: problems are notes. Skipped when
/// another process holds the retention lock.
pub fn run_if_due(paths: &Paths, config: &Config, now: DateTime<Utc>, diag: &mut Diag) {
    if let Err(e) = run_step_if_due(paths, config, now) {
        diag.note(format!("retention: {e:#}"));
    }
}

/// Is a pass due, given what the last one left?
fn due(progress: &Progress, now: DateTime<Utc>) -> bool {
    progress.cursor.is_some()
        || progress.last_pass.is_none_or(|last| {
            let age = now.signed_duration_since(last);
            // A last pass in the future means the clock was stepped back: run again.
            age >= EVERY || age < -Duration::seconds(60)
        })
}

fn run_step_if_due(paths: &Paths, config: &Config, now: DateTime<Utc>) -> Result<()> {
    let cutoff = Cutoff::days(config.retention_days, now);
    let indexed = activity::complete(paths) && index::complete(paths);
    if (cutoff.is_none() && indexed) || !due(&load_progress(paths), now) {
        return Ok(());
    }
    // The state root exists: a hook has just written into it.
    let Some(lock) = marker::try_lock(&lock_path(paths))? else {
        return Ok(());
    };
    let mut progress = load_progress(paths);
    if !due(&progress, now) {
        return Ok(());
    }
    let mut report = Report::default();
    let cursor = step(
        paths,
        cutoff,
        now,
        progress.cursor.as_deref(),
        Budget::STEP,
        false,
        &mut report,
    )?;
    progress.cursor = cursor;
    if report.done {
        progress.last_pass = Some(now);
    }
    save_progress(paths, &progress)?;
    drop(lock);
    Ok(())
}

/// A whole pass, by hand (`ctxguard prune`): waits a little for an automatic step in progress.
/// A dry run removes nothing and changes nothing, and reports what a real one would remove.
pub fn pass(
    paths: &Paths,
    cutoff: Option<Cutoff>,
    now: DateTime<Utc>,
    dry_run: bool,
) -> Result<Report> {
    let mut report = Report::default();
    if !paths.root().exists() {
        report.done = true;
        return Ok(report);
    }
    let lock = if dry_run {
        None
    } else {
        Some(marker::lock_within(
            &lock_path(paths),
            std::time::Duration::from_secs(10),
        )?)
    };
    step(
        paths,
        cutoff,
        now,
        None,
        Budget::UNLIMITED,
        dry_run,
        &mut report,
    )?;
    if !dry_run {
        save_progress(
            paths,
            &Progress {
                last_pass: Some(now),
                cursor: None,
            },
        )?;
    }
    drop(lock);
    Ok(report)
}

/// The names of the real directories in `dir` (none if it does not exist).
fn dir_names(root: &Path, dir: &Path) -> Result<Vec<String>> {
    Ok(files::list_state_dir(root, dir)?
        .into_iter()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.'))
        .collect())
}

/// The newest modification time of a directory under the state root `root` and the files
/// directly in it (none through a link).
fn newest_mtime(root: &Path, dir: &Path) -> Option<DateTime<Utc>> {
    let mtime = |m: fs::Metadata| m.modified().ok();
    let own = fs::symlink_metadata(dir).ok().and_then(mtime);
    let inside = files::list_state_dir(root, dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok().and_then(mtime));
    own.into_iter()
        .chain(inside)
        .max()
        .map(|t: SystemTime| DateTime::<Utc>::from(t))
}

/// The checkpoint files (`cp_NNN.json`) in a session's checkpoint directory (none through a
/// link).
fn count_checkpoints(root: &Path, dir: &Path) -> usize {
    files::list_state_dir(root, dir)
        .into_iter()
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("cp_")
                && name.ends_with(".json")
                && !name.contains(".summary")
                && !name.contains(".receipt")
        })
        .count()
}

/// When the session was last active: its marker's `updated_at` (every change sets it), else
/// the newest file in its directory.
fn last_active(root: &Path, m: &Marker, dir: &Path) -> Option<DateTime<Utc>> {
    m.updated_at.or_else(|| newest_mtime(root, dir))
}

/// Puts a session from before the indexes existed into them: its activity bucket, and, when
/// its newest checkpoint could still be given as a digest (a day old at most), its directory's
/// index.
fn index_session(paths: &Paths, name: &str, m: &Marker, now: DateTime<Utc>) -> Result<()> {
    if let Some(at) = m.updated_at {
        activity::touch(paths.root(), name, at)?;
    }
    let Some(path) = m.last_checkpoint.as_deref() else {
        return Ok(());
    };
    if m.updated_at
        .is_none_or(|at| now.signed_duration_since(at) > Duration::hours(25))
    {
        return Ok(());
    }
    if let Ok(Some(cp)) = checkpoint::load(paths.root(), Path::new(path)) {
        if let Some(at) = cp.meta.created_at {
            index::record(paths, &cp.meta.cwd, &m.session_id, at)?;
        }
    }
    Ok(())
}

/// One step of a pass: examines, in name order, the directories after `cursor`, within
/// `budget`. Returns the cursor to continue from, `None` when the pass reached the end (and
/// then did the end-of-pass work).
fn step(
    paths: &Paths,
    cutoff: Option<Cutoff>,
    now: DateTime<Utc>,
    cursor: Option<&str>,
    budget: Budget,
    dry_run: bool,
    report: &mut Report,
) -> Result<Option<String>> {
    let root = paths.root();
    let indexed = activity::complete(paths) && index::complete(paths);
    let cp_root = checkpoints_dir(paths);
    let mut names = dir_names(root, &paths.sessions_dir())?;
    names.extend(dir_names(root, &cp_root)?);
    names.sort();
    names.dedup();
    let todo: Vec<&String> = names
        .iter()
        .filter(|n| cursor.is_none_or(|c| n.as_str() > c))
        .collect();
    let mut removed = 0;
    for (examined, name) in todo.iter().copied().enumerate() {
        if examined >= budget.examine || removed >= budget.remove {
            // Continue after the last one examined.
            return Ok(examined.checked_sub(1).map(|i| todo[i].clone()));
        }
        let store = Store::named(paths, name);
        let cp_dir = cp_root.join(name);
        let has_session = fs::symlink_metadata(store.dir()).is_ok_and(|m| m.is_dir());
        let (marker, last) = if has_session {
            match store.peek() {
                Ok(Some(m)) => {
                    let last = last_active(root, &m, store.dir());
                    (Some(m), last)
                }
                Ok(None) => (None, newest_mtime(root, store.dir())),
                Err(e) => {
                    if cutoff.is_some() {
                        report.kept.push(Kept {
                            session: name.clone(),
                            reason: format!("{e:#}"),
                        });
                    }
                    continue;
                }
            }
        } else {
            (None, newest_mtime(root, &cp_dir))
        };
        let old = match (cutoff, last) {
            (Some(c), Some(last)) => last < c.idle_before,
            _ => false,
        };
        let session = marker
            .as_ref()
            .map_or_else(|| name.clone(), |m| m.session_id.clone());
        let pending = marker.as_ref().is_some_and(|m| m.recovery_pending);
        if old && pending {
            report.kept.push(Kept {
                session: session.clone(),
                reason: "its recovery is still pending".into(),
            });
        }
        if !old || pending {
            if let (Some(m), false, false) = (&marker, indexed, dry_run) {
                index_session(paths, name, m, now)?;
            }
            continue;
        }
        let entry = Removed {
            session: session.clone(),
            last_active: last,
            checkpoints: count_checkpoints(root, &cp_dir),
        };
        if dry_run {
            report.removed.push(entry);
            continue;
        }
        let Some(c) = cutoff else { continue };
        if !has_session {
            // The lock lives in the session directory: recreate it so a hook recreating this
            // session waits for us, or we for it.
            files::ensure_state_dir(root, store.dir())?;
        }
        let still_old = |now_marker: Result<Option<Marker>>| match now_marker {
            Ok(Some(m)) => !m.recovery_pending && m.updated_at.is_some_and(|u| u < c.idle_before),
            Ok(None) => {
                !has_session || newest_mtime(root, store.dir()).is_none_or(|t| t < c.idle_before)
            }
            Err(_) => false,
        };
        let remove_checkpoints = || match fs::symlink_metadata(&cp_dir) {
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(&cp_dir)
                .with_context(|| format!("removing {}", cp_dir.display())),
            _ => Ok(()),
        };
        if store.remove_when(still_old, remove_checkpoints)? {
            report.removed.push(entry);
            removed += 1;
        } else {
            report.kept.push(Kept {
                session,
                reason: "it became active, or a hook holds its lock".into(),
            });
        }
    }
    report.done = true;
    finish(paths, cutoff, indexed, dry_run, report)?;
    Ok(None)
}

/// The end of a pass: old logs, the gone sessions' bucket and index entries, and the indexes
/// marked complete.
fn finish(
    paths: &Paths,
    cutoff: Option<Cutoff>,
    indexed: bool,
    dry_run: bool,
    report: &mut Report,
) -> Result<()> {
    if let Some(c) = cutoff {
        for (date, path) in daily_log::list(paths)? {
            if date >= c.logs_before {
                break;
            }
            if !dry_run {
                fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
            }
            report.logs.push(path);
        }
    }
    if dry_run {
        return Ok(());
    }
    let exists = |name: &str| Store::named(paths, name).dir().exists();
    if let Some(c) = cutoff {
        activity::sweep(paths, c.idle_before, exists)?;
    }
    index::sweep(paths, |e| Store::new(paths, &e.session_id).dir().exists())?;
    if !indexed {
        activity::mark_complete(paths)?;
        index::mark_complete(paths)?;
    }
    Ok(())
}
