//! Files from outside ctxguard's state, and what ctxguard prints of them: each attack of issue 26
//! reproduced through the binary. A repository's settings file linked to /dev/zero, to a
//! terminal, or a FIFO; `autoMemoryDirectory` values the client refuses; transcript names made
//! to forge `replay --all` lines; a user's folder given as `CTXGUARD_HOME` to `uninstall --purge`.

use std::fs;
#[cfg(unix)]
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::*;

/// No hook may take longer than this on any file (the client's own timeout is a minute).
const LIMIT: Duration = Duration::from_secs(15);
/// Nor hold more heap: a read to the end of /dev/zero would pass it in a second.
const MAX_HEAP: u64 = 256 << 20;

/// A project whose `.claude/settings.json` is `what`: a FIFO nobody writes, a link to a device,
/// a link to a file over the size limit.
#[cfg(unix)]
fn hostile_project(env: &TestEnv, what: &str) -> PathBuf {
    let project = env.dir.path().join("proj");
    fs::create_dir_all(project.join(".claude")).unwrap();
    let settings = project.join(".claude/settings.json");
    match what {
        "fifo" => {
            let c = std::ffi::CString::new(settings.to_str().unwrap()).unwrap();
            // SAFETY: a valid C string and mode.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }
        "large" => {
            let big = env.dir.path().join("big.json");
            fs::File::create(&big).unwrap().set_len(64 << 20).unwrap();
            symlink(&big, &settings).unwrap();
        }
        device => symlink(device, &settings).unwrap(),
    }
    project
}

/// The payload of `hook` for `SESSION` in `project`, its transcript at `transcript`.
fn payload(hook: &str, project: &Path, transcript: &Path) -> Value {
    let mut p = match hook {
        "statusline" => statusline_payload(SESSION, Some(250_000), Some(1_000_000)),
        "pretooluse" => fixture_json("PreToolUse.json"),
        "userpromptsubmit" => fixture_json("UserPromptSubmit.json"),
        "stop" => fixture_json("Stop.json"),
        "precompact" => fixture_json("PreCompact-auto.json"),
        "postcompact" => fixture_json("PostCompact-auto.json"),
        "sessionstart" => fixture_json("SessionStart-compact.json"),
        "sessionend" => fixture_json("SessionEnd.json"),
        other => panic!("no payload for {other}"),
    };
    p["session_id"] = json!(SESSION);
    p["cwd"] = json!(project.to_str().unwrap());
    p["transcript_path"] = json!(transcript.to_str().unwrap());
    p
}

/// Every hook, and the manual commands that read the client's settings, finish in time and
/// within the heap whatever the project's settings file is, and say why it was not read; the
/// hooks exit 0 with at most their one stderr line. (Before: every one of these blocked on
/// the FIFO or the terminal until killed, or read /dev/zero until it ran out of memory.)
#[cfg(unix)]
#[test]
fn a_settings_file_that_is_no_regular_file_never_hangs_or_floods_anything() {
    let hooks = [
        "statusline",
        "pretooluse",
        "userpromptsubmit",
        "stop",
        "precompact",
        "sessionend",
        "postcompact",
        "sessionstart",
    ];
    let mut targets = vec!["fifo", "/dev/zero", "large"];
    // A terminal only where the test has one to link to (opening it must not block either).
    if Path::new("/dev/tty").exists() {
        targets.push("/dev/tty");
    }
    for target in targets {
        // Each hook on a state of its own: none relies on limits another one resolved.
        for hook in hooks {
            let env = TestEnv::new();
            let project = hostile_project(&env, target);
            // 250k of 1M on opus: past the idle threshold, so Stop reads the settings too.
            let transcript = env.write(
                "t.jsonl",
                &(assistant_line_of("claude-opus-5-5", 250_000, &time_from_now(-5)) + "\n"),
            );
            let input = payload(hook, &project, &transcript).to_string();
            let run = env.run_within(&[hook], &input, LIMIT, MAX_HEAP);
            assert_eq!(run.code, 0, "{target} {hook}: {run:?}");
            assert!(run.stderr.lines().count() <= 1, "{target} {hook}: {run:?}");
            // Without a controlling terminal /dev/tty does not even open: unreadable, as for
            // the client, and not worth a note; otherwise the hook says what it refused.
            if target != "/dev/tty"
                && matches!(hook, "pretooluse" | "statusline" | "precompact" | "stop")
            {
                assert!(
                    run.stderr.contains(".claude/settings.json")
                        && (run.stderr.contains("not a regular file")
                            || run.stderr.contains("over the limit")),
                    "{target} {hook}: says which file and why: {run:?}"
                );
            }
        }
        let env = TestEnv::new();
        let project = hostile_project(&env, target);
        let transcript = env.write(
            "t.jsonl",
            &(assistant_line_of("claude-opus-5-5", 250_000, &time_from_now(-5)) + "\n"),
        );
        // The gauge is still drawn.
        let status = payload("statusline", &project, &transcript).to_string();
        let run = env.run_within(&["statusline"], &status, LIMIT, MAX_HEAP);
        assert!(
            run.stdout.contains("ctx 25% · 250k/1M"),
            "{target}: {run:?}"
        );
        // doctor names the file and what it is, and finishes.
        let mut doctor = env.command(&["doctor"]);
        doctor.current_dir(&project);
        let run = run_command_within(doctor, LIMIT, MAX_HEAP);
        assert!(
            run.stdout.contains(".claude/settings.json "),
            "{target}: {run:?}"
        );
        if target != "/dev/tty" {
            assert!(
                run.stdout.contains("ctxguard does not read it"),
                "{target}: {run:?}"
            );
        }
        // replay --all reads each session's project settings: it finishes and says why.
        let projects = env.home().join(".claude/projects/-proj");
        fs::create_dir_all(&projects).unwrap();
        let line = json!({"type": "user", "cwd": project.to_str().unwrap(), "sessionId": SESSION,
                          "message": {"role": "user", "content": "hello"}});
        fs::write(
            projects.join(format!("{SESSION}.jsonl")),
            format!(
                "{line}\n{}\n",
                assistant_line_of("claude-opus-5-5", 250_000, &time_from_now(-5))
            ),
        )
        .unwrap();
        let run = run_command_within(env.command(&["replay", "--all"]), LIMIT, MAX_HEAP);
        assert_eq!(run.code, 0, "{target}: {run:?}");
        assert!(run.stdout.contains("1 sessions"), "{target}: {run:?}");
        if target != "/dev/tty" {
            assert!(
                run.stderr.contains("ctxguard: note: settings"),
                "{target}: {run:?}"
            );
        }
        // install into that file refuses it, before anything is written.
        let mut install = env.command(&["install", "--project"]);
        install.current_dir(&project);
        let run = run_command_within(install, LIMIT, MAX_HEAP);
        assert_eq!(run.code, 1, "{target}: {run:?}");
        assert!(
            target == "/dev/tty" || run.stderr.contains("refusing to read it"),
            "{target}: {run:?}"
        );
        assert_eq!(
            fs::read_dir(project.join(".claude")).unwrap().count(),
            1,
            "{target}: no backup, no note"
        );
    }
}

/// A user's settings file kept as a link to a regular file (GNU stow, chezmoi, home-manager)
/// is read through the link by the hooks, and `install` writes through it: the link stays, the
/// file it points to is edited.
#[cfg(unix)]
#[test]
fn a_users_settings_linked_to_a_regular_file_keeps_working() {
    let env = TestEnv::new();
    let dotfiles = env.dir.path().join("dotfiles");
    fs::create_dir_all(&dotfiles).unwrap();
    fs::create_dir_all(env.home().join(".claude")).unwrap();
    let real = dotfiles.join("settings.json");
    fs::write(
        &real,
        r#"{"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}}"#,
    )
    .unwrap();
    let link = env.home().join(".claude/settings.json");
    symlink(&real, &link).unwrap();
    // Compaction at 50% of 200k: 100k is already past the nudge (it would not be at the
    // default).
    let transcript = env.write(
        "t.jsonl",
        &(assistant_line(100_000, &time_from_now(-5)) + "\n"),
    );
    let run = env.pretooluse(&pretooluse_payload(SESSION, &transcript));
    assert_eq!(run.stderr, "", "{run:?}");
    decode_nudge(&run.stdout);
    let run = env.run(&["install"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let edited: Value = serde_json::from_str(&fs::read_to_string(&real).unwrap()).unwrap();
    assert!(edited["hooks"]["PreToolUse"].is_array(), "{edited}");
    assert_eq!(edited["env"]["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"], "50");
}

/// Runs a prepared command under [`LIMIT`] and the heap limit (a manual command).
#[cfg(unix)]
fn run_command_within(mut cmd: std::process::Command, limit: Duration, max_heap: u64) -> Run {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    // SAFETY: setrlimit is async-signal-safe and only touches the child.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: max_heap,
                rlim_max: max_heap,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &raw const lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = feed(cmd, "");
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{:?} still running after {limit:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
