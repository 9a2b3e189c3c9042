//! The file-safety rules on Unix (Linux, macOS): directories are created 0700 and files 0600
//! (at creation, not chmod-ed after); `O_NOFOLLOW` refuses a symlink at the last component
//! (ELOOP); `O_NONBLOCK` makes opening a FIFO return at once; `O_NOCTTY` keeps a terminal opened
//! by mistake (a settings file linked to /dev/tty) from becoming the controlling one; `O_CLOEXEC`
//! keeps descriptors out of the status line's `--then` command; a state directory must belong to
//! the effective user.

use std::fs::{self, DirBuilder, File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

/// How a refused link is named in messages.
pub const LINK: &str = "a symbolic link";

/// A rename over a file another process has open always succeeds here.
pub const RENAME_RETRIES: bool = false;

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

pub fn open_nofollow(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
}

pub fn open_regular(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
}

/// `None` for a regular file, else what the open file is, from its fstat (`meta`).
pub fn not_regular(_file: &File, meta: &Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("of another kind")
    }
}

/// Opens with `options`, creating the file 0600, never through a symlink.
pub fn open_private(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    options
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// `O_CREAT|O_EXCL|O_NOFOLLOW`, at most `mode`.
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

pub fn set_mode(file: &File, mode: u32) -> io::Result<()> {
    file.set_permissions(fs::Permissions::from_mode(mode))
}

#[allow(clippy::unnecessary_wraps)] // the same signature as on Windows, which has no mode
pub fn mode(meta: &Metadata) -> Option<u32> {
    Some(meta.permissions().mode() & 0o7777)
}

pub fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

pub fn is_link(meta: &Metadata) -> bool {
    meta.file_type().is_symlink()
}

pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().mode(0o700).create(dir)
}

pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// A state directory must belong to the effective user.
pub fn check_owner(dir: &Path, meta: &Metadata) -> Result<()> {
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

pub fn identity(file: &File) -> io::Result<(u64, u64)> {
    let meta = file.metadata()?;
    Ok((meta.dev(), meta.ino()))
}

pub fn is_executable(_path: &Path, meta: &Metadata) -> bool {
    meta.permissions().mode() & 0o111 != 0
}

pub fn program_candidates(path: PathBuf) -> Vec<PathBuf> {
    vec![path]
}

pub fn plain_path(path: PathBuf) -> PathBuf {
    path
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::euid;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn state_dirs_are_created_private() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("home/state");
        let dir = root.join("sessions/abc");
        ensure_state_dir(&root, &dir).unwrap();
        assert_eq!(mode(&t.path().join("home")), 0o700);
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join("sessions")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        let lock = dir.join("lock");
        drop(open_lock(&lock).unwrap());
        assert_eq!(mode(&lock), 0o600);
        write_atomic(&dir.join("marker.json"), b"{}", false).unwrap();
        assert_eq!(mode(&dir.join("marker.json")), 0o600);
        replace_with_mode(&dir.join("settings.json"), b"{}", 0o644).unwrap();
        assert_eq!(mode(&dir.join("settings.json")), 0o644);
        assert_eq!(mode_of(&dir.join("settings.json")), Some(0o644));
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
        let err = refuse_symlinked_dirs(&root, &root.join("sessions/abc/x")).unwrap_err();
        assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
        // Reads the same: a listing through the link, or a file read through it.
        fs::write(elsewhere.join("marker.json"), b"{}").unwrap();
        let err = list_state_dir(&root, &root.join("sessions/abc")).unwrap_err();
        assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
        let err = read_state_file_in(&root, &root.join("sessions/abc/marker.json"), "marker")
            .unwrap_err();
        assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
        assert_eq!(
            list_state_dir(&root, &root.join("sessions")).unwrap().len(),
            1
        );
        assert!(list_state_dir(&root, &root.join("none"))
            .unwrap()
            .is_empty());
        // Nothing outside the root.
        assert!(list_state_dir(&root, t.path()).is_err());
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
        assert!(is_link_refusal(&open_nofollow(&link).unwrap_err()));
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
        assert!(read_state_file(&fifo, "marker").is_err());
        assert!(open_regular(Path::new("/dev/zero"), "transcript").is_err());
        assert!(open_regular(t.path(), "transcript").is_err());
        let lp = t.path().join("loop");
        symlink(&lp, &lp).unwrap();
        assert!(open_regular(&lp, "transcript").is_err());
        let f = t.path().join("t.jsonl");
        fs::write(&f, b"{}\n").unwrap();
        assert_eq!(open_regular(&f, "transcript").unwrap().1, 3);
    }

    /// Every kind of thing that can stand at a path, generated in random order and sizes around
    /// the limits: each reader returns the exact bytes of a regular file within its limit, and
    /// refuses everything else, at once (a FIFO nobody writes, /dev/zero, a terminal, a link
    /// loop); the no-follow readers refuse every link, the others follow one to a regular file.
    #[test]
    fn generated_paths_are_read_only_when_regular_and_bounded() {
        let t = tempfile::tempdir().unwrap();
        let limit = 1024;
        let mut seed = 0x0bad_cafe_1234_5678_u64;
        let started = std::time::Instant::now();
        for n in 0..400 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let path = t.path().join(format!("f{n}"));
            let size = [0, 1, limit - 1, limit, limit + 1, 3 * limit][(seed % 6) as usize];
            let bytes: Vec<u8> = (0..size).map(|i| (i as u8) ^ (seed as u8)).collect();
            // What stands there (kind), at the path itself or behind a link to it.
            let kind = (seed >> 8) % 7;
            let through_link = (seed >> 16) % 2 == 1;
            let target = if through_link {
                t.path().join(format!("target{n}"))
            } else {
                path.clone()
            };
            let regular = match kind {
                0..=2 => {
                    fs::write(&target, &bytes).unwrap();
                    true
                }
                3 => {
                    let c = std::ffi::CString::new(target.to_str().unwrap()).unwrap();
                    // SAFETY: a valid NUL-terminated path.
                    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
                    false
                }
                4 => {
                    fs::create_dir(&target).unwrap();
                    false
                }
                5 => {
                    // A device, always through a link (as a repository would commit one).
                    let dev = ["/dev/zero", "/dev/null", "/dev/tty", "/dev/urandom"]
                        [((seed >> 24) % 4) as usize];
                    symlink(dev, &path).unwrap();
                    false
                }
                // Nothing there (behind a link: a dangling one).
                _ => false,
            };
            if through_link && kind != 5 {
                symlink(&target, &path).unwrap();
            }
            let linked = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
            let exists = fs::metadata(&path).is_ok();
            let within = regular && (size as u64) <= limit as u64;
            let what = format!("{n}: kind {kind}, link {linked}, size {size}");

            match read_regular(&path, "file", limit as u64) {
                Ok(Some(read)) => {
                    assert!(within, "{what}");
                    assert_eq!(read, bytes, "{what}");
                }
                Ok(None) => assert!(!exists, "{what}"),
                Err(e) => {
                    assert!(!within, "{what}: {e:#}");
                    if exists && !regular {
                        let text = format!("{e:#}");
                        assert!(
                            text.contains("not a regular file") || text.contains("No such device"),
                            "{what}: {text}"
                        );
                    }
                }
            }
            match read_nofollow(&path, "file", limit as u64) {
                Ok(Some(read)) => {
                    assert!(within && !linked, "{what}");
                    assert_eq!(read, bytes, "{what}");
                }
                Ok(None) => assert!(fs::symlink_metadata(&path).is_err(), "{what}"),
                Err(e) => assert!(!within || linked, "{what}: {e:#}"),
            }
            match open_regular(&path, "file") {
                Ok((_, len)) => assert!(regular && len == size as u64, "{what}"),
                Err(e) => assert!(!regular || !exists, "{what}: {e:#}"),
            }
        }
        // Nothing waited: a blocked open would have stopped the loop for good.
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }

    #[test]
    fn new_files_have_their_mode_from_the_start_and_never_follow() {
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
    fn programs_are_executable_by_their_mode() {
        let t = tempfile::tempdir().unwrap();
        let exe = t.path().join("ctxguard");
        fs::write(&exe, b"").unwrap();
        assert!(!is_executable(&exe));
        fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(is_executable(&exe));
        assert!(!is_executable(t.path()), "a directory");
        assert_eq!(program_candidates(exe.clone()), vec![exe.clone()]);
        assert_eq!(canonicalize(&exe).unwrap(), fs::canonicalize(&exe).unwrap());
    }
}
