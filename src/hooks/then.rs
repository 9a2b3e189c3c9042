//! Running the user's own status-line command for `statusline --then` (the one shell-out
//! ctxguard makes, and only because the user's settings ask for it).
//!
//! The command runs in a process group of its own, and the whole group is killed once we are
//! done with it: at the deadline, once `sh` has exited and its output is in, or on any error.
//! A child left in the background (`… &`) keeps stdout open after `sh` exits; waiting for end of
//! file would hold the status line for as long as that child lives, so it gets a short grace and
//! is then killed with the rest. Nothing the command started outlives the hook (a refresh meant
//! to outlive it must leave the group, with `setsid`).

use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// Claude Code redraws the status line often; a command slower than this is cut off.
const LIMIT: Duration = Duration::from_secs(5);

/// How long output may still arrive after `sh` has exited (from children it left behind).
const GRACE: Duration = Duration::from_millis(100);

/// Output kept; the rest is not read (a status line is a line or a few).
const CAP: usize = 64 * 1024;

/// The longest wait for output before checking again whether `sh` has exited.
const TICK: Duration = Duration::from_millis(5);

/// The running command. Dropping it kills its whole process group.
pub struct Running {
    child: Child,
    stdout: Option<ChildStdout>,
    started: Instant,
}

pub fn start(cmd: &str, input: &[u8]) -> Result<Running> {
    let mut child = Command::new("sh")
        .args(["-c", cmd])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting `{cmd}`"))?;
    let stdin = child.stdin.take();
    let running = Running {
        stdout: child.stdout.take(),
        child,
        started: Instant::now(),
    };
    let mut stdin = stdin.context("no stdin")?;
    let input = input.to_vec();
    // A command that does not read its input must not block us; once the group is killed the
    // write fails and the thread ends.
    std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    Ok(running)
}

/// Its output once `sh` has exited (or the first [`CAP`] bytes, as soon as they are in), or an
/// error if it is still running [`LIMIT`] after it started. Either way the whole group is killed
/// on return.
pub fn finish(mut running: Running) -> Result<String> {
    let deadline = running.started + LIMIT;
    let mut pipe = Some(running.stdout.take().context("no stdout")?);
    let mut out = Vec::new();
    let mut exited_at = None;
    while out.len() < CAP {
        let now = Instant::now();
        if exited_at.is_none() && running.exited()? {
            exited_at = Some(now);
        }
        let wait = match (exited_at, &pipe) {
            (Some(_), None) => break,
            (Some(at), Some(_)) => match (at + GRACE).checked_duration_since(now) {
                Some(left) => left,
                None => break,
            },
            (None, _) if now >= deadline => bail!("still running after {LIMIT:?}; killed"),
            (None, _) => deadline - now,
        };
        let wait = wait.min(TICK);
        match &mut pipe {
            Some(p) => {
                if read_some(p, wait, &mut out)? == Got::End {
                    pipe = None;
                }
            }
            None => std::thread::sleep(wait),
        }
    }
    // Whatever `sh` wrote before it exited is in the pipe, even if the grace ran out before
    // this process was scheduled to read it.
    if let Some(p) = &mut pipe {
        while out.len() < CAP && read_some(p, Duration::ZERO, &mut out)? == Got::Bytes {}
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// What one [`read_some`] got.
#[derive(Debug, PartialEq)]
enum Got {
    Bytes,
    Nothing,
    End,
}

/// Waits up to `wait` for output and reads what there is, up to [`CAP`] in all.
fn read_some(pipe: &mut ChildStdout, wait: Duration, out: &mut Vec<u8>) -> Result<Got> {
    let mut poll = libc::pollfd {
        fd: pipe.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(wait.as_nanos().div_ceil(1_000_000)).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd, alive for the duration of the call.
    let ready = unsafe { libc::poll(&mut poll, 1, ms) };
    if ready < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            ErrorKind::Interrupted => Ok(Got::Nothing),
            _ => Err(e).context("waiting for its output"),
        };
    }
    if ready == 0 {
        return Ok(Got::Nothing);
    }
    let mut buf = [0u8; 16 * 1024];
    let room = CAP.saturating_sub(out.len()).min(buf.len());
    match pipe.read(&mut buf[..room]) {
        Ok(0) => Ok(Got::End),
        Ok(n) => {
            out.extend_from_slice(&buf[..n]);
            Ok(Got::Bytes)
        }
        Err(e) if e.kind() == ErrorKind::Interrupted => Ok(Got::Nothing),
        Err(e) => Err(e).context("reading its output"),
    }
}

impl Running {
    /// Whether `sh` has exited, without reaping it: until it is reaped its pid, which is also
    /// the group's id, cannot be reused, so killing the group cannot hit a stranger.
    fn exited(&self) -> Result<bool> {
        // SAFETY: an all-zero siginfo_t is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: `info` is valid for writes for the duration of the call.
        if unsafe { libc::waitid(libc::P_PID, self.child.id(), &mut info, flags) } != 0 {
            return Err(io::Error::last_os_error()).context("waiting for `sh`");
        }
        // SAFETY: waitid filled `info` in for a child state change, or left it zeroed (none).
        Ok(unsafe { info.si_pid() } != 0)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // `sh` leads the group, and is reaped only below, after the kill.
        if let Ok(group) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: a plain system call on a group this process created.
            unsafe { libc::killpg(group, libc::SIGKILL) };
        }
        let _ = self.child.wait();
    }
}
