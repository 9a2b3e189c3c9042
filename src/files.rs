//! Every way ctxguard opens, creates or replaces a file, in one place, so the safety rules hold
//! everywhere: state directories are created 0700 and files 0600 (at creation, not chmod-ed
//! after); a symlink planted where a state file, lock or state directory should be is refused,
//! not followed; a state root owned by another user is refused; writes are atomic; and a
//! transcript path that is a FIFO or a device can never make a hook block.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, bail, Context, Result};

/// Prefix of the temp files atomic writes go through.
pub const TEMP_PREFIX: &str = ".tmp-";

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn symlink_refusal(path: &Path) -> anyhow::Error {
    anyhow!(
        "{} is a symbolic link where ctxguard keeps its own state; refusing to follow it \
         (remove the link)",
        path.display()
    )
}

/// Maps ELOOP from an O_NOFOLLOW open to a clear refusal.
fn nofollow_error(e: io::Error, path: &Path, what: &str) -> anyhow::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        symlink_refusal(path)
    } else {
        anyhow::Error::new(e).context(format!("{what} {}", path.display()))
    }
}

/// No state or config file ctxguard writes comes near this; anything larger is refused rather
/// than read (a config linked to /dev/zero, a planted giant file).
pub const MAX_STATE_FILE: u64 = 4 * 1024 * 1024;

/// Reads a state or config file without following a symlink. `Ok(None)` if it does not exist.
/// Only a regular file is read, and at most [`MAX_STATE_FILE`] bytes: O_NONBLOCK makes opening a
/// FIFO return at once, and the type check then refuses it, devices and directories.
pub fn read_state_file(path: &Path, what: &str) -> Result<Option<Vec<u8>>> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(nofollow_error(e, path, &format!("reading {what}"))),
    };
    let meta = file
        .metadata()
        .with_context(|| format!("reading {what} {}", path.display()))?;
    if !meta.is_file() {
        bail!(
            "{what} {} is not a regular file; refusing to read it",
            path.display()
        );
    }
    if meta.len() > MAX_STATE_FILE {
        bail!(
            "{what} {} is {} bytes, more than the {MAX_STATE_FILE} a {what} can be; refusing to \
             read it",
            path.display(),
            meta.len()
        );
    }
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(file, MAX_STATE_FILE + 1), &mut bytes)
        .with_context(|| format!("reading {what} {}", path.display()))?;
    if bytes.len() as u64 > MAX_STATE_FILE {
        bail!(
            "{what} {} grew past {MAX_STATE_FILE} bytes while read",
            path.display()
        );
    }
    Ok(Some(bytes))
}

/// Is this error, somewhere in its chain, a file that does not exist?
pub fn is_not_found(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::NotFound)
    })
}

/// Reads a file the user may keep as a symlink (the config): a regular file or nothing, never
/// blocking on a FIFO, at most [`MAX_STATE_FILE`] bytes. `Ok(None)` if it does not exist.
pub fn read_user_file(path: &Path, what: &str) -> Result<Option<Vec<u8>>> {
    let (file, len) = match open_regular(path, what) {
        Ok(opened) => opened,
        Err(e)
            if e.downcast_ref::<io::Error>().map(io::Error::kind)
                == Some(io::ErrorKind::NotFound) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    if len > MAX_STATE_FILE {
        bail!(
            "{what} {} is {len} bytes, more than the {MAX_STATE_FILE} a {what} can be",
            path.display()
        );
    }
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(file, MAX_STATE_FILE), &mut bytes)
        .with_context(|| format!("reading {what} {}", path.display()))?;
    Ok(Some(bytes))
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
            Ok(meta) if meta.file_type().is_symlink() => return Err(symlink_refusal(&current)),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(e).with_context(|| format!("checking {}", current.display()));
            }
        }
    }
    Ok(())
}

/// [`read_state_file`] for a file under the state root: no directory between the root and the
/// file may be a symbolic link either.
pub fn read_state_file_in(root: &Path, path: &Path, what: &str) -> Result<Option<Vec<u8>>> {
    if let Some(parent) = path.parent() {
        refuse_symlinked_dirs(root, parent)?;
    }
    read_state_file(path, what)
}

/// Opens (creating, 0600) a lock file without following a symlink.
pub fn open_lock(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| nofollow_error(e, path, "opening lock"))
}

/// Opens (creating, 0600) a file for appending without following a symlink.
pub fn open_append(path: &Path) -> Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| nofollow_error(e, path, "opening"))
}

/// Opens a file ctxguard only reads (a transcript, a memory file): a regular file or nothing.
/// O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer; the type
/// check then refuses it, and devices such as /dev/zero, and directories. Returns the length.
pub fn open_regular(path: &Path, what: &str) -> Result<(File, u64)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| format!("opening {what} {}", path.display()))?;
    let meta = file
        .metadata()
        .with_context(|| format!("reading {what} {}", path.display()))?;
    if !meta.is_file() {
        bail!("{what} {} is not a regular file", path.display());
    }
    Ok((file, meta.len()))
}

/// Checks that an existing state directory may be used: a real directory (the root may be a
/// symlink the user made; the directories under it may not) owned by the current user.
fn check_dir(dir: &Path, allow_symlink: bool) -> Result<()> {
    let meta = if allow_symlink {
        fs::metadata(dir)
    } else {
        fs::symlink_metadata(dir)
    }
    .with_context(|| format!("checking state directory {}", dir.display()))?;
    if meta.file_type().is_symlink() {
        return Err(symlink_refusal(dir));
    }
    if !meta.is_dir() {
        bail!("{} should be a directory but is not", dir.display());
    }
    let me = euid();
    if meta.uid() != me {
        bail!(
            "state directory {} belongs to uid {}, not to you (uid {me}); refusing to use it \
             (set CTXGUARD_HOME to a directory of your own)",
            dir.display(),
            meta.uid()
        );
    }
    Ok(())
}

fn create_dir(dir: &Path) -> Result<()> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating directory {}", dir.display())),
    }
}

/// Makes sure `dir` (a directory at or under `root`) exists and is safe to write in: each
/// missing directory is created 0700, and every existing one is checked by [`check_dir`].
pub fn ensure_state_dir(root: &Path, dir: &Path) -> Result<()> {
    if !root.exists() {
        if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
            // Parents of the root are the user's own business (e.g. ~/.claude-memory).
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
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

/// Writes `bytes` to `path` atomically: a 0600 temp file in the same directory, fsync, rename
/// (which replaces a symlink at `path` rather than following it). With `no_clobber`, an existing
/// file at `path` is an error and is left untouched.
pub fn write_atomic(path: &Path, bytes: &[u8], no_clobber: bool) -> Result<()> {
    atomic(path, bytes, no_clobber, None)
}

/// Replaces a cache file atomically but without fsync: after a crash it may be missing or old,
/// never torn, and a missing cache is only extra work.
pub fn replace_cache(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| anyhow!("{} has no parent directory", path.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .with_context(|| format!("creating a temp file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .with_context(|| format!("writing {}", tmp.path().display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("replacing {}", path.display()))?;
    Ok(())
}

/// [`write_atomic`] for a file that is not ctxguard's own (a user's settings.json): the new file
/// gets `mode` instead of 0600.
pub fn replace_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    atomic(path, bytes, false, Some(mode))
}

fn atomic(path: &Path, bytes: &[u8], no_clobber: bool, mode: Option<u32>) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path
        .parent()
        .ok_or_else(|| anyhow!("{} has no parent directory", path.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .with_context(|| format!("creating a temp file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| match mode {
            Some(m) => tmp.as_file().set_permissions(fs::Permissions::from_mode(m)),
            None => Ok(()),
        })
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("writing {}", tmp.path().display()))?;
    if no_clobber {
        tmp.persist_noclobber(path)
            .map_err(|e| e.error)
            .with_context(|| format!("creating {} (it must not exist yet)", path.display()))?;
    } else {
        tmp.persist(path)
            .map_err(|e| e.error)
            .with_context(|| format!("replacing {}", path.display()))?;
    }
    Ok(())
}

/// Creates a new file holding `bytes` that has permissions `mode` (of 0o777) from the moment it
/// exists, for copies of a user's file (settings backups may hold API keys): O_CREAT|O_EXCL, so
/// an existing file or symlink at `path` is an `AlreadyExists` error, never overwritten or
/// followed; O_NOFOLLOW as well; created at most `mode` (the umask can only take bits away), then
/// set to exactly `mode` before anything is written; fsynced. A file it could not finish is
/// removed again.
pub fn create_new_with_mode(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = mode & 0o777;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    let written = file
        .set_permissions(fs::Permissions::from_mode(mode))
        .and_then(|()| file.write_all(bytes))
        .and_then(|()| file.sync_all());
    if written.is_err() {
        drop(file);
        let _ = fs::remove_file(path);
    }
    written
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
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn state_dirs_are_created_private_and_checked() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("home/state");
        let dir = root.join("sessions/abc");
        ensure_state_dir(&root, &dir).unwrap();
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join("sessions")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        // Idempotent.
        ensure_state_dir(&root, &dir).unwrap();
        // Outside the root.
        assert!(ensure_state_dir(&root, t.path()).is_err());
    }

    #[test]
    fn a_planted_symlink_directory_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("state");
        fs::create_dir_all(root.join("sessions")).unwrap();
        let elsewhere = t.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        symlink(&elsewhere, root.join("sessions/abc")).unwrap();
        let err = ensure_state_dir(&root, &root.join("sessions/abc")).unwrap_err();
        assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
        // The root itself may be a link the user made.
        let link_root = t.path().join("root-link");
        symlink(&root, &link_root).unwrap();
        ensure_state_dir(&link_root, &link_root.join("sessions/xyz")).unwrap();
    }

    #[test]
    fn a_root_owned_by_someone_else_is_refused() {
        if euid() != 0 {
            return; // only root can give a directory away
        }
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("state");
        fs::create_dir(&root).unwrap();
        std::os::unix::fs::chown(&root, Some(65534), None).unwrap();
        let err = ensure_state_dir(&root, &root.join("sessions")).unwrap_err();
        assert!(
            format!("{err:#}").contains("belongs to uid 65534"),
            "{err:#}"
        );
    }

    #[test]
    fn planted_symlinks_are_not_followed_for_files() {
        let t = tempfile::tempdir().unwrap();
        let target = t.path().join("target");
        fs::write(&target, b"secret").unwrap();
        let link = t.path().join("marker.json");
        symlink(&target, &link).unwrap();
        let err = read_state_file(&link, "marker").unwrap_err();
        assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
        assert!(format!("{:#}", open_lock(&link).unwrap_err()).contains("symbolic link"));
        assert!(format!("{:#}", open_append(&link).unwrap_err()).contains("symbolic link"));
        // An atomic write replaces the link and leaves its target alone.
        write_atomic(&link, b"new", false).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"secret");
        assert!(!fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(mode(&link), 0o600);
        assert!(write_atomic(&link, b"again", true).is_err());
        assert_eq!(fs::read(&link).unwrap(), b"new");
        assert_eq!(read_state_file(&t.path().join("none"), "x").unwrap(), None);
    }

    #[test]
    fn transcripts_must_be_regular_files_and_never_block() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(
            format!("{:#}", open_regular(&fifo, "transcript").unwrap_err())
                .contains("not a regular file")
        );
        assert!(open_regular(Path::new("/dev/zero"), "transcript").is_err());
        assert!(open_regular(t.path(), "transcript").is_err());
        let lp = t.path().join("loop");
        symlink(&lp, &lp).unwrap();
        assert!(open_regular(&lp, "transcript").is_err());
        let f = t.path().join("t.jsonl");
        fs::write(&f, b"{}\n").unwrap();
        assert_eq!(open_regular(&f, "transcript").unwrap().1, 3);
    }

    #[test]
    fn new_files_have_their_mode_from_the_start_and_never_replace_or_follow() {
        let t = tempfile::tempdir().unwrap();
        // The usual umask (022) would make this 0644: the mode is set exactly all the same.
        let wide = t.path().join("wide");
        create_new_with_mode(&wide, b"x", 0o666).unwrap();
        assert_eq!(
            mode(&wide),
            0o666,
            "exactly the mode asked for, whatever the umask"
        );
        let private = t.path().join("private");
        create_new_with_mode(&private, b"secret", 0o600).unwrap();
        assert_eq!(mode(&private), 0o600);
        assert_eq!(fs::read(&private).unwrap(), b"secret");
        let again = create_new_with_mode(&private, b"other", 0o600).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&private).unwrap(), b"secret");
        // A planted link, dangling or not, is neither followed nor replaced.
        let target = t.path().join("target");
        let link = t.path().join("link");
        symlink(&target, &link).unwrap();
        let planted = create_new_with_mode(&link, b"secret", 0o600).unwrap_err();
        assert_eq!(planted.kind(), io::ErrorKind::AlreadyExists);
        assert!(!target.exists());
        fs::write(&target, b"theirs").unwrap();
        assert!(create_new_with_mode(&link, b"secret", 0o600).is_err());
        assert_eq!(fs::read(&target).unwrap(), b"theirs");
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
