//! Provenance: which ctxguard this is (version and commit), and which Claude Code runs it (the
//! `claude` found on `PATH`, asked for `--version`), and whether the end-to-end tests cover that
//! client. The one check that starts a process: `claude --version`, with a deadline.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{finding, Context, Finding, Status};
use crate::files;
use crate::process;
use crate::version::{LONG, TESTED_CLIENTS};

/// `claude --version` starts node; anything slower than this is given up on.
const LIMIT: Duration = Duration::from_secs(10);

/// What asking the client for its version gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Client {
    /// No `claude` on `PATH`.
    NotFound,
    /// Found at this path, but it did not say which version it is.
    Unknown(PathBuf, String),
    /// Found at this path, reporting this version.
    Version(PathBuf, String),
}

/// ctxguard's own version and commit, then the client's version and whether it is covered.
pub fn version(ctx: &Context) -> Vec<Finding> {
    findings(&ctx.claude)
}

/// The client to judge for: the version given (`--client-version`, refused when it reads as no
/// version), else the one [`detect`] finds.
pub fn client(env: &crate::config::Env, given: Option<&str>) -> anyhow::Result<Client> {
    match given {
        None => Ok(detect(env.search_path.as_deref(), env.home.as_deref())),
        Some(text) => match crate::client::version_in(text) {
            Some(v) => Ok(Client::Version(PathBuf::from("--client-version"), v)),
            None => anyhow::bail!(
                "--client-version: {:?} is not a Claude Code version (like 2.1.14; `claude \
                 --version` prints it)",
                crate::text::cut(&crate::text::sanitize(text, true), 40)
            ),
        },
    }
}

/// Whether the facts block reaches the summarizer: `PreCompact` prints it only where the client
/// makes that output part of the compaction's instructions (the version is judged again at each
/// compaction, from the transcript), and only with `summary_facts` on.
pub fn summary_facts(ctx: &Context) -> Vec<Finding> {
    let on = match &ctx.config {
        Some(Ok(loaded)) => loaded.config.summary_facts,
        _ => crate::config::Config::default().summary_facts,
    };
    vec![summary_facts_finding(&ctx.claude, on)]
}

/// [`summary_facts`] for a client and the setting (pure).
fn summary_facts_finding(client: &Client, on: bool) -> Finding {
    use crate::summary_facts::{delivery, Delivery};
    let since = "2.1.14";
    if !on {
        return finding(
            "facts",
            Status::Info,
            "summary_facts is off: PreCompact hands the client's summarizer no facts; the \
             summary keeps what the client's own prompt asks for, and the recovery block after \
             the compaction is the only mechanical record"
                .to_string(),
            None,
        );
    }
    match client {
        Client::Version(_, v) if delivery(Some(v)) == Delivery::Instructions => finding(
            "facts",
            Status::Ok,
            format!(
                "at each automatic compaction PreCompact prints the checkpoint's facts (newest \
                 asks, goal, open tasks, last verification, branch and pull requests, files), \
                 which Claude Code {v} adds to the compaction's instructions, showing you \
                 nothing; at a manual /compact it prints nothing (the client would show the \
                 facts to you and echo them into the conversation): your own words steer that \
                 summary, and the recovery block brings the facts back once"
            ),
            None,
        ),
        Client::Version(_, v) => finding(
            "facts",
            Status::Info,
            format!(
                "Claude Code {v} is not known to make PreCompact's output part of the \
                 compaction's instructions (known from {since} on), so ctxguard prints no facts \
                 for its summary; the checkpoint and the recovery block are unchanged"
            ),
            None,
        ),
        Client::NotFound | Client::Unknown(..) => finding(
            "facts",
            Status::Info,
            format!(
                "PreCompact prints the checkpoint's facts for the compaction's summary when the \
                 session's client is {since} or later (read from the transcript at each \
                 compaction); an older or unnamed client gets none"
            ),
            None,
        ),
    }
}

/// The `claude` on `search_path` (else the one the client's own local install keeps,
/// `~/.claude/local/claude`, which users reach through a shell alias), and what it says its
/// version is.
fn detect(search_path: Option<&std::ffi::OsStr>, home: Option<&Path>) -> Client {
    let local = || {
        home.map(|h| h.join(".claude").join("local").join("claude"))
            .into_iter()
            .flat_map(files::program_candidates)
            .find(|p| files::is_executable(p))
    };
    match find_on_path(search_path, "claude").or_else(local) {
        None => Client::NotFound,
        Some(path) => ask_version(&path),
    }
}

/// The findings for what the client said (pure).
pub fn findings(client: &Client) -> Vec<Finding> {
    let tested = TESTED_CLIENTS.join(", ");
    let ours = finding("version", Status::Info, format!("ctxguard {LONG}"), None);
    let theirs = match client {
        Client::NotFound => finding(
            "client",
            Status::Info,
            format!(
                "no `claude` on PATH, so its version is unknown (the end-to-end tests cover \
                 Claude Code {tested})"
            ),
            None,
        ),
        Client::Unknown(path, why) => finding(
            "client",
            Status::Warn,
            format!("{} --version: {why}", path.display()),
            Some("check that `claude --version` runs in this shell"),
        ),
        Client::Version(path, v) if TESTED_CLIENTS.contains(&v.as_str()) => finding(
            "client",
            Status::Ok,
            format!(
                "Claude Code {v} ({}), a version the end-to-end tests cover",
                path.display()
            ),
            None,
        ),
        Client::Version(path, v) => finding(
            "client",
            Status::Info,
            format!(
                "Claude Code {v} ({}) is not a version the end-to-end tests cover ({tested}); \
                 its hook payloads were not checked against ctxguard",
                path.display()
            ),
            None,
        ),
    };
    let mut out = vec![ours, theirs];
    if let Client::Version(_, v) = client {
        out.push(finding("client", Status::Info, on_client(v), None));
    }
    out
}

/// What ctxguard does on Claude Code `v`, in one line: how `install` registers it there, and
/// what the client's own compaction paths mean for it (each read from that client's code).
fn on_client(v: &str) -> String {
    use crate::client::{parse, Accepts};
    let accepts = Accepts::version(v);
    let registered = if accepts.on_failure {
        "exec-form hooks with onFailure \"continue\" (a hook it cannot start never blocks), \
         PostCompact and PostToolBatch"
    } else {
        "hooks as shell lines without PostCompact, PostToolBatch or onFailure (this client has \
         neither the exec form nor those)"
    };
    let paths = match parse(v) {
        Some(p) if p >= (2, 1, 332) => {
            "a summary it prepared ahead (after a turn, while idle, or saved for a resume) is \
             covered up to its boundary"
        }
        Some(p) if p >= (2, 1, 330) => {
            "before an idle compaction (200k tokens or more) the Stop hook asks to save (once per \
             cycle, beside the regular nudges), and a summary it prepared while idle is covered \
             up to its boundary"
        }
        Some(p) if p <= (2, 1, 14) => {
            "it compacts at 155k of 200k, never while idle, and under -p keeps the recovery in \
             memory only, so the next hook gives it again"
        }
        _ => "its compaction rules were not read: the first boundary calibrates them",
    };
    format!(
        "on Claude Code {v}, ctxguard registers {registered}; {paths}; after each compaction the \
         next hook checks that the recovery arrived"
    )
}

/// The first executable `name` in the context's `PATH`. On Windows `claude.exe` or the
/// `claude.cmd` npm writes, never the extensionless `claude` beside it (a shell script for Git
/// Bash, which Windows cannot run).
pub(super) fn find_on_path(search_path: Option<&std::ffi::OsStr>, name: &str) -> Option<PathBuf> {
    search_path
        .iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
        .flat_map(|dir| files::program_candidates(dir.join(name)))
        .find(|p| files::is_executable(p))
}

/// Runs `PATH --version` (at most [`LIMIT`]) and reads the version from its first word:
/// Claude Code prints `2.1.330 (Claude Code)`.
fn ask_version(path: &Path) -> Client {
    ask_version_within(path, LIMIT)
}

fn ask_version_within(path: &Path, limit: Duration) -> Client {
    let unknown = |why: String| Client::Unknown(path.to_path_buf(), why);
    let out = match run_within(path, &["--version"], limit) {
        Ok(out) => out,
        Err(why) => return unknown(why),
    };
    match parse_version(&out) {
        Some(v) => Client::Version(path.to_path_buf(), v),
        None => unknown(format!(
            "printed {:?}, not a version",
            crate::text::cut(out.trim(), 80)
        )),
    }
}

/// A client's JSON-lines server (`codex app-server`, `pi --mode rpc`) asked one question: the
/// `requests` written to its stdin, one per line, then the first line of its stdout (at most
/// 4 MiB read) that `is_answer`, within `limit`. Its stdin stays open until then: such a server
/// stops reading at its end. `who` names it in the errors, `what` the answer waited for.
pub(super) fn ask_json_lines(
    child: &mut std::process::Child,
    requests: &[serde_json::Value],
    limit: Duration,
    who: &str,
    what: &str,
    is_answer: impl Fn(&serde_json::Value) -> bool + Send + 'static,
) -> Result<serde_json::Value, String> {
    use std::io::{BufRead, Write};
    const MAX_OUTPUT: u64 = 4 * 1024 * 1024;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(format!("no pipes to {who}"));
    };
    let (tx, rx) = std::sync::mpsc::channel();
    // The reader ends when the server is killed (its pipe closes) or at the cap.
    std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(stdout.take(MAX_OUTPUT));
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                if is_answer(&v) {
                    let _ = tx.send(v);
                    return;
                }
            }
            line.clear();
        }
    });
    for request in requests {
        writeln!(stdin, "{request}").map_err(|e| format!("writing to {who}: {e}"))?;
    }
    let answer = rx
        .recv_timeout(limit)
        .map_err(|_| format!("no answer to {what} within {limit:?}"));
    drop(stdin);
    answer
}

/// Runs `path args` (at most `limit`, its first 4 KiB of output read), in a group of its own:
/// a hung program is killed with everything it started. What it printed, or why nothing.
pub(super) fn run_within(path: &Path, args: &[&str], limit: Duration) -> Result<String, String> {
    let mut command = Command::new(path);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let (mut child, group) =
        process::spawn_group(command).map_err(|e| format!("cannot run it: {e}"))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                // Not reaped yet, so its group id cannot have been reused.
                group.kill(&mut child);
                let _ = child.wait();
                return Err(format!("no answer within {limit:?}"));
            }
            Err(e) => return Err(format!("{e}")),
        }
    }
    let mut out = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = stdout.take(4096).read_to_string(&mut out);
    }
    Ok(out)
}

/// The version `claude --version` printed (see [`crate::client::version_in`]).
fn parse_version(out: &str) -> Option<String> {
    crate::client::version_in(out)
}

#[cfg(test)]
mod tests {
    #[cfg(unix)]
    use super::super::tests::ctx;
    use super::super::tests::lines;
    use super::*;

    /// A client that hangs, having started something in the background: both are gone when
    /// doctor gives up on it.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_hung_client_is_killed_with_what_it_started() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = dir.path().join("claude");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nsleep 60 &\necho $! > '{}'\nsleep 60\n",
                pidfile.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let started = Instant::now();
        let client = ask_version_within(&script, Duration::from_millis(500));
        assert!(
            matches!(&client, Client::Unknown(_, why) if why.starts_with("no answer within")),
            "{client:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(30));
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        // Gone, or a zombie waiting for its new parent to reap it: never still sleeping.
        let deadline = Instant::now() + Duration::from_secs(5);
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
            assert!(Instant::now() < deadline, "the background sleep lives on");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn summary_facts_are_said_to_reach_the_summary_only_where_they_do() {
        let at = |v: &str| Client::Version(PathBuf::from("/bin/claude"), v.to_string());
        let status = |c: &Client, on: bool| summary_facts_finding(c, on).status;
        assert_eq!(status(&at("2.1.330"), true), Status::Ok);
        assert_eq!(status(&at("2.1.14"), true), Status::Ok);
        assert!(summary_facts_finding(&at("2.1.14"), true)
            .message
            .contains("at a manual /compact it prints nothing"));
        assert_eq!(status(&at("2.0.76"), true), Status::Info);
        assert!(summary_facts_finding(&at("2.0.76"), true)
            .message
            .contains("prints no facts"));
        assert_eq!(status(&Client::NotFound, true), Status::Info);
        let off = summary_facts_finding(&at("2.1.330"), false);
        assert_eq!(off.status, Status::Info);
        assert!(
            off.message.starts_with("summary_facts is off"),
            "{}",
            off.message
        );
    }

    #[test]
    fn the_client_version_is_read_from_its_first_word() {
        assert_eq!(
            parse_version("2.1.330 (Claude Code)\n").as_deref(),
            Some("2.1.330")
        );
        assert_eq!(parse_version("v2.1.14").as_deref(), Some("2.1.14"));
        assert_eq!(parse_version("v2.1").as_deref(), None);
        assert_eq!(parse_version("").as_deref(), None);
        assert_eq!(parse_version("2..1").as_deref(), None);
    }

    #[test]
    fn a_covered_client_is_ok_another_is_named_as_untested() {
        let p = PathBuf::from("/bin/claude");
        let ok = findings(&Client::Version(p.clone(), TESTED_CLIENTS[0].into()));
        assert!(lines(&ok)[0].starts_with("info: ctxguard "), "{ok:?}");
        assert!(lines(&ok)[1].starts_with("ok: Claude Code "), "{ok:?}");
        let newer = findings(&Client::Version(p.clone(), "9.0.0".into()));
        assert!(lines(&newer)[1].contains("not a version the end-to-end tests cover"));
        assert_eq!(ok.len(), 3, "{ok:?}");
        assert!(lines(&ok)[2].contains("on Claude Code "), "{ok:?}");
        let newest = findings(&Client::Version(p.clone(), "2.1.332".into()));
        assert!(
            lines(&newest)[2].contains("onFailure \"continue\""),
            "{newest:?}"
        );
        assert!(
            lines(&newest)[2].contains("saved for a resume"),
            "{newest:?}"
        );
        let old = findings(&Client::Version(p.clone(), "2.1.14".into()));
        assert!(lines(&old)[2].contains("shell lines"), "{old:?}");
        assert!(
            !lines(&old)[2].contains("onFailure \"continue\""),
            "{old:?}"
        );
        let missing = findings(&Client::NotFound);
        assert!(lines(&missing)[1].starts_with("info: no `claude` on PATH"));
        let odd = findings(&Client::Unknown(p, "printed \"x\"".into()));
        assert!(lines(&odd)[1].starts_with("warn: "));
    }

    #[cfg(unix)]
    #[test]
    fn the_client_is_asked_on_the_path_given() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let claude = dir.path().join("claude");
        std::fs::write(&claude, "#!/bin/sh\necho '2.1.330 (Claude Code)'\n").unwrap();
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut c = ctx(&[]);
        c.claude = detect(Some(dir.path().as_os_str()), None);
        assert_eq!(c.claude, Client::Version(claude.clone(), "2.1.330".into()));
        let found = version(&c);
        assert_eq!(found[1].status, Status::Ok, "{found:?}");
        c.claude = detect(None, None);
        assert!(lines(&version(&c))[1].starts_with("info: no `claude`"));
        // The client's local install, reached through an alias, is found too.
        let home = tempfile::tempdir().unwrap();
        let local = home.path().join(".claude/local");
        std::fs::create_dir_all(&local).unwrap();
        std::fs::copy(&claude, local.join("claude")).unwrap();
        assert_eq!(
            detect(None, Some(home.path())),
            Client::Version(local.join("claude"), "2.1.330".into())
        );
    }
}
