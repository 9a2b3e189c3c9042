//! The memory files shown after a recovery: which ones (the configured list, by default the
//! user's `~/.claude-memory/MEMORY.md` and the project's `.claude/memory/MEMORY.md`), and reading
//! them under the same rules as state files.
//!
//! A project's files come from a repository anyone may have written, and a cloned repository can
//! hold symlinks: `.claude/memory/MEMORY.md -> /proc/self/environ` would put the hook's whole
//! environment into the model's context. So a memory file is read only when:
//! - its last component is not a symlink (opened without following one, see
//!   [`crate::files::open_nofollow`]) and it is a regular file;
//! - its resolved directory stays inside the project (project memory) or the home directory
//!   (user memory), and never under `/proc`, `/sys` or `/dev`; a file named inside the project
//!   must resolve inside it (a linked `.claude/memory` never passes for the user's own memory);
//! - and at most [`READ_LIMIT`] bytes of it are read.
//!
//! Project memory is labelled untrusted when rendered; see [`crate::recovery`].
//!
//! Claude Code's own memory folder and where the nudge sends a save are [`folder`]'s; the
//! memories the agent saved there, recorded with a checkpoint and read back, [`saved`]'s.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

pub use crate::checkpoint::{Memory, Trust, MAX_SAVED};
use crate::config::{Config, Env};
use crate::text::{cut, sanitize};

mod folder;
mod saved;

pub use folder::{client_dir_for, save_place_for, short_save_place_for};
pub use saved::{saved_for, saved_since};

/// Reading more than this of a memory file is pointless: the budget is smaller.
const READ_LIMIT: u64 = 256 * 1024;

/// A label never takes more than this many characters.
const LABEL_CHARS: usize = 120;

/// Where memory files are looked for.
#[derive(Debug, Clone)]
pub struct Places<'a> {
    pub home: Option<&'a Path>,
    pub project: &'a Path,
}

/// The default list: the user's global file and the project's own.
pub const DEFAULT_FILES: &[&str] = &["~/.claude-memory/MEMORY.md", ".claude/memory/MEMORY.md"];

/// `~/x` → `$HOME/x`; relative paths are relative to the project.
pub fn resolve(entry: &str, places: &Places) -> PathBuf {
    match (entry.strip_prefix("~/"), places.home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if Path::new(entry).is_absolute() => PathBuf::from(entry),
        _ => places.project.join(entry),
    }
}

/// The project of a session in `cwd`: `CLAUDE_PROJECT_DIR` when set, else `cwd`.
pub fn project_of(env: &Env, cwd: &str) -> PathBuf {
    env.project_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(cwd))
}

/// The memory files of a session in `cwd`: the configured list (or [`DEFAULT_FILES`]), with
/// the project at `CLAUDE_PROJECT_DIR` when set, else `cwd`.
pub fn for_session(config: &Config, env: &Env, cwd: &str) -> (Vec<Memory>, Vec<String>) {
    let project = project_of(env, cwd);
    let entries: Vec<String> = config
        .memory_files
        .clone()
        .unwrap_or_else(|| DEFAULT_FILES.iter().map(|s| (*s).to_string()).collect());
    let places = Places {
        home: env.home.as_deref(),
        project: &project,
    };
    read_all(&entries, &places)
}

/// Every configured memory file that can be read safely, in order. Files that are missing are
/// skipped silently; refusals (a symlink, a path outside the allowed places) are returned as
/// notes so a hook can say why a file was not shown.
fn read_all(entries: &[String], places: &Places) -> (Vec<Memory>, Vec<String>) {
    let mut found = Vec::new();
    let mut notes = Vec::new();
    for entry in entries {
        let path = resolve(entry, places);
        match read(&path, places) {
            Ok(Some(memory)) => found.push(memory),
            Ok(None) => {}
            Err(e) => notes.push(format!("memory file not shown: {e:#}")),
        }
    }
    (found, notes)
}

/// How many names a memory file may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Links {
    /// Any number: a memory file the config names is the user's choice.
    Any,
    /// One: a saved memory (a hard link into the memory folder is refused, on Unix, where the
    /// count is known).
    One,
}

/// One memory file: `Ok(None)` when it does not exist or is empty.
pub fn read(path: &Path, places: &Places) -> Result<Option<Memory>> {
    read_file(path, places, Links::Any)
}

/// [`read`], refusing a file with other hard links when `links` is [`Links::One`] (checked on
/// the opened file).
fn read_file(path: &Path, places: &Places, links: Links) -> Result<Option<Memory>> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        bail!("{} is not a file path", shown(path));
    };
    // No such directory: no such file.
    let Ok(real_dir) = fs::canonicalize(dir) else {
        return Ok(None);
    };
    let trust = classify(&real_dir, places)
        .and_then(|trust| within_its_place(path, trust, places))
        .with_context(|| format!("{} is refused", shown(path)))?;
    let real = real_dir.join(name);
    let mut file = match crate::files::open_nofollow(&real) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if crate::files::is_link_refusal(&e) => {
            bail!(
                "{} is a symbolic link; memory files are never followed through one",
                shown(path)
            )
        }
        Err(e) => return Err(e).with_context(|| format!("opening {}", shown(path))),
    };
    let meta = file
        .metadata()
        .with_context(|| format!("reading {}", shown(path)))?;
    if !meta.is_file() {
        bail!("{} is not a regular file", shown(path));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if links == Links::One && meta.nlink() > 1 {
            bail!("{} has other hard links", shown(path));
        }
    }
    #[cfg(not(unix))]
    let _ = links;
    let mut bytes = Vec::new();
    (&mut file)
        .take(READ_LIMIT)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {}", shown(path)))?;
    let content = sanitize(&String::from_utf8_lossy(&bytes), false);
    let content = content.trim();
    if content.is_empty() {
        return Ok(None);
    }
    Ok(Some(Memory {
        label: label(&real, trust, places),
        content: content.to_string(),
        trust,
    }))
}

/// Which place a resolved directory belongs to; an error when it is in none, or in a
/// pseudo-filesystem.
fn classify(real_dir: &Path, places: &Places) -> Result<Trust> {
    for system in ["/proc", "/sys", "/dev"] {
        if real_dir.starts_with(system) {
            bail!("it resolves under {system}");
        }
    }
    let real = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if real_dir.starts_with(real(places.project)) {
        return Ok(Trust::Project);
    }
    if places.home.is_some_and(|h| real_dir.starts_with(real(h))) {
        return Ok(Trust::User);
    }
    bail!("it resolves outside both the project and the home directory")
}

/// A file named inside the project is project memory wherever it resolves: it must stay in the
/// project (a cloned repository can link `.claude/memory` to another project, or to the home
/// directory, and must not have that shown as the user's own memory).
fn within_its_place(written: &Path, resolved: Trust, places: &Places) -> Result<Trust> {
    let in_project = written.starts_with(places.project)
        || fs::canonicalize(places.project).is_ok_and(|p| written.starts_with(p));
    if in_project && resolved != Trust::Project {
        bail!("it is in the project but resolves outside it");
    }
    Ok(resolved)
}

/// A short, sanitised, one-line label: project-relative, `~/...`, or the path.
fn label(real: &Path, trust: Trust, places: &Places) -> String {
    let real_of = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let text = match trust {
        Trust::Project => real
            .strip_prefix(real_of(places.project))
            .map_or_else(|_| real.display().to_string(), slashed),
        Trust::User => match places.home.map(real_of) {
            Some(home) => real.strip_prefix(&home).map_or_else(
                |_| real.display().to_string(),
                |p| format!("~/{}", slashed(p)),
            ),
            None => real.display().to_string(),
        },
    };
    cut(&sanitize(&text, true), LABEL_CHARS)
}

/// A relative path with `/` between its parts, as labels are written on every platform.
fn slashed(path: &Path) -> String {
    let parts: Vec<_> = path.iter().map(|p| p.to_string_lossy()).collect();
    parts.join("/")
}

/// A path as it may appear in an error message: sanitised, one line, bounded.
fn shown(path: &Path) -> String {
    cut(&sanitize(&path.display().to_string(), true), 300)
}

#[cfg(test)]
mod tests;
