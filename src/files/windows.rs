//! The file-safety rules on Windows, the equivalents of the Unix ones:
//! - a reparse point (a symbolic link, a junction, anything else the file system redirects) is
//!   opened as itself (`FILE_FLAG_OPEN_REPARSE_POINT`) and refused, never followed;
//! - a state directory must be owned by the current user (or SYSTEM, or Administrators), and
//!   nobody else may create, delete or rename entries in it, or change its access: its access
//!   list is read and every entry that grants any of that to another account is a refusal;
//! - new directories and files take their access list from their parent (under
//!   `%USERPROFILE%` that is the user, SYSTEM and Administrators), which the check above holds
//!   the state root to; there are no permission bits to set;
//! - a device name (`CON`, `NUL`, `COM1`, `\\.\pipe\x`...) is refused before it is opened, so a
//!   transcript path can never make a hook wait on a console, a serial port or a pipe; what
//!   opens is then type-checked like on Unix;
//! - handles are never inherited by child processes (Rust's default here);
//! - locks are `LockFileEx` (through fs2), and a rename over a file a reader has open is
//!   tried again for a moment.

// Win32 calls take pointers to locals and structures they fill in; these pedantic lints about
// pointer casts and borrows are about exactly that, so they are off for this FFI file.
#![allow(
    clippy::borrow_as_ptr,
    clippy::ref_as_ptr,
    clippy::ptr_as_ptr,
    clippy::maybe_infinite_iter,
    clippy::redundant_closure_for_method_calls,
    clippy::unnecessary_wraps
)]

use std::ffi::{c_void, OsStr};
use std::fs::{DirBuilder, File, Metadata, OpenOptions};
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
use std::os::windows::io::AsRawHandle;
use std::path::{Component, Path, PathBuf, Prefix};
use std::ptr;

use anyhow::{bail, Context, Result};
use windows_sys::Win32::Foundation::{CloseHandle, LocalFree, HANDLE};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, GetNamedSecurityInfoW, SE_FILE_OBJECT,
};
use windows_sys::Win32::Security::{
    EqualSid, GetAce, GetTokenInformation, IsWellKnownSid, TokenUser, WinBuiltinAdministratorsSid,
    WinCreatorOwnerRightsSid, WinCreatorOwnerSid, WinLocalSystemSid, ACCESS_ALLOWED_ACE,
    ACE_HEADER, ACL, DACL_SECURITY_INFORMATION, INHERIT_ONLY_ACE, OWNER_SECURITY_INFORMATION,
    PSECURITY_DESCRIPTOR, PSID, TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::Storage::FileSystem::{
    GetFileInformationByHandle, GetFileType, BY_HANDLE_FILE_INFORMATION,
    FILE_ATTRIBUTE_REPARSE_POINT, FILE_FLAG_OPEN_REPARSE_POINT, FILE_TYPE_CHAR, FILE_TYPE_DISK,
    FILE_TYPE_PIPE,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

/// How a refused link is named in messages.
pub const LINK: &str = "a symbolic link (a reparse point)";

/// A reader holding the target open for a moment can make a rename fail; it is tried again.
pub const RENAME_RETRIES: bool = true;

/// The error a reparse point found by a no-follow open becomes.
#[derive(Debug)]
struct LinkRefused;

impl std::fmt::Display for LinkRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a reparse point (symbolic link or junction)")
    }
}

impl std::error::Error for LinkRefused {}

pub fn is_link_error(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<LinkRefused>())
}

pub fn is_link(meta: &Metadata) -> bool {
    meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 || meta.file_type().is_symlink()
}

/// Refuses what opened as a reparse point (the open itself followed nothing).
fn not_a_link(file: File) -> io::Result<File> {
    if is_link(&file.metadata()?) {
        return Err(io::Error::other(LinkRefused));
    }
    Ok(file)
}

/// DOS device names, which open a device in any directory: `CON`, `NUL`, `COM1`, `CONIN$`...
fn is_device_name(name: &OsStr) -> bool {
    let name = name.to_string_lossy().to_ascii_lowercase();
    let stem = name
        .split('.')
        .next()
        .unwrap_or(&name)
        .trim_end_matches([' ', ':']);
    matches!(stem, "con" | "prn" | "aux" | "nul" | "conin$" | "conout$")
        || ((stem.starts_with("com") || stem.starts_with("lpt"))
            && stem.len() == 4
            && stem.as_bytes()[3].is_ascii_digit())
}

/// Refuses device paths (`\\.\...`, a device name) before anything opens them.
fn refuse_device(path: &Path) -> io::Result<()> {
    let device = path.components().any(|c| match c {
        Component::Prefix(p) => matches!(p.kind(), Prefix::DeviceNS(_)),
        Component::Normal(name) => is_device_name(name),
        _ => false,
    });
    if device {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a device, not a regular file",
        ));
    }
    Ok(())
}

pub fn open_nofollow(path: &Path) -> io::Result<File> {
    refuse_device(path)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)?;
    not_a_link(file)
}

pub fn open_regular(path: &Path) -> io::Result<File> {
    refuse_device(path)?;
    OpenOptions::new().read(true).open(path)
}

/// `None` for a regular file on disk, else what the open handle is: a link (followed by the
/// open) that led to a pipe or a console is told by the handle's type, not by its name.
pub fn not_regular(file: &File, meta: &Metadata) -> Option<&'static str> {
    // SAFETY: a valid open handle.
    match unsafe { GetFileType(file.as_raw_handle() as HANDLE) } {
        FILE_TYPE_DISK if meta.is_file() => None,
        FILE_TYPE_DISK if meta.is_dir() => Some("a directory"),
        FILE_TYPE_PIPE => Some("a pipe"),
        FILE_TYPE_CHAR => Some("a character device"),
        _ => Some("of another kind"),
    }
}

/// Opens with `options` as the reparse point itself if there is one, which is then refused.
pub fn open_private(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    refuse_device(path)?;
    not_a_link(
        options
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(path)?,
    )
}

/// `CREATE_NEW` on the name itself: an existing file or link there is `AlreadyExists`.
pub fn create_new(path: &Path, _mode: u32) -> io::Result<File> {
    refuse_device(path)?;
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)
}

/// New files take their directory's access list; there are no mode bits to set.
pub fn set_mode(_file: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

pub fn mode(_meta: &Metadata) -> Option<u32> {
    None
}

pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().create(dir)
}

pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).create(dir)
}

pub fn identity(file: &File) -> io::Result<(u64, u64)> {
    // SAFETY: an all-zero BY_HANDLE_FILE_INFORMATION is a valid value.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: a valid open handle and a valid out pointer.
    if unsafe { GetFileInformationByHandle(file.as_raw_handle() as HANDLE, &mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((
        u64::from(info.dwVolumeSerialNumber),
        (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
    ))
}

/// What `CreateProcess` runs (and, for `.bat` and `.cmd`, `cmd.exe`).
const PROGRAM_EXTENSIONS: &[&str] = &["exe", "com", "bat", "cmd"];

pub fn is_executable(path: &Path, _meta: &Metadata) -> bool {
    path.extension()
        .and_then(OsStr::to_str)
        .is_some_and(|e| PROGRAM_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

pub fn program_candidates(path: PathBuf) -> Vec<PathBuf> {
    if path.extension().is_some() {
        return vec![path];
    }
    let mut candidates: Vec<PathBuf> = PROGRAM_EXTENSIONS
        .iter()
        .map(|e| path.with_extension(e))
        .collect();
    candidates.push(path);
    candidates
}

/// `\\?\C:\x` → `C:\x`, `\\?\UNC\server\share` → `\\server\share`: the form users write.
pub fn plain_path(path: PathBuf) -> PathBuf {
    let Some(text) = path.to_str() else {
        return path;
    };
    if let Some(rest) = text.strip_prefix(r"\\?\UNC\") {
        return PathBuf::from(format!(r"\\{rest}"));
    }
    match text.strip_prefix(r"\\?\") {
        Some(rest) if rest.as_bytes().get(1) == Some(&b':') => PathBuf::from(rest),
        _ => path,
    }
}

fn wide(path: &Path) -> Vec<u16> {
    path.as_os_str().encode_wide().chain(Some(0)).collect()
}

/// A security descriptor `GetNamedSecurityInfoW` allocated, freed on drop.
struct Descriptor(PSECURITY_DESCRIPTOR);

impl Drop for Descriptor {
    fn drop(&mut self) {
        // SAFETY: allocated by GetNamedSecurityInfoW with LocalAlloc, freed once.
        unsafe { LocalFree(self.0) };
    }
}

/// The current user's SID, in a buffer that owns it.
struct User {
    buffer: Vec<u64>,
}

impl User {
    fn current() -> io::Result<User> {
        let mut token: HANDLE = ptr::null_mut();
        // SAFETY: the pseudo-handle of this process, and a valid out pointer.
        if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let mut len = 0u32;
        // SAFETY: asking for the size only.
        unsafe { GetTokenInformation(token, TokenUser, ptr::null_mut(), 0, &mut len) };
        let mut buffer = vec![0u64; (len as usize).div_ceil(8).max(1)];
        // SAFETY: the buffer holds `len` bytes, aligned for TOKEN_USER.
        let ok = unsafe {
            GetTokenInformation(token, TokenUser, buffer.as_mut_ptr().cast(), len, &mut len)
        };
        let error = io::Error::last_os_error();
        // SAFETY: the token handle opened above, closed once.
        unsafe { CloseHandle(token) };
        if ok == 0 {
            return Err(error);
        }
        Ok(User { buffer })
    }

    fn sid(&self) -> PSID {
        // SAFETY: the buffer holds a TOKEN_USER filled in by GetTokenInformation.
        unsafe { (*(self.buffer.as_ptr() as *const TOKEN_USER)).User.Sid }
    }
}

/// `S-1-5-...`, for messages.
fn sid_text(sid: PSID) -> String {
    let mut text: *mut u16 = ptr::null_mut();
    // SAFETY: a valid SID and a valid out pointer.
    if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 {
        return "an unknown account".into();
    }
    // SAFETY: a NUL-terminated string LocalAlloc-ed by ConvertSidToStringSidW, freed once.
    unsafe {
        let len = (0..).take_while(|&i| *text.add(i) != 0).count();
        let out = String::from_utf16_lossy(std::slice::from_raw_parts(text, len));
        LocalFree(text.cast());
        out
    }
}

/// SYSTEM, Administrators, and the owner placeholders: accounts that may write anywhere, or
/// stand for the owner.
fn is_trusted(sid: PSID) -> bool {
    // SAFETY: a valid SID.
    [
        WinLocalSystemSid,
        WinBuiltinAdministratorsSid,
        WinCreatorOwnerSid,
        WinCreatorOwnerRightsSid,
    ]
    .iter()
    .any(|kind| unsafe { IsWellKnownSid(sid, *kind) } != 0)
}

/// Rights that let an account put, replace or remove entries in a directory, or take it over.
const WRITE_RIGHTS: u32 = 0x0002 // FILE_ADD_FILE
    | 0x0004 // FILE_ADD_SUBDIRECTORY
    | 0x0040 // FILE_DELETE_CHILD
    | 0x0004_0000 // WRITE_DAC
    | 0x0008_0000 // WRITE_OWNER
    | 0x1000_0000 // GENERIC_ALL
    | 0x4000_0000; // GENERIC_WRITE

const ACCESS_ALLOWED_ACE_TYPE: u8 = 0;
const ACCESS_ALLOWED_CALLBACK_ACE_TYPE: u8 = 9;

/// A state directory must be the current user's, and nobody else may write in it.
pub fn check_owner(dir: &Path, _meta: &Metadata) -> Result<()> {
    let me = User::current().context("finding the current user")?;
    let mut owner: PSID = ptr::null_mut();
    let mut dacl: *mut ACL = ptr::null_mut();
    let mut sd: PSECURITY_DESCRIPTOR = ptr::null_mut();
    let name = wide(dir);
    // SAFETY: a NUL-terminated path and valid out pointers; the owner and the DACL point into
    // `sd`, which outlives every use below.
    let status = unsafe {
        GetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
            &mut owner,
            ptr::null_mut(),
            &mut dacl,
            ptr::null_mut(),
            &mut sd,
        )
    };
    if status != 0 {
        return Err(io::Error::from_raw_os_error(status as i32))
            .with_context(|| format!("reading who may write in {}", dir.display()));
    }
    let _sd = Descriptor(sd);
    let mine = |sid: PSID| {
        // SAFETY: two valid SIDs.
        unsafe { EqualSid(sid, me.sid()) != 0 }
    };
    if owner.is_null() || !(mine(owner) || is_trusted(owner)) {
        let who = if owner.is_null() {
            "nobody".to_string()
        } else {
            sid_text(owner)
        };
        bail!(
            "state directory {} belongs to {who}, not to you ({}); refusing to use it (set \
             CTXGUARD_HOME to a directory of your own)",
            dir.display(),
            sid_text(me.sid())
        );
    }
    if dacl.is_null() {
        bail!(
            "state directory {} has no access list, so everyone may write in it; refusing to \
             use it (set CTXGUARD_HOME to a directory of your own)",
            dir.display()
        );
    }
    // SAFETY: a valid ACL from the descriptor.
    let count = u32::from(unsafe { (*dacl).AceCount });
    for i in 0..count {
        let mut ace: *mut c_void = ptr::null_mut();
        // SAFETY: an index below the ACL's count, and a valid out pointer.
        if unsafe { GetAce(dacl, i, &mut ace) } == 0 {
            continue;
        }
        // SAFETY: every ACE starts with an ACE_HEADER.
        let header = unsafe { &*(ace as *const ACE_HEADER) };
        let allows = matches!(
            header.AceType,
            ACCESS_ALLOWED_ACE_TYPE | ACCESS_ALLOWED_CALLBACK_ACE_TYPE
        );
        if !allows || u32::from(header.AceFlags) & INHERIT_ONLY_ACE != 0 {
            continue;
        }
        // SAFETY: both allow types have the ACCESS_ALLOWED_ACE layout: header, mask, SID.
        let allowed = unsafe { &*(ace as *const ACCESS_ALLOWED_ACE) };
        let sid: PSID = (&allowed.SidStart as *const u32).cast_mut().cast();
        if allowed.Mask & WRITE_RIGHTS != 0 && !mine(sid) && !is_trusted(sid) {
            bail!(
                "state directory {} can be written by {} as well as by you; refusing to use it \
                 (remove that access, or set CTXGUARD_HOME to a directory of your own)",
                dir.display(),
                sid_text(sid)
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::is_device_name;
    use std::ffi::OsStr;
    use windows_sys::Win32::Security::Authorization::{
        ConvertStringSecurityDescriptorToSecurityDescriptorW, SDDL_REVISION_1,
    };
    use windows_sys::Win32::Security::{SetFileSecurityW, DACL_SECURITY_INFORMATION};

    /// Sets a directory's access list from SDDL.
    fn set_acl(dir: &Path, sddl: &str) {
        let sddl: Vec<u16> = sddl.encode_utf16().chain(Some(0)).collect();
        let mut sd = std::ptr::null_mut();
        // SAFETY: a NUL-terminated string and a valid out pointer; sd is LocalFree-d below.
        unsafe {
            assert_ne!(
                ConvertStringSecurityDescriptorToSecurityDescriptorW(
                    sddl.as_ptr(),
                    SDDL_REVISION_1,
                    &mut sd,
                    std::ptr::null_mut()
                ),
                0
            );
            let name = super::wide(dir);
            assert_ne!(
                SetFileSecurityW(name.as_ptr(), DACL_SECURITY_INFORMATION, sd),
                0,
                "{}",
                io::Error::last_os_error()
            );
            windows_sys::Win32::Foundation::LocalFree(sd);
        }
    }

    #[test]
    fn a_state_dir_others_may_write_in_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("state");
        ensure_state_dir(&root, &root.join("sessions")).unwrap();
        // Everyone (WD) may write: refused, and said who.
        set_acl(&root, "D:(A;OICI;GA;;;WD)");
        let err = ensure_state_dir(&root, &root.join("sessions")).unwrap_err();
        assert!(
            format!("{err:#}").contains("can be written by S-1-1-0"),
            "{err:#}"
        );
        // Everyone may read and list; only the owner, SYSTEM and Administrators may write.
        set_acl(
            &root,
            "D:(A;OICI;GA;;;OW)(A;OICI;GA;;;SY)(A;OICI;GA;;;BA)(A;OICI;GR;;;WD)",
        );
        ensure_state_dir(&root, &root.join("sessions")).unwrap();
    }

    #[test]
    fn device_names_are_refused_unopened() {
        for name in [
            "CON", "nul", "NUL.json", "com1", "LPT9.txt", "conin$", "AUX ",
        ] {
            assert!(is_device_name(OsStr::new(name)), "{name}");
        }
        for name in ["console", "null.json", "com", "com10", "marker.json"] {
            assert!(!is_device_name(OsStr::new(name)), "{name}");
        }
        for path in [
            r"C:\x\CON",
            r"\\.\pipe\ctxguard",
            r"NUL",
            r"C:\x\com1.jsonl",
        ] {
            let err = open_regular(Path::new(path), "transcript").unwrap_err();
            assert!(format!("{err:#}").contains("a device"), "{path}: {err:#}");
            assert!(
                read_state_file(Path::new(path), "marker").is_err(),
                "{path}"
            );
        }
    }

    #[test]
    fn drive_letters_backslashes_and_verbatim_prefixes() {
        let t = tempfile::tempdir().unwrap();
        let exe = t.path().join("ctxguard.exe");
        fs::write(&exe, b"").unwrap();
        let canonical = canonicalize(&exe).unwrap();
        assert!(
            !canonical.to_str().unwrap().starts_with(r"\\?\"),
            "{canonical:?}"
        );
        assert_eq!(canonical.as_os_str().to_str().unwrap().as_bytes()[1], b':');
        assert!(is_executable(&exe));
        assert!(!is_executable(&t.path().join("ctxguard")), "missing");
        assert_eq!(
            program_candidates(t.path().join("ctxguard"))[0],
            t.path().join("ctxguard.exe")
        );
        assert_eq!(
            super::plain_path(PathBuf::from(r"\\?\UNC\server\share\x")),
            PathBuf::from(r"\\server\share\x")
        );
        // A state root written with forward slashes works the same.
        let mixed = PathBuf::from(t.path().to_str().unwrap().replace('\\', "/")).join("state");
        ensure_state_dir(&mixed, &mixed.join("sessions").join("abc")).unwrap();
        write_atomic(&mixed.join("sessions/abc/marker.json"), b"{}", false).unwrap();
        assert!(t.path().join(r"state\sessions\abc\marker.json").is_file());
    }

    /// Wine (where CI runs these tests) answers `CreateSymbolicLink` with success and makes
    /// nothing; there the reparse-point cases cannot be made, and are skipped with a message.
    fn symlink(target: &Path, link: &Path, dir: bool) -> bool {
        let made = if dir {
            std::os::windows::fs::symlink_dir(target, link)
        } else {
            std::os::windows::fs::symlink_file(target, link)
        };
        let real = made.is_ok() && fs::symlink_metadata(link).is_ok_and(|m| super::is_link(&m));
        if !real {
            eprintln!("skipped: this Windows cannot make symbolic links here ({made:?})");
        }
        real
    }

    #[test]
    fn planted_reparse_points_are_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let target = t.path().join("target");
        fs::write(&target, b"secret").unwrap();
        let link = t.path().join("marker.json");
        if !symlink(&target, &link, false) {
            return;
        }
        let err = read_state_file(&link, "marker").unwrap_err();
        assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
        assert!(is_link_refusal(&open_nofollow(&link).unwrap_err()));
        assert!(format!("{:#}", open_lock(&link).unwrap_err()).contains("symbolic link"));
        assert!(format!("{:#}", open_append(&link).unwrap_err()).contains("symbolic link"));
        assert_eq!(
            create_new_with_mode(&link, b"x", 0o600).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        write_atomic(&link, b"new", false).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"secret");
        let root = t.path().join("state");
        fs::create_dir_all(root.join("sessions")).unwrap();
        if symlink(t.path(), &root.join("sessions").join("abc"), true) {
            let err = ensure_state_dir(&root, &root.join("sessions").join("abc")).unwrap_err();
            assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
        }
    }
}
