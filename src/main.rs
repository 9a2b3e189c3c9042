//! ctxguard: Claude Code and Codex CLI hooks that make the agent save what matters before context
//! compaction, and give it back after.

// Clippy's pedantic lints are on, and CI denies warnings. Those allowed here are wrong for this
// code, each for the reason given.
#![warn(clippy::pedantic)]
#![allow(
    // Text is built with `push_str(&format!(..))`: clearer than `write!` and its Result to
    // ignore, and none of it is on a hot path.
    clippy::format_push_string,
    clippy::format_collect,
    // Token counts are written as the client prints them (`150000`, in payloads and tests).
    clippy::unreadable_literal,
    // Every u64 turned into a usize is a size already capped to a few MiB; percents and ages
    // are small and non-negative by construction (checked where they are computed).
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    // Names such as `cp`/`cw` and `tokens`/`token` are the domain's own.
    clippy::similar_names,
    // Struct fields mirror the JSON the client sends (`input_tokens`, `session_id`).
    clippy::struct_field_names,
    // File names compared by extension are ctxguard's own (`cp_001.json`), always lower case.
    clippy::case_sensitive_file_extension_comparisons,
    // A value the caller is done with (an error, a query, a message) is taken by value even
    // where only borrowed: the calls read better and nothing is copied.
    clippy::needless_pass_by_value
)]

mod checkpoint;
mod checkpointing;
mod cli;
mod client;
mod codex;
mod commands;
mod config;
mod daily_log;
mod diag;
mod dropped;
mod event;
mod exit;
mod facts;
mod files;
mod gauge;
mod hook_list;
mod hooks;
mod index;
mod input;
mod marker;
mod memory;
mod nudge;
mod paths;
mod pi;
mod precomputed;
mod process;
mod program;
mod reading;
mod receipt;
mod recovering;
mod recovery;
mod registry;
mod retention;
mod rollout;
mod settings;
mod shell;
mod step;
mod summary_facts;
mod tasks;
mod text;
mod transcript;
mod usage;
mod version;
mod window;

use std::process::ExitCode;

use clap::FromArgMatches;

use crate::cli::{CheckpointCommand, Cli, Command, StatusLineArg};
use crate::exit::Exit;

fn main() -> ExitCode {
    run().into()
}

/// A hook call (`ctxguard <hook>`, plus the status line's flags), parsed by that hook's own
/// subcommand: building the whole CLI would cost a third of a fast hook call. `None` when the
/// first argument names no hook.
fn run_hook() -> Option<Exit> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let hook = args
        .get(1)
        .and_then(|a| a.to_str())
        .and_then(registry::find)?;
    quiet_backtraces();
    let command = hook
        .command()
        .bin_name(format!("ctxguard {}", hook.info.name));
    Some(match command.try_get_matches_from(&args[1..]) {
        Ok(matches) => hook.run(&matches),
        Err(e) => arguments_error(e),
    })
}

#[allow(clippy::too_many_lines)] // one arm per command, nothing to factor out
fn run() -> Exit {
    if let Some(exit) = run_hook() {
        return exit;
    }
    // The full CLI: the manual commands (a hook subcommand never gets here; it stays in the
    // CLI for `--help` and completions).
    let matches = match cli::command().try_get_matches() {
        Ok(matches) => matches,
        Err(e) => return arguments_error(e),
    };
    // A manual command whose output is cut short (`ctxguard status | head -1`) ends quietly,
    // as other command-line tools do, instead of panicking on the failed write. Hooks keep
    // SIGPIPE ignored: they must exit 0 whatever happens to their pipes.
    restore_sigpipe();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return arguments_error(e),
    };
    let result = match cli.command {
        Command::Checkpoint(CheckpointCommand::Show { session, json }) => {
            commands::checkpoint::show(session, json)
        }
        Command::Install {
            target,
            client,
            trust,
            statusline,
            statusline_only,
            client_version,
        } => {
            let mode = match statusline {
                StatusLineArg::Wrap => settings::StatusLineMode::Wrap,
                StatusLineArg::Replace => settings::StatusLineMode::Replace,
                StatusLineArg::Skip => settings::StatusLineMode::Skip,
            };
            let what = if statusline_only {
                commands::install::Register::StatusLineOnly
            } else {
                commands::install::Register::All
            };
            commands::install::install(
                client,
                &target,
                (mode, what),
                client_version.as_deref(),
                trust,
            )
        }
        Command::Uninstall {
            target,
            client,
            purge,
        } => commands::install::uninstall(client, &target, purge),
        Command::Doctor {
            json,
            client,
            client_version,
        } => commands::doctor::run(json, client_version.as_deref(), client),
        Command::Completions { shell } => {
            let mut cmd = cli::command();
            clap_complete::generate(shell, &mut cmd, "ctxguard", &mut std::io::stdout());
            Ok(Exit::Ok)
        }
        Command::Status {
            session,
            all,
            limit,
            cwd,
            json,
        } => commands::status::run(commands::status::Query {
            session,
            limit: (!all).then_some(limit as usize),
            cwd,
            json,
        }),
        Command::Prune {
            dry_run,
            older_than,
        } => commands::prune::run(dry_run, older_than),
        Command::Log {
            days,
            session,
            json,
        } => commands::log::run(days, session, json),
        Command::Reset { session, all } => commands::reset::run(session, all),
        Command::Usage {
            transcript,
            window,
            autocompact,
            json,
        } => commands::usage::run(&transcript, window, autocompact, json),
        Command::Replay {
            transcript,
            all,
            since,
            project,
            window,
            autocompact,
            statusline,
            json,
        } => commands::replay::run_either(
            transcript.filter(|_| !all).as_deref(),
            commands::replay::Filter {
                since_days: since,
                project,
            },
            window,
            autocompact,
            statusline,
            json,
        ),
    };
    // Files from outside refused on the way (a settings file that is a FIFO): said after the
    // output, once each.
    for refusal in diag::take_refused() {
        eprintln!("ctxguard: note: {refusal}");
    }
    match result {
        Ok(exit) => exit,
        Err(e) => {
            eprintln!("ctxguard: {e:#}");
            Exit::Failure
        }
    }
}

/// A hook turns every error into one stderr line, never a backtrace: with `RUST_BACKTRACE` set
/// in the environment (as many Rust developers have it), each error would still capture one, at
/// a cost larger than the rest of a fast hook call. (Panics keep `RUST_BACKTRACE`.)
fn quiet_backtraces() {
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // Before any other thread exists and before the first capture reads it.
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
}

#[cfg(unix)]
fn restore_sigpipe() {
    // SAFETY: setting a signal's disposition to the default has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn restore_sigpipe() {}

/// `--help` and `--version` succeed; anything else is an error, which for a hook command is a
/// single stderr line and exit 0 (a hook must never block), and for the rest exit 1.
fn arguments_error(e: clap::Error) -> Exit {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return Exit::Ok;
    }
    let hook = std::env::args()
        .nth(1)
        .filter(|a| registry::find(a).is_some());
    if let Some(name) = hook {
        let first = e.to_string();
        let first = first.lines().next().unwrap_or("invalid arguments");
        hooks::to_stderr(&format!("ctxguard {name}: {}", hooks::one_line(first)));
        Exit::Ok
    } else {
        let _ = e.print();
        Exit::Failure
    }
}
