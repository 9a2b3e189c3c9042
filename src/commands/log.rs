//! `ctxguard log`: the daily log of the last days (one entry per compaction and per compaction
//! summary), oldest first, each day under its date, optionally only one session's entries.

use anyhow::Result;
use chrono::{Duration, Local, NaiveDate};

use crate::config::Env;
use crate::daily_log;

pub fn run(days: u64, session: Option<String>) -> Result<()> {
    let env = Env::from_process();
    let paths = env.paths()?;
    let today = env.now().with_timezone(&Local).date_naive();
    let first = today - Duration::days(i64::try_from(days).unwrap_or(1).max(1) - 1);
    let mut out = String::new();
    for (date, _) in daily_log::list(&paths)? {
        if date < first || date > today {
            continue;
        }
        if let Some(text) = daily_log::read(&paths, date)? {
            out.push_str(&render_day(date, &text, session.as_deref()));
        }
    }
    if out.is_empty() {
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
        return Ok(());
    }
    print!("{out}");
    Ok(())
}

/// One day's entries under its date (nothing when no entry is left).
fn render_day(date: NaiveDate, text: &str, session: Option<&str>) -> String {
    let entries: Vec<&str> = daily_log::entries(text)
        .filter(|e| session.is_none_or(|s| daily_log::is_about(e, s)))
        .collect();
    if entries.is_empty() {
        return String::new();
    }
    format!(
        "# {}\n\n{}\n\n",
        date.format("%Y-%m-%d"),
        entries.join("\n\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_under_its_date_filtered_by_session() {
        let date = NaiveDate::from_ymd_opt(2026, 11, 21).unwrap();
        let text = "## 19:50 · session aaaaaaaa · compaction #1 (manual)\n- project: /p\n\n\
                    ## 20:00 · session bbbbbbbb · compaction #1 (auto)\n- project: /q\n\n";
        assert_eq!(
            render_day(date, text, Some("bbbbbbbb-1")),
            "# 2026-11-21\n\n## 20:00 · session bbbbbbbb · compaction #1 (auto)\n- project: /q\n\n"
        );
        assert_eq!(render_day(date, text, Some("cccccccc")), "");
        assert_eq!(render_day(date, text, None).matches("## ").count(), 2);
    }
}
