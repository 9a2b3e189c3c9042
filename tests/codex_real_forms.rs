//! Forms of real Codex rollouts that hid a session's work, through the real binary: each
//! fixture of fixtures/codex/real-forms/ (see its SOURCES.txt) is a few verbatim lines of a
//! public Codex 0.142-0.145 session, read at a compaction into the recovery block.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::codex_code_mode::{recovery_block, section};

/// The recovery block PreCompact then SessionStart(compact) give on the fixture `name`, run in
/// the directory its `session_meta` names.
fn block(name: &str) -> String {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/codex/real-forms")
        .join(format!("{name}.jsonl"));
    let text = fs::read_to_string(&fixture).unwrap();
    let meta: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    recovery_block(&fixture, meta["payload"]["cwd"].as_str().unwrap_or("/"))
}

#[test]
fn the_asks_a_compaction_kept_are_read_from_its_replacement_history() {
    // Codex 0.136-0.145 write no `retained_context`: the user messages it kept are the
    // `replacement_history`'s, among its own texts (AGENTS.md, permissions).
    let block = block("replacement-history");
    let asks = section(&block, "Recent user requests");
    assert!(
        asks.contains("make a pr then post a reply to the discussion when done"),
        "{asks}"
    );
    assert!(asks.contains("i want you to stub out --monorepo"), "{asks}");
    assert!(!block.contains("AGENTS.md instructions"), "{block}");
    assert!(!block.contains("permissions instructions"), "{block}");
}

#[test]
fn a_newer_codex_context_in_a_tag_is_never_the_goal() {
    let block = block("recommended-plugins");
    assert!(!block.contains("recommended_plugins"), "{block}");
    assert!(!block.contains("plugins that are available"), "{block}");
    let asks = section(&block, "Recent user requests");
    assert!(
        asks.contains("Review all open PRs for the entire-graph project"),
        "{asks}"
    );
}

#[test]
fn an_acknowledgement_is_the_newest_ask_with_what_it_follows() {
    let block = block("ack");
    let asks = section(&block, "Recent user requests");
    let newest = asks.lines().nth(2).unwrap_or_default();
    assert_eq!(
        newest,
        "ok continue (after: I have not replied to the discussion or published anything yet.)",
        "{asks}"
    );
}

#[test]
fn a_toolchain_build_left_running_is_judged_where_its_session_ends() {
    // `cargo +nightly-… build` yields with "Process running with session ID", then two
    // `write_stdin` function calls; the second ends with exit code 0.
    let block = block("toolchain-background");
    let v = section(&block, "Last verification");
    assert!(
        v.contains(
            "[passed] cargo +nightly-2026-06-29 build --all-features → Finished `dev` profile \
             [unoptimized + debuginfo] target(s) in 1m 23s"
        ),
        "{v}"
    );
}

#[test]
fn a_read_printed_without_its_exit_code_ends_at_the_runners_closing_time() {
    // The cell printed `SESSION_ID=84753`; the read prints only `r.output`, whose last line is
    // the e2e runner's "Finished in 6.59s".
    let block = block("closing-time");
    let v = section(&block, "Last verification");
    assert!(
        v.contains(
            "[passed] mise run test:e2e test_minimum_release_age_installed_resolution → \
             Finished in 6.59s"
        ),
        "{v}"
    );
}

#[test]
fn a_failed_run_read_without_its_exit_code_stays_failed_and_build_progress_is_no_verdict() {
    // The e2e run's last read says "exited with status code 1" and "ERROR task failed"; a
    // `cargo check` is then still printing "Checking testing_table v0.3.0" lines.
    let block = block("failed-then-progress");
    let v = section(&block, "Last verification");
    assert!(v.contains("[failed] mise run test:e2e"), "{v}");
    assert!(v.contains("ERROR task failed"), "{v}");
    assert!(!v.contains("cargo check"), "{v}");
    assert!(!block.contains("[passed]"), "{block}");
}

#[test]
fn a_run_behind_env_and_its_variables_is_named_from_its_command() {
    let block = block("env-runner");
    let v = section(&block, "Last verification");
    assert!(
        v.contains("[passed] mise exec -- go test -count=1 -run"),
        "{v}"
    );
    assert!(
        v.contains("ok github.com/entireio/entire-graph/internal/sem"),
        "{v}"
    );
    assert!(!v.contains("GOCACHE"), "{v}");
}

#[test]
fn a_cell_reading_its_own_commands_session_gives_that_command_its_verdict() {
    // `text(r.output); if (r.session_id) text((await tools.write_stdin({session_id:
    // r.session_id, …})).output)`: two calls, one command.
    let block = block("cell-continues");
    let v = section(&block, "Last verification");
    assert!(v.contains("[passed] pnpm build → ✓ built in 822ms"), "{v}");
}
