//! `ctxguard log`: the daily log of the last days (one entry per compaction and per compaction
//! summary), oldest first, each day under its date, optionally only one session's entries, or
//! as JSON. An attempt at a compaction that a later entry says failed (no `compact_boundary`
//! followed it, and `PreCompact` ran again for the same compaction) is shown as a failed
//! attempt, so a compaction's number appears once.

use anyhow::Result;
use chrono::{Duration, Local, NaiveDate};
use serde::Serialize;

use crate::config::Env;
use crate::daily_log::{self, Entry, Kind};
use crate::exit::Exit;
use crate::receipt::{Arrival, Logged};

/// One entry in `log --json`. Exactly these fields: scripts rely on them.
#[derive(Debug, Serialize)]
struct LogEntry {
    /// The local date and time (`YYYY-MM-DD`, `HH:MM`).
    date: String,
    time: String,
    /// The first 8 characters of the session id.
    session: String,
    /// `compaction`, `failed_attempt`, `summary`, `receipt` or `other`.
    kind: &'static str,
    /// The compaction's number and trigger (`compaction`, `failed_attempt`, `receipt`).
    compaction: Option<u64>,
    trigger: Option<String>,
    /// A receipt: how its recovery arrived (`transcript`, `memory`, `given_again`; `null`: not
    /// yet), the hook that gave it again, and the tokens before and after the compaction.
    arrived: Option<Arrival>,
    given_again_by: Option<String>,
    tokens_before: Option<u64>,
    tokens_after: Option<u64>,
    /// A compaction that repeats an attempt that failed: that attempt's time.
    retry_of: Option<String>,
    /// A failed attempt: when it was tried again.
    retried_at: Option<String>,
    /// The project directory, its git branch and the checkpoint file (`compaction`,
    /// `failed_attempt`).
    project: Option<String>,
    branch: Option<String>,
    checkpoint: Option<String>,
    /// A summary: its size, and its first line that says something.
    summary_chars: Option<u64>,
    summary: Option<String>,
    /// The entry as `log` prints it.
    text: String,
}

#[derive(Debug, Serialize)]
struct LogReport {
    entries: Vec<LogEntry>,
}

/// An entry of a given day, and what the entries after it say about it.
struct Dated<'a> {
    date: NaiveDate,
    entry: Entry<'a>,
    /// Tried again at this time: the attempt failed.
    retried_at: Option<String>,
}

impl Dated<'_> {
    fn kind(&self) -> &'static str {
        match &self.entry.kind {
            Kind::Compaction { .. } if self.retried_at.is_some() => "failed_attempt",
            Kind::Compaction { .. } => "compaction",
            Kind::Summary { .. } => "summary",
            Kind::Other if self.receipt().is_some() => "receipt",
            Kind::Other => "other",
        }
    }

    /// A receipt's line, read back into fields.
    fn receipt(&self) -> Option<Logged> {
        let first = self.entry.text.lines().next()?;
        let rest = first.strip_prefix("- ")?.splitn(3, " · ").nth(2)?;
        crate::receipt::read_logged(rest)
    }

    /// The entry's text, its header saying so when the attempt failed.
    fn text(&self) -> String {
        let Some(at) = &self.retried_at else {
            return self.entry.text.to_string();
        };
        let (header, rest) = self
            .entry
            .text
            .split_once('\n')
            .unwrap_or((self.entry.text, ""));
        let rest = if rest.is_empty() {
            String::new()
        } else {
            format!("\n{rest}")
        };
        format!("{header} · failed attempt: no compact_boundary followed it (tried again at {at}){rest}")
    }

    fn json(&self) -> LogEntry {
        let e = &self.entry;
        let receipt = self.receipt();
        let (compaction, trigger, retry_of) = match (&e.kind, &receipt) {
            (
                Kind::Compaction {
                    number,
                    trigger,
                    retry_of,
                },
                _,
            ) => (Some(*number), Some(trigger.clone()), retry_of.clone()),
            (_, Some(r)) => (Some(r.compaction), Some(r.trigger.clone()), None),
            _ => (None, None, None),
        };
        let (summary_chars, summary) = match &e.kind {
            Kind::Summary { chars, headline } => (*chars, headline.clone()),
            _ => (None, None),
        };
        // `- project: /p (branch main)`
        let project = e.field("project");
        let (project, branch) =
            match project.and_then(|p| p.strip_suffix(')')?.split_once(" (branch ")) {
                Some((p, b)) => (Some(p.to_string()), Some(b.to_string())),
                None => (project.map(str::to_string), None),
            };
        LogEntry {
            date: self.date.format("%Y-%m-%d").to_string(),
            time: e.time.clone(),
            session: e.session.clone(),
            kind: self.kind(),
            compaction,
            trigger,
            arrived: receipt.as_ref().and_then(|r| r.arrived),
            given_again_by: receipt.as_ref().and_then(|r| r.by.clone()),
            tokens_before: receipt.as_ref().and_then(|r| r.pre_tokens),
            tokens_after: receipt.as_ref().and_then(|r| r.post_tokens),
            retry_of,
            retried_at: self.retried_at.clone(),
            project,
            branch,
            checkpoint: e.field("checkpoint").map(str::to_string),
            summary_chars,
            summary,
            text: self.text(),
        }
    }
}

/// Marks every compaction entry that a later one of the same session and number repeats after
/// it failed (the newest such before the repeat).
fn mark_failed(entries: &mut [Dated]) {
    for i in 0..entries.len() {
        let Kind::Compaction {
            number,
            retry_of: Some(_),
            ..
        } = &entries[i].entry.kind
        else {
            continue;
        };
        let (number, session, at) = (
            *number,
            entries[i].entry.session.clone(),
            entries[i].entry.time.clone(),
        );
        let failed = entries[..i].iter_mut().rev().find(|d| {
            d.retried_at.is_none()
                && d.entry.session == session
                && matches!(d.entry.kind, Kind::Compaction { number: n, .. } if n == number)
        });
        if let Some(failed) = failed {
            failed.retried_at = Some(at);
        }
    }
}

pub fn run(days: u64, session: Option<String>, json: bool) -> Result<Exit> {
    let env = Env::from_process();
    let paths = env.paths()?;
    let today = env.now().with_timezone(&Local).date_naive();
    let first = today - Duration::days(i64::try_from(days).unwrap_or(1).max(1) - 1);
    let mut texts: Vec<(NaiveDate, String)> = Vec::new();
    for (date, _) in daily_log::list(&paths)? {
        if date < first || date > today {
            continue;
        }
        if let Some(text) = daily_log::read(&paths, date)? {
            texts.push((date, text));
        }
    }
    let mut entries: Vec<Dated> = texts
        .iter()
        .flat_map(|(date, text)| {
            daily_log::entries(text).map(|e| Dated {
                date: *date,
                entry: daily_log::parse(e),
                retried_at: None,
            })
        })
        .collect();
    // Across the whole span, so an attempt just before midnight is still matched.
    mark_failed(&mut entries);
    let short = match session.as_deref() {
        Some(id) => Some(logged_as(&paths, id, &entries, days)?),
        None => None,
    };
    entries.retain(|d| short.as_deref().is_none_or(|s| d.entry.session == s));
    if json {
        let report = LogReport {
            entries: entries.iter().map(Dated::json).collect(),
        };
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(Exit::Ok);
    }
    if entries.is_empty() {
        let span = if days == 1 {
            "today".to_string()
        } else {
            format!("in the last {days} days")
        };
        let whose = session
            .as_deref()
            .map(|s| format!(" for session {}", crate::text::sanitize(s, true)))
            .unwrap_or_default();
        println!(
            "no log entries{whose} {span} under {}",
            daily_log::dir(&paths).display()
        );
        return Ok(Exit::Ok);
    }
    print!("{}", render(&entries));
    Ok(Exit::Ok)
}

/// The session `--session` names, as the log names it (its first 8 characters): a session
/// ctxguard holds state for (its full id or a unique start of it), else the one session of the
/// entries whose id starts with it; an ambiguous start names its candidates, and an id neither
/// names is an error, as `status` and `reset` make it.
fn logged_as(
    paths: &crate::paths::Paths,
    id: &str,
    entries: &[Dated],
    days: u64,
) -> Result<String> {
    if let Some(full) = super::session_id(paths, id)? {
        return Ok(daily_log::short_id(&full));
    }
    let short = daily_log::short_id(id);
    let mut found: Vec<&str> = entries
        .iter()
        .map(|d| d.entry.session.as_str())
        .filter(|s| !s.is_empty() && s.starts_with(short.as_str()))
        .collect();
    found.sort_unstable();
    found.dedup();
    if found.len() > 1 {
        anyhow::bail!(
            "session id {id:?} is ambiguous: the log names {} sessions that start with it ({}); \
             give more of the id",
            found.len(),
            found.join(", ")
        );
    }
    match found.pop() {
        Some(found) => Ok(found.to_string()),
        None => anyhow::bail!(
            "no state for session {id:?} under {}, and no entry of the log names it in the last \
             {days} day{} (run `ctxguard status` to list known sessions, or give more --days)",
            paths.sessions_dir().display(),
            if days == 1 { "" } else { "s" }
        ),
    }
}

/// Each day's entries under its date.
fn render(entries: &[Dated]) -> String {
    let mut out = String::new();
    let mut day: Option<NaiveDate> = None;
    for d in entries {
        if day == Some(d.date) {
            out.push('\n');
        } else {
            if day.is_some() {
                out.push('\n');
            }
            out.push_str(&format!("# {}\n\n", d.date.format("%Y-%m-%d")));
            day = Some(d.date);
        }
        out.push_str(&d.text());
        out.push('\n');
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dated<'a>(date: NaiveDate, texts: &[&'a str]) -> Vec<Dated<'a>> {
        texts
            .iter()
            .map(|t| Dated {
                date,
                entry: daily_log::parse(t),
                retried_at: None,
            })
            .collect()
    }

    #[test]
    fn days_under_their_dates_and_failed_attempts_marked() {
        let date = NaiveDate::from_ymd_opt(2026, 11, 21).unwrap();
        let a = "## 19:50 · session aaaaaaaa · compaction #1 (manual)\n- project: /p";
        let b = "## 20:00 · session bbbbbbbb · compaction #1 (auto)\n- project: /q";
        let retry = "## 20:01 · session bbbbbbbb · compaction #1 (auto) · after a failed attempt at 20:00\n- project: /q";
        let mut entries = dated(date, &[a, b, retry]);
        mark_failed(&mut entries);
        assert_eq!(
            entries.iter().map(Dated::kind).collect::<Vec<_>>(),
            ["compaction", "failed_attempt", "compaction"]
        );
        assert_eq!(
            render(&entries),
            format!(
                "# 2026-11-21\n\n{a}\n\n\
                 ## 20:00 · session bbbbbbbb · compaction #1 (auto) · failed attempt: no \
                 compact_boundary followed it (tried again at 20:01)\n- project: /q\n\n{retry}\n\n"
            )
        );
        let next = NaiveDate::from_ymd_opt(2026, 11, 22).unwrap();
        let mut two = dated(date, &[a]);
        two.extend(dated(next, &[b]));
        assert_eq!(
            render(&two),
            format!("# 2026-11-21\n\n{a}\n\n# 2026-11-22\n\n{b}\n\n")
        );
    }
}
