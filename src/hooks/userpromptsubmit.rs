//! `ctxguard userpromptsubmit`: the nudge's second route. A long text-only exchange crosses the
//! trigger without a single tool call, so `PreToolUse` never runs; `UserPromptSubmit` runs before
//! each prompt and its `additionalContext` reaches the model with that prompt. It gives the same
//! nudge as `PreToolUse` (the session step, [`crate::step::take`]), under the same lock, so the two
//! routes together still give each nudge at most once per level per cycle.

use anyhow::Result;

use crate::config::Env;
use crate::event;
use crate::hooks::{additional_context, Diag, Outcome};

/// The hook, given its input and environment: the same session step as `PreToolUse`
/// ([`crate::step::take`]).
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let input = super::parse_event(bytes, event::USER_PROMPT_SUBMIT, env)?;
    let text = crate::step::take(&input, env, crate::step::Route::UserPromptSubmit, diag)?;
    Ok(text
        .map(|text| additional_context(event::USER_PROMPT_SUBMIT, text))
        .into())
}
