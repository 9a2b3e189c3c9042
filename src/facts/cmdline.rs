//! The running client's own command line: `--autocompact N`, read from `/proc/$CLAUDE_PID/cmdline`
//! on Linux and with `sysctl(KERN_PROCARGS2)` on macOS; on Windows that source is simply absent.

#[cfg(target_os = "linux")]
use std::path::PathBuf;

use crate::client;
use crate::config::Env;
#[cfg(target_os = "linux")]
use crate::files;

/// `--autocompact N` (or `--autocompact=N`) in an argument list.
pub(super) fn autocompact_arg<S: AsRef<str>>(args: &[S]) -> Option<u64> {
    let mut it = args.iter().map(AsRef::as_ref);
    while let Some(arg) = it.next() {
        if arg == "--autocompact" {
            return it.next().and_then(client::window_tokens);
        }
        if let Some(v) = arg.strip_prefix("--autocompact=") {
            return client::window_tokens(v);
        }
    }
    None
}

/// The running client's `--autocompact` argument, where the OS lets a hook read its parent's
/// command line.
pub(super) fn client_flag(env: &Env) -> Option<u64> {
    let pid = env.client_pid?;
    read_cmdline(pid).and_then(|args| autocompact_arg(&args))
}

#[cfg(target_os = "linux")]
pub(super) fn read_cmdline(pid: u32) -> Option<Vec<String>> {
    use std::io::Read;
    let path = PathBuf::from(format!("/proc/{pid}/cmdline"));
    let (file, _) = files::open_regular(&path, "command line").ok()?;
    let mut bytes = Vec::new();
    file.take(64 * 1024).read_to_end(&mut bytes).ok()?;
    Some(
        bytes
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

/// macOS has no /proc: the kernel gives a process's arguments through
/// `sysctl(KERN_PROCARGS2)` (to the same user), read by [`procargs2`].
#[cfg(target_os = "macos")]
pub(super) fn read_cmdline(pid: u32) -> Option<Vec<String>> {
    let pid = libc::c_int::try_from(pid).ok()?;
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
    let mut len: libc::size_t = 0;
    // SAFETY: a valid name of 3 integers; a null buffer asks for the size only.
    let sized = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            std::ptr::null_mut(),
            &raw mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if sized != 0 || len == 0 {
        return None;
    }
    let mut buf = vec![0u8; len];
    // SAFETY: the buffer holds `len` bytes, and `len` says so.
    let read = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            buf.as_mut_ptr().cast(),
            &raw mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if read != 0 {
        return None;
    }
    buf.truncate(len);
    procargs2(&buf)
}

/// The arguments in a `KERN_PROCARGS2` buffer: the argument count (a native-endian 32-bit
/// integer), the executable's path, NUL padding, then the arguments, each ending in NUL (the
/// environment follows; it is not read).
#[cfg(any(test, target_os = "macos"))]
pub(super) fn procargs2(buf: &[u8]) -> Option<Vec<String>> {
    let argc = usize::try_from(i32::from_ne_bytes(buf.get(..4)?.try_into().ok()?)).ok()?;
    let rest = &buf[4..];
    let exec_end = rest.iter().position(|b| *b == 0)?;
    let args_start = exec_end + rest[exec_end..].iter().position(|b| *b != 0)?;
    let args: Vec<String> = rest[args_start..]
        .split(|b| *b == 0)
        .take(argc)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (args.len() == argc).then_some(args)
}

/// Windows has no way to read another process's command line short of reading its memory;
/// there the client's `--autocompact` is simply not a source.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(super) fn read_cmdline(_pid: u32) -> Option<Vec<String>> {
    None
}
