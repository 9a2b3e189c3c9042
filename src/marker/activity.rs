//! Which sessions were active when: `recent/<YYYY-MM-DD>/<HH>/<MM>/<SS.ffffff>/<session
//! directory name>`, one empty file per session, at the time (UTC, to the microsecond) of its
//! marker's last save. `status` lists the newest sessions by walking these from the newest down
//! and reading only the markers it shows, so its cost follows the sessions shown, not every
//! session ever seen, nor how many were active in the same hour, nor how many were saved at the
//! very same time (the sessions a retention pass adds at once, copies of one session): the
//! sessions of one instant share a directory, read only as far as needed.
//!
//! [`super::Store::update`] moves a session's entry at each save ([`moved`]: the new one made,
//! the old one and the directories it leaves empty removed; a save happens at most every few
//! seconds per session, never on the `PreToolUse` fast path). Within a minute the instants sort
//! by name, so the walk can stop at the entry that completes the list. Entries written before
//! an instant had its directory (`<MM>/<SS.ffffff>@<name>`) are read among them, and buckets
//! written before the entries had a time (`recent/<day>/<HH>/<name>`, one per session and
//! hour) the whole hour at once. Sessions from before the buckets existed are added by the first
//! full retention pass, which then marks the buckets [`complete`]; until then `status` reads
//! every marker. Retention sweeps buckets older than its cutoff.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Duration, NaiveDate, TimeZone, Timelike, Utc};

use super::Marker;
use crate::files;
use crate::paths::Paths;

/// `recent/` under the state root.
pub fn dir(root: &Path) -> PathBuf {
    root.join("recent")
}

/// Present once every session is in a bucket.
fn complete_path(root: &Path) -> PathBuf {
    dir(root).join(".complete")
}

/// The minute's directory `at` falls in, and the instant's name in it (`SS.ffffff`).
fn minute_of(root: &Path, at: DateTime<Utc>) -> (PathBuf, String) {
    let minute = dir(root)
        .join(at.format("%Y-%m-%d").to_string())
        .join(format!("{:02}", at.hour()))
        .join(format!("{:02}", at.minute()));
    (minute, at.format("%S%.6f").to_string())
}

/// The instant's directory `at` falls in, and the name of a session's entry at `at`.
fn entry(root: &Path, name: &str, at: DateTime<Utc>) -> (PathBuf, PathBuf) {
    let (minute, instant) = minute_of(root, at);
    let instant = minute.join(instant);
    let file = instant.join(name);
    (instant, file)
}

/// Records that the session whose directory is `name` was last saved at `at`.
pub fn touch(root: &Path, name: &str, at: DateTime<Utc>) -> Result<()> {
    let (instant, file) = entry(root, name, at);
    // Another session's move may remove the instant's directory between the two: again.
    for _ in 0..3 {
        files::ensure_state_dir(root, &instant)?;
        match files::open_append(&file) {
            Err(e) if files::is_not_found(&e) => {}
            other => return other.map(drop),
        }
    }
    files::open_append(&file).map(drop)
}

/// Moves the session's entry from its previous save (`from`) to this one (`to`), removing the
/// directories the old one leaves empty.
pub fn moved(
    root: &Path,
    name: &str,
    from: Option<DateTime<Utc>>,
    to: DateTime<Utc>,
) -> Result<()> {
    touch(root, name, to)?;
    let Some(from) = from.filter(|f| *f != to) else {
        return Ok(());
    };
    let (instant, file) = entry(root, name, from);
    // Or where an older version put it: `<MM>/<SS.ffffff>@<name>`.
    let (minute, stamp) = minute_of(root, from);
    let mut left = Vec::new();
    if remove_if_there(&file)? {
        left.push(instant);
    } else if !remove_if_there(&minute.join(format!("{stamp}@{name}")))? {
        return Ok(());
    }
    // Each fails, harmlessly, while something is left in it.
    let hour = minute.parent().map(Path::to_path_buf);
    let day = hour
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf);
    left.extend([Some(minute), hour, day].into_iter().flatten());
    for dir in left {
        if fs::remove_dir(&dir).is_err() {
            break;
        }
    }
    Ok(())
}

/// Removes `file`; whether it was there.
fn remove_if_there(file: &Path) -> Result<bool> {
    match fs::remove_file(file) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("removing {}", file.display())),
    }
}

/// Does every session have its buckets?
pub fn complete(paths: &Paths) -> bool {
    files::flag_is_set(paths.root(), &complete_path(paths.root()))
}

/// Marks the buckets complete (after a full pass added every session).
pub fn mark_complete(paths: &Paths) -> Result<()> {
    files::set_flag(paths.root(), &complete_path(paths.root()))
}

/// A directory's subdirectories (by key, newest first) and the names of its files.
type Listing<T> = (Vec<(T, PathBuf)>, Vec<String>);

/// The entries of `dir` that are real directories (never symlinks) with names `parse` accepts,
/// newest (largest) first, and the names of the regular files in it (not dot-files). A missing
/// directory has none.
fn listing<T: Ord>(
    root: &Path,
    dir: &Path,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Listing<T>> {
    let (mut dirs, mut names) = (Vec::new(), Vec::new());
    for e in files::list_state_dir(root, dir)? {
        let Ok(kind) = e.file_type() else { continue };
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if kind.is_dir() {
            if let Some(key) = parse(&name) {
                dirs.push((key, e.path()));
            }
        } else if kind.is_file() && !name.starts_with('.') {
            names.push(name);
        }
    }
    dirs.sort_by(|a, b| b.0.cmp(&a.0));
    Ok((dirs, names))
}

fn two_digits(max: u32) -> impl Fn(&str) -> Option<u32> {
    move |n| n.parse::<u32>().ok().filter(|v| *v < max && n.len() == 2)
}

/// What the walk hands over, newest first.
#[derive(Debug, PartialEq, Eq)]
pub enum Slice {
    /// The start of an hour, with the sessions of its old-style bucket (last active some time
    /// in that hour, in no order).
    Hour(DateTime<Utc>, Vec<String>),
    /// One session of that hour, last saved at its entry's time: the newest first (those of one
    /// instant in no order).
    Session(String),
}

/// An instant's name in a minute: `SS.ffffff`, fixed width, so that names sort by time.
fn instant_key(name: &str) -> Option<String> {
    let b = name.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    (b.len() == 9 && b[2] == b'.' && digits(0..2) && digits(3..9)).then(|| name.to_string())
}

/// What a minute holds, by instant: a directory of its sessions, or one session an older
/// version recorded as `SS.ffffff@name`.
enum Instant {
    Dir(PathBuf),
    Legacy(String),
}

/// A minute's instants, newest first.
fn instants(root: &Path, minute: &Path) -> Result<Vec<(String, Instant)>> {
    let (dirs, names) = listing(root, minute, instant_key)?;
    let mut out: Vec<(String, Instant)> = dirs
        .into_iter()
        .map(|(key, dir)| (key, Instant::Dir(dir)))
        .collect();
    out.extend(names.into_iter().filter_map(|n| {
        let (stamp, name) = n.split_once('@')?;
        Some((instant_key(stamp)?, Instant::Legacy(name.to_string())))
    }));
    out.sort_by(|a, b| b.0.cmp(&a.0));
    Ok(out)
}

/// Every bucket, newest first: `visit` gets each hour (with its old-style names), then each
/// session saved in it, and returns whether to go on. An instant's directory is read only as
/// far as the walk goes.
pub fn walk(paths: &Paths, mut visit: impl FnMut(Slice) -> Result<bool>) -> Result<()> {
    let root = paths.root();
    let (days, _) = listing(root, &dir(root), |n| {
        NaiveDate::parse_from_str(n, "%Y-%m-%d").ok()
    })?;
    for (day, day_dir) in days {
        let (hours, _) = listing(root, &day_dir, two_digits(24))?;
        for (hour, hour_dir) in hours {
            let Some(start) = day.and_hms_opt(hour, 0, 0) else {
                continue;
            };
            let (minutes, legacy) = listing(root, &hour_dir, two_digits(60))?;
            if !visit(Slice::Hour(Utc.from_utc_datetime(&start), legacy))? {
                return Ok(());
            }
            for (_, minute_dir) in minutes {
                for (_, instant) in instants(root, &minute_dir)? {
                    let dir = match instant {
                        Instant::Legacy(name) => {
                            if !visit(Slice::Session(name))? {
                                return Ok(());
                            }
                            continue;
                        }
                        Instant::Dir(dir) => dir,
                    };
                    let Some(entries) = files::read_state_dir(root, &dir)? else {
                        continue;
                    };
                    for e in entries {
                        let e = e.with_context(|| format!("listing {}", dir.display()))?;
                        let is_file = e.file_type().is_ok_and(|t| t.is_file());
                        let Some(name) = e.file_name().to_str().map(str::to_string) else {
                            continue;
                        };
                        if !is_file || name.starts_with('.') {
                            continue;
                        }
                        if !visit(Slice::Session(name))? {
                            return Ok(());
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// The newest sessions `keep` accepts (most recently updated first) and whether there may be
/// more; markers that could not be read come as errors, apart.
#[derive(Debug, Default)]
pub struct Newest {
    pub markers: Vec<Marker>,
    pub unreadable: Vec<anyhow::Error>,
    pub more: bool,
}

/// The `limit` most recently updated sessions `keep` accepts (every one with `None`), each
/// marker read with `read` (the session's directory name). With complete buckets only the newest
/// entries are read, down to the one that brings the count to `limit` (any session after it was
/// saved before it; an hour with old-style entries is read whole, as they say only the hour);
/// otherwise, and for every session, all markers are, with `all`.
pub fn newest(
    paths: &Paths,
    limit: Option<usize>,
    mut keep: impl FnMut(&Marker) -> bool,
    mut read: impl FnMut(&str) -> Result<Option<Marker>>,
    all: impl FnOnce() -> Result<Vec<Result<Marker>>>,
) -> Result<Newest> {
    let mut out = Newest::default();
    let mut take = |marker: Result<Option<Marker>>, out: &mut Newest| match marker {
        Ok(Some(m)) if keep(&m) => out.markers.push(m),
        Ok(_) => {}
        Err(e) => out.unreadable.push(e),
    };
    match limit {
        Some(limit) if complete(paths) => {
            let mut seen = HashSet::new();
            // The hour being read has old-style entries: it is read whole.
            let mut whole_hour = false;
            walk(paths, |slice| {
                let names = match slice {
                    Slice::Hour(_, names) => {
                        if out.markers.len() >= limit {
                            out.more = true;
                            return Ok(false);
                        }
                        whole_hour = !names.is_empty();
                        names
                    }
                    Slice::Session(name) => vec![name],
                };
                for name in names {
                    if !whole_hour && out.markers.len() >= limit {
                        out.more = true;
                        return Ok(false);
                    }
                    if seen.insert(name.clone()) {
                        take(read(&name), &mut out);
                    }
                }
                Ok(true)
            })?;
        }
        _ => {
            for marker in all()? {
                take(marker.map(Some), &mut out);
            }
        }
    }
    out.markers.sort_by_key(|m| std::cmp::Reverse(m.updated_at));
    if let Some(limit) = limit {
        if out.markers.len() > limit {
            out.more = true;
            out.markers.truncate(limit);
        }
    }
    Ok(out)
}

/// Removes, from every bucket that ended at or before `before`, the sessions `keep` does not
/// want kept, then the buckets left empty. Returns how many entries were removed.
pub fn sweep(paths: &Paths, before: DateTime<Utc>, keep: impl Fn(&str) -> bool) -> Result<usize> {
    let root = paths.root();
    let mut removed = 0;
    let mut remove = |dir: &Path, file: &str| -> Result<()> {
        let name = file.split_once('@').map_or(file, |(_, n)| n);
        if !keep(name) {
            let path = dir.join(file);
            fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
            removed += 1;
        }
        Ok(())
    };
    let (days, _) = listing(root, &dir(root), |n| {
        NaiveDate::parse_from_str(n, "%Y-%m-%d").ok()
    })?;
    for (day, day_dir) in days {
        let Some(day_end) = day.succ_opt().and_then(|d| d.and_hms_opt(0, 0, 0)) else {
            continue;
        };
        // Only days that have an hour old enough.
        if Utc.from_utc_datetime(&day_end) - Duration::hours(23) > before {
            continue;
        }
        let (hours, _) = listing(root, &day_dir, two_digits(24))?;
        for (hour, hour_dir) in hours {
            let Some(start) = day.and_hms_opt(hour, 0, 0) else {
                continue;
            };
            if Utc.from_utc_datetime(&start) + Duration::hours(1) > before {
                continue;
            }
            let (minutes, legacy) = listing(root, &hour_dir, two_digits(60))?;
            for name in legacy {
                remove(&hour_dir, &name)?;
            }
            for (_, minute_dir) in minutes {
                let (instants, legacy) = listing(root, &minute_dir, instant_key)?;
                for name in legacy {
                    remove(&minute_dir, &name)?;
                }
                for (_, instant) in instants {
                    for name in listing(root, &instant, |_| None::<u32>)?.1 {
                        remove(&instant, &name)?;
                    }
                    // Fails, harmlessly, when something is left in it.
                    let _ = fs::remove_dir(&instant);
                }
                let _ = fs::remove_dir(&minute_dir);
            }
            let _ = fs::remove_dir(&hour_dir);
        }
        let _ = fs::remove_dir(&day_dir);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// `all` for [`newest`] where the buckets are complete: never called.
    fn no_fallback() -> Result<Vec<Result<Marker>>> {
        unreachable!("the buckets are complete")
    }

    fn t(day: u32, hour: u32, minute: u32, sec: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, day, hour, minute, sec)
            .unwrap()
    }

    /// Each slice as text: `21 10` for an hour (and its old-style names), `-` for a minute.
    fn listing(paths: &Paths) -> Vec<String> {
        let mut out = Vec::new();
        walk(paths, |slice| {
            out.push(match slice {
                Slice::Hour(start, mut names) => {
                    names.sort();
                    format!("{} {names:?}", start.format("%d %H"))
                }
                Slice::Session(name) => format!("- {name}"),
            });
            Ok(true)
        })
        .unwrap();
        out
    }

    #[test]
    fn entries_move_with_each_save_and_are_walked_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path().join("state"));
        let root = paths.root();
        assert!(listing(&paths).is_empty(), "nothing yet");
        moved(root, "a", None, t(20, 9, 5, 0)).unwrap();
        moved(root, "b", None, t(20, 9, 5, 1)).unwrap();
        moved(root, "c", None, t(21, 8, 0, 0)).unwrap();
        // a saved again, later: its entry moves, and the directories it left go.
        moved(root, "a", Some(t(20, 9, 5, 0)), t(21, 10, 30, 0)).unwrap();
        moved(root, "a", Some(t(21, 10, 30, 0)), t(21, 10, 30, 7)).unwrap();
        assert_eq!(
            listing(&paths),
            ["21 10 []", "- a", "21 08 []", "- c", "20 09 []", "- b",]
        );
        // An old-style bucket (a name for an hour) is read with its hour.
        fs::write(root.join("recent/2026-11-20/09/old"), b"").unwrap();
        assert_eq!(listing(&paths)[4], "20 09 [\"old\"]");
        // Stopping early.
        let mut seen = 0;
        walk(&paths, |_| {
            seen += 1;
            Ok(false)
        })
        .unwrap();
        assert_eq!(seen, 1);
        // Buckets ended before 21 09:00 lose what `keep` lets go; empty ones disappear.
        let removed = sweep(&paths, t(21, 9, 0, 0), |n| n == "b").unwrap();
        assert_eq!(removed, 2, "c and old");
        assert_eq!(listing(&paths), ["21 10 []", "- a", "20 09 []", "- b"]);
        assert!(!root.join("recent/2026-11-21/08").exists());
    }

    /// Issue 20, item 2: with every session active in the same hour, `status --limit N` read
    /// every marker of that hour. Now it reads the newest N.
    #[test]
    fn the_newest_are_found_reading_about_as_many_markers() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path().join("state"));
        let root = paths.root();
        let at = |i: u32| t(21, 10, 0, 0) + Duration::milliseconds(i64::from(i) * 1_100);
        let sessions = 3_000;
        for i in 0..sessions {
            touch(root, &format!("s{i:05}"), at(i)).unwrap();
        }
        mark_complete(&paths).unwrap();
        let marker = |name: &str| {
            let i: u32 = name[1..].parse().unwrap();
            Marker {
                updated_at: Some(at(i)),
                ..Marker::new(name)
            }
        };
        let reads = Cell::new(0);
        let read = |name: &str| {
            reads.set(reads.get() + 1);
            Ok(Some(marker(name)))
        };
        let found = newest(&paths, Some(20), |_| true, read, no_fallback).unwrap();
        let ids: Vec<&str> = found
            .markers
            .iter()
            .map(|m| m.session_id.as_str())
            .collect();
        let want: Vec<String> = (sessions - 20..sessions)
            .rev()
            .map(|i| format!("s{i:05}"))
            .collect();
        assert_eq!(ids, want);
        assert!(found.more);
        assert_eq!(reads.get(), 20, "only the markers shown are read");

        // Only every third session wanted (`--cwd`): about three times as many.
        reads.set(0);
        let found = newest(
            &paths,
            Some(20),
            |m| m.session_id[1..].parse::<u32>().unwrap() % 3 == 0,
            |name: &str| {
                reads.set(reads.get() + 1);
                Ok(Some(marker(name)))
            },
            no_fallback,
        )
        .unwrap();
        assert_eq!(found.markers.len(), 20);
        assert!(reads.get() <= 62, "{} reads", reads.get());

        // An hour with old-style entries is read whole: they may be anywhere in it.
        fs::write(root.join("recent/2026-11-21/10/s00000"), b"").unwrap();
        reads.set(0);
        let found = newest(
            &paths,
            Some(20),
            |_| true,
            |name: &str| {
                reads.set(reads.get() + 1);
                Ok(Some(marker(name)))
            },
            no_fallback,
        )
        .unwrap();
        assert_eq!(found.markers.len(), 20);
        assert_eq!(reads.get(), sessions, "the whole hour");
    }

    /// Issue 28, item 4: sessions saved at the very same instant (what one retention pass adds
    /// for copies of a session) share a directory, read only as far as the list needs.
    #[test]
    fn sessions_of_one_instant_are_read_only_as_far_as_needed() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path().join("state"));
        let root = paths.root();
        let at = t(21, 10, 0, 0);
        for i in 0..2_000 {
            touch(root, &format!("s{i:05}"), at).unwrap();
        }
        mark_complete(&paths).unwrap();
        let mut walked = 0;
        walk(&paths, |slice| {
            walked += usize::from(matches!(slice, Slice::Session(_)));
            Ok(walked < 20)
        })
        .unwrap();
        assert_eq!(walked, 20);
        let reads = Cell::new(0);
        let found = newest(
            &paths,
            Some(20),
            |_| true,
            |name: &str| {
                reads.set(reads.get() + 1);
                Ok(Some(Marker {
                    updated_at: Some(at),
                    ..Marker::new(name)
                }))
            },
            no_fallback,
        )
        .unwrap();
        assert_eq!(
            (found.markers.len(), found.more, reads.get()),
            (20, true, 20)
        );
    }

    /// An entry an older version wrote (`<MM>/<SS.ffffff>@<name>`) is walked in its place among
    /// the instants, moved away at the session's next save, and swept.
    #[test]
    fn entries_of_the_older_layout_are_read_moved_and_swept() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path().join("state"));
        let root = paths.root();
        touch(root, "new", t(21, 10, 5, 2)).unwrap();
        let minute = root.join("recent/2026-11-21/10/05");
        fs::write(minute.join("03.000000@old"), b"").unwrap();
        fs::write(minute.join("01.000000@older"), b"").unwrap();
        assert_eq!(listing(&paths), ["21 10 []", "- old", "- new", "- older"]);
        moved(root, "old", Some(t(21, 10, 5, 3)), t(21, 11, 0, 0)).unwrap();
        assert!(!minute.join("03.000000@old").exists());
        assert_eq!(
            listing(&paths),
            ["21 11 []", "- old", "21 10 []", "- new", "- older"]
        );
        let removed = sweep(&paths, t(21, 11, 0, 0), |n| n == "new").unwrap();
        assert_eq!(removed, 1, "older");
        assert_eq!(listing(&paths), ["21 11 []", "- old", "21 10 []", "- new"]);
    }

    #[test]
    fn completeness() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path().to_path_buf());
        assert!(!complete(&paths));
        mark_complete(&paths).unwrap();
        assert!(complete(&paths));
    }
}
