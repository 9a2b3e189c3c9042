//! `ctxguard postcompact`: Claude Code passes the compaction's `compact_summary` here. It is
//! kept beside the checkpoint `PreCompact` wrote for this compaction ([`summary::save`]), so a
//! recovery block shown after it can leave out what the summary already names verbatim, and the
//! daily log records its size. Nothing on stdout: `PostCompact` accepts no output.
//!
//! Claude Code 2.1.330 runs SessionStart(compact) before `PostCompact`, so the block injected
//! right after a compaction cannot know the summary yet; a later one (resume, a digest) can.

use std::path::PathBuf;

use anyhow::{bail, Result};
use chrono::Local;

use crate::checkpoint::summary;
use crate::config::Env;
use crate::daily_log;
use crate::event;
use crate::hooks::{Diag, Outcome};
use crate::marker::Store;

/// The hook, given its input and environment.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let input = super::parse_event(bytes, event::POST_COMPACT, env)?;
    if input.compact_summary.trim().is_empty() {
        return Ok(Outcome::Quiet);
    }
    let paths = env.paths()?;
    let store = Store::new(&paths, &input.session_id);
    let Some(checkpoint) = store.peek()?.and_then(|m| m.last_checkpoint) else {
        bail!("no checkpoint of this session to keep the summary with");
    };
    let checkpoint = PathBuf::from(checkpoint);
    if !checkpoint.starts_with(paths.root()) {
        bail!("the session's checkpoint is outside the state directory");
    }
    let summary = summary::save(paths.root(), &checkpoint, &input.compact_summary)?;
    let local = env.now().with_timezone(&Local);
    let line = daily_log::summary_line(&input.session_id, local, summary.chars().count(), &summary);
    if let Err(e) = daily_log::append(&paths, local.date_naive(), &line) {
        diag.note(format!("{e:#}"));
    }
    Ok(Outcome::Quiet)
}
