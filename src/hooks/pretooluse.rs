//! `ctxguard pretooluse`: runs before every tool call. It reads the usage of the very reply that
//! made the call (only what the client appended to the transcript since the last call), applies
//! it to the marker, and when a nudge is due and not given yet in this cycle, adds context
//! telling the agent to save durable memories now. At most once per level (normal, critical) per
//! cycle, however many tool calls run in parallel and whichever route delivers it (this hook or
//! `UserPromptSubmit`, which runs the same code): the armed → nudged transition happens under the
//! session lock. It never approves, denies or alters the call: the only thing it ever prints is
//! `additionalContext`. A subagent's tool call is left alone entirely: the nudge belongs to the
//! main thread.
//!
//! Fast path: when the transcript has not grown and the marker has nothing pending, the hook
//! answers from two small file reads; when it grew, from a read of the new lines. The limits are
//! recomputed from the config and the client's settings at most every minute (or when the model
//! changes); the lock is taken only when something is worth recording.

use anyhow::Result;

use crate::config::Env;
use crate::event;
use crate::hooks::{additional_context, Diag, Outcome};

/// The hook, given its input and environment: one session step ([`crate::step::take`]): the
/// recovery given again when a compaction's never arrived, the recovery of a drop of context,
/// the nudge.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let input = super::parse_event(bytes, event::PRE_TOOL_USE, env)?;
    let text = crate::step::take(&input, env, crate::step::Route::PreToolUse, diag)?;
    Ok(text
        .map(|text| additional_context(event::PRE_TOOL_USE, text))
        .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_exactly_additional_context() {
        let out = additional_context("PreToolUse", "save \"now\"".into());
        assert_eq!(
            out,
            "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"additionalContext\":\"save \\\"now\\\"\"}}\n"
        );
    }
}
