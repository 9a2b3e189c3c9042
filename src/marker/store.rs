//! Where a session's marker lives (`sessions/<id>/marker.json` and its `lock`) and the one
//! transaction that changes it: [`Store::update`] takes the session's exclusive lock, loads the
//! marker, lets the caller decide, saves when the change is worth a write, and unlocks. Writes
//! are atomic (temp file in the same directory, fsync, rename), so a reader without the lock sees
//! the old or the new file, never a torn one. Reads refuse symlinks exactly as writes do.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use fs2::FileExt;

use chrono::{DateTime, Utc};

use super::{activity, Marker, REFRESH};
use crate::diag::Diag;
use crate::files;
use crate::paths::Paths;
use crate::reading::Reading;

/// The files of one session: `marker.json` and its `lock`.
#[derive(Debug, Clone)]
pub struct Store {
    /// The state root, under which every directory is checked before use.
    root: PathBuf,
    dir: PathBuf,
}

/// How long a hook waits for another process's lock before giving up (fail open).
const LOCK_WAIT: Duration = Duration::from_secs(2);

impl Store {
    pub fn new(paths: &Paths, session_id: &str) -> Store {
        Store {
            root: paths.root().to_path_buf(),
            dir: paths.session_dir(session_id),
        }
    }

    fn in_dir(root: PathBuf, dir: PathBuf) -> Store {
        Store { root, dir }
    }

    /// The session whose directory under `sessions/` is `name` (an already safe name, as listed
    /// on disk or in an index).
    pub fn named(paths: &Paths, name: &str) -> Store {
        Store::in_dir(paths.root().to_path_buf(), paths.sessions_dir().join(name))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The name of the session's directory (its safe id).
    pub fn name(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    pub fn marker_path(&self) -> PathBuf {
        self.dir.join("marker.json")
    }

    fn lock_path(&self) -> PathBuf {
        self.dir.join("lock")
    }

    fn reading_path(&self) -> PathBuf {
        self.dir.join("reading.json")
    }

    /// The cached transcript reading of this session, if any (a bad cache is no cache).
    fn load_reading(&self) -> Option<Reading> {
        let bytes = files::read_state_file_in(&self.root, &self.reading_path(), "reading")
            .ok()
            .flatten()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Caches a transcript reading (atomically, without fsync: losing it costs one tail scan).
    fn save_reading(&self, reading: &Reading) -> Result<()> {
        files::ensure_state_dir(&self.root, &self.dir)?;
        let bytes = serde_json::to_vec(reading).context("encoding the transcript reading")?;
        files::replace_cache(&self.reading_path(), &bytes)
    }

    /// The reading of the transcript at `path`, continued from this session's cached one, and
    /// the cache updated (a cache that cannot be written only costs a tail scan next time).
    pub fn transcript_reading(&self, path: &Path) -> Result<Reading> {
        let cached = self.load_reading();
        let reading = crate::reading::read(path, cached.clone())?;
        if cached.as_ref() != Some(&reading) {
            let _ = self.save_reading(&reading);
        }
        Ok(reading)
    }

    /// Reads the marker without locking (safe: writes are atomic renames). `Ok(None)` when the
    /// session has no marker yet.
    pub fn peek(&self) -> Result<Option<Marker>> {
        read_marker(&self.root, &self.marker_path())
    }

    /// One session transaction: lock, load (a corrupt or unreadable marker is a note on `diag`
    /// and counts as a fresh idle one), `decide`, save when the new marker is worth a write
    /// ([`worth_saving`]), unlock. An error from `decide` saves nothing. If the save fails the
    /// error is returned, so a hook never acts on a decision it could not record.
    pub fn update<T>(
        &self,
        session_id: &str,
        diag: &mut Diag,
        decide: impl FnOnce(&Marker, &mut Diag) -> Result<(Marker, T)>,
    ) -> Result<T> {
        self.update_within(LOCK_WAIT, session_id, diag, decide)
    }

    fn update_within<T>(
        &self,
        wait: Duration,
        session_id: &str,
        diag: &mut Diag,
        decide: impl FnOnce(&Marker, &mut Diag) -> Result<(Marker, T)>,
    ) -> Result<T> {
        let lock = self.lock(wait)?;
        let current = match read_marker(&self.root, &self.marker_path()) {
            Ok(Some(marker)) => marker,
            Ok(None) => Marker::new(session_id),
            Err(e) => {
                // The next save replaces the bad file.
                diag.note(format!("{e:#}; starting from idle"));
                Marker::new(session_id)
            }
        };
        let (next, out) = decide(&current, diag)?;
        if worth_saving(&current, &next, REFRESH) {
            let mut bytes = serde_json::to_vec_pretty(&next).context("encoding marker")?;
            bytes.push(b'\n');
            files::write_atomic(&self.marker_path(), &bytes, false)?;
            // The session's entry in the activity buckets follows its last save, for `status`.
            if let Some(at) = next.updated_at.filter(|at| current.updated_at != Some(*at)) {
                if let Err(e) = activity::moved(&self.root, &self.name(), current.updated_at, at) {
                    diag.note(format!("{e:#}"));
                }
            }
        }
        drop(lock);
        Ok(out)
    }

    /// Removes this session's directory, if its lock is free right now (a session a hook is
    /// working on is never removed) and `still` agrees, under the lock, given the marker as it
    /// is then (unreadable counts as `Err`). `before` runs first, under the lock (removing what
    /// else belongs to the session). `Ok(false)`: busy, or `still` said no.
    pub fn remove_when(
        &self,
        still: impl FnOnce(Result<Option<Marker>>) -> bool,
        before: impl FnOnce() -> Result<()>,
    ) -> Result<bool> {
        files::refuse_symlinked_dirs(&self.root, &self.dir)?;
        let Some(lock) = try_lock(&self.lock_path())? else {
            return Ok(false);
        };
        if !still(read_marker(&self.root, &self.marker_path())) {
            return Ok(false);
        }
        before()?;
        files::remove_locked_dir(&self.dir, lock, &self.lock_path())?;
        Ok(true)
    }

    /// Takes the session's exclusive lock, waiting at most `wait`. If retention removed the
    /// session's directory meanwhile, it is made again and its new lock taken.
    fn lock(&self, wait: Duration) -> Result<File> {
        let mut attempts = 0;
        loop {
            files::ensure_state_dir(&self.root, &self.dir)?;
            match lock_within(&self.lock_path(), wait) {
                Err(e) if files::is_not_found(&e) && attempts < 3 => attempts += 1,
                other => return other,
            }
        }
    }
}

/// Takes the exclusive lock of the lock file at `path` (in an existing state directory),
/// waiting at most `wait`. The lock is advisory and held by the open file it returns, so a
/// crashed holder never leaves it stuck.
pub fn lock_within(path: &Path, wait: Duration) -> Result<File> {
    let deadline = Instant::now() + wait;
    loop {
        let file = lock_file_within(path, deadline, wait)?;
        // Removed (with its directory) while we waited: lock the one at the path now.
        if files::still_at(&file, path) {
            return Ok(file);
        }
        if Instant::now() >= deadline {
            return Err(anyhow!(
                "lock {} was removed while waiting for it",
                path.display()
            ));
        }
    }
}

/// The lock of the file now at `path`, waiting until `deadline`.
fn lock_file_within(path: &Path, deadline: Instant, wait: Duration) -> Result<File> {
    let file = files::open_lock(path)?;
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock_exclusive() {
            Ok(()) => return Ok(file),
            Err(e) if e.raw_os_error() == fs2::lock_contended_error().raw_os_error() => {
                if Instant::now() >= deadline {
                    return Err(anyhow!(
                        "lock {} still held by another process after {:?}",
                        path.display(),
                        wait
                    ));
                }
                thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(e) => return Err(e).with_context(|| format!("locking {}", path.display())),
        }
    }
}

/// The exclusive lock of the lock file at `path` if it is free right now, `None` if another
/// process holds it.
pub fn try_lock(path: &Path) -> Result<Option<File>> {
    let file = files::open_lock(path)?;
    match file.try_lock_exclusive() {
        // A lock file removed since it was opened is held by whoever removed it.
        Ok(()) if !files::still_at(&file, path) => Ok(None),
        Ok(()) => Ok(Some(file)),
        Err(e) if e.raw_os_error() == fs2::lock_contended_error().raw_os_error() => Ok(None),
        Err(e) => Err(e).with_context(|| format!("locking {}", path.display())),
    }
}

/// Every session directory under the state root, with its marker (or why it could not be read),
/// most recently updated first. Symlinks and anything but directories are skipped.
pub fn all_sessions(paths: &Paths) -> Result<Vec<(Store, Result<Marker>)>> {
    let mut found = Vec::new();
    for entry in files::list_state_dir(paths.root(), &paths.sessions_dir())? {
        // DirEntry::file_type does not follow symlinks.
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let store = Store::in_dir(paths.root().to_path_buf(), entry.path());
        match store.peek() {
            Ok(Some(marker)) => found.push((store, Ok(marker))),
            Ok(None) => {}
            Err(e) => found.push((store, Err(e))),
        }
    }
    found.sort_by(|a, b| {
        let key = |m: &Result<Marker>| m.as_ref().ok().and_then(|m| m.updated_at);
        key(&b.1).cmp(&key(&a.1))
    });
    Ok(found)
}

/// The `limit` most recently updated sessions `keep` accepts (every one with `None`) and whether
/// there may be more, reading only the markers shown where the activity buckets allow it (see
/// [`activity::newest`]).
pub fn newest(
    paths: &Paths,
    limit: Option<usize>,
    keep: impl FnMut(&Marker) -> bool,
) -> Result<activity::Newest> {
    activity::newest(
        paths,
        limit,
        keep,
        |name| Store::named(paths, name).peek(),
        || Ok(all_sessions(paths)?.into_iter().map(|(_, m)| m).collect()),
    )
}

fn read_marker(root: &Path, path: &Path) -> Result<Option<Marker>> {
    match files::read_state_file_in(root, path, "marker")? {
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("marker {} is corrupt", path.display())),
        None => Ok(None),
    }
}

/// Does `new` differ from `old` enough to be written? A new usage figure alone, and timestamps
/// alone, are written at most every `refresh` (the status line redraws many times a second and
/// `PreToolUse` runs on every tool call; each write is an fsync). Anything else (the state, the
/// cycle, the limits, a recovery) is written at once.
pub fn worth_saving(old: &Marker, new: &Marker, refresh: Duration) -> bool {
    let strip = |m: &Marker| Marker {
        updated_at: None,
        statusline_at: None,
        tokens: None,
        source: None,
        limits_at: None,
        growth: None,
        // The newest reply alone moves with every reply; a new proven lower bound of the
        // compaction point (`uncompacted_max`) is rare and worth a write.
        last_reply: None,
        ..m.clone()
    };
    // Crossing the trigger or the critical point matters at once: it decides a nudge.
    let level = |m: &Marker| {
        let t = m.tokens?;
        Some((
            m.trigger_at.is_some_and(|a| t >= a),
            m.critical_at.is_some_and(|c| t >= c),
        ))
    };
    if strip(old) != strip(new) || level(old) != level(new) {
        return true;
    }
    let aged = |a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>| match (a, b) {
        (Some(a), Some(b)) => b.signed_duration_since(a).to_std().unwrap_or_default() >= refresh,
        (None, Some(_)) => true,
        _ => false,
    };
    let moved = old.tokens != new.tokens || old.source != new.source;
    aged(old.updated_at, new.updated_at)
        || aged(old.statusline_at, new.statusline_at)
        || (moved && old.tokens.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marker::State;
    use chrono::Utc;
    use std::fs;

    fn store(root: &Path, rel: &str) -> Store {
        Store::in_dir(root.to_path_buf(), root.join(rel))
    }

    /// Retention removes a session's directory while a hook waits for its lock: the hook must
    /// not write through a lock file that is gone (two holders, a marker written nowhere), but
    /// take the lock at the path again, in the directory made anew.
    #[cfg(unix)]
    #[test]
    fn a_lock_removed_while_waited_for_is_taken_again_at_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let holder = store(&root, "sessions/s");
        files::ensure_state_dir(&root, holder.dir()).unwrap();
        let held = lock_within(&holder.lock_path(), Duration::from_secs(1)).unwrap();
        let waiter = {
            let root = root.clone();
            std::thread::spawn(move || {
                store(&root, "sessions/s").update("s", &mut Diag::default(), |m, _| {
                    let mut next = m.clone();
                    next.tokens = Some(5);
                    next.updated_at = Some(Utc::now());
                    Ok((next, ()))
                })
            })
        };
        std::thread::sleep(Duration::from_millis(200));
        files::remove_locked_dir(holder.dir(), held, &holder.lock_path()).unwrap();
        waiter.join().unwrap().unwrap();
        assert!(
            holder.lock_path().is_file(),
            "the lock file at the path again"
        );
        assert_eq!(holder.peek().unwrap().unwrap().tokens, Some(5));
        // A lock file removed after it was opened is no longer the one at the path.
        let opened = files::open_lock(&holder.lock_path()).unwrap();
        assert!(files::still_at(&opened, &holder.lock_path()));
        std::fs::remove_file(holder.lock_path()).unwrap();
        assert!(!files::still_at(&opened, &holder.lock_path()));
        assert!(
            try_lock(&holder.lock_path()).unwrap().is_some(),
            "a new one"
        );
    }

    fn save(store: &Store, mut marker: Marker) {
        marker.updated_at = Some(Utc::now());
        store
            .update("s", &mut Diag::default(), |_, _| Ok((marker, ())))
            .unwrap();
    }

    #[test]
    fn round_trip_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), "s");
        assert!(store.peek().unwrap().is_none());
        let armed = Marker {
            state: State::Armed,
            updated_at: Some(Utc::now()),
            ..Marker::new("s")
        };
        save(&store, armed.clone());
        let armed = store.peek().unwrap().unwrap();
        assert_eq!(armed.state, State::Armed);
        let mut diag = Diag::default();
        let seen = store
            .update("s", &mut diag, |m, _| Ok((m.clone(), m.clone())))
            .unwrap();
        assert_eq!(seen, armed);
        assert_eq!(diag.line("t"), None);

        fs::write(store.marker_path(), b"{\"state\":\"arm").unwrap();
        assert!(store.peek().is_err());
        let seen = store
            .update("s", &mut diag, |m, _| Ok((m.clone(), m.state)))
            .unwrap();
        assert_eq!(seen, State::Idle);
        assert!(diag.line("t").unwrap().contains("corrupt"));
    }

    #[test]
    fn a_failed_decision_saves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), "s");
        save(&store, Marker::new("s"));
        let before = fs::read(store.marker_path()).unwrap();
        let err = store
            .update("s", &mut Diag::default(), |_, _| -> Result<(Marker, ())> {
                anyhow::bail!("no")
            })
            .unwrap_err();
        assert_eq!(format!("{err}"), "no");
        assert_eq!(fs::read(store.marker_path()).unwrap(), before);
    }

    #[cfg(unix)]
    #[test]
    fn files_and_dirs_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), "a/s");
        save(&store, Marker::new("s"));
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(store.dir()), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        assert_eq!(mode(&store.marker_path()), 0o600);
        assert_eq!(mode(&store.lock_path()), 0o600);
    }

    #[test]
    fn a_held_lock_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), "s");
        let _held = store.lock(LOCK_WAIT).unwrap();
        let err = store
            .update_within(
                Duration::from_millis(30),
                "s",
                &mut Diag::default(),
                |m, _| Ok((m.clone(), ())),
            )
            .unwrap_err();
        assert!(format!("{err}").contains("still held"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn reads_refuse_a_symlinked_session_dir() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        fs::create_dir_all(&elsewhere).unwrap();
        fs::write(elsewhere.join("marker.json"), b"{\"state\":\"armed\"}").unwrap();
        fs::create_dir_all(dir.path().join("sessions")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join("sessions/s")).unwrap();
        let store = store(dir.path(), "sessions/s");
        let err = store.peek().unwrap_err();
        assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
    }
}
