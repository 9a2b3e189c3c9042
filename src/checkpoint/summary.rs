//! The compaction's own summary, as `PostCompact` receives it, kept beside the checkpoint
//! `PreCompact` wrote for that compaction (`cp_NNN.summary.md`): a recovery block or digest shown
//! later leaves out what it already names verbatim, and the daily log records its size.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::files;
use crate::text::{cut, sanitize};

/// A summary is kept up to this many characters.
const MAX_SUMMARY_CHARS: usize = 64 * 1024;

/// Where the summary of the checkpoint at `checkpoint` is kept.
pub fn path(checkpoint: &Path) -> PathBuf {
    checkpoint.with_extension("summary.md")
}

/// The summary kept for the checkpoint at `checkpoint` (under the state root `root`), if any.
pub fn load(root: &Path, checkpoint: &Path) -> Option<String> {
    let bytes = files::read_state_file_in(root, &path(checkpoint), "summary")
        .ok()
        .flatten()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Keeps `summary`, sanitised and cut to size, beside the checkpoint at `checkpoint` (under the
/// state root `root`), and returns what was kept.
pub fn save(root: &Path, checkpoint: &Path, summary: &str) -> Result<String> {
    let summary = cut(&sanitize(summary, false), MAX_SUMMARY_CHARS);
    // The checkpoint's directory is checked like every state directory: never a link.
    if let Some(dir) = checkpoint.parent() {
        files::ensure_state_dir(root, dir)?;
    }
    files::write_atomic(&path(checkpoint), summary.as_bytes(), false)?;
    Ok(summary)
}
