//! The daily log, `$CTXGUARD_HOME/logs/YYYY-MM-DD.md` (local date): one short markdown entry per
//! compaction, for people skimming what happened (`ctxguard log`) and as a tail appended to
//! recovery blocks. Entries are separated by a blank line and name their session by the first 8
//! characters of its id ([`short_id`]). Retention removes the logs of days past its cutoff.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Local, NaiveDate, Utc};

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
/// A session's id as an entry names it: its first 8 characters.
pub fn short_id(session_id: &str) -> String {
    sanitize(session_id, true).chars().take(8).collect()
}

/// The entries of a log's text (blank-line separated), each without its trailing blank line.
pub fn entries(text: &str) -> impl Iterator<Item = &str> {
    text.split("\n\n")
        .map(|e| e.trim_matches('\n'))
        .filter(|e| !e.trim().is_empty())
}

/// What a compaction entry's header adds when the attempt before it failed: that attempt's
/// time follows.
const RETRY: &str = " · after a failed attempt at ";

/// The entry for one checkpoint. `retry_of`: the time of the attempt at this compaction that
/// failed, when this one repeats it (a repeated `PreCompact`: no `compact_boundary` followed the
/// one before).
pub fn entry(
    cp: &Checkpoint,
    cp_path: &Path,
    at: DateTime<Local>,
    retry_of: Option<DateTime<Utc>>,
) -> String {
    let m = &cp.meta;
    let short_id = short_id(&m.session_id);
    let retry = retry_of
        .map(|t| format!("{RETRY}{}", t.with_timezone(&Local).format("%H:%M")))
        .unwrap_or_default();
    let mut out = format!(
        "## {} · session {short_id} · compaction #{} ({}){retry}\n",
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
        // The newest reply on disk when PreCompact ran, often one before the reply that crossed
        // the point; the client's own count is its boundary's `preTokens`.
        out.push_str(&format!(
            "- context: {}{window} tokens at the newest reply read (the client's own count at \
             the compaction is a little higher)\n",
            human(tokens)
        ));
    }
    if !m.nudges.is_empty() {
        // "idle" is the end-of-turn nudge before an idle compaction (Stop).
        out.push_str(&format!(
            "- asked to save: {}\n",
            cut(&sanitize(&m.nudges.join(", "), true), 120)
        ));
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

/// A compaction summary's first line worth showing, at most this many characters.
const HEADLINE_CHARS: usize = 160;

/// The first line of a compaction summary that says something, sanitised and cut: blank lines,
/// lone tags (`<analysis>`, `<summary>`), one-word labels (`Analysis:`) and the client's "This
/// session is being continued…" preamble are passed over; heading marks are dropped.
fn summary_headline(summary: &str) -> Option<String> {
    summary
        .lines()
        .map(|l| sanitize(l, true))
        .map(|l| l.trim().trim_start_matches('#').trim().to_string())
        .find(|l| {
            let lone_tag = l.starts_with('<') && l.ends_with('>') && !l.contains(' ');
            let label = l.ends_with(':') && !l.contains(' ');
            !l.is_empty()
                && !lone_tag
                && !label
                && !l.starts_with("This session is being continued from a previous conversation")
        })
        .map(|l| cut(&l, HEADLINE_CHARS))
}

/// The log line `PostCompact` writes for a compaction's summary of `chars` characters.
pub fn summary_line(session_id: &str, at: DateTime<Local>, chars: usize, summary: &str) -> String {
    let headline = summary_headline(summary)
        .map(|h| format!(": {h}"))
        .unwrap_or_default();
    format!(
        "- {} · session {} · compaction summary ({chars} characters){headline}\n\n",
        at.format("%H:%M"),
        short_id(session_id)
    )
}

/// What one entry of a daily log is, read back from its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `## HH:MM · session X · compaction #N (trigger)`, with the time of the failed attempt it
    /// repeats, if any.
    Compaction {
        number: u64,
        trigger: String,
        retry_of: Option<String>,
    },
    /// `- HH:MM · session X · compaction summary (N characters): first line` (before 0.1.1:
    /// `compaction summary: N characters`).
    Summary {
        chars: Option<u64>,
        headline: Option<String>,
    },
    /// Anything else (written by hand, or by a later version).
    Other,
}

/// One entry: its time, the session's short id, what it is, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    pub time: String,
    pub session: String,
    pub kind: Kind,
    pub text: &'a str,
}

impl Entry<'_> {
    /// The value of the entry's `- key: value` line, if it has one.
    pub fn field(&self, key: &str) -> Option<&str> {
        self.text
            .lines()
            .skip(1)
            .find_map(|l| l.strip_prefix("- ")?.strip_prefix(key)?.strip_prefix(": "))
    }
}

/// Reads an entry's header back (see [`entry`] and [`summary_line`]).
pub fn parse(text: &str) -> Entry<'_> {
    let first = text.lines().next().unwrap_or("");
    let header = first
        .strip_prefix("## ")
        .or_else(|| first.strip_prefix("- "))
        .unwrap_or(first);
    let mut parts = header.splitn(3, " · ");
    let (time, session, rest) = (parts.next(), parts.next(), parts.next());
    let session = session.and_then(|s| s.strip_prefix("session "));
    let (Some(time), Some(session), Some(rest)) = (time, session, rest) else {
        return Entry {
            time: String::new(),
            session: String::new(),
            kind: Kind::Other,
            text,
        };
    };
    let kind = if let Some(rest) = rest.strip_prefix("compaction #") {
        let (what, retry_of) = match rest.split_once(RETRY) {
            Some((what, at)) => (what, Some(at.to_string())),
            None => (rest, None),
        };
        let (number, trigger) = what.split_once(' ').unwrap_or((what, ""));
        match number.parse() {
            Ok(number) => Kind::Compaction {
                number,
                trigger: trigger
                    .trim_start_matches('(')
                    .trim_end_matches(')')
                    .to_string(),
                retry_of,
            },
            Err(_) => Kind::Other,
        }
    } else if let Some(rest) = rest.strip_prefix("compaction summary") {
        let digits = |s: &str| -> Option<u64> {
            s.trim_start_matches([' ', '(', ':'])
                .split(' ')
                .next()?
                .parse()
                .ok()
        };
        match rest.strip_prefix(" (") {
            Some(now) => {
                let (count, headline) = now.split_once(')').unwrap_or((now, ""));
                Kind::Summary {
                    chars: digits(count),
                    headline: headline
                        .strip_prefix(": ")
                        .map(str::to_string)
                        .filter(|h| !h.is_empty()),
                }
            }
            None => Kind::Summary {
                chars: digits(rest),
                headline: None,
            },
        }
    } else {
        Kind::Other
    };
    Entry {
        time: time.to_string(),
        session: session.to_string(),
        kind,
        text,
    }
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
            .filter(|e| parse(e).session == short_id("225d8c26-5cbd-4b52-b720-e8fe94443567"))
            .collect();
        assert_eq!(mine.len(), 2);
        assert_ne!(parse(all[2]).session, "225d8c26");
        // Read back: an old summary line says only its size.
        assert_eq!(
            parse(all[1]).kind,
            Kind::Summary {
                chars: Some(10),
                headline: None
            }
        );
        assert_eq!(
            parse(all[0]),
            Entry {
                time: "19:50".into(),
                session: "225d8c26".into(),
                kind: Kind::Compaction {
                    number: 1,
                    trigger: "manual".into(),
                    retry_of: None
                },
                text: all[0],
            }
        );
        assert_eq!(parse(all[0]).field("project"), Some("/p"));
        assert_eq!(parse("a note by hand").kind, Kind::Other);
    }

    #[test]
    fn summaries_and_retries_are_written_and_read_back() {
        let at = Local::now();
        let summary =
            "<analysis>\n\n# Fixed the \u{1b}[31mparser\u{202e} precedence bug\nThen more.";
        let line = summary_line("225d8c26-5cbd", at, 42, summary);
        assert!(
            line.ends_with(" · session 225d8c26 · compaction summary (42 characters): Fixed the parser precedence bug\n\n"),
            "{line:?}"
        );
        assert_eq!(
            parse(line.trim_end()).kind,
            Kind::Summary {
                chars: Some(42),
                headline: Some("Fixed the parser precedence bug".into())
            }
        );
        let preamble = "This session is being continued from a previous conversation that ran \
                        out of context.\n\nAnalysis:\nLet me look.";
        assert_eq!(summary_headline(preamble).as_deref(), Some("Let me look."));
        assert_eq!(summary_headline("\n \n<summary>\n"), None);
        assert_eq!(
            summary_headline(&"x".repeat(500)).map(|h| h.chars().count()),
            Some(HEADLINE_CHARS)
        );
        let line = summary_line("s", at, 0, "");
        assert!(
            line.ends_with("compaction summary (0 characters)\n\n"),
            "{line:?}"
        );

        let text = "## 20:01 · session 225d8c26 · compaction #1 (auto) · after a failed attempt at 19:59\n- project: /p";
        assert_eq!(
            parse(text).kind,
            Kind::Compaction {
                number: 1,
                trigger: "auto".into(),
                retry_of: Some("19:59".into())
            }
        );
    }
}
