//! Which session transcripts `replay --all` takes: Claude Code's under its projects folder
//! (`<project>/<session>.jsonl`), and Codex's rollouts under its sessions folder
//! (`YYYY/MM/DD/rollout-*.jsonl`), each listing bounded to real folders and regular files (a
//! link is never followed out of the folder), filtered by `--since` and `--project`, newest
//! first.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, Result};

use crate::input::Client;
use crate::rollout::Item;
use crate::transcript::{Line, LineReader};

/// Which transcripts `--all` takes.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only transcripts written in the last this many days.
    pub since_days: Option<u64>,
    /// Only projects whose folder name contains this (a path is first named as the client
    /// names its folder: every character but letters and digits becomes `-`).
    pub project: Option<String>,
}

/// The folder name the client gives a project at `path`.
pub fn folder_name(path: &str) -> String {
    path.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// A session transcript found: when it was last written, where, and which client wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub modified: SystemTime,
    pub path: PathBuf,
    pub client: Client,
}

/// Newest first (then by path).
pub fn newest_first(mut found: Vec<Found>) -> Vec<Found> {
    found.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| a.path.cmp(&b.path))
    });
    found
}

/// `--project` as a folder name: a path is first named as the client names its folder.
fn wanted_project(filter: &Filter) -> Option<String> {
    filter.project.as_deref().map(|p| {
        if p.contains('/') || p.contains('\\') {
            folder_name(p)
        } else {
            p.to_string()
        }
    })
}

/// The oldest modification time `--since` keeps.
fn oldest(filter: &Filter, now: SystemTime) -> Option<SystemTime> {
    filter
        .since_days
        .and_then(|d| now.checked_sub(Duration::from_secs(d.saturating_mul(86_400))))
}

/// When the file of `entry` was last written, if `--since` keeps it.
fn kept_since(entry: &fs::DirEntry, oldest: Option<SystemTime>) -> Option<SystemTime> {
    let modified = entry
        .metadata()
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    oldest.is_none_or(|o| modified >= o).then_some(modified)
}

/// The session transcripts under `projects`, newest first, that pass `filter` (subagents'
/// transcripts, in a session's own folder, are not sessions).
pub fn transcripts(projects: &Path, filter: &Filter, now: SystemTime) -> Result<Vec<Found>> {
    let entries = match fs::read_dir(projects) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", projects.display())),
    };
    let wanted = wanted_project(filter);
    let oldest = oldest(filter, now);
    let mut found = Vec::new();
    for project in entries.flatten() {
        // Real folders only: a link is not followed out of the projects folder.
        if !project.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let name = project.file_name().to_string_lossy().into_owned();
        if wanted.as_deref().is_some_and(|w| !name.contains(w)) {
            continue;
        }
        let Ok(files) = fs::read_dir(project.path()) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            let is_file = file.file_type().is_ok_and(|t| t.is_file());
            if !is_file || path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            if let Some(modified) = kept_since(&file, oldest) {
                found.push(Found {
                    modified,
                    path,
                    client: Client::ClaudeCode,
                });
            }
        }
    }
    Ok(newest_first(found))
}

/// At most this many Codex rollouts are listed, the newest days first.
pub const MAX_ROLLOUTS: usize = 50_000;

/// The real folders (never a link) in `dir` named by digits, as Codex names a year, a month
/// and a day, the newest first.
fn dated_folders(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut folders: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let digits = !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit());
            digits.then(|| (name, e.path()))
        })
        .collect();
    folders.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| b.0.cmp(&a.0)));
    folders.into_iter().map(|(_, p)| p).collect()
}

/// How much of a rollout's first line (its `session_meta`) is read for its directory.
const META_BYTES: u64 = 256 * 1024;

/// The directory a rollout's session ran in, from its first line.
fn rollout_cwd(path: &Path) -> Option<String> {
    let (file, _) = crate::files::open_regular(path, "rollout").ok()?;
    let mut lines = LineReader::new(file.take(META_BYTES), META_BYTES as usize);
    match lines.next_line() {
        Ok(Some(Line::Text(first))) => match crate::rollout::item(first) {
            Item::Meta { cwd, .. } => cwd,
            _ => None,
        },
        _ => None,
    }
}

/// The Codex rollouts under `sessions` (`YYYY/MM/DD/rollout-*.jsonl`: real folders, regular
/// files, no link followed out of it), newest first, that pass `filter` (`--project` on the
/// folder name Claude Code would give the session's directory), at most [`MAX_ROLLOUTS`]; and
/// whether there were more.
pub fn rollouts(sessions: &Path, filter: &Filter, now: SystemTime) -> Result<(Vec<Found>, bool)> {
    match fs::metadata(sessions) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), false)),
        Err(e) => return Err(e).with_context(|| format!("listing {}", sessions.display())),
    }
    let days = dated_folders(sessions)
        .iter()
        .flat_map(|year| dated_folders(year))
        .flat_map(|month| dated_folders(&month))
        .collect::<Vec<_>>();
    let is_rollout = |path: &Path| crate::rollout::is_rollout(path);
    Ok(sessions_in(
        days,
        is_rollout,
        rollout_cwd,
        Client::Codex,
        filter,
        now,
    ))
}

/// The sessions of `client` in `folders` (their regular files that `is_session`), newest first,
/// that pass `filter` (`--project` on the folder name Claude Code would give the directory
/// `cwd_of` reads in each), at most [`MAX_ROLLOUTS`]; and whether there were more.
fn sessions_in(
    folders: impl IntoIterator<Item = PathBuf>,
    is_session: impl Fn(&Path) -> bool,
    cwd_of: impl Fn(&Path) -> Option<String>,
    client: Client,
    filter: &Filter,
    now: SystemTime,
) -> (Vec<Found>, bool) {
    let wanted = wanted_project(filter);
    let oldest = oldest(filter, now);
    let mut found = Vec::new();
    for folder in folders {
        let Ok(files) = fs::read_dir(&folder) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            let is_file = file.file_type().is_ok_and(|t| t.is_file());
            if !is_file || !is_session(&path) {
                continue;
            }
            let Some(modified) = kept_since(&file, oldest) else {
                continue;
            };
            if let Some(w) = &wanted {
                let cwd = cwd_of(&path).unwrap_or_default();
                if cwd.is_empty() || !folder_name(&cwd).contains(w.as_str()) {
                    continue;
                }
            }
            if found.len() == MAX_ROLLOUTS {
                return (newest_first(found), true);
            }
            found.push(Found {
                modified,
                path,
                client,
            });
        }
    }
    (newest_first(found), false)
}

/// pi's sessions under `sessions` (`--<cwd>--/<time>_<id>.jsonl`, or `<time>_<id>.jsonl` in a
/// folder of the user's `sessionDir`: real folders, regular files, no link followed out of
/// it), newest first, that pass `filter` (`--project` on the folder name
/// Claude Code would give the directory the session's header names), at most [`MAX_ROLLOUTS`];
/// and whether there were more.
pub fn pi_sessions(
    sessions: &Path,
    filter: &Filter,
    now: SystemTime,
) -> Result<(Vec<Found>, bool)> {
    let entries = match fs::read_dir(sessions) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), false)),
        Err(e) => return Err(e).with_context(|| format!("listing {}", sessions.display())),
    };
    let folders = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path());
    let folders = std::iter::once(sessions.to_path_buf()).chain(folders);
    let is_pi = |path: &Path| crate::pi::shadow::is_pi_source(&path.to_string_lossy());
    let cwd_of = crate::pi::shadow::session_cwd;
    Ok(sessions_in(folders, is_pi, cwd_of, Client::Pi, filter, now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcripts_are_the_sessions_of_the_wanted_projects_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let projects = dir.path().join("projects");
        let a = projects.join("-home-u-alpha");
        let b = projects.join("-home-u-beta");
        fs::create_dir_all(a.join("s1/subagents")).unwrap();
        fs::create_dir_all(&b).unwrap();
        fs::write(a.join("s1.jsonl"), "{}\n").unwrap();
        fs::write(a.join("s1/subagents/agent-x.jsonl"), "{}\n").unwrap();
        fs::write(a.join("notes.txt"), "x").unwrap();
        fs::write(b.join("s2.jsonl"), "{}\n").unwrap();
        let all = transcripts(&projects, &Filter::default(), SystemTime::now()).unwrap();
        let names: Vec<_> = all
            .iter()
            .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.contains(&"s1.jsonl".into()) && names.contains(&"s2.jsonl".into()));
        // A project by a part of its folder name, or by its path.
        for p in ["beta", "/home/u/beta"] {
            let f = Filter {
                project: Some(p.into()),
                ..Filter::default()
            };
            let only = transcripts(&projects, &f, SystemTime::now()).unwrap();
            let only: Vec<_> = only.into_iter().map(|f| f.path).collect();
            assert_eq!(only, [b.join("s2.jsonl")], "{p}");
        }
        // Written more than a day ago: not since 1 day.
        let later = SystemTime::now() + Duration::from_secs(3 * 86_400);
        let f = Filter {
            since_days: Some(1),
            ..Filter::default()
        };
        assert!(transcripts(&projects, &f, later).unwrap().is_empty());
        assert!(transcripts(&dir.path().join("none"), &f, later)
            .unwrap()
            .is_empty());
    }

    /// `YYYY/MM/DD/rollout-*.jsonl` under the sessions folder: real folders named by digits and
    /// regular rollout files only, never through a link, the newest first; `--project` on the
    /// session's directory, `--since` on the file's time.
    #[test]
    fn rollouts_are_the_dated_sessions_of_codex_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        let meta = |cwd: &str| {
            format!(
                "{{\"timestamp\":\"2026-11-25T10:00:00Z\",\"type\":\"session_meta\",\"payload\":{{\"cwd\":\"{cwd}\"}}}}\n"
            )
        };
        let put = |day: &str, name: &str, cwd: &str| {
            let folder = sessions.join(day);
            fs::create_dir_all(&folder).unwrap();
            let path = folder.join(name);
            fs::write(&path, meta(cwd)).unwrap();
            path
        };
        let old = put(
            "2026/10/02",
            "rollout-2026-10-02T09-00-00-a.jsonl",
            "/home/u/alpha",
        );
        let new = put(
            "2026/11/25",
            "rollout-2026-11-25T09-00-00-b.jsonl",
            "/home/u/beta",
        );
        // Not a rollout, not a dated folder, not where Codex writes.
        put("2026/11/25", "notes.jsonl", "/home/u/beta");
        put("2026/11/archive", "rollout-x.jsonl", "/home/u/beta");
        put("2026", "rollout-y.jsonl", "/home/u/beta");
        // The older session last written an hour before the newer one.
        let same = SystemTime::now();
        for (path, at) in [(&old, same - Duration::from_secs(3600)), (&new, same)] {
            fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(at)
                .unwrap();
        }
        let paths = |filter: &Filter, now: SystemTime| -> Vec<PathBuf> {
            let (found, more) = rollouts(&sessions, filter, now).unwrap();
            assert!(!more);
            assert!(found.iter().all(|f| f.client == Client::Codex));
            found.into_iter().map(|f| f.path).collect()
        };
        assert_eq!(paths(&Filter::default(), same), [new.clone(), old.clone()]);
        for project in ["alpha", "/home/u/alpha"] {
            let f = Filter {
                project: Some(project.into()),
                ..Filter::default()
            };
            assert_eq!(paths(&f, same), std::slice::from_ref(&old), "{project}");
        }
        let f = Filter {
            since_days: Some(1),
            ..Filter::default()
        };
        assert!(paths(&f, same + Duration::from_secs(3 * 86_400)).is_empty());
        // No sessions folder (no ~/.codex): nothing, and no error.
        assert_eq!(
            rollouts(&dir.path().join("none"), &Filter::default(), same).unwrap(),
            (Vec::new(), false)
        );
    }

    /// A link to a folder or a file elsewhere is not followed out of the sessions folder.
    #[cfg(unix)]
    #[test]
    fn rollouts_never_follow_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        let outside = dir.path().join("outside");
        fs::create_dir_all(outside.join("25")).unwrap();
        fs::write(outside.join("25/rollout-a.jsonl"), "{}\n").unwrap();
        fs::write(outside.join("rollout-b.jsonl"), "{}\n").unwrap();
        fs::create_dir_all(sessions.join("2026/11/24")).unwrap();
        std::os::unix::fs::symlink(outside.join("25"), sessions.join("2026/11/25")).unwrap();
        std::os::unix::fs::symlink(
            outside.join("rollout-b.jsonl"),
            sessions.join("2026/11/24/rollout-b.jsonl"),
        )
        .unwrap();
        let (found, _) = rollouts(&sessions, &Filter::default(), SystemTime::now()).unwrap();
        assert!(found.is_empty(), "{found:?}");
    }
}
