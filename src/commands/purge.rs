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
use crate::marker::Marker;
use crate::memory;
use crate::paths::{is_safe_session_id, Paths};

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

/// Is this file one of ctxguard's own (`rel`: its path under the state root, `path` the file,
/// `meta` its own metadata, never followed)? Only the exact shapes ctxguard writes, each a
/// regular file: under a session's folder (`sessions/<id>/`, the id as [`is_safe_session_id`]
/// knows it) its `marker.json` when it reads as a marker, its empty `lock`, its `reading.json`;
/// under `checkpoints/<id>/` a `cp_NNN.json` or `_latest.json` that is a JSON object, a
/// `cp_NNN.summary.md`; a daily log `logs/YYYY-MM-DD.md`; under `cwd/<id>/` its `index.json`,
/// empty `lock` and `.complete`; an activity entry, empty, exactly where [`activity`] puts one
/// (`recent/<day>/<HH>/<MM>/<SS.ffffff>/<id>`, or `…/<MM>/<SS.ffffff>@<id>` and
/// `recent/<day>/<HH>/<id>` as older versions
/// did); the empty `.complete` flags and `retention.lock`; a temp file of an atomic write
/// (`.tmp-` and six letters or digits) where ctxguard writes. `config.json`, `models.json` and
/// `retention.json` only when they read as ctxguard's. Anything else (a user's `notes.txt` in a
/// `sessions` folder of a directory `CTXGUARD_HOME` was pointed at, a photo under
/// `recent/2026-01-01/`, a `marker.json` of theirs) is kept; so is every link, whatever its name:
/// ctxguard makes none.
///
/// [`activity`]: crate::marker
fn is_own_file(rel: &Path, path: &Path, meta: &fs::Metadata) -> bool {
    if !meta.is_file() || meta.file_type().is_symlink() {
        return false;
    }
    let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
    if parts.len() != rel.iter().count() {
        return false;
    }
    let empty = meta.len() == 0;
    let numbered = |n: &str, suffix: &str| {
        n.strip_prefix("cp_")
            .and_then(|s| s.strip_suffix(suffix))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let object = || reads_as(path, serde_json::Value::is_object);
    match parts.as_slice() {
        [.., name] if is_temp_name(name) => {
            matches!(parts.as_slice(), [_] | ["logs", _])
                || matches!(parts.as_slice(), ["sessions" | "checkpoints" | "cwd", id, _] if is_safe_session_id(id))
        }
        ["sessions", id, n] if is_safe_session_id(id) => match *n {
            "marker.json" => reads_as(path, is_marker),
            "lock" => empty,
            "reading.json" => object(),
            _ => false,
        },
        ["checkpoints", id, n] if is_safe_session_id(id) => {
            ((*n == "_latest.json" || numbered(n, ".json")) && object())
                || numbered(n, ".summary.md")
        }
        ["logs", n] => n.strip_suffix(".md").is_some_and(is_day),
        ["cwd", id, n] if is_safe_session_id(id) => match *n {
            "index.json" => object(),
            "lock" | ".complete" => empty,
            _ => false,
        },
        ["cwd" | "recent", ".complete"] | ["retention.lock"] => empty,
        ["recent", day, hour, minute, entry] => {
            empty
                && is_day(day)
                && two_digits(hour, 24)
                && two_digits(minute, 60)
                && entry
                    .split_once('@')
                    .is_some_and(|(second, id)| is_second(second) && is_safe_session_id(id))
        }
        ["recent", day, hour, id] => {
            empty && is_day(day) && two_digits(hour, 24) && is_safe_session_id(id)
        }
        // This version's: an instant's directory of its sessions.
        ["recent", day, hour, minute, second, id] => {
            empty
                && is_day(day)
                && two_digits(hour, 24)
                && two_digits(minute, 60)
                && is_second(second)
                && is_safe_session_id(id)
        }
        ["config.json"] => reads_as(path, |v| {
            v.as_object()
                .is_some_and(|o| o.keys().all(|k| crate::config::is_key(k)))
        }),
        ["models.json"] => reads_as(path, |v| {
            v.as_object()
                .is_some_and(|o| o.values().all(serde_json::Value::is_u64))
        }),
        ["retention.json"] => object(),
        _ => false,
    }
}

/// Is this directory (`rel`, under the state root) one ctxguard makes? Its top entries, a
/// session's, checkpoints' or index's folder, and the activity buckets' day, hour and minute.
fn is_own_dir(rel: &Path) -> bool {
    let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
    if parts.len() != rel.iter().count() {
        return false;
    }
    match parts.as_slice() {
        [top] => OWN.iter().any(|(name, _)| name == top),
        ["sessions" | "checkpoints" | "cwd", id] => is_safe_session_id(id),
        ["recent", day] => is_day(day),
        ["recent", day, hour] => is_day(day) && two_digits(hour, 24),
        ["recent", day, hour, minute] => {
            is_day(day) && two_digits(hour, 24) && two_digits(minute, 60)
        }
        ["recent", day, hour, minute, second] => {
            is_day(day) && two_digits(hour, 24) && two_digits(minute, 60) && is_second(second)
        }
        _ => false,
    }
}

/// `YYYY-MM-DD`, a real date.
fn is_day(name: &str) -> bool {
    name.len() == 10 && chrono::NaiveDate::parse_from_str(name, "%Y-%m-%d").is_ok()
}

/// Two digits, below `below`.
fn two_digits(name: &str, below: u32) -> bool {
    name.len() == 2
        && name.bytes().all(|b| b.is_ascii_digit())
        && name.parse::<u32>().is_ok_and(|n| n < below)
}

/// `SS.ffffff`: the second (60 for a leap second) and its microseconds.
fn is_second(name: &str) -> bool {
    name.split_once('.').is_some_and(|(s, micros)| {
        two_digits(s, 61) && micros.len() == 6 && micros.bytes().all(|b| b.is_ascii_digit())
    })
}

/// The name of an atomic write's temp file: `.tmp-` and six letters or digits.
fn is_temp_name(name: &str) -> bool {
    name.strip_prefix(".tmp-")
        .is_some_and(|r| r.len() == 6 && r.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// A marker as ctxguard writes it: an object with the session, its state and its cycle, that
/// reads as a [`Marker`].
fn is_marker(v: &serde_json::Value) -> bool {
    ["session_id", "state", "cycle"]
        .iter()
        .all(|k| v.get(k).is_some())
        && serde_json::from_value::<Marker>(v.clone()).is_ok()
}

/// Does the small JSON file at `path` pass `check`? Read as a state file (never through a
/// link, never blocking, a regular file of at most 1 MiB); anything unreadable, larger or not
/// JSON: no.
fn reads_as(path: &Path, check: impl Fn(&serde_json::Value) -> bool) -> bool {
    crate::files::read_state_file(path, "file")
        .ok()
        .flatten()
        .filter(|b| b.len() <= 1 << 20)
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
    if meta.file_type().is_symlink() {
        t.kept.push((
            path.to_path_buf(),
            "a link, not ctxguard's (ctxguard makes none)".into(),
        ));
        return Ok(false);
    }
    if meta.is_dir() {
        let mut empty = true;
        let entries = fs::read_dir(path).with_context(|| format!("listing {}", path.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("listing {}", path.display()))?;
            empty &= remove(root, &entry.path(), protected, dry_run, t)?;
        }
        if empty && !is_own_dir(rel) {
            t.kept.push((
                path.to_path_buf(),
                "not ctxguard's (no folder ctxguard makes there has this name)".into(),
            ));
            return Ok(false);
        }
        if empty && !dry_run {
            fs::remove_dir(path).with_context(|| format!("removing {}", path.display()))?;
        }
        return Ok(empty);
    }
    if !is_own_file(rel, path, &meta) {
        t.kept.push((
            path.to_path_buf(),
            "not ctxguard's (no file ctxguard writes there has this name or contents)".into(),
        ));
        return Ok(false);
    }
    t.files += 1;
    t.bytes += meta.len();
    if !dry_run {
        fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    }
    Ok(true)
}

/// Refuses, before anything is changed, a state root that must not be purged.
pub fn refuse_unsafe_root(env: &Env) -> Result<()> {
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

    /// Writes `content` at `rel` under a fresh state root in `dir` and asks whether it is
    /// ctxguard's.
    fn own(dir: &Path, rel: &str, content: &str) -> bool {
        let root = tempfile::tempdir_in(dir).unwrap().keep();
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        let meta = fs::symlink_metadata(&path).unwrap();
        is_own_file(Path::new(rel), &path, &meta)
    }

    const MARKER: &str = r#"{"session_id": "abc", "state": "idle", "cycle": 0}"#;

    #[test]
    fn only_the_names_ctxguard_gives_where_it_gives_them_are_its_own() {
        let t = tempfile::tempdir().unwrap();
        let hashed = crate::paths::safe_session_id("/home/user/proj");
        for (rel, content) in [
            ("logs/2026-11-21.md", "log"),
            ("checkpoints/abc/cp_001.summary.md", "summary"),
            ("checkpoints/abc/cp_001.json", "{}"),
            ("checkpoints/abc/_latest.json", "{}"),
            ("sessions/abc/marker.json", MARKER),
            ("sessions/abc/reading.json", "{}"),
            ("sessions/abc/lock", ""),
            ("sessions/abc/.tmp-x1Y2z3", "x"),
            (&format!("cwd/{hashed}/index.json"), "{}"),
            (&format!("cwd/{hashed}/lock"), ""),
            ("recent/2026-11-21/09/12/03.123456@abc", ""),
            (&format!("recent/2026-11-21/09/12/59.000001@{hashed}"), ""),
            ("recent/2026-11-21/09/abc", ""),
            ("recent/.complete", ""),
            ("retention.lock", ""),
            (".tmp-abcdef", "x"),
        ] {
            assert!(own(t.path(), rel, content), "{rel}");
        }
        for (rel, content) in [
            ("MEMORY.md", "mine"),
            ("logs/notes.md", "mine"),
            ("logs/app.log", "mine"),
            ("logs/sub/2026-11-21.md", "mine"),
            ("logs/2026-13-45.md", "mine"),
            ("checkpoints/abc/cp_.summary.md", "mine"),
            ("checkpoints/abc/notes.md", "mine"),
            ("checkpoints/abc/cp_002.json", "[1, 2]"),
            ("checkpoints/My Stuff/cp_001.json", "{}"),
            ("sessions/abc/MEMORY.md", "mine"),
            ("sessions/todo.txt", "mine"),
            ("sessions/My Notes/lock", ""),
            ("sessions/abc/lock", "not empty"),
            ("sessions/.tmp-notes-of-mine", "mine"),
            ("sessions/abc/sub/.tmp-abcdef", "mine"),
            ("cwd/data/train.csv", "mine"),
            ("recent/photos/a.jpg", "mine"),
            // At any depth under a dated folder, nothing but an activity entry's shape.
            ("recent/2026-11-21/photos/a.jpg", "mine"),
            ("recent/2026-11-21/a.jpg", ""),
            ("recent/2026-11-21/09/12/a.jpg", ""),
            ("recent/2026-11-21/09/12/03.123456@abc/deeper", ""),
            ("recent/2026-11-21/09/12/03.123456@abc", "not empty"),
            ("recent/2026-11-21/24/12/03.123456@abc", ""),
            ("recent/2026-11-21/09/60/03.123456@abc", ""),
            ("recent/2026-11-21/09/12/3.123456@abc", ""),
            ("recent/2026-11-21/09/Notes", ""),
            ("config.json", "mine"),
        ] {
            assert!(!own(t.path(), rel, content), "{rel}");
        }
        // A marker only when it reads as one.
        for mine in [
            "{}",
            r#"{"note": "mine"}"#,
            r#"{"session_id": "abc", "state": "mine", "cycle": 0}"#,
            r#"{"session_id": "abc", "state": "idle"}"#,
            "[1]",
            "not json",
        ] {
            assert!(!own(t.path(), "sessions/abc/marker.json", mine), "{mine}");
        }
        // A config.json only when it reads as ctxguard's.
        assert!(own(t.path(), "config.json", r#"{"headroom_tokens": 5}"#));
        assert!(!own(t.path(), "config.json", r#"{"secret": "x"}"#));
        assert!(own(
            t.path(),
            "models.json",
            r#"{"claude-opus-5-5": 1000000}"#
        ));
    }

    /// Generated paths under the state root, of the pieces ctxguard's names are made of and
    /// others: no link and no directory is ever a file of ctxguard's, whatever its name, and a
    /// path it takes for its own always has one of the shapes it writes.
    #[test]
    #[cfg(unix)]
    fn generated_paths_are_ctxguards_only_in_its_own_shapes() {
        let t = tempfile::tempdir().unwrap();
        let pieces = [
            "sessions",
            "checkpoints",
            "cwd",
            "recent",
            "logs",
            "abc",
            "2026-11-21",
            "09",
            "12",
            "03.123456@abc",
            "marker.json",
            "lock",
            "cp_001.json",
            "_latest.json",
            ".complete",
            "a.jpg",
            ".tmp-abcdef",
            "2026-11-21.md",
            "index.json",
        ];
        let mut seed = 0x1234_5678_9abc_def1_u64;
        for n in 0..500 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let depth = 1 + seed % 5;
            let rel: PathBuf = (0..depth)
                .map(|i| pieces[(seed >> (6 * i + 5)) as usize % pieces.len()])
                .collect();
            let path = t.path().join(format!("{n}")).join(&rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            let root = t.path().join(format!("{n}"));
            match seed % 3 {
                0 => std::os::unix::fs::symlink("/etc/passwd", &path).unwrap(),
                1 => fs::create_dir(&path).unwrap(),
                _ => fs::write(&path, if seed % 2 == 0 { "" } else { MARKER }).unwrap(),
            }
            let meta = fs::symlink_metadata(&path).unwrap();
            let mine = is_own_file(path.strip_prefix(&root).unwrap(), &path, &meta);
            if seed % 3 != 2 {
                assert!(!mine, "{}", rel.display());
            }
            if mine {
                let first = rel.iter().next().unwrap().to_str().unwrap();
                assert!(
                    OWN.iter().any(|(name, _)| *name == first) || is_temp_name(first),
                    "{}",
                    rel.display()
                );
            }
        }
    }

    #[test]
    fn a_purge_removes_what_is_ctxguards_and_keeps_the_rest() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("memory");
        fs::create_dir_all(root.join("sessions/abc")).unwrap();
        fs::create_dir_all(root.join("logs")).unwrap();
        fs::write(root.join("sessions/abc/marker.json"), MARKER).unwrap();
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
