//! The daily log, `$CTXGUARD_HOME/logs/YYYY-MM-DD.md` (local date): one short markdown entry per
//! compaction, for people skimming what happened (`ctxguard log`) and as a tail appended to
//! recovery blocks. Entries are separated by a blank line and name their session by the first 8
//! characters of its id ([`short_id`]). Retention removes the logs of days past its cutoff.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Local, NaiveDate};

use crate::checkpoint::Checkpoint;
use crate::files;
use crate::paths::Paths;
use crate::text::{cut, sanitize};
use crate::usage::human;

/// `logs/` under the state root.
pub fn dir(paths: &Paths) -> PathBuf {
    paths.root().join("logs")
}

fn path_for(paths: &Paths, date: NaiveDate) -> PathBuf {
    dir(paths).join(format!("{}.md", date.format("%Y-%m-%d")))
}

/// The day a log file name (`YYYY-MM-DD.md`) is for.
fn date_of(name: &str) -> Option<NaiveDate> {
    let stem = name.strip_suffix(".md")?;
    (stem.len() == 10)
        .then(|| NaiveDate::parse_from_str(stem, "%Y-%m-%d").ok())
        .flatten()
}

/// Every daily log (regular files named by a date), oldest first.
pub fn list(paths: &Paths) -> Result<Vec<(NaiveDate, PathBuf)>> {
    let mut logs: Vec<(NaiveDate, PathBuf)> = files::list_state_dir(paths.root(), &dir(paths))?
        .into_iter()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| Some((date_of(e.file_name().to_str()?)?, e.path())))
        .collect();
    logs.sort();
    Ok(logs)
}

/// The text of the day's log, if there is one.
pub fn read(paths: &Paths, date: NaiveDate) -> Result<Option<String>> {
    let path = path_for(paths, date);
    Ok(files::read_state_file_in(paths.root(), &path, "daily log")?
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
}

/// How an entry names a session: the first 8 characters of its id, made safe to print.
fn short_id(session_id: &str) -> String {
    sanitize(session_id, true).chars().take(8).collect()
}

/// The entries of a log's text (blank-line separated), each without its trailing blank line.
pub fn entries(text: &str) -> impl Iterator<Item = &str> {
    text.split("\n\n")
        .map(|e| e.trim_matches('\n'))
        .filter(|e| !e.trim().is_empty())
}

/// Is this entry about the session with this id?
pub fn is_about(entry: &str, session_id: &str) -> bool {
    let first = entry.lines().next().unwrap_or("");
    first.contains(&format!(" · session {} · ", short_id(session_id)))
}

/// The entry for one checkpoint.
pub fn entry(cp: &Checkpoint, cp_path: &Path, at: DateTime<Local>) -> String {
    let m = &cp.meta;
    let short_id = short_id(&m.session_id);
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

/// Appends `text` to the day's log in one write (`O_APPEND`), creating it 0600.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_names_and_entries() {
        assert_eq!(
            date_of("2026-11-21.md"),
            NaiveDate::from_ymd_opt(2026, 11, 21)
        );
        for bad in [
            "2026-11-21.txt",
            "2026-13-01.md",
            "notes.md",
            "2026-11-21.md.bak",
        ] {
            assert_eq!(date_of(bad), None, "{bad}");
        }
        let text = "## 19:50 · session 225d8c26 · compaction #1 (manual)\n- project: /p\n\n\
                    - 19:51 · session 225d8c26 · compaction summary: 10 characters\n\n\
                    ## 20:10 · session 7f3e9c1a · compaction #1 (auto)\n- project: /q\n\n";
        let all: Vec<&str> = entries(text).collect();
        assert_eq!(all.len(), 3);
        assert!(all[0].ends_with("- project: /p"));
        let mine: Vec<&str> = entries(text)
            .filter(|e| is_about(e, "225d8c26-5cbd-4b52-b720-e8fe94443567"))
            .collect();
        assert_eq!(mine.len(), 2);
        assert!(!is_about(all[2], "225d8c26"));
    }
}
