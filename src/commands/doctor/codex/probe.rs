//! Codex asked, where it can be: the `codex` on `PATH` says its version (`codex --version`), and
//! its app-server (`codex app-server`, JSON-RPC over stdio) which hooks it would run and whether
//! it trusts each (`hooks/list`: `currentHash`, `trustStatus`). ctxguard writes trust hashes it
//! computes itself; if Codex ever hashes a hook differently, only Codex's own answer shows that
//! the hooks stopped running. Both are bounded: a deadline, then the program and everything it
//! started killed as one ([`crate::process`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use super::super::version::{ask_json_lines, find_on_path, run_within};
use crate::process;

/// `codex --version` starts node, then the native binary.
const VERSION_LIMIT: Duration = Duration::from_secs(10);

/// The app-server answers `hooks/list` in well under a second; a few seconds is plenty.
const LIST_LIMIT: Duration = Duration::from_secs(5);

/// What asking Codex gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    /// No `codex` on `PATH`.
    NotFound,
    /// Found at this path: its version (or why none), and what `hooks/list` said (not asked
    /// when ctxguard is not registered; else its hooks, or why Codex did not say).
    Found {
        path: PathBuf,
        version: Result<String, String>,
        listed: Option<Result<Vec<Listed>, String>>,
    },
}

/// One hook as Codex's `hooks/list` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// `hooks.json`'s path, the event, group and handler: Codex's key.
    pub key: String,
    /// The event, as Codex names it (`preToolUse`).
    pub event: String,
    pub command: String,
    /// `trusted`, `untrusted`, `modified`…, as Codex says it.
    pub trust: String,
}

impl Probe {
    /// Finds `codex` on `search_path`, asks its version, and (when `list`) its hooks.
    pub fn ask(search_path: Option<&std::ffi::OsStr>, list: bool) -> Probe {
        let Some(path) = find_on_path(search_path, "codex") else {
            return Probe::NotFound;
        };
        let version = run_within(&path, &["--version"], VERSION_LIMIT).and_then(|out| {
            crate::client::version_in(&out).ok_or_else(|| {
                format!(
                    "printed {:?}, not a version",
                    crate::text::cut(out.trim(), 80)
                )
            })
        });
        let listed = list.then(|| hooks_list(&path, LIST_LIMIT));
        Probe::Found {
            path,
            version,
            listed,
        }
    }
}

/// The hooks `codex app-server` lists for the current directory, asked within `limit`.
fn hooks_list(codex: &Path, limit: Duration) -> Result<Vec<Listed>, String> {
    let mut command = Command::new(codex);
    command
        .arg("app-server")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let (mut child, group) =
        process::spawn_group(command).map_err(|e| format!("cannot run it: {e}"))?;
    let answer = ask_list(&mut child, limit);
    // Whatever it said, it is done: it and what it started go (not reaped yet, so its group
    // id cannot have been reused).
    group.kill(&mut child);
    let _ = child.wait();
    parse_list(&answer?)
}

/// Sends the three requests and waits for `hooks/list`'s answer (id 2).
fn ask_list(child: &mut std::process::Child, limit: Duration) -> Result<Value, String> {
    let requests = [
        json!({"id": 1, "method": "initialize",
               "params": {"clientInfo": {"name": "ctxguard-doctor", "version": crate::version::LONG}}}),
        json!({"method": "initialized"}),
        json!({"id": 2, "method": "hooks/list", "params": {}}),
    ];
    ask_json_lines(
        child,
        &requests,
        limit,
        "the app-server",
        "hooks/list",
        |v| v["id"] == 2,
    )
}

/// The hooks in a `hooks/list` answer (every directory it lists), or the error it gave.
fn parse_list(answer: &Value) -> Result<Vec<Listed>, String> {
    if let Some(error) = answer.get("error") {
        let message = error["message"].as_str().unwrap_or("an error");
        return Err(format!(
            "hooks/list answered {}",
            crate::text::cut(&crate::text::sanitize(message, true), 200)
        ));
    }
    let data = answer["result"]["data"]
        .as_array()
        .ok_or("hooks/list answered without data")?;
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Ok(data
        .iter()
        .filter_map(|d| d["hooks"].as_array())
        .flatten()
        .map(|h| Listed {
            key: text(&h["key"]),
            event: text(&h["eventName"]),
            command: text(&h["command"]),
            trust: text(&h["trustStatus"]),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hooks_list_answer_is_read_from_every_directory_and_an_error_said() {
        let answer = json!({"id": 2, "result": {"data": [
            {"cwd": "/p", "hooks": [
                {"key": "/c/hooks.json:pre_tool_use:0:0", "eventName": "preToolUse",
                 "command": "/bin/ctxguard pretooluse", "trustStatus": "trusted",
                 "currentHash": "sha256:ab"},
                {"key": "/c/hooks.json:session_end:0:0", "eventName": "sessionEnd",
                 "command": "/bin/ctxguard sessionend", "trustStatus": "untrusted"}]},
            {"cwd": "/q", "hooks": []}]}});
        let listed = parse_list(&answer).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[1].event, "sessionEnd");
        assert_eq!(listed[1].trust, "untrusted");
        let error = json!({"id": 2, "error": {"code": -32601, "message": "no such method"}});
        assert_eq!(
            parse_list(&error),
            Err("hooks/list answered no such method".to_string())
        );
        assert!(parse_list(&json!({"id": 2, "result": {}})).is_err());
    }

    /// An app-server that never answers: given up on at the deadline, killed with what it
    /// started.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_silent_app_server_is_given_up_on_and_killed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = dir.path().join("codex");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nsleep 60 &\necho $! > '{}'\ncat > /dev/null\nsleep 60\n",
                pidfile.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let started = std::time::Instant::now();
        let got = hooks_list(&script, Duration::from_millis(500));
        assert!(
            got.as_ref()
                .is_err_and(|e| e.starts_with("no answer to hooks/list within")),
            "{got:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(30));
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
            let alive = stat.is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
            });
            if !alive {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the background sleep lives on"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
