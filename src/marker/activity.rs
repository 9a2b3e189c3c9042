//! Which sessions were active when: `recent/<YYYY-MM-DD>/<HH>/<session directory name>`, one
//! empty file per session for each hour (UTC) in which its marker was saved. `status` lists the
//! newest sessions by walking these buckets from the newest down and reading only the markers it
//! shows, so its cost follows the sessions shown, not every session ever seen.
//!
//! [`super::Store::update`] adds a session to the bucket of the hour of a save when its previous
//! save was in another hour (a file created once an hour per active session; nothing on the
//! `PreToolUse` fast path, which does not save). Sessions from before the buckets existed are
//! added by the first full retention pass, which then marks the buckets [`complete`]; until
//! then `status` reads every marker. Retention sweeps buckets older than its cutoff.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Duration, NaiveDate, TimeZone, Timelike, Utc};

use super::{all_sessions, Marker, Store};
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

/// The bucket of the hour `at` falls in.
fn bucket(root: &Path, at: DateTime<Utc>) -> PathBuf {
    dir(root)
        .join(at.format("%Y-%m-%d").to_string())
        .join(format!("{:02}", at.hour()))
}

/// Are these two times in the same bucket?
pub fn same_hour(a: Option<DateTime<Utc>>, b: DateTime<Utc>) -> bool {
    a.is_some_and(|a| a.date_naive() == b.date_naive() && a.hour() == b.hour())
}

/// Records that the session whose directory is `name` was active in the hour of `at`.
pub fn touch(root: &Path, name: &str, at: DateTime<Utc>) -> Result<()> {
    let bucket = bucket(root, at);
    files::ensure_state_dir(root, &bucket)?;
    files::open_append(&bucket.join(name))?;
    Ok(())
}

/// Does every session have its buckets?
pub fn complete(paths: &Paths) -> bool {
    files::flag_is_set(&complete_path(paths.root()))
}

/// Marks the buckets complete (after a full pass added every session).
pub fn mark_complete(paths: &Paths) -> Result<()> {
    files::set_flag(paths.root(), &complete_path(paths.root()))
}

/// The entries of `dir` that are real directories (never symlinks) with names `parse` accepts,
/// newest (largest) first. A missing directory has none.
fn subdirs<T: Ord>(dir: &Path, parse: impl Fn(&str) -> Option<T>) -> Result<Vec<(T, PathBuf)>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    let mut out: Vec<(T, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| Some((parse(e.file_name().to_str()?)?, e.path())))
        .collect();
    out.sort_by(|a, b| b.0.cmp(&a.0));
    Ok(out)
}

/// The session names in one bucket (regular files, not dot-files).
fn names(bucket: &Path) -> Result<Vec<String>> {
    let entries = match fs::read_dir(bucket) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", bucket.display())),
    };
    Ok(entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.'))
        .collect())
}

/// Every bucket, newest first: `visit` gets the hour's start and the session names in it, and
/// returns whether to go on.
pub fn walk(
    paths: &Paths,
    mut visit: impl FnMut(DateTime<Utc>, Vec<String>) -> Result<bool>,
) -> Result<()> {
    let root = paths.root();
    let recent = dir(root);
    files::refuse_symlinked_dirs(root, &recent)?;
    let days = subdirs(&recent, |n| NaiveDate::parse_from_str(n, "%Y-%m-%d").ok())?;
    for (day, day_dir) in days {
        let hours = subdirs(&day_dir, |n| {
            n.parse::<u32>().ok().filter(|h| *h < 24 && n.len() == 2)
        })?;
        for (hour, hour_dir) in hours {
            let Some(start) = day.and_hms_opt(hour, 0, 0) else {
                continue;
            };
            if !visit(Utc.from_utc_datetime(&start), names(&hour_dir)?)? {
                return Ok(());
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

/// The `limit` most recently updated sessions `keep` accepts (every one with `None`). With
/// complete buckets only the newest buckets are read, down to the first that brings the count
/// to `limit` (any session not in it or a newer one was updated before it began); otherwise, and
/// for every session, all markers are.
pub fn newest(
    paths: &Paths,
    limit: Option<usize>,
    mut keep: impl FnMut(&Marker) -> bool,
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
            walk(paths, |_, names| {
                if out.markers.len() >= limit {
                    out.more = true;
                    return Ok(false);
                }
                for name in names {
                    if seen.insert(name.clone()) {
                        take(Store::named(paths, &name).peek(), &mut out);
                    }
                }
                Ok(true)
            })?;
        }
        _ => {
            for (_, marker) in all_sessions(paths)? {
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
    let recent = dir(root);
    files::refuse_symlinked_dirs(root, &recent)?;
    let mut removed = 0;
    let days = subdirs(&recent, |n| NaiveDate::parse_from_str(n, "%Y-%m-%d").ok())?;
    for (day, day_dir) in days {
        let Some(day_end) = day.succ_opt().and_then(|d| d.and_hms_opt(0, 0, 0)) else {
            continue;
        };
        // Only days that have an hour old enough.
        if Utc.from_utc_datetime(&day_end) - Duration::hours(23) > before {
            continue;
        }
        let hours = subdirs(&day_dir, |n| n.parse::<u32>().ok().filter(|h| *h < 24))?;
        for (hour, hour_dir) in hours {
            let Some(start) = day.and_hms_opt(hour, 0, 0) else {
                continue;
            };
            if Utc.from_utc_datetime(&start) + Duration::hours(1) > before {
                continue;
            }
            for name in names(&hour_dir)? {
                if !keep(&name) {
                    let path = hour_dir.join(&name);
                    fs::remove_file(&path)
                        .with_context(|| format!("removing {}", path.display()))?;
                    removed += 1;
                }
            }
            // Fails, harmlessly, when something is left in it.
            let _ = fs::remove_dir(&hour_dir);
        }
        let _ = fs::remove_dir(&day_dir);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(day: u32, hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, day, hour, 30, 0).unwrap()
    }

    fn listing(paths: &Paths) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        walk(paths, |start, mut names| {
            names.sort();
            out.push((start.format("%d %H").to_string(), names));
            Ok(true)
        })
        .unwrap();
        out
    }

    #[test]
    fn buckets_are_walked_newest_first_and_swept_by_age() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path().join("state"));
        let root = paths.root();
        assert!(listing(&paths).is_empty(), "nothing yet");
        touch(root, "a", t(20, 9)).unwrap();
        touch(root, "b", t(20, 9)).unwrap();
        touch(root, "a", t(21, 10)).unwrap();
        touch(root, "c", t(21, 8)).unwrap();
        touch(root, "a", t(21, 10)).unwrap();
        assert_eq!(
            listing(&paths),
            [
                ("21 10".into(), vec!["a".to_string()]),
                ("21 08".into(), vec!["c".into()]),
                ("20 09".into(), vec!["a".into(), "b".into()]),
            ]
        );
        // Stopping early.
        let mut seen = 0;
        walk(&paths, |_, _| {
            seen += 1;
            Ok(false)
        })
        .unwrap();
        assert_eq!(seen, 1);
        // Buckets ended before 21 09:00 lose what `keep` lets go; empty ones disappear.
        let removed = sweep(&paths, t(21, 9) - Duration::minutes(30), |n| n == "b").unwrap();
        assert_eq!(removed, 2);
        assert_eq!(
            listing(&paths),
            [
                ("21 10".into(), vec!["a".to_string()]),
                ("20 09".into(), vec!["b".into()]),
            ]
        );
        assert!(!root.join("recent/2026-11-21/08").exists());
    }

    #[test]
    fn hours_and_completeness() {
        assert!(same_hour(Some(t(20, 9)), t(20, 9) + Duration::minutes(20)));
        assert!(!same_hour(Some(t(20, 9)), t(20, 10)));
        assert!(!same_hour(Some(t(20, 9)), t(21, 9)));
        assert!(!same_hour(None, t(20, 9)));
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path().to_path_buf());
        assert!(!complete(&paths));
        mark_complete(&paths).unwrap();
        assert!(complete(&paths));
    }
}
