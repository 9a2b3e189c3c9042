//! ctxguard: Claude Code hooks that make the agent save what matters before context compaction.

mod checkpoint;
mod cli;
mod client;
mod commands;
mod config;
mod daily_log;
mod exit;
mod files;
mod hooks;
mod input;
mod marker;
mod paths;
mod recovery;
mod settings;
mod text;
mod transcript;
mod usage;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{CheckpointCommand, Cli, Command, StatusLineArg};
use crate::exit::Exit;

fn main() -> ExitCode {
    run().into()
}

fn run() -> Exit {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return arguments_error(e),
    };
    let result = match cli.command {
        Command::Statusline {
            no_color,
            quiet,
            then,
        } => {
            return hooks::guard("statusline", |diag| {
                hooks::statusline::run(no_color, quiet, then.as_deref(), diag)
            })
        }
        Command::Pretooluse => return hooks::guard("pretooluse", hooks::pretooluse::run),
        Command::Precompact => return hooks::guard("precompact", hooks::precompact::run),
        Command::Sessionstart => return hooks::guard("sessionstart", hooks::sessionstart::run),
        Command::Checkpoint(CheckpointCommand::Show { session, json }) => {
            commands::checkpoint::show(session, json)
        }
        Command::Install { target, statusline } => {
            let mode = match statusline {
                StatusLineArg::Wrap => settings::StatusLineMode::Wrap,
                StatusLineArg::Replace => settings::StatusLineMode::Replace,
                StatusLineArg::Skip => settings::StatusLineMode::Skip,
            };
            commands::install::install(&target, mode)
        }
        Command::Uninstall { target } => commands::install::uninstall(&target),
        Command::Doctor { json } => {
            return match commands::doctor::run(json) {
                Ok(exit) => exit,
                Err(e) => {
                    eprintln!("ctxguard: {e:#}");
                    Exit::Failure
                }
            }
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "ctxguard", &mut std::io::stdout());
            Ok(())
        }
        Command::Status { session, json } => commands::status::run(session, json),
        Command::Reset { session, all } => commands::reset::run(session, all),
        Command::Usage {
            transcript,
            window,
            json,
        } => commands::usage::run(&transcript, window, json),
    };
    match result {
        Ok(()) => Exit::Ok,
        Err(e) => {
            eprintln!("ctxguard: {e:#}");
            Exit::Failure
        }
    }
}

/// `--help` and `--version` succeed; anything else is an error, which for a hook command is a
/// single stderr line and exit 0 (a hook must never block), and for the rest exit 1.
fn arguments_error(e: clap::Error) -> Exit {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return Exit::Ok;
    }
    let hook = std::env::args().nth(1).filter(|a| Command::is_hook(a));
    match hook {
        Some(name) => {
            let first = e.to_string();
            let first = first.lines().next().unwrap_or("invalid arguments");
            eprintln!("ctxguard {name}: {}", hooks::one_line(first));
            Exit::Ok
        }
        None => {
            let _ = e.print();
            Exit::Failure
        }
    }
}
