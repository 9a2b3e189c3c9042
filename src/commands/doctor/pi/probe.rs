//! pi asked, where it can be: the `pi` on `PATH` says its version (`pi --version`, which 0.73
//! prints on stderr and 1.x on stdout), and, started headless (`pi --mode rpc --no-session
//! --offline`, no model request), which extension commands it loaded (`get_commands`): the
//! extension registers `/ctxguard`, so its path in that list proves pi discovered the file and
//! ran it. Both are bounded: a deadline, then pi and everything it started killed as one
//! ([`crate::process`]).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::super::version::{ask_json_lines, find_on_path};
use crate::process;

/// `pi --version` starts node and loads pi's modules: a few seconds on a cold disk.
const VERSION_LIMIT: Duration = Duration::from_secs(15);

/// pi in RPC mode answers `get_commands` once its extensions are loaded (1–4 s measured).
const LOAD_LIMIT: Duration = Duration::from_secs(20);

/// What asking pi gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    /// Not asked (`doctor` without `--client pi`), or no `pi` on `PATH`.
    NotAsked,
    NotFound,
    /// Found at this path: its version (or why none), and the files of the extension commands
    /// it loaded (or why it did not say).
    Found {
        path: PathBuf,
        version: Result<String, String>,
        loaded: Result<Vec<Loaded>, String>,
    },
}

/// One extension command pi listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub name: String,
    pub path: String,
}

impl Probe {
    /// Finds `pi` on `search_path` and asks it, in `cwd` (where pi would look for a project's
    /// settings and extensions).
    pub fn ask(search_path: Option<&std::ffi::OsStr>, cwd: Option<&Path>) -> Probe {
        let Some(path) = find_on_path(search_path, "pi") else {
            return Probe::NotFound;
        };
        let version = version(&path, VERSION_LIMIT);
        let loaded = commands(&path, cwd, LOAD_LIMIT);
        Probe::Found {
            path,
            version,
            loaded,
        }
    }
}

/// `pi --version`: the version on its stdout or its stderr.
fn version(pi: &Path, limit: Duration) -> Result<String, String> {
    let mut command = Command::new(pi);
    command
        .args(["--version", "--offline"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (mut child, group) =
        process::spawn_group(command).map_err(|e| format!("cannot run it: {e}"))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                group.kill(&mut child);
                let _ = child.wait();
                return Err(format!("no answer within {limit:?}"));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut out = String::new();
    for stream in [
        child.stdout.take().map(|s| Box::new(s) as Box<dyn Read>),
        child.stderr.take().map(|s| Box::new(s) as Box<dyn Read>),
    ]
    .into_iter()
    .flatten()
    {
        let _ = stream.take(4096).read_to_string(&mut out);
        out.push('\n');
    }
    crate::client::version_in(&out).ok_or_else(|| {
        format!(
            "printed {:?}, not a version",
            crate::text::cut(out.trim(), 80)
        )
    })
}

/// The extension commands pi in RPC mode lists, asked within `limit`.
fn commands(pi: &Path, cwd: Option<&Path>, limit: Duration) -> Result<Vec<Loaded>, String> {
    let mut command = Command::new(pi);
    command
        .args(["--mode", "rpc", "--no-session", "--offline"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let (mut child, group) =
        process::spawn_group(command).map_err(|e| format!("cannot run it: {e}"))?;
    let answer = ask_commands(&mut child, limit);
    group.kill(&mut child);
    let _ = child.wait();
    parse_commands(&answer?)
}

fn ask_commands(child: &mut std::process::Child, limit: Duration) -> Result<Value, String> {
    let request = serde_json::json!({"id": "ctxguard-doctor", "type": "get_commands"});
    ask_json_lines(child, &[request], limit, "pi", "get_commands", |v| {
        v["type"] == "response" && v["command"] == "get_commands"
    })
}

/// The extension commands in a `get_commands` answer (0.73 and 1.x put the file in
/// `sourceInfo.path`; pi's docs say `path`), or the error it gave.
fn parse_commands(answer: &Value) -> Result<Vec<Loaded>, String> {
    if answer["success"] == false {
        let error = answer["error"].as_str().unwrap_or("an error");
        return Err(format!(
            "get_commands answered {}",
            crate::text::cut(&crate::text::sanitize(error, true), 200)
        ));
    }
    let list = answer["data"]["commands"]
        .as_array()
        .ok_or("get_commands answered without commands")?;
    Ok(list
        .iter()
        .filter(|c| c["source"] == "extension")
        .map(|c| Loaded {
            name: c["name"].as_str().unwrap_or_default().to_string(),
            path: c["sourceInfo"]["path"]
                .as_str()
                .or_else(|| c["path"].as_str())
                .unwrap_or_default()
                .to_string(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_get_commands_answer_is_read_in_both_shapes_and_an_error_said() {
        let answer = json!({"type": "response", "command": "get_commands", "success": true,
            "data": {"commands": [
                {"name": "ctxguard", "source": "extension",
                 "sourceInfo": {"path": "/h/.pi/agent/extensions/ctxguard.ts", "source": "auto"}},
                {"name": "old", "source": "extension", "path": "/x/old.ts"},
                {"name": "fix", "source": "prompt", "path": "/p/fix.md"}]}});
        let loaded = parse_commands(&answer).unwrap();
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded[0].path, "/h/.pi/agent/extensions/ctxguard.ts");
        assert_eq!(loaded[1].path, "/x/old.ts");
        let error = json!({"type": "response", "command": "get_commands", "success": false,
                           "error": "boom"});
        assert_eq!(
            parse_commands(&error),
            Err("get_commands answered boom".to_string())
        );
        assert!(parse_commands(&json!({"success": true})).is_err());
    }

    /// A pi that never answers: given up on at the deadline, killed with what it started.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_silent_pi_is_given_up_on_and_killed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = dir.path().join("pi");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nsleep 60 &\necho $! > '{}'\ncat > /dev/null\nsleep 60\n",
                pidfile.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let started = Instant::now();
        let got = commands(&script, None, Duration::from_millis(500));
        assert!(got.as_ref().unwrap_err().contains("no answer"), "{got:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let alive = Path::new(&format!("/proc/{}", pid.trim())).exists()
            && !std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
                .unwrap_or_default()
                .contains(") Z ");
        assert!(!alive, "the child it started is still running");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_version_is_read_from_stderr_too() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("pi");
        std::fs::write(&script, "#!/bin/sh\necho 0.73.1 >&2\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            version(&script, Duration::from_secs(5)),
            Ok("0.73.1".into())
        );
    }
}
