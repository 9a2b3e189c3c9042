//! Codex's code mode through the real binary: a rollout of real code-mode lines
//! (`../shared/from-project/fixtures/codex/code-mode/`, from public Codex 0.144 sessions: see its
//! SOURCES.txt; skipped without `../shared`), read at a compaction into the recovery block. Each
//! form of cell is held by a fact the block must name, known here by its SHA-256 ([`Quote`]).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::*;

const SESSION: &str = "019f67a6-199d-76d0-ae8b-b6f5c28f5a69";

fn fixture() -> Option<PathBuf> {
    shared(&format!(
        "from-project/fixtures/codex/code-mode/rollout-2026-07-15T21-19-26-{SESSION}.jsonl"
    ))
}

/// The working directory the rollout's `session_meta` names.
fn cwd_of(text: &str) -> String {
    let meta: Value = serde_json::from_str(text.lines().next().unwrap_or_default()).unwrap();
    meta["payload"]["cwd"].as_str().unwrap_or("/").to_string()
}

fn block() -> Option<String> {
    let fixture = fixture()?;
    let cwd = cwd_of(&fs::read_to_string(&fixture).unwrap());
    Some(recovery_block(&fixture, &cwd))
}

/// The recovery block PreCompact then SessionStart(compact) give on the rollout `fixture` (its
/// session from its `session_meta`), run in `cwd`.
pub(crate) fn recovery_block(fixture: &Path, cwd: &str) -> String {
    let mut env = TestEnv::new();
    let home = env.dir.path().join("codex");
    let day = home.join("sessions/2026/07/15");
    fs::create_dir_all(&day).unwrap();
    env.set("CODEX_HOME", home.to_str().unwrap());
    let text = fs::read_to_string(fixture).unwrap();
    let meta: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let session = meta["payload"]["id"].as_str().unwrap().to_string();
    let rollout = day.join(format!("rollout-2026-07-15T21-19-26-{session}.jsonl"));
    fs::write(&rollout, &text).unwrap();
    let payload = |event: &str, extra: Value| {
        let mut p = json!({
            "session_id": session,
            "transcript_path": rollout.to_str().unwrap(),
            "cwd": cwd,
            "hook_event_name": event,
            "model": "gpt-5.5",
        });
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        p.to_string()
    };
    let pre = env.run(
        &["precompact"],
        payload("PreCompact", json!({"turn_id": "t1", "trigger": "auto"})),
    );
    assert_eq!((pre.code, pre.stdout.as_str()), (0, ""), "{pre:?}");
    let run = env.run(
        &["sessionstart"],
        payload("SessionStart", json!({"source": "compact"})),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The section of the block that starts with `title`, up to the next blank line after its
/// fence.
pub(crate) fn section<'a>(block: &'a str, title: &str) -> &'a str {
    let start = block
        .find(title)
        .unwrap_or_else(|| panic!("no {title:?} in:\n{block}"));
    let rest = &block[start..];
    let end = rest.find("```\n\n").map_or(rest.len(), |e| e + 3);
    &rest[..end]
}

#[test]
fn a_cells_plan_becomes_the_todo_list() {
    // `tools.update_plan({plan:[{step:"…",status:"in_progress"}, …]})`, bare keys.
    let Some(block) = block() else {
        return;
    };
    let todos = section(&block, "Open todos");
    // The first step in progress, the last pending.
    assert!(
        quote(72, "f6de279ebb6bd38d07d3f216").within(todos),
        "{todos}"
    );
    assert!(
        quote(44, "675961e15e25906f97bb329d").within(todos),
        "{todos}"
    );
}

#[test]
fn a_patch_held_in_a_const_names_every_file_it_adds_and_a_failed_one_none() {
    let Some(block) = block() else {
        return;
    };
    let files = section(&block, "Files modified");
    // The manifest, a licence and a fuzz target the patch added.
    for file in [
        quote(18, "dd01780f94dd628eefb36060"),
        quote(19, "f55fe9ea2494f8568c780c33"),
        quote(40, "6fa1347a861a942c4f3cc48e"),
    ] {
        assert!(file.within(files), "{file:?} missing:\n{files}");
    }
    // The cell that threw (`apply_patch verification failed`) changed nothing: its file is a
    // failure, not a modified file.
    let threw = quote(7, "d741fc408881a1148d3fe968");
    assert!(!threw.within(files), "{files}");
    let failures = section(&block, "Recent tool failures");
    assert!(
        quote(11, "52805b1327ccbe8f318467f1").within(failures),
        "{failures}"
    );
    assert!(
        failures.contains("apply_patch verification failed"),
        "{failures}"
    );
}

#[test]
fn a_command_left_running_gets_its_verdict_from_the_read_that_saw_it_end() {
    // `exec_command` yields with a `session_id` (printed whole), then three `write_stdin` reads
    // printed as `text(r.output)`: the last one's "Finished" line is the verdict, and the
    // command is the one that ran, not the reads.
    let Some(block) = block() else {
        return;
    };
    let v = section(&block, "Last verification");
    assert!(quote(148, "84f7afcacea69d2a0baef522").within(v), "{v}");
}

#[test]
fn a_pull_request_the_github_app_created_is_named() {
    let Some(block) = block() else {
        return;
    };
    assert!(
        quote(68, "e3e566c451ad5bc709c97457").within(&block),
        "{block}"
    );
}

#[test]
fn a_cell_that_ran_past_its_yield_time_is_read_when_wait_sees_it_end() {
    // Cut the rollout just before the `cargo check` cell: the newest verification is then the
    // `mise run test:unit` of the cell that `wait` saw complete.
    let Some(fixture) = fixture() else {
        return;
    };
    let text = fs::read_to_string(fixture).unwrap();
    let cwd = cwd_of(&text);
    // The cell's command, formatting then checking.
    let cut = quote(30, "c7aa07876bcf699919d1bcb4").find(&text).unwrap();
    let cut = text[..cut].rfind('\n').unwrap() + 1;
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join(format!("rollout-2026-07-15T21-19-26-{SESSION}.jsonl"));
    fs::write(&path, &text[..cut]).unwrap();
    let env = TestEnv::new();
    let payload = |event: &str, extra: Value| {
        let mut p = json!({"session_id": SESSION, "transcript_path": path.to_str().unwrap(),
                           "cwd": cwd, "hook_event_name": event});
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        p.to_string()
    };
    env.run(
        &["precompact"],
        payload("PreCompact", json!({"trigger": "auto"})),
    );
    let run = env.run(
        &["sessionstart"],
        payload("SessionStart", json!({"source": "compact"})),
    );
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let block = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    let v = section(block, "Last verification");
    assert!(v.contains("[passed] "), "{v}");
    assert!(v.contains("test result: ok."), "{v}");
}
