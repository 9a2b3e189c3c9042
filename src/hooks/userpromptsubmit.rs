//! `ctxguard userpromptsubmit`: the nudge's second route. A long text-only exchange crosses the
//! trigger without a single tool call, so `PreToolUse` never runs; `UserPromptSubmit` runs before
//! each prompt and its `additionalContext` reaches the model with that prompt. It is the same
//! code as `PreToolUse` ([`super::pretooluse::handle_event`]), under the same lock, so the two
//! routes together still give each nudge at most once per level per cycle.

use anyhow::Result;

use crate::config::Env;
use crate::hooks::{pretooluse, Diag, Outcome};
use crate::registry::event;

/// The hook, given its input and environment.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    pretooluse::handle_event(bytes, env, diag, event::USER_PROMPT_SUBMIT)
}
