//! Forms of real Codex rollouts that hid a session's work, through the real binary: each
//! excerpt of `../shared/from-project/fixtures/codex/real-forms/` (see its SOURCES.txt; skipped
//! without `../shared`) is a few verbatim lines of a public Codex 0.142-0.145 session, read at a
//! compaction into the recovery block. What the block must say of them is known here by its
//! SHA-256 ([`Quote`]).

use std::fs;

use serde_json::Value;

use crate::codex_code_mode::{recovery_block, section};
use crate::util::*;

/// The recovery block PreCompact then SessionStart(compact) give on the fixture `name`, run in
/// the directory its `session_meta` names.
fn block(name: &str) -> Option<String> {
    let fixture = shared(&format!(
        "from-project/fixtures/codex/real-forms/{name}.jsonl"
    ))?;
    let text = fs::read_to_string(&fixture).unwrap();
    let meta: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    Some(recovery_block(
        &fixture,
        meta["payload"]["cwd"].as_str().unwrap_or("/"),
    ))
}

#[test]
fn the_asks_a_compaction_kept_are_read_from_its_replacement_history() {
    // Codex 0.136-0.145 write no `retained_context`: the user messages it kept are the
    // `replacement_history`'s, among its own texts (AGENTS.md, permissions).
    let Some(block) = block("replacement-history") else {
        return;
    };
    let asks = section(&block, "Recent user requests");
    // The two asks the compaction kept.
    assert!(quote(55, "cd47bcdd3b744fea0638ae65").within(asks), "{asks}");
    assert!(quote(33, "a8beed5db878ce64193964cf").within(asks), "{asks}");
    assert!(!block.contains("AGENTS.md instructions"), "{block}");
    assert!(!block.contains("permissions instructions"), "{block}");
}

#[test]
fn a_newer_codex_context_in_a_tag_is_never_the_goal() {
    let Some(block) = block("recommended-plugins") else {
        return;
    };
    assert!(!block.contains("recommended_plugins"), "{block}");
    assert!(!block.contains("plugins that are available"), "{block}");
    let asks = section(&block, "Recent user requests");
    // The user's own ask, after Codex's context.
    assert!(quote(48, "92befe3d6afda4907d5b9331").within(asks), "{asks}");
}

#[test]
fn an_acknowledgement_is_the_newest_ask_with_what_it_follows() {
    let Some(block) = block("ack") else {
        return;
    };
    let asks = section(&block, "Recent user requests");
    let newest = asks.lines().nth(2).unwrap_or_default();
    // The acknowledgement, then the reply it follows.
    assert!(quote(84, "7b5b54b9a68539598d52b1e9").is(newest), "{asks}");
}

#[test]
fn a_toolchain_build_left_running_is_judged_where_its_session_ends() {
    // A nightly `cargo build` yields with "Process running with session ID", then two
    // `write_stdin` function calls; the second ends with exit code 0.
    let Some(block) = block("toolchain-background") else {
        return;
    };
    let v = section(&block, "Last verification");
    assert!(quote(126, "09c8aea63ae8ff9a98f801e5").within(v), "{v}");
}

#[test]
fn a_read_printed_without_its_exit_code_ends_at_the_runners_closing_time() {
    // The cell printed its command's session as `SESSION_ID=N`; the read prints only
    // `r.output`, whose last line is the test runner's closing time.
    let Some(block) = block("closing-time") else {
        return;
    };
    let v = section(&block, "Last verification");
    assert!(quote(92, "2f93a2103c75d09da255d550").within(v), "{v}");
}

#[test]
fn a_failed_run_read_without_its_exit_code_stays_failed_and_build_progress_is_no_verdict() {
    // The e2e run's last read says it exited with status code 1 and the task failed; a
    // `cargo check` is then still printing its `Checking <crate>` lines.
    let Some(block) = block("failed-then-progress") else {
        return;
    };
    let v = section(&block, "Last verification");
    assert!(quote(26, "b3ec1aa1cc09f50cbcea2a3b").within(v), "{v}");
    assert!(quote(17, "1502f0e57c88d839d7bebb02").within(v), "{v}");
    assert!(!v.contains("cargo check"), "{v}");
    assert!(!block.contains("[passed]"), "{block}");
}

#[test]
fn a_run_behind_env_and_its_variables_is_named_from_its_command() {
    let Some(block) = block("env-runner") else {
        return;
    };
    let v = section(&block, "Last verification");
    assert!(quote(43, "ec805fa5bf9ab9749ff64caa").within(v), "{v}");
    // The package's `ok` line.
    assert!(quote(48, "db08150a8be5b758e3b9ff46").within(v), "{v}");
    assert!(!v.contains("GOCACHE"), "{v}");
}

#[test]
fn a_cell_reading_its_own_commands_session_gives_that_command_its_verdict() {
    // `text(r.output); if (r.session_id) text((await tools.write_stdin({session_id:
    // r.session_id, …})).output)`: two calls, one command.
    let Some(block) = block("cell-continues") else {
        return;
    };
    let v = section(&block, "Last verification");
    assert!(quote(38, "4d12e0471142077b98f3792e").within(v), "{v}");
}
