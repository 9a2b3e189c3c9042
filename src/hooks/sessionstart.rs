//! `ctxguard sessionstart`: after a compaction (and on resume, clear, startup, fork), injects
//! the pending recovery block once: the checkpoint PreCompact wrote, then the memory files. A
//! recovery is consumed under the session lock, so a second SessionStart does not repeat it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Result};
use chrono::{DateTime, Local, Utc};

use crate::checkpoint::{self, Checkpoint};
use crate::config::{Config, Env};
use crate::daily_log;
use crate::hooks::{additional_context, Diag, Outcome};
use crate::input::HookInput;
use crate::marker::{self, all_sessions, Event, Store, LOCK_WAIT};
use crate::paths::Paths;
use crate::recovery::{self, Kind, Memory};

/// A new session only hears about a previous one this recent.
pub const PREVIOUS_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// The memory files to append, in order: the configured list (default: the global and the
/// project MEMORY.md), then the tail of today's daily log.
pub fn memory_files(config: &Config, env: &Env, paths: &Paths, cwd: &str) -> Vec<Memory> {
    let project: PathBuf = env
        .project_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(cwd));
    let listed: Vec<String> = config.memory_files.clone().unwrap_or_else(|| {
        vec![
            "~/.claude-memory/MEMORY.md".to_string(),
            ".claude/memory/MEMORY.md".to_string(),
        ]
    });
    let mut out: Vec<Memory> = listed
        .iter()
        .filter_map(|entry| {
            let path = recovery::resolve(entry, env.home.as_deref(), &project);
            recovery::read_memory(&path, path.display().to_string(), false)
        })
        .collect();
    let log = daily_log::path_for(paths, Local::now().date_naive());
    out.extend(recovery::read_memory(
        &log,
        format!("{} (ctxguard daily log, newest entries)", log.display()),
        true,
    ));
    out
}

/// This session's pending recovery, consumed.
fn own(
    paths: &Paths,
    input: &HookInput,
    stale: Duration,
    now: DateTime<Utc>,
    diag: &mut Diag,
) -> Result<Option<(Checkpoint, PathBuf)>> {
    let store = Store::new(paths, &input.session_id);
    // Most session starts have nothing pending: answer without the lock.
    if !matches!(store.peek(), Ok(Some(m)) if m.recovery_pending) {
        return Ok(None);
    }
    consume(&store, &input.session_id, stale, now, diag)
}

/// Takes a pending recovery from `store` under its lock; `None` if another process took it.
fn consume(
    store: &Store,
    session_id: &str,
    stale: Duration,
    now: DateTime<Utc>,
    diag: &mut Diag,
) -> Result<Option<(Checkpoint, PathBuf)>> {
    let lock = store.lock(LOCK_WAIT)?;
    let m = super::load_marker(&lock, session_id, diag);
    let Some(path) = m.last_checkpoint.clone().filter(|_| m.recovery_pending) else {
        return Ok(None);
    };
    let path = PathBuf::from(path);
    // Consumed even if unreadable: a broken checkpoint must not be retried on every start.
    lock.save(&marker::transition(&m, &Event::Recovered, now, stale))?;
    match checkpoint::load(&path) {
        Ok(Some(cp)) => Ok(Some((cp, path))),
        Ok(None) => {
            diag.note(format!("checkpoint {} is missing", path.display()));
            Ok(None)
        }
        Err(e) => {
            diag.note(format!("{e:#}"));
            Ok(None)
        }
    }
}

/// The newest unconsumed checkpoint of another session in the same directory, under a day old.
fn previous(
    paths: &Paths,
    input: &HookInput,
    stale: Duration,
    now: DateTime<Utc>,
    diag: &mut Diag,
) -> Result<Option<(Checkpoint, PathBuf)>> {
    if input.cwd.is_empty() {
        return Ok(None);
    }
    let mut best: Option<(DateTime<Utc>, Store, String)> = None;
    for (store, marker) in all_sessions(paths)? {
        let Ok(m) = marker else { continue };
        if !m.recovery_pending || m.session_id == input.session_id {
            continue;
        }
        let Some(path) = &m.last_checkpoint else {
            continue;
        };
        let Ok(Some(cp)) = checkpoint::load(Path::new(path)) else {
            continue;
        };
        let Some(created) = cp.meta.created_at else {
            continue;
        };
        let young = now
            .signed_duration_since(created)
            .to_std()
            .map_or(true, |age| age <= PREVIOUS_MAX_AGE);
        if cp.meta.cwd == input.cwd && young && best.as_ref().is_none_or(|(t, _, _)| created > *t) {
            best = Some((created, store, m.session_id.clone()));
        }
    }
    match best {
        Some((_, store, id)) => consume(&store, &id, stale, now, diag),
        None => Ok(None),
    }
}

pub fn run(diag: &mut Diag) -> Result<Outcome> {
    handle(&crate::input::read_stdin()?, &Env::from_process(), diag)
}

/// The hook, given its input and environment.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let input = super::parse_event(bytes, "SessionStart")?;
    let paths = env.paths()?;
    let config = super::config(&paths, env, diag);
    if !config.recover_on.contains(&input.source) {
        return Ok(Outcome::Quiet);
    }
    let stale = Duration::from_secs(config.stale_after_secs);
    let now = Utc::now();
    let (found, kind) = match input.source.as_str() {
        "compact" => (own(&paths, &input, stale, now, diag)?, Kind::Compact),
        "resume" => (own(&paths, &input, stale, now, diag)?, Kind::Resume),
        "clear" | "startup" | "fork" => {
            (previous(&paths, &input, stale, now, diag)?, Kind::Previous)
        }
        other => bail!("unknown SessionStart source {other:?}"),
    };
    let Some((cp, path)) = found else {
        return Ok(Outcome::Quiet);
    };
    let memory = memory_files(&config, env, &paths, &input.cwd);
    let block = recovery::render(
        &cp,
        &path,
        kind,
        &memory,
        config.recovery_budget_chars,
        config.total_budget_chars,
        now,
    );
    Ok(Outcome::Print(additional_context("SessionStart", block)))
}
