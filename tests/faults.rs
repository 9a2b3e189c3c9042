//! Concurrency and crashes: parallel writers, writers killed mid-write, a read-only and a full
//! state directory. State must always parse, the cycle must never go backwards, a dead writer's
//! lock must never block, and hooks must stay silent (exit 0) whatever the disk does.

use std::fs;
#[cfg(unix)]
use std::io::Write;
use std::path::Path;
#[cfg(unix)]
use std::path::PathBuf;
#[cfg(unix)]
use std::process::Command;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::*;

fn spawn_with(env: &TestEnv, args: &[&str], input: &str) -> std::process::Child {
    let mut cmd = env.command(args);
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    feed(cmd, input)
}

/// Reads the marker if there is one; panics if it does not parse.
fn marker_if_any(path: &Path) -> Option<Value> {
    let text = fs::read_to_string(path).ok()?;
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("torn marker ({e}): {text:?}")))
}

#[test]
fn three_hooks_hammering_one_session_never_tear_or_lose_state() {
    let env = Arc::new(TestEnv::new());
    let transcript = env.write("t.jsonl", &fixture("transcript-with-compaction.jsonl"));
    let marker = env.marker_path(SESSION);
    let stop = Arc::new(AtomicBool::new(false));
    let high = statusline_payload(SESSION, Some(130_000), Some(200_000)).to_string();
    let low = statusline_payload(SESSION, Some(2_000), Some(200_000)).to_string();
    let tool = pretooluse_payload(SESSION, &transcript).to_string();
    let mut compact = fixture_json("PreCompact-auto.json");
    compact["transcript_path"] = json!(transcript.to_str().unwrap());
    let compact = compact.to_string();

    let mut workers = Vec::new();
    for (args, inputs) in [
        (vec!["statusline", "--quiet"], vec![high, low]),
        (vec!["pretooluse"], vec![tool]),
        (vec!["precompact"], vec![compact]),
    ] {
        let (env, stop) = (Arc::clone(&env), Arc::clone(&stop));
        let transcript = transcript.clone();
        workers.push(std::thread::spawn(move || {
            let mut runs = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let input = &inputs[runs % inputs.len()];
                let status = spawn_with(&env, &args, input).wait().unwrap();
                assert_eq!(status.code(), Some(0), "{args:?}");
                if args[0] == "precompact" {
                    // As the client does: the compaction's boundary follows, so the next
                    // PreCompact is a new compaction, not a repeat of this one.
                    append_lines(&transcript, &[boundary_line(&time_from_now(0))]);
                }
                runs += 1;
            }
            runs
        }));
    }
    // The checker: every read parses, cycle and compactions never go backwards.
    let (mut cycle, mut compactions, mut reads) = (0u64, 0u64, 0usize);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        if let Some(m) = marker_if_any(&marker) {
            let (c, k) = (
                m["cycle"].as_u64().unwrap(),
                m["compactions"].as_u64().unwrap(),
            );
            assert!(c >= cycle && k >= compactions, "went backwards: {m}");
            (cycle, compactions) = (c, k);
            reads += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let runs: Vec<usize> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert!(runs.iter().all(|r| *r > 3), "every hook ran: {runs:?}");
    assert!(reads > 100);
    // Every compaction was counted, and started a cycle.
    let m = marker_if_any(&marker).unwrap();
    assert_eq!(m["compactions"].as_u64(), Some(runs[2] as u64), "{m}");
    assert!(m["cycle"].as_u64().unwrap() >= runs[2] as u64);
}

/// Writers started and killed. Under wine (where CI runs the Windows build) starting a process
/// costs some 30 ms and thousands in a row exhaust it, so fewer there.
const WRITERS: u64 = if cfg!(windows) { 200 } else { 1_000 };

#[test]
fn writers_killed_at_random_moments_never_tear_state_or_strand_the_lock() {
    let env = TestEnv::new();
    let transcript = env.write("t.jsonl", &fixture("transcript-with-compaction.jsonl"));
    let marker = env.marker_path(SESSION);
    let mut compact = fixture_json("PreCompact-manual.json");
    compact["transcript_path"] = json!(transcript.to_str().unwrap());
    let compact = compact.to_string();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // The session exists before the kills begin (`reset --session` needs it).
    env.statusline(&statusline_payload(SESSION, Some(1_000), Some(200_000)));
    assert!(marker.exists());
    let (mut cycle, mut killed) = (0u64, 0usize);
    for i in 0..WRITERS {
        // Different usage each time, so every status line run writes.
        let (args, input): (&[&str], String) = if i % 5 == 4 {
            (&["precompact"], compact.clone())
        } else {
            let tokens = 100_000 + rand() % 60_000;
            (
                &["statusline", "--quiet"],
                statusline_payload(SESSION, Some(tokens), Some(200_000)).to_string(),
            )
        };
        let mut child = spawn_with(&env, args, &input);
        std::thread::sleep(Duration::from_micros(rand() % 3_000));
        if child.try_wait().unwrap().is_none() {
            let _ = child.kill(); // SIGKILL; TerminateProcess on Windows
            killed += 1;
        }
        child.wait().unwrap();
        if let Some(m) = marker_if_any(&marker) {
            let c = m["cycle"].as_u64().unwrap();
            assert!(c >= cycle, "cycle went backwards after a kill: {m}");
            cycle = c;
        }
        if i % 100 == 99 {
            // The dead writers' locks are gone: a locked command gets through at once.
            let run = env.run_within(
                &["reset", "--session", SESSION],
                "",
                Duration::from_secs(5),
                u64::MAX,
            );
            assert_eq!(run.code, 0, "{run:?}");
        }
    }
    assert!(
        killed as u64 > WRITERS / 20,
        "only {killed} runs were killed mid-flight"
    );
    // Whatever the kills left, hooks still work and state is valid.
    let run = env.statusline(&statusline_payload(SESSION, Some(130_000), Some(200_000)));
    assert_eq!(run.code, 0);
    decode_nudge(
        &env.pretooluse(&pretooluse_payload(SESSION, &transcript))
            .stdout,
    );
    // The next compaction sweeps old temp files (none is older than a minute here, so they stay;
    // each is a complete or partial write that no reader ever opens).
    for entry in fs::read_dir(marker.parent().unwrap()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            name == "marker.json"
                || name == "lock"
                || name == "reading.json"
                || name.starts_with(".tmp-"),
            "{name}"
        );
    }
}

/// A small tmpfs for the duration of a test; `None` where mounting is not allowed.
#[cfg(unix)]
struct Mount(PathBuf);

#[cfg(unix)]
impl Mount {
    fn new(dir: &Path, options: &str) -> Option<Mount> {
        fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mount(dir.to_path_buf()))
    }
}

#[cfg(unix)]
impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[cfg(unix)]
#[test]
fn a_read_only_state_directory_is_reported_not_fatal() {
    let mut env = TestEnv::new();
    let dir = env.dir.path().join("ro");
    let Some(_mount) = Mount::new(&dir, "size=1m,ro") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    env.set("CTXGUARD_HOME", dir.to_str().unwrap());
    let transcript = env.write("t.jsonl", &fixture("transcript-with-compaction.jsonl"));
    let sl = env.statusline(&statusline_payload(SESSION, Some(130_000), Some(200_000)));
    assert_eq!(sl.code, 0);
    assert!(
        sl.stdout.starts_with("\u{1b}[33mctx 65%"),
        "the gauge is still drawn: {sl:?}"
    );
    assert!(sl.stderr.contains("Read-only file system"), "{sl:?}");
    env.pretooluse(&pretooluse_payload(SESSION, &transcript))
        .assert_silent_failure();
    let mut compact = fixture_json("PreCompact-auto.json");
    compact["transcript_path"] = json!(transcript.to_str().unwrap());
    env.run(&["precompact"], compact.to_string())
        .assert_silent_failure();
    let reset = env.run(&["reset", "--all"], "");
    assert_eq!(reset.code, 0, "nothing to reset: {reset:?}");
    let usage = env.run(&["status"], "");
    assert_eq!(usage.code, 0, "reading works: {usage:?}");
}

#[cfg(unix)]
#[test]
fn a_full_disk_loses_no_state_and_never_repeats_a_nudge() {
    let mut env = TestEnv::new();
    let dir = env.dir.path().join("full");
    let Some(_mount) = Mount::new(&dir, "size=256k") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    env.set("CTXGUARD_HOME", dir.to_str().unwrap());
    let transcript = env.write("t.jsonl", &fixture("transcript-with-compaction.jsonl"));
    // Armed while there is room.
    env.statusline(&statusline_payload(SESSION, Some(130_000), Some(200_000)));
    let marker = dir.join("sessions").join(SESSION).join("marker.json");
    let before = fs::read(&marker).unwrap();
    // Fill the disk.
    let mut filler = fs::File::create(dir.join("filler")).unwrap();
    while filler.write_all(&[0u8; 4096]).is_ok() {}
    drop(filler);
    // The nudge cannot be recorded, so it is not given (it would repeat on every call).
    for _ in 0..3 {
        let run = env.pretooluse(&pretooluse_payload(SESSION, &transcript));
        run.assert_silent_failure();
        assert!(run.stderr.contains("No space left on device"), "{run:?}");
    }
    let mut compact = fixture_json("PreCompact-auto.json");
    compact["transcript_path"] = json!(transcript.to_str().unwrap());
    env.run(&["precompact"], compact.to_string())
        .assert_silent_failure();
    let reset = env.run(&["reset", "--session", SESSION], "");
    assert_eq!(reset.code, 1);
    assert!(
        reset.stderr.starts_with("ctxguard: ") && reset.stderr.contains("No space left"),
        "{reset:?}"
    );
    // Nothing was lost or torn.
    assert_eq!(fs::read(&marker).unwrap(), before);
    // Room again: the nudge comes, once.
    fs::remove_file(dir.join("filler")).unwrap();
    decode_nudge(
        &env.pretooluse(&pretooluse_payload(SESSION, &transcript))
            .stdout,
    );
    assert_eq!(
        env.pretooluse(&pretooluse_payload(SESSION, &transcript))
            .stdout,
        ""
    );
}
