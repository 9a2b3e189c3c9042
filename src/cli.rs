//! Command-line arguments (clap derive): raw arguments only, no logic. The manual commands are
//! declared here; the hook subcommands come from [`crate::registry`].

use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand};

pub use crate::commands::install::{ClientArg, SettingsTarget};

#[derive(Debug, Parser)]
#[command(
    name = "ctxguard",
    version = crate::version::LONG,
    about = "Makes Claude Code, the Codex CLI and pi save what matters before context compaction",
    long_about = "ctxguard is registered as hook commands of Claude Code (`ctxguard install`, or \
its plugin), of OpenAI's Codex CLI (`ctxguard install --client codex`), and through a small \
extension of pi, the coding agent (`ctxguard install --client pi`). The status line (or, \
without one, and always on Codex, the transcript) tells how near the context is to auto-compaction; past a trigger the \
next tool call or prompt nudges the agent to store durable memories, once per compaction cycle and \
once more, critically, just before it. When compaction starts, a mechanical checkpoint is written; \
after it, the recovery block is injected once.\n\nState lives in $CTXGUARD_HOME (default \
~/.claude-memory/ctxguard)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The whole command line: the manual commands, then every hook of the registry.
pub fn command() -> clap::Command {
    crate::registry::HOOKS
        .iter()
        .fold(Cli::command(), |cmd, hook| cmd.subcommand(hook.command()))
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the most recently active sessions (or every one, or one)
    #[command(
        after_help = "Examples:\n  ctxguard status\n  ctxguard status --limit 50 --cwd ~/proj\n  ctxguard status --all --json\n  ctxguard status --session 225d8c26-5cbd-4b52-b720-e8fe94443567 --json\n\n\
Newest first: the sessions most recently updated by a hook. Per session: its state, usage, the \
last nudge (when, at what usage) and the last checkpoint."
    )]
    Status {
        /// Only this session (its id, or a unique start of it such as `log` prints)
        #[arg(long, value_name = "ID", conflicts_with_all = ["all", "limit", "cwd"])]
        session: Option<String>,
        /// Every session, not only the newest
        #[arg(long, conflicts_with = "limit")]
        all: bool,
        /// How many sessions to show, newest first
        #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
        limit: u64,
        /// Only sessions working in this directory
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Print {"sessions":[...]} as JSON
        #[arg(long)]
        json: bool,
    },
    /// Remove sessions idle for longer than `retention_days` (with their checkpoints) and old daily logs
    #[command(
        after_help = "Examples:\n  ctxguard prune --dry-run\n  ctxguard prune\n  ctxguard prune --older-than 7\n\n\
The same pass runs by itself at most once a day, from the SessionEnd hook. A session whose \
recovery is still pending is never removed, nor one a hook is working on."
    )]
    Prune {
        /// List what would be removed, and remove nothing
        #[arg(long)]
        dry_run: bool,
        /// Remove what is older than this many days (default: `retention_days` from the config,
        /// 30); 0 removes every idle session (a pending recovery is still kept)
        #[arg(long, value_name = "DAYS", value_parser = days, allow_hyphen_values = true)]
        older_than: Option<u64>,
    },
    /// Print the daily log: one entry per compaction
    #[command(
        after_help = "Examples:\n  ctxguard log\n  ctxguard log --days 7\n  ctxguard log --session 225d8c26-5cbd-4b52-b720-e8fe94443567\n  ctxguard log --days 30 --json\n\n\
Each compaction, with the first line of the summary the client made of it. An attempt that \
failed (no compact_boundary followed its PreCompact, and the compaction was tried again) is \
shown as a failed attempt, not as a second compaction of the same number."
    )]
    Log {
        /// The last N days, today included, oldest first
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = log_days, allow_hyphen_values = true)]
        days: u64,
        /// Only the entries of this session (its id, or a unique start of it)
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Print {"entries":[...]} as JSON
        #[arg(long)]
        json: bool,
    },
    /// Put a session's marker (or every session's) back to idle
    #[command(
        after_help = "Examples:\n  ctxguard reset --session 225d8c26-5cbd-4b52-b720-e8fe94443567\n  ctxguard reset --all"
    )]
    Reset {
        /// The session to reset (its id, or a unique start of it)
        #[arg(
            long,
            value_name = "ID",
            required_unless_present = "all",
            conflicts_with = "all"
        )]
        session: Option<String>,
        /// Reset every known session
        #[arg(long)]
        all: bool,
    },
    /// Register ctxguard's hooks and status line in Claude Code's settings (or Codex CLI's hooks.json, or pi's extension)
    #[command(
        after_help = "Examples:\n  ctxguard install --dry-run\n  ctxguard install\n  ctxguard install --project --statusline skip\n  ctxguard install --client codex\n  ctxguard install --client codex --trust\n  ctxguard install --client pi\n\n\
Idempotent; keeps every other key and hook in its order; backs the file up first. An existing \
status line is wrapped by default: `ctxguard statusline --then '<yours>'`. Registers what the \
Claude Code on PATH accepts: before 2.1.330, shell lines and no PostCompact hook (an older \
client ignores a settings file naming an event it does not know).\n\n\
With --client codex: the hooks go to $CODEX_HOME/hooks.json (default ~/.codex). Codex runs \
them only once you trust them (in its TUI, /hooks); install says which it would skip, and \
trusts them itself only with --trust.\n\n\
With --client pi: pi has no hooks; ctxguard's extension goes to \
$PI_CODING_AGENT_DIR/extensions/ctxguard.ts (default ~/.pi/agent), with this binary's path in \
it. A file of that name ctxguard did not write is never overwritten."
    )]
    Install {
        #[command(flatten)]
        target: SettingsTarget,
        /// The client to register with
        #[arg(long, value_enum, default_value = "claude-code")]
        client: ClientArg,
        #[arg(
            long,
            help = "With --client codex: trust ctxguard's hooks, as Codex's /hooks would, by \
                    writing their hashes to $CODEX_HOME/config.toml ([hooks.state.\"…\"] \
                    trusted_hash; backed up first, comments and layout kept). Without it, Codex \
                    skips the hooks until you trust them"
        )]
        trust: bool,
        /// What to do with a status line that is already configured
        #[arg(long, value_enum, default_value = "wrap")]
        statusline: StatusLineArg,
        /// Register only the status line (wrapping yours, as --statusline says), no hook: beside
        /// the plugin, which registers the hooks. ctxguard's hooks already in the file go
        #[arg(long, conflicts_with_all = ["trust"])]
        statusline_only: bool,
        /// The Claude Code version to register for, instead of asking the `claude` on PATH
        #[arg(long, value_name = "VERSION")]
        client_version: Option<String>,
    },
    /// Remove exactly what install added (restoring a wrapped status line)
    #[command(
        after_help = "Examples:\n  ctxguard uninstall --dry-run\n  ctxguard uninstall --project\n  ctxguard uninstall --purge --dry-run\n  ctxguard uninstall --client codex\n  ctxguard uninstall --client pi\n\n\
With --client codex: ctxguard's hooks leave $CODEX_HOME/hooks.json, and their trust (if any) \
config.toml; a file install created goes when nothing else is in it.\n\n\
With --client pi: the extension install wrote leaves pi's extensions folder (a file it did not \
write stays), and a folder install created goes when nothing else is in it.\n\n\
The settings' backups stay beside them (at most two: the settings before ctxguard first changed \
them, and the newest). --purge also removes ctxguard's state directory ($CTXGUARD_HOME, default \
~/.claude-memory/ctxguard) after saying what it holds: only ctxguard's own entries, never a \
memory file."
    )]
    Uninstall {
        #[command(flatten)]
        target: SettingsTarget,
        /// The client to take ctxguard out of
        #[arg(long, value_enum, default_value = "claude-code")]
        client: ClientArg,
        /// Also remove ctxguard's state directory (sessions, checkpoints, logs, indexes, its config)
        #[arg(long)]
        purge: bool,
    },
    /// Check the installation and explain the auto-compaction settings
    #[command(
        after_help = "Examples:\n  ctxguard doctor\n  ctxguard doctor --json\n  ctxguard doctor --client codex\n  ctxguard doctor --client pi\n\n\
Exits 1 when something is broken; every finding says how to fix it."
    )]
    Doctor {
        /// Print the findings as JSON
        #[arg(long)]
        json: bool,
        #[arg(
            long,
            value_enum,
            help = "Check only this client's setup (default: Claude Code's, and Codex CLI's when \
                    $CODEX_HOME or ~/.codex exists, and whether pi has ctxguard's extension); \
                    --client pi starts pi headless to see it load the extension"
        )]
        client: Option<ClientArg>,
        /// The Claude Code version to check for, instead of asking the `claude` on PATH
        #[arg(long, value_name = "VERSION")]
        client_version: Option<String>,
    },
    /// Print a shell completion script
    #[command(
        after_help = "Examples:\n  ctxguard completions bash > ~/.local/share/bash-completion/completions/ctxguard\n  ctxguard completions zsh > ~/.zfunc/_ctxguard\n  ctxguard completions fish > ~/.config/fish/completions/ctxguard.fish"
    )]
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Inspect checkpoints (written at each compaction and when a session ends)
    #[command(subcommand)]
    Checkpoint(CheckpointCommand),
    /// Compute context usage from a transcript file
    #[command(
        after_help = "Examples:\n  ctxguard usage ~/.claude/projects/-home-me-proj/225d8c26-5cbd-4b52-b720-e8fe94443567.jsonl --json\n  ctxguard usage ~/.codex/sessions/2026/11/25/rollout-2026-11-25T17-26-48-01a213be-e8c1-76e1-be8e-e0a1bfdaaeed.jsonl"
    )]
    Usage {
        /// Path of a Claude Code transcript or a Codex rollout (.jsonl)
        transcript: PathBuf,
        /// Context window in tokens (default: `window_tokens` from the config, else guessed)
        #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
        window: Option<u64>,
        /// The compaction window the client ran with (`claude --autocompact TOKENS`, or
        /// `/autocompact`), as `CLAUDE_CODE_AUTO_COMPACT_WINDOW` gives it
        #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
        autocompact: Option<u64>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Replay the hooks' decisions over a transcript and judge each compaction cycle
    #[command(
        after_help = "Examples:\n  ctxguard replay ~/.claude/projects/-home-me-proj/225d8c26-5cbd-4b52-b720-e8fe94443567.jsonl\n  ctxguard replay session.jsonl --statusline --window 200000 --json\n  ctxguard replay --all --since 30 --project ~/src/app\n  ctxguard replay ~/.codex/sessions/2026/11/25/rollout-2026-11-25T17-26-48-01a213be-e8c1-76e1-be8e-e0a1bfdaaeed.jsonl\n\n\
Each reply, tool call, prompt and compaction of the transcript goes through the hooks' own \
decision code, in memory (nothing is read but the config and the transcript, nothing is written). \
Prints the timeline (armed, nudges, compactions), a verdict per cycle (in time, late, missed, \
false alarm, open, manual, quiet) and a chart of usage. See docs/replay.md."
    )]
    Replay {
        /// Path of a Claude Code transcript or a Codex rollout (.jsonl)
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        transcript: Option<PathBuf>,
        /// Every session transcript under Claude Code's projects folder (~/.claude/projects) and
        /// every Codex rollout (~/.codex/sessions): one line per session, then the verdicts
        /// across sessions
        #[arg(long)]
        all: bool,
        /// With --all: only transcripts written in the last DAYS days
        #[arg(long, value_name = "DAYS", requires = "all", value_parser = days)]
        since: Option<u64>,
        /// With --all: only projects whose folder name contains this (or the project at this path)
        #[arg(long, value_name = "PROJECT", requires = "all")]
        project: Option<String>,
        /// Context window in tokens (default: `window_tokens` from the config, else the model's)
        #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
        window: Option<u64>,
        /// The compaction window the client ran with (`claude --autocompact TOKENS`, or
        /// `/autocompact`), as `CLAUDE_CODE_AUTO_COMPACT_WINDOW` gives it
        #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
        autocompact: Option<u64>,
        /// Simulate a status line reporting the window on every reply (default: none, as in -p mode)
        #[arg(long)]
        statusline: bool,
        /// Print the timeline and the cycles as JSON
        #[arg(long)]
        json: bool,
    },
}

/// The most days `prune --older-than` takes: a hundred years.
const MAX_DAYS: u64 = 36_500;

/// The most days `log --days` takes: ten years.
const MAX_LOG_DAYS: u64 = 3_660;

/// `--older-than DAYS`: a whole number of days, 0 to [`MAX_DAYS`], with a message a person can
/// act on for anything else (clap's own says only that the value is not in a range).
fn days(value: &str) -> Result<u64, String> {
    whole_days(
        value,
        0,
        MAX_DAYS,
        &format!(
            "a whole number of days from 0 to {MAX_DAYS} (0: every idle session), e.g. \
             --older-than 7"
        ),
    )
}

/// `log --days N`: a whole number of days, 1 (today) to [`MAX_LOG_DAYS`], said as `prune` says
/// it.
fn log_days(value: &str) -> Result<u64, String> {
    whole_days(
        value,
        1,
        MAX_LOG_DAYS,
        &format!("a whole number of days from 1 (today) to {MAX_LOG_DAYS}, e.g. --days 7"),
    )
}

/// A whole number of days from `min` to `max`, or why not followed by `hint`.
fn whole_days(value: &str, min: u64, max: u64, hint: &str) -> Result<u64, String> {
    let trimmed = value.trim();
    if trimmed.starts_with('-') {
        return Err(format!("{value:?} is negative; give {hint}"));
    }
    match trimmed.parse::<u64>() {
        Ok(days) if days < min => Err(format!("{value} days is fewer than {min}; give {hint}")),
        Ok(days) if days <= max => Ok(days),
        Ok(_) => Err(format!("{value} days is more than {max}; give {hint}")),
        Err(_) if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) => {
            Err(format!("{value} days is more than {max}; give {hint}"))
        }
        Err(_) => Err(format!("{value:?} is not a number of days; give {hint}")),
    }
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum StatusLineArg {
    /// Run the existing command and append the gauge to its output
    Wrap,
    /// Show only ctxguard's gauge
    Replace,
    /// Leave the status line alone
    Skip,
}

#[derive(Debug, Subcommand)]
pub enum CheckpointCommand {
    /// Print the latest checkpoint of a session (default: the newest of any session)
    #[command(
        after_help = "Examples:\n  ctxguard checkpoint show\n  ctxguard checkpoint show --session 225d8c26-5cbd-4b52-b720-e8fe94443567 --json"
    )]
    Show {
        /// The session (its id, or a unique start of it)
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Print the checkpoint file's JSON instead of the recovery block
        #[arg(long)]
        json: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_whole_numbers_from_zero_to_a_hundred_years() {
        assert_eq!(days("0"), Ok(0));
        assert_eq!(days("30"), Ok(30));
        assert_eq!(days(" 7 "), Ok(7));
        assert_eq!(days("36500"), Ok(MAX_DAYS));
        for (bad, says) in [
            ("-1", "\"-1\" is negative"),
            ("36501", "36501 days is more than 36500"),
            ("184467440737095516160", "is more than 36500"),
            ("7d", "\"7d\" is not a number of days"),
            ("", "\"\" is not a number of days"),
            ("1.5", "\"1.5\" is not a number of days"),
        ] {
            let err = days(bad).unwrap_err();
            assert!(
                err.contains(says) && err.ends_with("e.g. --older-than 7"),
                "{bad}: {err}"
            );
        }
    }
}
