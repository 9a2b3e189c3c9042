//! Every way ctxguard opens, creates or replaces a file, in one place, so the safety rules hold
//! everywhere: state directories and files are private from the moment they exist; a symlink
//! planted where a state file, lock or state directory should be is refused, not followed; a
//! state root someone else owns (or, on Windows, may write in) is refused; writes are atomic;
//! and no file read from outside (a transcript, a settings file, a task) can make a hook block
//! or read without a bound: every read opens without blocking, checks the type on the opened
//! file, and stops at a limit ([`read_regular`], [`read_nofollow`], [`open_regular`]), a
//! refusal being a [`Refusal`] that names the file and why.
//!
//! One rule for every directory under the state root, on reads as on writes: it is used only
//! once seen to be a real directory, never a link. Writes go through [`ensure_state_dir`]; reads
//! of a file through [`read_state_file_in`] and listings through [`list_state_dir`], which check
//! every directory between the root and the path; a directory found in such a listing is used
//! only when its entry is a real directory (`DirEntry::file_type` does not follow links).
//!
//! What differs between platforms is in two small layers with the same functions, `unix` and
//! `windows` (see each for how it keeps the rules); everything here is shared.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, bail, Context, Result};

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as sys;

/// Prefix of the temp files atomic writes go through.
const TEMP_PREFIX: &str = ".tmp-";

fn symlink_refusal(path: &Path) -> anyhow::Error {
    anyhow!(
        "{} is {} where ctxguard keeps its own state; refusing to follow it (remove the link)",
        path.display(),
        sys::LINK
    )
}

/// Maps the error of an open that refused to follow a link to a clear refusal.
fn nofollow_error(e: io::Error, path: &Path, what: &str) -> anyhow::Error {
    if sys::is_link_error(&e) {
        symlink_refusal(path)
    } else {
        anyhow::Error::new(e).context(format!("{what} {}", path.display()))
    }
}

/// No state or config file ctxguard writes comes near this; anything larger is refused rather
/// than read (a config linked to /dev/zero, a planted giant file).
pub const MAX_STATE_FILE: u64 = 4 * 1024 * 1024;

/// A file that exists but is not read: what it is, or its size. `why` completes "it is …".
#[derive(Debug)]
pub struct Refusal {
    pub what: String,
    pub path: PathBuf,
    pub why: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} is {}; refusing to read it",
            self.what,
            self.path.display(),
            self.why
        )
    }
}

impl std::error::Error for Refusal {}

fn refusal(what: &str, path: &Path, why: String) -> anyhow::Error {
    anyhow::Error::new(Refusal {
        what: what.to_string(),
        path: path.to_path_buf(),
        why,
    })
}

/// Refuses an opened file that is not a regular one, naming what it is.
fn not_regular(file: &File, meta: &fs::Metadata, what: &str, path: &Path) -> Result<()> {
    match sys::not_regular(file, meta) {
        None => Ok(()),
        Some(kind) => Err(refusal(what, path, format!("not a regular file ({kind})"))),
    }
}

/// Refuses a file of `len` bytes where at most `limit` may be read.
fn too_large(len: u64, limit: u64, what: &str, path: &Path) -> Result<()> {
    if len > limit {
        return Err(refusal(
            what,
            path,
            format!("{len} bytes, over the limit of {limit}"),
        ));
    }
    Ok(())
}

/// Reads at most `limit` bytes of `file` (of `len` bytes when opened), refusing it if it grew
/// past `limit` meanwhile.
fn read_within(file: File, len: u64, limit: u64, what: &str, path: &Path) -> Result<Vec<u8>> {
    // Sized for the whole file (and one byte more, to see it end) so it is read in one call.
    let mut bytes = Vec::with_capacity(usize::try_from(len.min(limit)).unwrap_or(0) + 1);
    io::Read::read_to_end(&mut io::Read::take(file, limit + 1), &mut bytes)
        .with_context(|| format!("reading {what} {}", path.display()))?;
    if bytes.len() as u64 > limit {
        return Err(refusal(
            what,
            path,
            format!("larger than {limit} bytes once read (it grew)"),
        ));
    }
    Ok(bytes)
}

/// Opens a file for reading without following a link at its last component and without ever
/// blocking (a FIFO opens at once; on Windows a device name is refused before it is opened).
/// A link is an error for which [`is_link_refusal`] holds. The caller checks the type.
pub fn open_nofollow(path: &Path) -> io::Result<File> {
    sys::open_nofollow(path)
}

/// Is this the error of [`open_nofollow`] (or a private open) finding a link?
pub fn is_link_refusal(e: &io::Error) -> bool {
    sys::is_link_error(e)
}

/// Reads a state or config file without following a symlink. `Ok(None)` if it does not exist.
/// Only a regular file is read, and at most [`MAX_STATE_FILE`] bytes: opening never blocks
/// ([`open_nofollow`]), and the type check then refuses FIFOs, devices and directories.
pub fn read_state_file(path: &Path, what: &str) -> Result<Option<Vec<u8>>> {
    read_nofollow(path, what, MAX_STATE_FILE)
}

/// [`read_state_file`] with a smaller bound, for a file that is not ctxguard's but must not be
/// read through a link either (a task file of the client's store): at most `limit` bytes.
pub fn read_nofollow(path: &Path, what: &str, limit: u64) -> Result<Option<Vec<u8>>> {
    let file = match open_nofollow(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(nofollow_error(e, path, &format!("reading {what}"))),
    };
    let meta = file
        .metadata()
        .with_context(|| format!("reading {what} {}", path.display()))?;
    not_regular(&file, &meta, what, path)?;
    too_large(meta.len(), limit, what, path)?;
    read_within(file, meta.len(), limit, what, path).map(Some)
}

/// Is this error, somewhere in its chain, a file that does not exist?
pub fn is_not_found(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::NotFound)
    })
}

/// Reads a file from outside ctxguard's own state (the client's settings) or one the user may
/// keep as a symlink (the config): whatever the path resolves to (a link is
/// followed), it is read only when it is a regular file, and only when it holds at most `limit`
/// bytes (a larger one is refused, never cut: half a JSON file is no JSON file). Opening never
/// blocks (a FIFO opens at once; on Windows a device name is refused unopened), the type is
/// checked on the opened file (no swap between a check and the open), and what grows past
/// `limit` while read is refused too. `Ok(None)` if it does not exist.
pub fn read_regular(path: &Path, what: &str, limit: u64) -> Result<Option<Vec<u8>>> {
    let (file, len) = match open_regular(path, what) {
        Ok(opened) => opened,
        Err(e) if is_not_found(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    too_large(len, limit, what, path)?;
    read_within(file, len, limit, what, path).map(Some)
}

/// Refuses `dir` (at or under `root`) when any directory between `root` and it is a symbolic
/// link: reads under the state root follow the same rule as writes. Missing directories are
/// fine (there is nothing to read). `root` itself may be a link the user made.
pub fn refuse_symlinked_dirs(root: &Path, dir: &Path) -> Result<()> {
    let Ok(rest) = dir.strip_prefix(root) else {
        bail!(
            "{} is outside the state directory {}",
            dir.display(),
            root.display()
        );
    };
    let mut current = root.to_path_buf();
    for part in rest.components() {
        current.push(part);
        match fs::symlink_metadata(&current) {
            Ok(meta) if sys::is_link(&meta) => return Err(symlink_refusal(&current)),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(e).with_context(|| format!("checking {}", current.display()));
            }
        }
    }
    Ok(())
}

/// The entries of `dir`, a directory at or under the state root `root` (none when it does not
/// exist), after checking that no directory between the root and it is a symbolic link.
pub fn list_state_dir(root: &Path, dir: &Path) -> Result<Vec<fs::DirEntry>> {
    let Some(entries) = read_state_dir(root, dir)? else {
        return Ok(Vec::new());
    };
    entries
        .map(|e| e.with_context(|| format!("listing {}", dir.display())))
        .collect()
}

/// [`list_state_dir`] as it is read, for a caller that may stop early (`None` when `dir` does
/// not exist).
pub fn read_state_dir(root: &Path, dir: &Path) -> Result<Option<fs::ReadDir>> {
    refuse_symlinked_dirs(root, dir)?;
    match fs::read_dir(dir) {
        Ok(e) => Ok(Some(e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("listing {}", dir.display())),
    }
}

/// [`read_state_file`] for a file under the state root: no directory between the root and the
/// file may be a symbolic link either.
pub fn read_state_file_in(root: &Path, path: &Path, what: &str) -> Result<Option<Vec<u8>>> {
    if let Some(parent) = path.parent() {
        refuse_symlinked_dirs(root, parent)?;
    }
    read_state_file(path, what)
}

/// Opens (creating it private) a lock file without following a symlink.
pub fn open_lock(path: &Path) -> Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    sys::open_private(&mut options, path).map_err(|e| nofollow_error(e, path, "opening lock"))
}

/// Opens (creating it private) a file for appending without following a symlink.
pub fn open_append(path: &Path) -> Result<File> {
    let mut options = OpenOptions::new();
    options.append(true).create(true);
    sys::open_private(&mut options, path).map_err(|e| nofollow_error(e, path, "opening"))
}

/// Opens a file ctxguard only reads (a transcript, a program, a settings file), following a
/// link: a regular file or nothing. Opening never blocks (a FIFO opens at once, a terminal
/// never becomes the controlling one; a Windows device name is refused unopened); the type
/// check on the opened file then refuses FIFOs, devices such as /dev/zero or /dev/tty, sockets
/// and directories. Returns the length. One open and one fstat: the transcript's fast path
/// pays nothing more.
pub fn open_regular(path: &Path, what: &str) -> Result<(File, u64)> {
    let file =
        sys::open_regular(path).with_context(|| format!("opening {what} {}", path.display()))?;
    let meta = file
        .metadata()
        .with_context(|| format!("reading {what} {}", path.display()))?;
    not_regular(&file, &meta, what, path)?;
    Ok((file, meta.len()))
}

/// What identifies an open file whatever its name: (device, inode) on Unix, (volume serial
/// number, file index) on Windows.
pub fn identity(file: &File) -> io::Result<(u64, u64)> {
    sys::identity(file)
}

/// The permission bits of the file at `path` (Unix), or `None` (Windows, where a new file gets
/// its directory's access list instead, or no such file).
pub fn mode_of(path: &Path) -> Option<u32> {
    fs::metadata(path).ok().and_then(|m| sys::mode(&m))
}

/// Whether `path` is a file this platform can run as a program.
pub fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && sys::is_executable(path, &m))
}

/// The files a command naming `path` may run, in the order they are tried: `path` itself, or on
/// Windows, when it has no extension, `path.exe` and the other extensions Windows runs first.
pub fn program_candidates(path: PathBuf) -> Vec<PathBuf> {
    sys::program_candidates(path)
}

/// The canonical path, in the form users and Claude Code write it (on Windows without the
/// `\\?\` prefix `fs::canonicalize` adds).
pub fn canonicalize(path: &Path) -> io::Result<PathBuf> {
    fs::canonicalize(path).map(sys::plain_path)
}

/// Checks that an existing state directory may be used: a real directory (the root may be a
/// symlink the user made; the directories under it may not) that is the current user's.
fn check_dir(dir: &Path, allow_symlink: bool) -> Result<()> {
    let meta = if allow_symlink {
        fs::metadata(dir)
    } else {
        fs::symlink_metadata(dir)
    }
    .with_context(|| format!("checking state directory {}", dir.display()))?;
    if sys::is_link(&meta) {
        return Err(symlink_refusal(dir));
    }
    if !meta.is_dir() {
        bail!("{} should be a directory but is not", dir.display());
    }
    sys::check_owner(dir, &meta)
}

fn create_dir(dir: &Path) -> Result<()> {
    match sys::create_private_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating directory {}", dir.display())),
    }
}

/// Makes sure `dir` (a directory at or under `root`) exists and is safe to write in: each
/// missing directory is created private, and every existing one is checked by [`check_dir`].
pub fn ensure_state_dir(root: &Path, dir: &Path) -> Result<()> {
    if !root.exists() {
        if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
            // Parents of the root are the user's own business (e.g. ~/.claude-memory).
            sys::create_private_dir_all(parent)
                .with_context(|| format!("creating directory {}", parent.display()))?;
        }
        create_dir(root)?;
    }
    check_dir(root, true)?;
    let rest = dir.strip_prefix(root).map_err(|_| {
        anyhow!(
            "{} is outside the state directory {}",
            dir.display(),
            root.display()
        )
    })?;
    let mut current = root.to_path_buf();
    for part in rest.components() {
        current.push(part);
        create_dir(&current)?;
        check_dir(&current, false)?;
    }
    Ok(())
}

/// Writes `bytes` to `path` atomically: a private temp file in the same directory, fsync, rename
/// (which replaces a symlink at `path` rather than following it). With `no_clobber`, an existing
/// file at `path` is an error and is left untouched.
pub fn write_atomic(path: &Path, bytes: &[u8], no_clobber: bool) -> Result<()> {
    atomic(path, bytes, no_clobber, None, true)
}

/// Replaces a cache file atomically but without fsync: after a crash it may be missing or old,
/// never torn, and a missing cache is only extra work.
pub fn replace_cache(path: &Path, bytes: &[u8]) -> Result<()> {
    atomic(path, bytes, false, None, false)
}

/// [`write_atomic`] for a file that is not ctxguard's own (a user's settings.json): on Unix the
/// new file gets `mode` instead of 0600; on Windows, its directory's access list.
pub fn replace_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    atomic(path, bytes, false, Some(mode), true)
}

fn atomic(
    path: &Path,
    bytes: &[u8],
    no_clobber: bool,
    mode: Option<u32>,
    sync: bool,
) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| anyhow!("{} has no parent directory", path.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .with_context(|| format!("creating a temp file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| match mode {
            Some(m) => sys::set_mode(tmp.as_file(), m),
            None => Ok(()),
        })
        .and_then(|()| {
            if sync {
                tmp.as_file().sync_all()
            } else {
                Ok(())
            }
        })
        .with_context(|| format!("writing {}", tmp.path().display()))?;
    if no_clobber {
        tmp.persist_noclobber(path)
            .map_err(|e| e.error)
            .with_context(|| format!("creating {} (it must not exist yet)", path.display()))?;
    } else {
        persist(tmp, path).with_context(|| format!("replacing {}", path.display()))?;
    }
    Ok(())
}

/// Renames the temp file over `path`. On Windows the temp file is closed first and renamed by
/// `fs::rename` (POSIX semantics where the file system has them, so a reader holding `path`
/// open does not stand in the way); where it has not, a reader that has `path` open for a
/// moment makes the rename fail with "access denied", and it is tried again for up to a second.
fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> io::Result<()> {
    if !sys::RENAME_RETRIES {
        return tmp.persist(path).map(drop).map_err(|e| e.error);
    }
    let tmp = tmp.into_temp_path();
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    loop {
        match fs::rename(&tmp, path) {
            Ok(()) => {
                // Renamed: nothing is left for the guard to delete.
                let _ = tmp.keep();
                return Ok(());
            }
            Err(e)
                if e.kind() == io::ErrorKind::PermissionDenied
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Creates a new file holding `bytes` that is as private as `mode` (of 0o777) from the moment
/// it exists, for copies of a user's file (settings backups may hold API keys): an existing
/// file or symlink at `path` is an `AlreadyExists` error, never overwritten or followed. On Unix
/// it is created at most `mode` (`O_CREAT|O_EXCL|O_NOFOLLOW`; the umask can only take bits away),
/// then set to exactly `mode` before anything is written; on Windows it gets its directory's
/// access list, as the original did. Fsynced. A file it could not finish is removed again.
pub fn create_new_with_mode(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mode = mode & 0o777;
    let mut file = sys::create_new(path, mode)?;
    let written = sys::set_mode(&file, mode)
        .and_then(|()| file.write_all(bytes))
        .and_then(|()| file.sync_all());
    if written.is_err() {
        drop(file);
        let _ = fs::remove_file(path);
    }
    written
}

/// Is the open `file` still the file at `path`? A lock file is removed with its directory
/// (retention), so a process that was waiting on it may get the lock of a file no longer there;
/// it must then lock the one at the path. (On Windows an open lock file cannot be removed:
/// always.)
pub fn still_at(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (sys::identity(file), fs::symlink_metadata(path)) {
            (Ok(open), Ok(meta)) => open == (meta.dev(), meta.ino()),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

/// Removes the state directory `dir` whose lock file `lock_path` (inside `dir`) the caller holds
/// as `lock`, and releases the lock.
///
/// On Unix the directory goes while the lock is held, so no other process can write into it
/// meanwhile. Windows cannot delete a file that is open: there everything but the lock file
/// goes under the lock, then the lock is released and the lock file and the directory are
/// removed if no other process has opened the lock in between; otherwise an empty directory
/// with a lock file stays for a later pass, and nothing it held is left.
pub fn remove_locked_dir(dir: &Path, lock: File, lock_path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let _ = lock_path;
        fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
        drop(lock);
    }
    #[cfg(not(unix))]
    {
        let entries = fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))?;
        for entry in entries {
            let path = entry
                .with_context(|| format!("listing {}", dir.display()))?
                .path();
            if path == lock_path {
                continue;
            }
            // A link (or junction) is removed itself, never what it points at.
            let meta = fs::symlink_metadata(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            let removed = if meta.is_dir() && !meta.file_type().is_symlink() {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path).or_else(|_| fs::remove_dir(&path))
            };
            removed.with_context(|| format!("removing {}", path.display()))?;
        }
        drop(lock);
        // Fails while another process has the lock open: it owns the directory now.
        if fs::remove_file(lock_path).is_ok() {
            let _ = fs::remove_dir(dir);
        }
    }
    Ok(())
}

/// Is the flag file at `path` (under the state root `root`) set: a regular file, never a link,
/// in directories that are not links either?
pub fn flag_is_set(root: &Path, path: &Path) -> bool {
    path.parent()
        .is_none_or(|dir| refuse_symlinked_dirs(root, dir).is_ok())
        && fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// Sets the flag file at `path` (an empty private file), creating its state directory.
pub fn set_flag(root: &Path, path: &Path) -> Result<()> {
    if let Some(dir) = path.parent() {
        ensure_state_dir(root, dir)?;
    }
    open_append(path)?;
    Ok(())
}

/// Removes temp files a killed writer left in `dir`, if older than `age` (a live writer's temp
/// file exists for milliseconds). Returns how many were removed.
pub fn sweep_temp_files(dir: &Path, age: Duration) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let now = SystemTime::now();
    let old: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(TEMP_PREFIX))
        .filter(|e| {
            e.metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|d| d > age)
        })
        .map(|e| e.path())
        .collect();
    old.iter().filter(|p| fs::remove_file(p).is_ok()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_dirs_are_created_and_checked() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("home").join("state");
        let dir = root.join("sessions").join("abc");
        ensure_state_dir(&root, &dir).unwrap();
        assert!(dir.is_dir());
        // Idempotent.
        ensure_state_dir(&root, &dir).unwrap();
        // Outside the root.
        assert!(ensure_state_dir(&root, t.path()).is_err());
        // A file where a directory should be.
        fs::write(root.join("file"), b"x").unwrap();
        let err = ensure_state_dir(&root, &root.join("file")).unwrap_err();
        assert!(
            format!("{err:#}").contains("should be a directory"),
            "{err:#}"
        );
    }

    #[test]
    fn state_files_are_read_whole_bounded_and_only_when_regular() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("marker.json");
        assert_eq!(read_state_file(&f, "marker").unwrap(), None);
        fs::write(&f, b"{}").unwrap();
        assert_eq!(read_state_file(&f, "marker").unwrap().unwrap(), b"{}");
        assert!(read_state_file(t.path(), "marker").is_err(), "a directory");
        let big = t.path().join("big.json");
        let file = File::create(&big).unwrap();
        file.set_len(MAX_STATE_FILE + 1).unwrap();
        let err = read_state_file(&big, "config").unwrap_err();
        assert!(format!("{err:#}").contains("over the limit"), "{err:#}");
        assert_eq!(
            read_regular(&t.path().join("none"), "config", MAX_STATE_FILE).unwrap(),
            None
        );
        assert!(read_regular(&big, "config", MAX_STATE_FILE).is_err());
    }

    #[test]
    fn writes_replace_atomically_and_no_clobber_keeps_what_is_there() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("marker.json");
        write_atomic(&f, b"one", false).unwrap();
        write_atomic(&f, b"two", false).unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"two");
        assert!(write_atomic(&f, b"three", true).is_err());
        assert_eq!(fs::read(&f).unwrap(), b"two");
        replace_cache(&f, b"cache").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"cache");
        replace_with_mode(&f, b"settings", 0o640).unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"settings");
        // Nothing left behind.
        let names: Vec<String> = fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["marker.json"]);
    }

    #[test]
    fn a_file_a_reader_holds_open_for_a_moment_is_still_replaced() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("marker.json");
        write_atomic(&f, b"old", false).unwrap();
        let (opened, open) = std::sync::mpsc::channel();
        let reader = {
            let f = f.clone();
            std::thread::spawn(move || {
                let file = File::open(&f).unwrap();
                opened.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(50));
                drop(file);
            })
        };
        open.recv().unwrap();
        write_atomic(&f, b"new", false).unwrap();
        reader.join().unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"new");
        assert_eq!(
            fs::read_dir(t.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    #[test]
    fn locks_and_logs_are_created_and_reopened() {
        let t = tempfile::tempdir().unwrap();
        let lock = t.path().join("lock");
        drop(open_lock(&lock).unwrap());
        drop(open_lock(&lock).unwrap());
        let log = t.path().join("log.md");
        writeln!(open_append(&log).unwrap(), "one").unwrap();
        writeln!(open_append(&log).unwrap(), "two").unwrap();
        assert_eq!(fs::read_to_string(&log).unwrap(), "one\ntwo\n");
    }

    #[test]
    fn new_files_never_replace_anything() {
        let t = tempfile::tempdir().unwrap();
        let private = t.path().join("private");
        create_new_with_mode(&private, b"secret", 0o600).unwrap();
        assert_eq!(fs::read(&private).unwrap(), b"secret");
        let again = create_new_with_mode(&private, b"other", 0o600).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&private).unwrap(), b"secret");
    }

    #[test]
    fn a_file_identity_follows_the_file_not_its_name() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        fs::write(&a, b"a").unwrap();
        fs::write(&b, b"b").unwrap();
        let id = |p: &Path| identity(&File::open(p).unwrap()).unwrap();
        let first = id(&a);
        assert_eq!(first, id(&a));
        assert_ne!(first, id(&b));
        fs::rename(&a, t.path().join("renamed")).unwrap();
        assert_eq!(first, id(&t.path().join("renamed")));
    }

    #[test]
    fn old_temp_files_are_swept() {
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join(".tmp-abc"), b"x").unwrap();
        fs::write(t.path().join("keep.json"), b"x").unwrap();
        assert_eq!(sweep_temp_files(t.path(), Duration::from_secs(3600)), 0);
        assert_eq!(sweep_temp_files(t.path(), Duration::ZERO), 1);
        assert!(t.path().join("keep.json").exists());
    }
}
