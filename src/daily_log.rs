//! The daily log, `$CTXGUARD_HOME/logs/YYYY-MM-DD.md` (local date): one short markdown entry per
//! compaction, for people skimming what happened and as a tail appended to recovery blocks.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Local, NaiveDate};

use crate::checkpoint::Checkpoint;
use crate::files;
use crate::paths::Paths;
use crate::text::{cut, sanitize};
use crate::usage::human;

pub fn path_for(paths: &Paths, date: NaiveDate) -> PathBuf {
    paths
        .root()
        .join("logs")
        .join(format!("{}.md", date.format("%Y-%m-%d")))
}

/// The entry for one checkpoint.
pub fn entry(cp: &Checkpoint, cp_path: &Path, at: DateTime<Local>) -> String {
    let m = &cp.meta;
    let short_id: String = sanitize(&m.session_id, true).chars().take(8).collect();
    let mut out = format!(
        "## {} · session {short_id} · compaction #{} ({})\n",
        at.format("%H:%M"),
        m.compaction,
        if m.trigger.is_empty() {
            "unknown"
        } else {
            &m.trigger
        }
    );
    let branch = m
        .git_branch
        .as_deref()
        .map(|b| format!(" (branch {})", cut(&sanitize(b, true), 60)))
        .unwrap_or_default();
    out.push_str(&format!(
        "- project: {}{branch}\n",
        cut(&sanitize(&m.cwd, true), 200)
    ));
    if let Some(tokens) = m.tokens_before {
        let window = m
            .window
            .map(|w| format!(" of {}", human(w)))
            .unwrap_or_default();
        out.push_str(&format!("- context: {}{window} tokens\n", human(tokens)));
    }
    if let Some(ask) = cp.asks.last() {
        out.push_str(&format!("- last request: {}\n", cut(ask, 120)));
    }
    let open = cp.todos.iter().filter(|t| t.is_open()).count();
    out.push_str(&format!(
        "- open todos: {open} · files modified: {} · failures: {}\n",
        cp.files_modified.len(),
        cp.failures.len()
    ));
    out.push_str(&format!("- checkpoint: {}\n\n", cp_path.display()));
    out
}

/// Appends `text` to the day's log in one write (O_APPEND), creating it 0600.
pub fn append(paths: &Paths, date: NaiveDate, text: &str) -> Result<PathBuf> {
    let path = path_for(paths, date);
    if let Some(dir) = path.parent() {
        files::ensure_state_dir(paths.root(), dir)?;
    }
    let mut file = files::open_append(&path)?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("appending to daily log {}", path.display()))?;
    Ok(path)
}
