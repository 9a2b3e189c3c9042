//! `ctxguard statusline --then CMD`: the user's own status line runs in a process group that is
//! killed whole when the hook is done with it; a child left in the background cannot hold the
//! hook, a slow command is cut off, and the gauge is drawn in every case.

use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::util::*;

const GAUGE: &str = "ctx 64% · 128k/200k · compacts in 39k";

/// Runs `statusline --then cmd` and times it. Its output is read as it comes (it can be more
/// than a pipe holds), under a deadline well past the hook's own.
fn then(cmd: &str) -> (Run, Duration) {
    let env = TestEnv::new();
    let mut command = env.command(&["statusline", "--no-color", "--then", cmd]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let start = Instant::now();
    let child = feed(
        command,
        statusline_payload(SESSION, Some(128_000), Some(200_000)).to_string(),
    );
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    let out = finished
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("`statusline --then {cmd}` still running after 30 s"))
        .unwrap();
    let took = start.elapsed();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    (run, took)
}

/// A `sleep` argument no other process has: `secs` seconds and a fraction made of this test
/// process's id and `tag`, so it can be found among the processes afterwards.
fn marker(secs: u32, tag: u32) -> String {
    format!("{secs}.{}{tag}", std::process::id())
}

/// Live (not zombie) processes whose command line holds `marker`: from /proc on Linux, from
/// `ps` where there is no /proc (macOS).
fn running(marker: &str) -> Vec<String> {
    if std::path::Path::new("/proc/self/stat").exists() {
        running_in_proc(marker)
    } else {
        running_by_ps(marker)
    }
}

fn running_by_ps(marker: &str) -> Vec<String> {
    let out = std::process::Command::new("ps")
        .args(["-A", "-o", "stat=", "-o", "args="])
        .output()
        .expect("ps lists the processes");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim_start)
        .filter(|l| l.contains(marker) && !l.starts_with(['Z', 'X']))
        .map(str::to_string)
        .collect()
}

fn running_in_proc(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let dir = entry.path();
        let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !cmdline.contains(marker) {
            continue;
        }
        // The state follows the parenthesised command name: `pid (comm) S ...`.
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        if !state.starts_with(['Z', 'X']) && !stat.is_empty() {
            found.push(format!("{}: {cmdline}", dir.display()));
        }
    }
    found
}

/// Nothing with `marker` is left (SIGKILL is delivered at once but acted on when the process is
/// next scheduled, so a loaded machine gets a moment).
#[track_caller]
fn assert_nothing_left(marker: &str) {
    let start = Instant::now();
    loop {
        let left = running(marker);
        if left.is_empty() {
            return;
        }
        assert!(
            start.elapsed() <= Duration::from_secs(3),
            "still running: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ps_sees_what_proc_sees() {
    let m = marker(20, 9);
    let mut child = std::process::Command::new("sleep").arg(&m).spawn().unwrap();
    let start = Instant::now();
    while running_by_ps(&m).is_empty() && start.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let by_ps = running_by_ps(&m);
    assert_eq!(by_ps.len(), 1, "{by_ps:?}");
    assert_eq!(running(&m).len(), 1);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(running_by_ps(&m).is_empty());
}

#[test]
fn their_line_comes_first_and_reads_the_payload() {
    let (run, _) = then("grep -c '\"session_id\"'");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, format!("1 · {GAUGE}\n"));
    assert_eq!(run.stderr, "");
}

#[test]
fn a_background_child_does_not_hold_the_status_line() {
    let m = marker(20, 1);
    // One child keeps stdout open; the other has let go of it. Neither outlives the hook.
    let (run, took) = then(&format!(
        "echo mine; sleep {m} & sleep {m} >/dev/null 2>&1 &"
    ));
    assert!(took < Duration::from_secs(4), "took {took:?}");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, format!("mine · {GAUGE}\n"));
    assert_eq!(run.stderr, "");
    assert_nothing_left(&m);
}

#[test]
fn a_slow_command_is_killed_with_everything_it_started() {
    let m = marker(30, 2);
    let (run, took) = then(&format!(
        "echo early; sleep {m} & (sleep {m}; echo late) & sleep {m}; echo late"
    ));
    assert!(took >= Duration::from_secs(5), "took {took:?}");
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, format!("{GAUGE}\n"));
    assert!(
        run.stderr.contains("still running after 5s; killed"),
        "{run:?}"
    );
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    assert_nothing_left(&m);
}

#[test]
fn endless_output_is_capped() {
    let word = format!("ctxguard-cap-{}", std::process::id());
    let (run, took) = then(&format!("yes {word}"));
    assert!(took < Duration::from_secs(4), "took {took:?}");
    assert_eq!(run.code, 0, "{run:?}");
    let theirs = run
        .stdout
        .strip_suffix(&format!(" · {GAUGE}\n"))
        .unwrap_or_else(|| panic!("no gauge at the end: {run:?}"));
    assert!(theirs.len() <= 64 * 1024, "{} bytes", theirs.len());
    assert!(theirs.len() > 60 * 1024, "{} bytes", theirs.len());
    let mut lines: Vec<&str> = theirs.lines().collect();
    let last = lines.pop().unwrap();
    assert!(lines.iter().all(|l| *l == word));
    assert!(word.starts_with(last), "{last:?}");
    assert_nothing_left(&word);
}
