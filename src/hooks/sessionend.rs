//! `ctxguard sessionend`: when a session ends (`/clear`, exit, logout), writes a final
//! checkpoint of it: what was being worked on since its last compaction, carried forward as at a
//! compaction. The next session started in the same directory (`clear`, and `startup` when
//! enabled) gets a short digest of it, once (see [`super::sessionstart`]). Nothing on stdout:
//! `SessionEnd` accepts no output. A session that did nothing worth recalling writes nothing.

use anyhow::Result;

use crate::checkpointing;
use crate::config::{Config, Env};
use crate::event;
use crate::hooks::{Diag, Outcome};
use crate::input::HookInput;

/// The hook, given its input and environment.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let mut input: HookInput = super::parse_event(bytes, event::SESSION_END, env)?;
    if !input.agent_id.is_empty() {
        return Ok(Outcome::Quiet);
    }
    let paths = env.paths()?;
    let config = Config::for_hook(&paths, env, diag);
    // The checkpoint says how the session ended.
    let reason = crate::text::cut(&crate::text::sanitize(&input.reason, true), 20);
    input.trigger = if reason.is_empty() {
        "end".to_string()
    } else {
        format!("end: {reason}")
    };
    let end = checkpointing::Occasion::End;
    checkpointing::take(
        &paths,
        env,
        &config,
        &input,
        checkpointing::Until::WHOLE,
        &end,
        diag,
    )?;
    // Once a day, after the session's own work: old sessions and logs go.
    crate::retention::run_if_due(&paths, &config, env.now(), diag);
    Ok(Outcome::Quiet)
}
