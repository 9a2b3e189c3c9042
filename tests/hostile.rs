//! Hostile files where a transcript should be: nothing may hang, crash, or grow without bound.

use std::fs;
#[cfg(unix)]
use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::*;

const LIMIT: Duration = Duration::from_secs(20);
/// Lines over 8 MiB are skipped, and one being skipped exists at most twice in memory, so no
/// hostile file takes a hook (even a debug build) past this much heap.
const MAX_HEAP: u64 = 48 << 20;

/// Every kind of bad transcript path, with a name: FIFOs, devices and symlink loops on Unix;
/// device names (a console, a pipe) on Windows.
fn hostile_paths(env: &TestEnv) -> Vec<(&'static str, PathBuf)> {
    let dir = env.dir.path();
    let mut paths = vec![
        ("missing", dir.join("missing.jsonl")),
        ("directory", dir.to_path_buf()),
    ];
    #[cfg(unix)]
    {
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let lp = dir.join("loop");
        symlink(&lp, &lp).unwrap();
        paths.push(("/dev/zero", PathBuf::from("/dev/zero")));
        paths.push(("fifo", fifo));
        paths.push(("symlink loop", lp));
    }
    #[cfg(windows)]
    {
        paths.push(("console", dir.join("CON")));
        paths.push(("NUL", PathBuf::from("NUL")));
        paths.push(("pipe", PathBuf::from(r"\\.\pipe\ctxguard-test")));
        paths.push(("serial port", dir.join("COM1.jsonl")));
    }
    // One 200 MB line (sparse: no disk used, but every byte must be read to find no newline).
    let huge = dir.join("huge.jsonl");
    fs::File::create(&huge).unwrap().set_len(200 << 20).unwrap();
    let torn = env.write(
        "torn.jsonl",
        &format!(
            "{}\n{}",
            assistant_line(130_000, &time_from_now(-5)),
            &assistant_line(100, "x")[..40]
        ),
    );
    let bom = env.write(
        "bom.jsonl",
        &format!("\u{feff}{}\n", assistant_line(130_000, &time_from_now(-5))),
    );
    paths.extend([
        ("200 MB line", huge),
        ("torn last line", torn),
        ("BOM", bom),
    ]);
    paths
}

#[test]
fn pretooluse_survives_every_hostile_transcript() {
    let env = TestEnv::new();
    for (name, path) in hostile_paths(&env) {
        let session = format!(
            "s-{}",
            name.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
        )
        .to_lowercase();
        let payload = pretooluse_payload(&session, &path).to_string();
        let run = env.run_within(&["pretooluse"], payload, LIMIT, MAX_HEAP);
        assert_eq!(run.code, 0, "{name}: {run:?}");
        assert!(run.stderr.lines().count() <= 1, "{name}: {run:?}");
        match name {
            // Readable: the usage before the torn line / after the BOM counts (130k of 200k).
            "torn last line" | "BOM" => {
                decode_nudge(&run.stdout);
            }
            _ => {
                assert_eq!(run.stdout, "", "{name}");
                assert_eq!(run.stderr.lines().count(), 1, "{name}: says why");
            }
        }
    }
}

#[test]
fn precompact_survives_every_hostile_transcript() {
    let env = TestEnv::new();
    for (name, path) in hostile_paths(&env) {
        let session = format!(
            "p-{}",
            name.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
        )
        .to_lowercase();
        let mut payload = fixture_json("PreCompact-auto.json");
        payload["session_id"] = json!(session);
        payload["transcript_path"] = json!(path.to_str().unwrap());
        let run = env.run_within(&["precompact"], payload.to_string(), LIMIT, MAX_HEAP);
        assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{name}: {run:?}");
        assert!(run.stderr.lines().count() <= 1, "{name}: {run:?}");
        // A checkpoint exists either way: metadata at least.
        let latest = env
            .state()
            .join("checkpoints")
            .join(&session)
            .join("_latest.json");
        let cp: Value = serde_json::from_str(&fs::read_to_string(&latest).unwrap()).unwrap();
        assert_eq!(cp["meta"]["session_id"], session.as_str());
        let readable = matches!(name, "torn last line" | "BOM" | "200 MB line");
        assert_eq!(
            cp["meta"]["transcript_error"].is_null(),
            readable,
            "{name}: {cp}"
        );
    }
}

#[test]
fn usage_reports_hostile_transcripts_clearly() {
    let env = TestEnv::new();
    for (name, path) in hostile_paths(&env) {
        let run = env.run_within(&["usage", path.to_str().unwrap()], "", LIMIT, MAX_HEAP);
        match name {
            "torn last line" | "BOM" => assert!(
                run.stdout.starts_with("tokens       130,000"),
                "{name}: {run:?}"
            ),
            "200 MB line" => {
                assert_eq!(run.code, 0, "{run:?}");
                assert!(
                    run.stdout.contains("unknown") && run.stderr.contains("giving up"),
                    "{run:?}"
                );
            }
            _ => {
                assert_eq!(run.code, 1, "{name}: {run:?}");
                assert!(
                    run.stderr.starts_with("ctxguard: ") && run.stderr.lines().count() == 1,
                    "{name}: {run:?}"
                );
            }
        }
    }
}

#[cfg(unix)]
#[test]
fn planted_symlinks_are_refused_and_their_targets_untouched() {
    let env = TestEnv::new();
    let transcript = env.write("t.jsonl", &fixture("transcript-with-compaction.jsonl"));
    let victim = env.write("victim", "precious");
    let sessions = env.state().join("sessions");
    fs::create_dir_all(&sessions).unwrap();

    // A symlink where a session directory should be.
    symlink(env.dir.path(), sessions.join("linked-dir")).unwrap();
    // A symlink where a marker should be.
    fs::create_dir_all(sessions.join("linked-marker")).unwrap();
    symlink(&victim, sessions.join("linked-marker/marker.json")).unwrap();
    // A symlink where a lock should be.
    fs::create_dir_all(sessions.join("linked-lock")).unwrap();
    symlink(&victim, sessions.join("linked-lock/lock")).unwrap();

    for session in ["linked-dir", "linked-marker", "linked-lock"] {
        let run = env.pretooluse(&pretooluse_payload(session, &transcript));
        assert_eq!(run.code, 0);
        assert_eq!(run.stderr.lines().count(), 1, "{session}: {run:?}");
        assert!(run.stderr.contains("symbolic link"), "{session}: {run:?}");
        if session != "linked-marker" {
            // Nothing can be recorded there, so nothing is printed.
            assert_eq!(run.stdout, "", "{session}");
        }
        let sl = env.statusline(&statusline_payload(session, Some(1_000), Some(200_000)));
        assert_eq!(sl.code, 0);
        if session != "linked-marker" {
            assert!(sl.stderr.contains("symbolic link"), "{session}: {sl:?}");
        }
    }
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    // A planted marker link is treated like a corrupt marker: replaced by a real file on the next
    // write (rename replaces the link itself, never its target).
    let marker = sessions.join("linked-marker/marker.json");
    assert!(fs::symlink_metadata(&marker).unwrap().file_type().is_file());
    // Nothing was created through the directory link.
    assert!(!env.dir.path().join("marker.json").exists() && !env.dir.path().join("lock").exists());
}

#[test]
fn status_line_output_never_echoes_payload_text() {
    let env = TestEnv::new();
    let mut payload = statusline_payload(SESSION, Some(100_000), Some(200_000));
    payload["model"]["display_name"] = json!("\u{1b}]0;pwned\u{7}\u{1b}[2J evil");
    payload["cwd"] = json!("\u{1b}[31m/tmp");
    let run = env.run(&["statusline", "--no-color"], payload.to_string());
    assert_eq!(run.stdout, "ctx 50% · 100k/200k · compacts in 67k\n");
}

/// Every class of bad input, for every hook, through the real binary.
#[test]
fn every_hook_survives_every_class_of_bad_input() {
    let hooks = [
        ("statusline", "statusline-after-turn.json"),
        ("pretooluse", "PreToolUse.json"),
        ("precompact", "PreCompact-manual.json"),
        ("sessionstart", "SessionStart-compact.json"),
    ];
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let big = json!({"session_id": SESSION, "padding": "x".repeat(10 << 20)}).to_string();
    for (hook, fixture_name) in hooks {
        let env = TestEnv::new();
        let real = fixture_json(fixture_name);
        let text = real.to_string();
        // Inputs that must be rejected outright.
        let mut rejected: Vec<(String, Vec<u8>)> = vec![
            ("empty".into(), Vec::new()),
            ("whitespace".into(), b" \n\t\r\n".to_vec()),
            ("not JSON".into(), b"session_id=abc".to_vec()),
            (
                "truncated".into(),
                text.as_bytes()[..text.len() / 2].to_vec(),
            ),
            (
                "invalid UTF-8".into(),
                [
                    &text.as_bytes()[..20],
                    b"\xff\xfe\xfd",
                    &text.as_bytes()[20..],
                ]
                .concat(),
            ),
            ("100,000-deep".into(), deep.clone().into_bytes()),
            ("array".into(), format!("[{text}]").into_bytes()),
            ("nulls everywhere".into(), {
                let mut v = real.clone();
                for (_, field) in v.as_object_mut().unwrap() {
                    *field = Value::Null;
                }
                v.to_string().into_bytes()
            }),
        ];
        // A wrong type for each field the hook reads.
        let read: &[&str] = if hook == "statusline" {
            &["session_id", "transcript_path", "cwd", "context_window"]
        } else {
            &[
                "session_id",
                "transcript_path",
                "cwd",
                "trigger",
                "custom_instructions",
                "source",
            ]
        };
        for &field in read {
            if real.get(field).is_some() {
                let mut v = real.clone();
                v[field] = json!([42]);
                rejected.push((
                    format!("wrong type for {field}"),
                    v.to_string().into_bytes(),
                ));
            }
        }
        let before = env.snapshot();
        for (name, input) in &rejected {
            let run = env.run(&[hook], input);
            assert_eq!(run.code, 0, "{hook} / {name}: {run:?}");
            let expected_stdout = if hook == "statusline" { "ctx ?\n" } else { "" };
            assert_eq!(run.stdout, expected_stdout, "{hook} / {name}");
            assert_eq!(run.stderr.lines().count(), 1, "{hook} / {name}: {run:?}");
            assert!(!run.stderr.contains("panicked"), "{hook} / {name}: {run:?}");
        }
        assert_eq!(
            env.snapshot(),
            before,
            "{hook}: rejected input changed state"
        );

        // Inputs that are odd but usable: wrong types for fields ctxguard ignores, extra fields,
        // 10 MB of payload. Exit 0, at most one line of stdout and stderr, state still valid.
        let mut odd = real.clone();
        for (key, field) in odd.as_object_mut().unwrap() {
            if !read.contains(&key.as_str()) {
                *field = json!({"unexpected": [1, 2, {"x": null}]});
            }
        }
        odd["extra"] = json!({"deeply": {"nested": [true, 1.5, "\u{1b}[31m"]}});
        for (name, input) in [
            ("ignored fields with wrong types", odd.to_string()),
            ("10 MB", big.clone()),
        ] {
            let run = env.run(&[hook], &input);
            assert_eq!(run.code, 0, "{hook} / {name}: {run:?}");
            assert!(
                run.stdout.lines().count() <= 1 && run.stderr.lines().count() <= 1,
                "{hook} / {name}: {run:?}"
            );
            for (path, bytes) in env.snapshot() {
                if path.extension().is_some_and(|e| e == "json") {
                    assert!(
                        serde_json::from_slice::<Value>(&bytes).is_ok(),
                        "{}",
                        path.display()
                    );
                }
            }
        }
    }
}

/// Issue 10, item 17, through the binary: a transcript made to grow every list a checkpoint
/// keeps (20,000 edited files, 10,000 distinct tool names, 1 MiB tool ids, a 5,000-item todo
/// list, 2,000 failures) goes through PreCompact and SessionStart under the same time and heap
/// limits as every hostile file, and the checkpoint and the block stay small.
#[test]
fn a_transcript_that_grows_every_list_stays_bounded_through_the_binary() {
    let env = TestEnv::new();
    let reply = |content: Vec<Value>| {
        json!({"type": "assistant", "message": {"model": "claude-opus-4-6", "content": content,
               "usage": {"input_tokens": 150_000, "output_tokens": 1}}})
        .to_string()
    };
    let result = |id: &str, text: &str, error: bool| {
        json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": text, "is_error": error}]}})
        .to_string()
    };
    let mut lines = vec![json!({"type": "user", "message": {"role": "user",
                                "content": "grow every list"}})
    .to_string()];
    for start in (0..20_000).step_by(500) {
        lines.push(reply(
            (start..start + 500)
                .map(|i| {
                    json!({"type": "tool_use", "id": format!("e{i}"), "name": "Edit",
                                "input": {"file_path": format!("/p/f{i}.rs")}})
                })
                .collect(),
        ));
    }
    for start in (0..10_000).step_by(500) {
        lines.push(reply(
            (start..start + 500)
                .map(|i| {
                    json!({"type": "tool_use", "id": format!("t{i}"),
                                "name": format!("Tool{i}"), "input": {}})
                })
                .collect(),
        ));
    }
    let todos: Vec<Value> = (0..5_000)
        .map(|i| {
            json!({"content": format!("todo {i}"), "status": "pending",
                        "activeForm": format!("doing {i}")})
        })
        .collect();
    lines.push(reply(vec![
        json!({"type": "tool_use", "id": "todo", "name": "TodoWrite",
                                  "input": {"todos": todos}}),
    ]));
    lines.push(result("todo", "ok", false));
    for i in 0..2_000 {
        let id = if i < 2 {
            format!("{i}{}", "i".repeat(1 << 20))
        } else {
            format!("b{i}")
        };
        lines.push(reply(vec![
            json!({"type": "tool_use", "id": id, "name": "Bash",
                                      "input": {"command": format!("false {i}")}}),
        ]));
        lines.push(result(
            &id,
            &format!("Exit code 1\nerror: failure {i}"),
            true,
        ));
    }
    let path = env.write("grown.jsonl", &(lines.join("\n") + "\n"));
    assert!(fs::metadata(&path).unwrap().len() > 4 << 20);

    let cwd = env.dir.path().to_str().unwrap().to_string();
    let mut payload = precompact_payload(SESSION, &path, "auto", Value::Null);
    payload["cwd"] = json!(cwd);
    let pre = env.run_within(&["precompact"], payload.to_string(), LIMIT, MAX_HEAP);
    assert_eq!((pre.code, pre.stdout.as_str()), (0, ""), "{pre:?}");
    let dir = env.state().join("checkpoints").join(SESSION);
    let checkpoints: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("cp_"))
        .collect();
    assert_eq!(checkpoints.len(), 1);
    let size = checkpoints[0].metadata().unwrap().len();
    assert!(size < 32 << 10, "a checkpoint of {size} bytes");

    let start = env.run_within(
        &["sessionstart"],
        sessionstart_payload(SESSION, "compact", &cwd).to_string(),
        LIMIT,
        MAX_HEAP,
    );
    assert_eq!(start.code, 0, "{start:?}");
    let block = decode_block(&start.stdout);
    assert!(block.contains("grow every list"), "{block}");
    assert!(block.contains("[pending] todo"), "{block}");
    // Within the recovery budget (3,200 characters by default; no memory files here).
    assert!(block.chars().count() <= 3_200, "{}", block.chars().count());
}
