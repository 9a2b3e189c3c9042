//! `ctxguard postcompact`: Claude Code passes the compaction's `compact_summary` here. It is
//! kept beside the checkpoint `PreCompact` wrote for this compaction (`cp_NNN.summary.md`), so a
//! recovery block shown after it can leave out what the summary already names verbatim, and the
//! daily log records its size. Nothing on stdout: `PostCompact` accepts no output.
//!
//! Claude Code 2.1.330 runs SessionStart(compact) before `PostCompact`, so the block injected
//! right after a compaction cannot know the summary yet; a later one (resume, a digest) can.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use chrono::Local;

use crate::config::Env;
use crate::daily_log;
use crate::event;
use crate::files;
use crate::hooks::{Diag, Outcome};
use crate::marker::Store;
use crate::text::{cut, sanitize};

/// A summary is kept up to this many characters.
const MAX_SUMMARY_CHARS: usize = 64 * 1024;

/// Where the summary of the checkpoint at `checkpoint` is kept.
fn summary_path(checkpoint: &Path) -> PathBuf {
    checkpoint.with_extension("summary.md")
}

/// The summary kept for the checkpoint at `checkpoint`, if any.
pub fn load_summary(root: &Path, checkpoint: &Path) -> Option<String> {
    let bytes = files::read_state_file_in(root, &summary_path(checkpoint), "summary")
        .ok()
        .flatten()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The hook, given its input and environment.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let input = super::parse_event(bytes, event::POST_COMPACT)?;
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
    let summary = cut(&sanitize(&input.compact_summary, false), MAX_SUMMARY_CHARS);
    // The checkpoint's directory is checked like every state directory: never a link.
    if let Some(dir) = checkpoint.parent() {
        files::ensure_state_dir(paths.root(), dir)?;
    }
    files::write_atomic(&summary_path(&checkpoint), summary.as_bytes(), false)?;
    let local = env.now().with_timezone(&Local);
    let line = daily_log::summary_line(&input.session_id, local, summary.chars().count(), &summary);
    if let Err(e) = daily_log::append(&paths, local.date_naive(), &line) {
        diag.note(format!("{e:#}"));
    }
    Ok(Outcome::Quiet)
}
