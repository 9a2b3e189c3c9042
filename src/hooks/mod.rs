//! The hook commands Claude Code and Codex run. Each file has a thin `handle` that parses the
//! event, calls the capability that acts on it, and prints what that gives; the pure decisions
//! the unit tests call with literals live in those capabilities, below the hooks (`step::decide`
//! for `PreToolUse`, `UserPromptSubmit` and `PostToolBatch`; `nudge::decide_idle` for `Stop`;
//! `checkpointing::take` with `precompact::is_repeat` and `precompact::gate` for `PreCompact`;
//! `gauge::decide` for the status line). This module holds what they share: a guard that turns
//! every error and panic into one stderr line and exit 0, so a hook can never block or break the
//! session it serves.

pub mod postcompact;
pub mod posttoolbatch;
pub mod precompact;
pub mod pretooluse;
pub mod sessionend;
pub mod sessionstart;
pub mod statusline;
pub mod stop;
pub mod userpromptsubmit;

use std::io::Write;
use std::panic::{self, AssertUnwindSafe};

use anyhow::{bail, Result};
use serde::Serialize;

use crate::config::Env;
pub use crate::diag::{one_line, to_stderr, Diag};
use crate::exit::Exit;
use crate::input::{self, HookInput};

/// The only JSON a hook ever prints: context for the model, nothing that approves, denies,
/// blocks or changes anything.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub hook_specific_output: SpecificOutput,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpecificOutput {
    pub hook_event_name: &'static str,
    pub additional_context: String,
}

/// `{"hookSpecificOutput":{"hookEventName":EVENT,"additionalContext":TEXT}}` and a newline.
fn additional_context(event: &'static str, text: String) -> String {
    let out = Output {
        hook_specific_output: SpecificOutput {
            hook_event_name: event,
            additional_context: text,
        },
    };
    // Serialising a struct of strings cannot fail.
    serde_json::to_string(&out).unwrap_or_default() + "\n"
}

/// Parses an event's JSON. Every hook acts on one session, so an event without a session id is
/// refused. A pi session's file is brought into its copy in Claude Code's form first, which is
/// then the transcript every reader of the hook reads ([`crate::pi::shadow`]).
fn parse_event(bytes: &[u8], event: &str, env: &Env) -> Result<HookInput> {
    let mut input: HookInput = input::parse(bytes, event)?;
    if input.session_id.is_empty() {
        bail!("no session_id in the {event} input; nothing to do");
    }
    if crate::pi::shadow::is_pi_source(&input.transcript_path) {
        let copy = crate::pi::shadow::up_to_date(
            &env.paths()?,
            &input.session_id,
            std::path::Path::new(&input.transcript_path),
        )?;
        input.transcript_path = copy.to_string_lossy().into_owned();
    }
    Ok(input)
}

/// What a hook decided.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Nothing on stdout.
    Quiet,
    /// This on stdout.
    Print(String),
    /// Exit 2 with this reason on stderr: only `PreCompact`'s opt-in gate.
    Block(String),
}

impl From<Option<String>> for Outcome {
    fn from(stdout: Option<String>) -> Outcome {
        stdout.map_or(Outcome::Quiet, Outcome::Print)
    }
}

/// Runs a hook body. Errors, panics and notes become one stderr line, and the exit code is 0,
/// unless the body itself decides to block.
pub fn guard(hook: &'static str, body: impl FnOnce(&mut Diag) -> Result<Outcome>) -> Exit {
    panic::set_hook(Box::new(move |info| {
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(std::string::ToString::to_string)
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        to_stderr(&one_line(&format!(
            "ctxguard {hook}: internal error{at}: {payload}"
        )));
    }));
    let mut diag = Diag::default();
    // Only this run's refusals (a test runs many hooks on one thread).
    let _ = crate::diag::take_refused();
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| body(&mut diag)));
    let mut exit = Exit::Ok;
    match outcome {
        // Nothing to print; or a panic, which the panic hook has said.
        Ok(Ok(Outcome::Quiet)) | Err(_) => {}
        Ok(Ok(Outcome::Print(text))) => {
            // A closed pipe is not our problem to report.
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
        }
        Ok(Ok(Outcome::Block(reason))) => {
            // The reason goes first: Claude Code shows a blocking hook's stderr.
            diag.note_first(reason);
            exit = Exit::Block;
        }
        Ok(Err(e)) => diag.note(format!("{e:#}")),
    }
    for refusal in crate::diag::take_refused() {
        diag.note(refusal);
    }
    if let Some(line) = diag.line(hook) {
        to_stderr(&line);
    }
    exit
}

#[cfg(test)]
mod fuzz_tests;
