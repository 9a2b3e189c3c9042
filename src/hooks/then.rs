//! Running the user's own status-line command for `statusline --then` (the one shell-out
//! ctxguard makes, and only because the user's settings ask for it).
//!
//! The command runs as `sh -c CMD` in a group of its own, and the whole group is killed once we
//! are done with it: at the deadline, once `sh` has exited and its output is in, or on any
//! error. A child left in the background (`… &`) keeps stdout open after `sh` exits; waiting
//! for end of file would hold the status line for as long as that child lives, so it gets a
//! short grace and is then killed with the rest. Nothing the command started outlives the hook.
//!
//! The group is a process group on Unix (a refresh meant to outlive the hook must leave it,
//! with `setsid`), and a job object on Windows, where `sh` is Git Bash's, as Claude Code runs
//! the status line there (the job is made right after `sh` starts: a program `sh` started in
//! that instant would escape it).

use std::io::{self, ErrorKind, Read, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::process::{self, Group};

#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
use windows as sys;

/// Claude Code redraws the status line often; a command slower than this is cut off.
const LIMIT: Duration = Duration::from_secs(5);

/// How long output may still arrive after `sh` has exited (from children it left behind).
const GRACE: Duration = Duration::from_millis(100);

/// Output kept; the rest is not read (a status line is a line or a few).
const CAP: usize = 64 * 1024;

/// The longest wait for output before checking again whether `sh` has exited.
const TICK: Duration = Duration::from_millis(5);

/// The running command. Dropping it kills its whole group.
pub struct Running {
    child: Child,
    group: Group,
    stdout: Option<sys::Pipe>,
    started: Instant,
}

pub fn start(cmd: &str, input: &[u8]) -> Result<Running> {
    let mut command = Command::new("sh");
    command.args(["-c", cmd]);
    spawn(command, input).with_context(|| format!("starting `{cmd}`"))
}

/// Starts `command` in a group of its own, feeding it `input`.
fn spawn(mut command: Command, input: &[u8]) -> io::Result<Running> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let (mut child, group) = process::spawn_group(command)?;
    let stdin = child.stdin.take();
    let running = Running {
        stdout: child.stdout.take().map(sys::Pipe::new),
        child,
        group,
        started: Instant::now(),
    };
    let mut stdin = stdin.ok_or_else(|| io::Error::other("no stdin"))?;
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
        if exited_at.is_none() && sys::exited(&mut running.child)? {
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
                if p.read_some(wait, &mut out)? == Got::End {
                    pipe = None;
                }
            }
            None => std::thread::sleep(wait),
        }
    }
    // Whatever `sh` wrote before it exited is in the pipe, even if the grace ran out before
    // this process was scheduled to read it.
    if let Some(p) = &mut pipe {
        while out.len() < CAP && p.read_some(Duration::ZERO, &mut out)? == Got::Bytes {}
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// What one `read_some` got.
#[derive(Debug, PartialEq)]
enum Got {
    Bytes,
    Nothing,
    End,
}

/// Reads what `pipe` has now into `out`, up to [`CAP`] in all.
fn read_ready(pipe: &mut ChildStdout, out: &mut Vec<u8>) -> Result<Got> {
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

impl Drop for Running {
    fn drop(&mut self) {
        // Killed before `sh` is reaped: on Unix its pid is the group's id, which cannot be
        // reused until then.
        self.group.kill(&mut self.child);
        let _ = self.child.wait();
    }
}

#[cfg(unix)]
mod unix {
    use std::io::{self, ErrorKind};
    use std::os::fd::AsRawFd;
    use std::process::{Child, ChildStdout};
    use std::time::Duration;

    use anyhow::{Context, Result};

    use super::{read_ready, Got};

    /// Whether `sh` has exited, without reaping it: until it is reaped its pid, which is also
    /// the group's id, cannot be reused, so killing the group cannot hit a stranger.
    pub(super) fn exited(child: &mut Child) -> Result<bool> {
        // SAFETY: an all-zero siginfo_t is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: `info` is valid for writes for the duration of the call.
        if unsafe { libc::waitid(libc::P_PID, child.id(), &raw mut info, flags) } != 0 {
            return Err(io::Error::last_os_error()).context("waiting for `sh`");
        }
        // SAFETY: waitid filled `info` in for a child state change, or left it zeroed (none).
        Ok(unsafe { info.si_pid() } != 0)
    }

    pub(super) struct Pipe(ChildStdout);

    impl Pipe {
        pub(super) fn new(stdout: ChildStdout) -> Pipe {
            Pipe(stdout)
        }

        /// Waits up to `wait` for output and reads what there is.
        pub(super) fn read_some(&mut self, wait: Duration, out: &mut Vec<u8>) -> Result<Got> {
            let mut poll = libc::pollfd {
                fd: self.0.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = libc::c_int::try_from(wait.as_nanos().div_ceil(1_000_000))
                .unwrap_or(libc::c_int::MAX);
            // SAFETY: one valid pollfd, alive for the duration of the call.
            let ready = unsafe { libc::poll(&raw mut poll, 1, ms) };
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
            read_ready(&mut self.0, out)
        }
    }
}

#[cfg(windows)]
mod windows {
    use std::io;
    use std::process::{Child, ChildStdout};
    use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
    use std::time::Duration;

    use anyhow::{Context, Result};

    use super::{read_ready, Got, CAP};

    /// The child's handle keeps its process id from being reused, so checking (and reaping)
    /// early is safe here.
    pub(super) fn exited(child: &mut Child) -> Result<bool> {
        Ok(child.try_wait().context("waiting for `sh`")?.is_some())
    }

    /// Anonymous pipes cannot be polled on Windows: a thread reads, and hands over what it got.
    pub(super) struct Pipe {
        chunks: Receiver<io::Result<Vec<u8>>>,
    }

    impl Pipe {
        pub(super) fn new(mut stdout: ChildStdout) -> Pipe {
            let (send, chunks) = mpsc::channel();
            std::thread::spawn(move || {
                let mut total = 0;
                while total < CAP {
                    let mut chunk = Vec::new();
                    let got = read_ready(&mut stdout, &mut chunk);
                    match got {
                        Ok(Got::Bytes) => total += chunk.len(),
                        Ok(Got::Nothing) => continue,
                        Ok(Got::End) => return,
                        Err(e) => {
                            let _ = send.send(Err(io::Error::other(format!("{e:#}"))));
                            return;
                        }
                    }
                    if send.send(Ok(chunk)).is_err() {
                        return;
                    }
                }
            });
            Pipe { chunks }
        }

        /// Waits up to `wait` for output and takes what there is.
        pub(super) fn read_some(&mut self, wait: Duration, out: &mut Vec<u8>) -> Result<Got> {
            match self.chunks.recv_timeout(wait) {
                Ok(Ok(chunk)) => {
                    let room = CAP.saturating_sub(out.len()).min(chunk.len());
                    out.extend_from_slice(&chunk[..room]);
                    Ok(Got::Bytes)
                }
                Ok(Err(e)) => Err(e).context("reading its output"),
                Err(RecvTimeoutError::Timeout) => Ok(Got::Nothing),
                Err(RecvTimeoutError::Disconnected) => Ok(Got::End),
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use std::process::Command;

        use super::super::{finish, spawn, CAP};

        fn cmd(script: &str) -> Command {
            let mut c = Command::new("cmd");
            c.args(["/Q", "/D", "/C", script]);
            c
        }

        #[test]
        fn output_is_read_and_the_job_ends_with_the_hook() {
            let out = finish(spawn(cmd("echo mine"), b"{}").unwrap()).unwrap();
            assert_eq!(out.trim_end(), "mine");
        }

        #[test]
        fn endless_output_is_capped() {
            // Ended by the cap, not the time limit: a command cut off by time is an error
            // (below), so an answer here is the capped output. No timing is asserted (the
            // machine running the tests may be loaded).
            // Long lines, so the cap comes in a few hundred turns of the loop even under wine
            // on a loaded machine (4-byte lines took longer than the time limit there).
            let line = "y".repeat(500);
            let script = format!("for /L %i in (0,0,1) do @echo {line}");
            let out = finish(spawn(cmd(&script), b"").unwrap());
            let out = out.unwrap();
            assert!(out.len() <= CAP && out.len() > 1000, "{}", out.len());
        }

        #[test]
        fn a_slow_command_is_cut_off() {
            let err = finish(spawn(cmd("for /L %i in (0,0,1) do @rem"), b"").unwrap());
            assert!(format!("{:#}", err.unwrap_err()).contains("killed"));
        }
    }
}
