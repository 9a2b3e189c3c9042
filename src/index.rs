//! The sessions that left a checkpoint in each working directory:
//! `cwd/<directory name>/index.json`, the newest [`KEEP`] of them with when their checkpoint was
//! written. `SessionStart` finds the previous session of a directory by reading this one small
//! file and the few markers it names, instead of every marker ever written.
//!
//! `PreCompact` and `SessionEnd` [`record`] a session after saving its checkpoint, under the
//! index's own lock (read, change, write atomically), so sessions ending at the same time in the
//! same directory all get in. Sessions from before the index existed are recorded by the first
//! full retention pass, which then marks the index [`complete`]; until then
//! [`sessions_in`] falls back to reading every marker. Retention drops the entries of the
//! sessions it removes ([`sweep`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::files;
use crate::marker::{self, all_sessions, Marker, Store};
use crate::paths::{safe_session_id, Paths};

/// Sessions kept per directory, newest checkpoint first. A digest only looks a day back, so
/// this is many days of sessions in one directory.
pub const KEEP: usize = 32;

/// How long a hook waits for another process updating the same index.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// One session of a directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The session id as Claude Code sent it.
    pub session_id: String,
    /// When its newest checkpoint was written.
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Index {
    #[serde(default)]
    sessions: Vec<Entry>,
}

/// `cwd/` under the state root.
fn dir(root: &Path) -> PathBuf {
    root.join("cwd")
}

/// The index directory of one working directory: its name is the same one-component mapping
/// session ids get (a readable prefix and a 128-bit hash; a path is never a plain name).
fn dir_for(root: &Path, cwd: &str) -> PathBuf {
    dir(root).join(safe_session_id(cwd))
}

fn complete_path(root: &Path) -> PathBuf {
    dir(root).join(".complete")
}

/// Is every session with a checkpoint in the index?
pub fn complete(paths: &Paths) -> bool {
    files::flag_is_set(paths.root(), &complete_path(paths.root()))
}

/// Marks the index complete (after a full pass recorded every session).
pub fn mark_complete(paths: &Paths) -> Result<()> {
    files::set_flag(paths.root(), &complete_path(paths.root()))
}

fn read(root: &Path, index_dir: &Path) -> Result<Index> {
    let path = index_dir.join("index.json");
    match files::read_state_file_in(root, &path, "index")? {
        None => Ok(Index::default()),
        Some(bytes) => serde_json::from_slice(&bytes)
            .with_context(|| format!("index {} is corrupt", path.display())),
    }
}

fn write(index_dir: &Path, index: &Index) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(index).context("encoding index")?;
    bytes.push(b'\n');
    files::write_atomic(&index_dir.join("index.json"), &bytes, false)
}

/// `entries` with this session's entry replaced by one for a checkpoint at `created_at`,
/// newest first, at most [`KEEP`] (pure).
fn with_entry(mut entries: Vec<Entry>, session_id: &str, created_at: DateTime<Utc>) -> Vec<Entry> {
    entries.retain(|e| e.session_id != session_id);
    entries.push(Entry {
        session_id: session_id.to_string(),
        created_at,
    });
    entries.sort_by_key(|e| std::cmp::Reverse(e.created_at));
    entries.truncate(KEEP);
    entries
}

/// Records that `session_id` wrote a checkpoint in `cwd` at `created_at`. A corrupt index is
/// replaced. Nothing for an empty cwd (no digest is ever given there).
pub fn record(paths: &Paths, cwd: &str, session_id: &str, created_at: DateTime<Utc>) -> Result<()> {
    if cwd.is_empty() {
        return Ok(());
    }
    let root = paths.root();
    let index_dir = dir_for(root, cwd);
    files::ensure_state_dir(root, &index_dir)?;
    let lock = marker::lock_within(&index_dir.join("lock"), LOCK_WAIT)?;
    let entries = read(root, &index_dir)
        .map(|i| i.sessions)
        .unwrap_or_default();
    let sessions = with_entry(entries, session_id, created_at);
    write(&index_dir, &Index { sessions })?;
    drop(lock);
    Ok(())
}

/// The sessions recorded for `cwd`, newest checkpoint first.
pub fn load(paths: &Paths, cwd: &str) -> Result<Vec<Entry>> {
    if cwd.is_empty() {
        return Ok(Vec::new());
    }
    let root = paths.root();
    Ok(read(root, &dir_for(root, cwd))?.sessions)
}

/// The sessions that may hold the previous checkpoint of `cwd`, with their markers: those the
/// index names with a checkpoint written at or after `since`, or, while the index is not
/// complete yet, every session.
pub fn sessions_in(
    paths: &Paths,
    cwd: &str,
    since: DateTime<Utc>,
) -> Result<Vec<(Store, Result<Marker>)>> {
    if !complete(paths) {
        return all_sessions(paths);
    }
    let mut found = Vec::new();
    for entry in load(paths, cwd)? {
        if entry.created_at < since {
            break;
        }
        let store = Store::new(paths, &entry.session_id);
        match store.peek() {
            Ok(Some(m)) => found.push((store, Ok(m))),
            Ok(None) => {}
            Err(e) => found.push((store, Err(e))),
        }
    }
    Ok(found)
}

/// Drops, from every directory's index, the entries `keep` does not want, and removes the
/// indexes left empty. Returns how many entries were dropped.
pub fn sweep(paths: &Paths, keep: impl Fn(&Entry) -> bool) -> Result<usize> {
    let root = paths.root();
    let base = dir(root);
    let mut dropped = 0;
    for entry in files::list_state_dir(root, &base)? {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let index_dir = entry.path();
        let lock_path = index_dir.join("lock");
        let lock = marker::lock_within(&lock_path, LOCK_WAIT)?;
        // A corrupt index is dropped whole: the hooks replace it at the next checkpoint.
        let sessions = read(root, &index_dir)
            .map(|i| i.sessions)
            .unwrap_or_default();
        let before = sessions.len();
        let kept: Vec<Entry> = sessions.into_iter().filter(|e| keep(e)).collect();
        dropped += before - kept.len();
        if kept.is_empty() {
            files::remove_locked_dir(&index_dir, lock, &lock_path)?;
        } else {
            if kept.len() != before {
                write(&index_dir, &Index { sessions: kept })?;
            }
            drop(lock);
        }
    }
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use std::fs;

    fn t(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
    }

    #[test]
    fn one_entry_per_session_newest_first_and_at_most_keep() {
        let mut list = Vec::new();
        for i in 0..40 {
            list = with_entry(list, &format!("s{i}"), t(i));
        }
        assert_eq!(list.len(), KEEP);
        assert_eq!(list[0].session_id, "s39");
        assert_eq!(list[KEEP - 1].session_id, format!("s{}", 40 - KEEP));
        // A session that checkpoints again moves up, once.
        let list = with_entry(list, "s20", t(100));
        assert_eq!(list.len(), KEEP);
        assert_eq!(
            (list[0].session_id.as_str(), list[0].created_at),
            ("s20", t(100))
        );
        assert_eq!(list.iter().filter(|e| e.session_id == "s20").count(), 1);
    }

    #[test]
    fn recorded_per_directory_and_swept() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path().join("state"));
        record(&paths, "/p", "a", t(1)).unwrap();
        record(&paths, "/p", "b", t(2)).unwrap();
        record(&paths, "/q", "c", t(3)).unwrap();
        record(&paths, "", "d", t(4)).unwrap();
        let ids = |cwd| {
            load(&paths, cwd)
                .unwrap()
                .into_iter()
                .map(|e| e.session_id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids("/p"), ["b", "a"]);
        assert_eq!(ids("/q"), ["c"]);
        assert!(ids("/elsewhere").is_empty());
        assert_eq!(
            sweep(&paths, |e| e.session_id != "c" && e.session_id != "a").unwrap(),
            2
        );
        assert_eq!(ids("/p"), ["b"]);
        assert!(!dir_for(paths.root(), "/q").exists(), "an empty index goes");
        // A corrupt index is replaced by the next record.
        fs::write(dir_for(paths.root(), "/p").join("index.json"), "{").unwrap();
        assert!(load(&paths, "/p").is_err());
        record(&paths, "/p", "e", t(5)).unwrap();
        assert_eq!(ids("/p"), ["e"]);
    }
}
