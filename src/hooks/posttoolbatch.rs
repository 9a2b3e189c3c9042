//! `ctxguard posttoolbatch`: the nudge's third route, after a batch of tool calls and before the
//! next model request. When `PreToolUse` runs, the reply that made the call is usually not on
//! disk yet (the client starts tools while it streams, and writes the reply once it is whole:
//! read in 2.1.330's code), so a turn whose replies jump past the trigger could reach its next
//! request with only the previous turn's usage read. `PostToolBatch` runs once the batch's
//! results are in, when that reply has been written, and its `additionalContext` reaches the
//! next request. It gives the same nudge ([`crate::nudge::give`]), under the same lock, so the
//! routes together still give each nudge at most once per level per cycle.

use anyhow::Result;

use crate::config::Env;
use crate::event;
use crate::hooks::{additional_context, Diag, Outcome};
use crate::nudge;

/// The hook, given its input and environment.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let input = super::parse_event(bytes, event::POST_TOOL_BATCH)?;
    let nudge = nudge::give(&input, env, diag, event::POST_TOOL_BATCH)?;
    Ok(nudge
        .map(|text| additional_context(event::POST_TOOL_BATCH, text))
        .into())
}
