//! Integration tests: the real `ctxguard` binary, run on fixtures recorded from Claude Code
//! 2.1.330, in a temp HOME and `CTXGUARD_HOME` so nothing touches the developer's files.

mod util;

// The real client the end-to-end tests drive is its Linux build, and `statusline --then` is
// watched through `sh` and /proc: neither is built for Windows (see below).
mod codex;
mod codex_code_mode;
mod codex_real_forms;
mod codex_window;
mod docs;
#[cfg(unix)]
mod doctor_codex;
mod doctor_width;
mod dropped;
#[cfg(unix)]
mod e2e;
#[cfg(unix)]
mod e2e_codex;
mod faults;
mod first_hour;
mod gate;
mod golden;
mod hostile;
mod house;
mod install;
mod install_codex;
mod lifecycle;
mod manual;
mod outside_files;
mod pi;
mod pi_real;
mod plugin;
#[cfg(unix)]
mod plugin_cli;
#[cfg(unix)]
mod plugin_launcher;
mod precomputed;
mod pretooluse;
mod receipt;
mod recovery;
mod recovery_build;
mod recovery_classes;
mod recovery_round5;
mod recovery_round5_rest;
mod replay;
mod replay_codex;
mod replay_cost;
mod security;
// The release, installed as a user would: shell scripts, served on loopback.
#[cfg(unix)]
mod ship;
mod status_newest;
mod statusline;
mod stop;
mod summary_facts;
#[cfg(target_os = "linux")]
mod syscalls;
#[cfg(unix)]
mod then;
#[cfg(unix)]
mod unseen;
mod versions;

/// Under Windows (CI runs this suite under wine) the two modules above are not built; this says
/// so in the test output. The Windows job object behind `statusline --then` has unit tests.
#[cfg(not(unix))]
#[test]
fn skipped_on_windows_end_to_end_and_then() {
    eprintln!(
        "skipped on Windows: the end-to-end tests against the real Claude Code client (its \
         Linux build), `statusline --then` through sh and the release's shell scripts \
         (tests/e2e.rs, tests/e2e_tui.rs, tests/then.rs, tests/ship.rs)"
    );
}
