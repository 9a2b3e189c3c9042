//! `ctxguard uninstall --purge`: ctxguard's state directory removed, after saying what it holds.
//!
//! Only what ctxguard itself keeps there goes: under the entries it creates at the top of the
//! state root ([`OWN`]), the files it names so, where it names them ([`is_own_file`]), each
//! through a walk that never follows a link (a link is removed, never what it points at). A
//! user's file is never removed, however `CTXGUARD_HOME` is set: no file of another name or
//! shape, nor any memory file the config names; anything else in the root stays, and the root
//! goes only when nothing is left in it. A root that is the home directory, Claude Code's
//! own directory, or a directory holding either, is refused outright.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::config::{Config, Env};
use crate::memory;
use crate::paths::Paths;

/// What ctxguard creates at the top of its state root, and what each holds.
const OWN: &[(&str, &str)] = &[
    (
        "sessions",
        "sessions' state (markers, locks, cached readings)",
    ),
    ("checkpoints", "checkpoints and compaction summaries"),
    ("logs", "daily logs"),
    ("cwd", "the index of sessions by directory"),
    ("recent", "the activity buckets"),
    ("config.json", "your ctxguard settings"),
    ("models.json", "context windows learned from status lines"),
    ("retention.json", "where the retention pass is"),
    ("retention.lock", "the retention pass's lock"),
];

/// Is this file one of ctxguard's own (`rel`: its path under the state root, `path` the file)?
/// Only a name ctxguard gives, where it gives it: a session's `marker.json`, `lock` and
/// `reading.json`; a checkpoint `cp_NNN.json`, its `cp_NNN.summary.md`, `_latest.json`; a daily
/// log `YYYY-MM-DD.md`; the index's `index.json`, `lock`, `.complete`; an activity entry under a
/// dated `recent/` folder; a temp file of an atomic write. `config.json`, `models.json` and
/// `retention.json` only when they read as ctxguard's. Anything else (a user's `notes.txt` in a
/// `sessions` folder of a directory `CTXGUARD_HOME` was pointed at) is kept.
fn is_own_file(rel: &Path, path: &Path) -> bool {
    let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
    let Some(name) = parts.last() else {
        return false;
    };
    if name.starts_with(".tmp-") && parts.len() <= 3 {
        return true;
    }
    let numbered = |n: &str, suffix: &str| {
        n.strip_prefix("cp_")
            .and_then(|s| s.strip_suffix(suffix))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let dated = |n: &str| chrono::NaiveDate::parse_from_str(n, "%Y-%m-%d").is_ok();
    match parts.as_slice() {
        ["sessions", _, n] => matches!(*n, "marker.json" | "lock" | "reading.json"),
        ["checkpoints", _, n] => {
            *n == "_latest.json" || numbered(n, ".json") || numbered(n, ".summary.md")
        }
        ["logs", n] => n.strip_suffix(".md").is_some_and(dated),
        ["cwd", _, n] => matches!(*n, "index.json" | "lock" | ".complete"),
        ["cwd" | "recent", ".complete"] | ["retention.lock"] => true,
        ["recent", day, ..] => dated(day),
        ["config.json"] => reads_as(path, |v| {
            v.as_object()
                .is_some_and(|o| o.keys().all(|k| crate::config::is_key(k)))
        }),
        ["models.json"] => reads_as(path, |v| {
            v.as_object()
                .is_some_and(|o| o.values().all(serde_json::Value::is_u64))
        }),
        ["retention.json"] => reads_as(path, serde_json::Value::is_object),
        _ => false,
    }
}

/// Does the small JSON file at `path` pass `check`? (Anything unreadable, large or not JSON:
/// no.)
fn reads_as(path: &Path, check: impl Fn(&serde_json::Value) -> bool) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() <= 1 << 20)
        && fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| check(&v))
}

/// What a purge found, removed and left.
#[derive(Debug, Default)]
struct Tally {
    files: usize,
    bytes: u64,
    /// Files and directories left in place, with why.
    kept: Vec<(PathBuf, String)>,
}

/// Removes (or, in a dry run, counts) `path` under `root` and everything in it that is
/// ctxguard's, never following a link. Returns whether it is gone (or would be).
fn remove(
    root: &Path,
    path: &Path,
    protected: &[PathBuf],
    dry_run: bool,
    t: &mut Tally,
) -> Result<bool> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    if protected.iter().any(|p| p == path) {
        t.kept
            .push((path.to_path_buf(), "a memory file the config names".into()));
        return Ok(false);
    }
    let rel = path.strip_prefix(root).unwrap_or(path);
    if meta.is_dir() && !meta.file_type().is_symlink() {
        let mut empty = true;
        let entries = fs::read_dir(path).with_context(|| format!("listing {}", path.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("listing {}", path.display()))?;
            empty &= remove(root, &entry.path(), protected, dry_run, t)?;
        }
        if empty && !dry_run {
            fs::remove_dir(path).with_context(|| format!("removing {}", path.display()))?;
        }
        return Ok(empty);
    }
    if !meta.file_type().is_symlink() && !is_own_file(rel, path) {
        t.kept.push((
            path.to_path_buf(),
            "not ctxguard's (no file ctxguard writes there has this name or contents)".into(),
        ));
        return Ok(false);
    }
    t.files += 1;
    t.bytes += meta.len();
    if !dry_run {
        // A link goes itself, never what it points at (on Windows a directory link is removed
        // as a directory).
        fs::remove_file(path)
            .or_else(|e| {
                if meta.file_type().is_symlink() {
                    fs::remove_dir(path)
                } else {
                    Err(e)
                }
            })
            .with_context(|| format!("removing {}", path.display()))?;
    }
    Ok(true)
}

/// Refuses, before anything is changed, a state root that must not be purged.
pub fn check(env: &Env) -> Result<()> {
    refuse_foreign_root(env.paths()?.root(), env)
}

/// The directories a state root must never be, nor hold: the home directory and Claude Code's.
fn refuse_foreign_root(root: &Path, env: &Env) -> Result<()> {
    let real = |p: &Path| crate::files::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let root_real = real(root);
    let theirs = [
        (env.home.clone(), "your home directory"),
        (env.client_dir(), "Claude Code's own directory"),
    ];
    for (dir, what) in theirs {
        let Some(dir) = dir else { continue };
        if real(&dir).starts_with(&root_real) {
            bail!(
                "the state directory {} (CTXGUARD_HOME) is {what} {} or holds it: ctxguard will \
                 not purge it; nothing was removed. Remove ctxguard's own entries there by hand \
                 ({}), or set CTXGUARD_HOME to ctxguard's own directory",
                root.display(),
                dir.display(),
                OWN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            );
        }
    }
    Ok(())
}

/// The files anywhere under `dir` (links counted, never followed).
fn files_under(dir: &Path) -> usize {
    fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() => files_under(&e.path()),
                _ => 1,
            })
            .sum()
    })
}

/// Counts what `dir` holds: entries directly in it, and files anywhere under it.
fn count(dir: &Path) -> (usize, usize) {
    (
        fs::read_dir(dir).map_or(0, Iterator::count),
        files_under(dir),
    )
}

/// One line saying what an entry of the state root holds.
fn describe(root: &Path, name: &str, what: &str) -> Option<String> {
    let path = root.join(name);
    let meta = fs::symlink_metadata(&path).ok()?;
    if !meta.is_dir() {
        return Some(format!("  {name}: {what}"));
    }
    let (direct, files) = count(&path);
    let n = match name {
        "sessions" => plural(direct, "session", "sessions"),
        "checkpoints" => format!(
            "checkpoints of {} ({})",
            plural(direct, "session", "sessions"),
            plural(files, "file", "files")
        ),
        "logs" => plural(direct, "daily log", "daily logs"),
        _ => plural(files, "file", "files"),
    };
    Some(format!("  {name}/: {what}: {n}"))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn size(bytes: u64) -> String {
    match bytes {
        0..=1023 => format!("{bytes} bytes"),
        1024..=1_048_575 => format!("{:.1} KB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

/// The memory files the config names (or the defaults) that have a fixed place: whatever the
/// state root, none of them is removed.
fn memory_files(paths: &Paths, env: &Env) -> Vec<PathBuf> {
    let config = Config::load_or_default(paths, env).config;
    let places = memory::Places {
        home: env.home.as_deref(),
        project: Path::new(""),
    };
    config
        .memory_files
        .unwrap_or_else(|| {
            memory::DEFAULT_FILES
                .iter()
                .map(|s| (*s).to_string())
                .collect()
        })
        .iter()
        .map(|entry| memory::resolve(entry, &places))
        .filter(|p| p.is_absolute())
        .collect()
}

/// Whatever else is in the root is not ctxguard's: it stays (and so does the root).
fn keep_the_rest(root: &Path, protected: &[PathBuf], tally: &mut Tally) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for path in entries.flatten().map(|e| e.path()) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if OWN.iter().any(|(n, _)| *n == name) || name.starts_with(".tmp-") {
            continue;
        }
        let why = if protected.contains(&path) {
            "a memory file, not ctxguard's"
        } else {
            "not ctxguard's"
        };
        tally.kept.push((path, why.into()));
    }
}

/// The default state root's folder (`~/.claude-memory`), which ctxguard created with it, when
/// nothing else is in it once the root is gone (`dry_run`: the root is still there, and the only
/// entry). A folder `CTXGUARD_HOME` leads elsewhere is not ctxguard's to remove.
fn own_parent(root: &Path, env: &Env, dry_run: bool) -> Option<PathBuf> {
    let parent = env.home.as_ref()?.join(".claude-memory");
    if root != parent.join("ctxguard") {
        return None;
    }
    let real_dir =
        fs::symlink_metadata(&parent).is_ok_and(|m| m.is_dir() && !m.file_type().is_symlink());
    let mut entries = fs::read_dir(&parent).ok()?.flatten().map(|e| e.path());
    let empty = if dry_run {
        entries.next().is_some_and(|e| e == root) && entries.next().is_none()
    } else {
        entries.next().is_none()
    };
    (real_dir && empty).then_some(parent)
}

/// Says what ctxguard's state directory holds, then removes what is ctxguard's in it (or, with
/// `dry_run`, says what it would remove).
pub fn run(env: &Env, dry_run: bool) -> Result<()> {
    let paths: Paths = env.paths()?;
    let root = paths.root();
    if fs::symlink_metadata(root).is_err() {
        println!(
            "no state directory at {} (nothing to purge)",
            root.display()
        );
        return Ok(());
    }
    refuse_foreign_root(root, env)?;
    let protected = memory_files(&paths, env);

    println!("ctxguard's state directory {} holds:", root.display());
    let lines: Vec<String> = OWN
        .iter()
        .filter_map(|(name, what)| describe(root, name, what))
        .collect();
    if lines.is_empty() {
        println!("  nothing of ctxguard's");
    }
    for line in &lines {
        println!("{line}");
    }
    let mut tally = Tally::default();
    for (name, _) in OWN {
        remove(root, &root.join(name), &protected, dry_run, &mut tally)?;
    }
    // Temp files a killed writer left at the top.
    if let Ok(entries) = fs::read_dir(root) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(".tmp-") {
                remove(root, &entry.path(), &protected, dry_run, &mut tally)?;
            }
        }
    }
    keep_the_rest(root, &protected, &mut tally);
    let verb = if dry_run { "would remove" } else { "removed" };
    println!(
        "{verb} {} ({}) of ctxguard's",
        plural(tally.files, "file", "files"),
        size(tally.bytes)
    );
    for (path, why) in &tally.kept {
        println!("kept {}: {why}", path.display());
    }
    let real_dir =
        fs::symlink_metadata(root).is_ok_and(|m| m.is_dir() && !m.file_type().is_symlink());
    if tally.kept.is_empty() && real_dir {
        if !dry_run {
            fs::remove_dir(root).with_context(|| format!("removing {}", root.display()))?;
        }
        println!("{verb} the state directory {}", root.display());
        if let Some(parent) = own_parent(root, env, dry_run) {
            if !dry_run {
                fs::remove_dir(&parent)
                    .with_context(|| format!("removing {}", parent.display()))?;
            }
            println!("{verb} the folder {}, empty without it", parent.display());
        }
    } else if !real_dir {
        println!(
            "the state directory {} is a link: the link stays (remove it by hand if you want)",
            root.display()
        );
    } else {
        println!(
            "the state directory {} stays (it holds what is not ctxguard's)",
            root.display()
        );
    }
    if dry_run {
        println!("(dry run: nothing removed)");
    } else {
        println!(
            "A Claude Code session still running may write to it again until it ends: its \
             settings were read when it started."
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_names_ctxguard_gives_where_it_gives_them_are_its_own() {
        let t = tempfile::tempdir().unwrap();
        let own = |rel: &str| is_own_file(Path::new(rel), &t.path().join(rel));
        for rel in [
            "logs/2026-11-21.md",
            "checkpoints/abc/cp_001.summary.md",
            "checkpoints/abc/cp_001.json",
            "checkpoints/abc/_latest.json",
            "sessions/abc/marker.json",
            "sessions/abc/reading.json",
            "sessions/abc/lock",
            "sessions/abc/.tmp-x1",
            "cwd/-p/index.json",
            "recent/2026-11-21/09/12/03.123456@abc",
            "retention.lock",
        ] {
            assert!(own(rel), "{rel}");
        }
        for rel in [
            "MEMORY.md",
            "logs/notes.md",
            "logs/app.log",
            "logs/sub/2026-11-21.md",
            "checkpoints/abc/cp_.summary.md",
            "checkpoints/abc/notes.md",
            "sessions/abc/MEMORY.md",
            "sessions/todo.txt",
            "cwd/data/train.csv",
            "recent/photos/a.jpg",
            "config.json",
        ] {
            assert!(!own(rel), "{rel}");
        }
        // A config.json only when it reads as ctxguard's.
        fs::write(t.path().join("config.json"), r#"{"headroom_tokens": 5}"#).unwrap();
        assert!(own("config.json"));
        fs::write(t.path().join("config.json"), r#"{"secret": "x"}"#).unwrap();
        assert!(!own("config.json"));
        fs::write(
            t.path().join("models.json"),
            r#"{"claude-opus-5-5": 1000000}"#,
        )
        .unwrap();
        assert!(own("models.json"));
    }

    #[test]
    fn a_purge_removes_what_is_ctxguards_and_keeps_the_rest() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("memory");
        fs::create_dir_all(root.join("sessions/abc")).unwrap();
        fs::create_dir_all(root.join("logs")).unwrap();
        fs::write(root.join("sessions/abc/marker.json"), "{}").unwrap();
        fs::write(root.join("logs/2026-11-21.md"), "log").unwrap();
        fs::write(root.join("logs/notes.md"), "mine").unwrap();
        fs::write(root.join("MEMORY.md"), "mine").unwrap();
        let mut tally = Tally::default();
        for name in ["sessions", "logs"] {
            remove(&root, &root.join(name), &[], false, &mut tally).unwrap();
        }
        assert!(!root.join("sessions").exists());
        assert!(!root.join("logs/2026-11-21.md").exists());
        assert_eq!(
            fs::read_to_string(root.join("logs/notes.md")).unwrap(),
            "mine"
        );
        assert_eq!(fs::read_to_string(root.join("MEMORY.md")).unwrap(), "mine");
        assert_eq!(tally.files, 2);
        // A protected path stays even where ctxguard's files are.
        let kept = root.join("logs/2026-11-22.md");
        fs::write(&kept, "named by the config").unwrap();
        let mut tally = Tally::default();
        remove(
            &root,
            &root.join("logs"),
            std::slice::from_ref(&kept),
            false,
            &mut tally,
        )
        .unwrap();
        assert!(kept.exists());
    }
}
