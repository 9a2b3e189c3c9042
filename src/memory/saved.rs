//! The memories the agent saved in Claude Code's memory folder since the last checkpoint: which
//! ones a checkpoint records, and their contents read back, safely, for the block.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::folder::client_dir_for;
use super::{project_of, read_file, resolve, Links, Memory, Places, DEFAULT_FILES, MAX_SAVED};
use crate::config::{Config, Env};
use crate::text::cut;

/// At most this many candidates are read to find the [`MAX_SAVED`] a block will show.
const SAVED_EXAMINED: usize = 4 * MAX_SAVED;

/// A saved memory is shown up to this many characters (its frontmatter and the fact).
pub(super) const SAVED_CHARS: usize = 700;

/// At most this many entries of the memory folder are looked at for recent changes.
const SCAN_ENTRIES: usize = 2_000;

/// The client's own index, which it loads into every session itself: never shown again.
const CLIENT_INDEX: &str = "MEMORY.md";

/// Is `path` a memory file in the folder `dir` (at any depth, never `..`), other than the
/// client's own index at its top?
fn in_folder(path: &Path, dir: &Path) -> bool {
    use std::path::Component;
    if path.components().any(|c| matches!(c, Component::ParentDir)) || !path.is_absolute() {
        return false;
    }
    match path.strip_prefix(dir) {
        Ok(rel) => !rel.as_os_str().is_empty() && rel != Path::new(CLIENT_INDEX),
        Err(_) => false,
    }
}

/// Is `path` a memory file in the folder `dir` ([`in_folder`]) whose own folder really is inside
/// it (`real_dir`, the folder resolved)? The folder itself may be reached through a link; a
/// file's folder must not lead out of it (a linked subfolder).
fn in_memory_folder(path: &Path, dir: &Path, real_dir: Option<&Path>) -> bool {
    in_folder(path, dir)
        && path
            .parent()
            .and_then(|parent| fs::canonicalize(parent).ok())
            .is_some_and(|parent| real_dir.is_some_and(|d| parent.starts_with(d)))
}

/// The memories the agent saved in Claude Code's memory folder `dir` since the previous
/// checkpoint: the files among `written` (what this part of the transcript wrote with Write,
/// Edit and the like, evidence that holds whatever the clock says) inside the folder, and the
/// files at its top modified after `since` (the previous checkpoint's time: a memory written
/// through Bash or an editor). Only what a recovery block will show ([`saved_memory`]: never the
/// client's `MEMORY.md`, a link, anything but a regular file, a file with other hard links, one
/// outside `places`, nor an empty one), so the facts block lists nothing the recovery refuses;
/// newest first, at most [`MAX_SAVED`]. Without a `since` (the session's first checkpoint),
/// only the transcript's evidence counts: an older file may be another session's.
pub fn saved_since(
    dir: &Path,
    written: &[String],
    since: Option<std::time::SystemTime>,
    places: &Places,
) -> Vec<String> {
    let modified = |p: &Path| {
        fs::symlink_metadata(p)
            .ok()
            .filter(fs::Metadata::is_file)
            .and_then(|m| m.modified().ok())
    };
    // One file, one entry, however the transcript spelt it (`a//b`, `a/./b`): the components
    // rebuilt; and only a file whose folder really is inside the memory folder (not through a
    // linked subfolder).
    let real_dir = fs::canonicalize(dir).ok();
    let mut found: Vec<(Option<std::time::SystemTime>, PathBuf)> = Vec::new();
    for path in written
        .iter()
        .map(|w| Path::new(w).components().collect::<PathBuf>())
    {
        if !in_memory_folder(&path, dir, real_dir.as_deref())
            || found.iter().any(|(_, p)| *p == path)
        {
            continue;
        }
        if let Some(m) = modified(&path) {
            found.push((Some(m), path));
        }
    }
    if let (Some(since), Ok(entries)) = (since, fs::read_dir(dir)) {
        for entry in entries.take(SCAN_ENTRIES).flatten() {
            let path: PathBuf = entry.path().components().collect();
            let changed = modified(&path).filter(|m| *m > since);
            let markdown = path.extension().is_some_and(|e| e == "md");
            if changed.is_some()
                && markdown
                && in_folder(&path, dir)
                && !found.iter().any(|(_, p)| *p == path)
            {
                found.push((changed, path));
            }
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found
        .into_iter()
        // Each is read to know: a bounded number, newest first.
        .take(SAVED_EXAMINED)
        .filter(|(_, p)| {
            matches!(
                saved_memory(p, dir, real_dir.as_deref(), places),
                Ok(Some(_))
            )
        })
        .take(MAX_SAVED)
        .map(|(_, p)| p.display().to_string())
        .collect()
}

/// The saved memory at `path` as a recovery block shows it: a file really inside the memory
/// folder `dir` (`real_dir`, resolved), read under the rules of [`read`], and with no other hard
/// link (one would make another file of the same user look like a memory the agent wrote).
/// `Ok(None)` when it is none (outside the folder, missing, empty); an error says why a file
/// there is refused. Recording ([`saved_since`]) and showing ([`read_saved`]) both ask this.
fn saved_memory(
    path: &Path,
    dir: &Path,
    real_dir: Option<&Path>,
    places: &Places,
) -> Result<Option<Memory>> {
    if !in_memory_folder(path, dir, real_dir) {
        return Ok(None);
    }
    read_file(path, places, Links::One)
}

/// The saved memories a block shows, from the paths a checkpoint recorded: each still inside
/// Claude Code's memory folder `dir` (the client's `MEMORY.md` never, nor one of `shown`, the
/// memory files the block shows anyway), read under the rules of [`read`], its current contents
/// cut to [`SAVED_CHARS`]. Missing files are skipped; refusals come back as notes.
pub(super) fn read_saved(
    recorded: &[String],
    dir: Option<&Path>,
    shown: &[PathBuf],
    places: &Places,
) -> (Vec<Memory>, Vec<String>) {
    let Some(dir) = dir else {
        return (Vec::new(), Vec::new());
    };
    let real_dir = fs::canonicalize(dir).ok();
    let same = |a: &Path, b: &Path| {
        a == b || matches!((fs::canonicalize(a), fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
    };
    let mut found = Vec::new();
    let mut notes = Vec::new();
    for path in recorded.iter().take(MAX_SAVED).map(PathBuf::from) {
        if shown.iter().any(|s| same(s, &path)) {
            continue;
        }
        match saved_memory(&path, dir, real_dir.as_deref(), places) {
            Ok(Some(mut memory)) => {
                memory.content = cut(&memory.content, SAVED_CHARS);
                found.push(memory);
            }
            Ok(None) => {}
            Err(e) => notes.push(format!("saved memory not shown: {e:#}")),
        }
    }
    (found, notes)
}

/// The saved memories of the checkpoint of a session in `cwd` with transcript
/// `transcript_path`, as [`read_saved`] gives them, leaving out the memory files
/// [`for_session`] shows.
pub fn saved_for(
    config: &Config,
    env: &Env,
    recorded: &[String],
    cwd: &str,
    transcript_path: &str,
) -> (Vec<Memory>, Vec<String>) {
    if recorded.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let project = project_of(env, cwd);
    let places = Places {
        home: env.home.as_deref(),
        project: &project,
    };
    let shown: Vec<PathBuf> = config
        .memory_files
        .clone()
        .unwrap_or_else(|| DEFAULT_FILES.iter().map(|s| (*s).to_string()).collect())
        .iter()
        .map(|e| resolve(e, &places))
        .collect();
    let dir = client_dir_for(env, cwd, transcript_path);
    read_saved(recorded, dir.as_deref(), &shown, &places)
}
