//! `ctxguard userpromptsubmit`: the nudge's second route. A long text-only exchange crosses the
//! trigger without a single tool call, so `PreToolUse` never runs; `UserPromptSubmit` runs before
//! each prompt and its `additionalContext` reaches the model with that prompt. It gives the same
//! nudge as `PreToolUse` ([`crate::nudge::give`]), under the same lock, so the two
//! routes together still give each nudge at most once per level per cycle.

use anyhow::Result;

use crate::config::Env;
use crate::event;
use crate::hooks::{additional_context, Diag, Outcome};
use crate::nudge;

/// The hook, given its input and environment.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let input = super::parse_event(bytes, event::USER_PROMPT_SUBMIT)?;
    let before = crate::receipt::peek(&input, env);
    // After a compaction whose recovery never arrived: given here, once (`receipt`).
    let again = crate::receipt::give_again(
        &input,
        env,
        before.as_ref(),
        event::USER_PROMPT_SUBMIT,
        diag,
    );
    // The marker just read, unless the receipt check had anything to do with it.
    let peeked = before
        .clone()
        .filter(|m| again.is_none() && m.receipt_pending.is_none());
    let given = nudge::give(&input, env, diag, event::USER_PROMPT_SUBMIT, peeked)?;
    // Context lost without a compaction (read by this call or an earlier hook): checkpointed,
    // and its recovery given here, once.
    let dropped = crate::dropped::act(&input, env, &given, event::USER_PROMPT_SUBMIT, diag);
    let nudge = given.text;
    let text = [again, dropped, nudge]
        .into_iter()
        .flatten()
        .reduce(|a, b| format!("{a}\n\n{b}"));
    Ok(text
        .map(|text| additional_context(event::USER_PROMPT_SUBMIT, text))
        .into())
}
