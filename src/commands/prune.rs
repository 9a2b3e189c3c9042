//! `ctxguard prune`: the retention pass by hand, whole, saying what it removed (or, with
//! `--dry-run`, what it would remove). The same pass runs by itself from `SessionEnd` once a day
//! (see [`crate::retention`]).

use anyhow::Result;
use chrono::{DateTime, Utc};

use crate::config::{Config, Env};
use crate::exit::Exit;
use crate::retention::{self, Cutoff, Report};

pub fn run(dry_run: bool, older_than: Option<u64>) -> Result<Exit> {
    let env = Env::from_process();
    let paths = env.paths()?;
    let loaded = Config::load(&paths, &env)?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let days = older_than.unwrap_or(loaded.config.retention_days);
    let now = env.now();
    // `--older-than 0` asks for every idle session; `retention_days: 0` turns retention off.
    let cutoff = match older_than {
        Some(days) => Some(Cutoff::age(days, now)),
        None => Cutoff::days(days, now),
    };
    let Some(cutoff) = cutoff else {
        println!(
            "retention is off (retention_days is 0): nothing is removed; \
             `ctxguard prune --older-than DAYS` prunes by hand"
        );
        return Ok(Exit::Ok);
    };
    let report = retention::pass(&paths, Some(cutoff), now, dry_run)?;
    print!("{}", render(&report, days, now, dry_run));
    Ok(Exit::Ok)
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// What the pass did, one line per session or log, then a summary.
pub fn render(report: &Report, days: u64, now: DateTime<Utc>, dry_run: bool) -> String {
    let verb = if dry_run { "would remove" } else { "removed" };
    let mut out = String::new();
    for r in &report.removed {
        let idle = r.last_active.map_or_else(
            || "never active".into(),
            |t| {
                format!(
                    "idle since {} ({} days)",
                    t.format("%Y-%m-%d"),
                    now.signed_duration_since(t).num_days()
                )
            },
        );
        out.push_str(&format!(
            "{verb} session {}: {idle}, {}\n",
            crate::text::sanitize(&r.session, true),
            plural(r.checkpoints, "checkpoint", "checkpoints")
        ));
    }
    for log in &report.logs {
        out.push_str(&format!("{verb} log {}\n", log.display()));
    }
    for k in &report.kept {
        out.push_str(&format!(
            "kept session {}: {}\n",
            crate::text::sanitize(&k.session, true),
            k.reason
        ));
    }
    let what = format!(
        "{} and {}",
        plural(report.removed.len(), "session", "sessions"),
        plural(report.logs.len(), "daily log", "daily logs")
    );
    // `--older-than 0`: every idle session, and the logs of the days before today.
    let (idle, age) = if days == 0 {
        (
            "idle session".to_string(),
            "(idle at all, or from before today)".to_string(),
        )
    } else {
        (
            "session idle".to_string(),
            format!("older than {days} days"),
        )
    };
    if report.removed.is_empty() && report.logs.is_empty() {
        let logs = if days == 0 {
            "from before today".to_string()
        } else {
            format!("older than {days} days")
        };
        out.push_str(&format!(
            "nothing to prune: no {idle} and no daily log {logs}\n"
        ));
    } else if dry_run {
        out.push_str(&format!(
            "{what} {age} would be removed (dry run: nothing was)\n"
        ));
    } else {
        out.push_str(&format!("{what} {age} removed\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retention::{Kept, Removed};
    use chrono::TimeZone;

    #[test]
    fn the_report_names_each_removal_then_sums_up() {
        let now = Utc.with_ymd_and_hms(2026, 12, 31, 12, 0, 0).unwrap();
        let report = Report {
            removed: vec![Removed {
                session: "s1".into(),
                last_active: Some(Utc.with_ymd_and_hms(2026, 11, 1, 9, 0, 0).unwrap()),
                checkpoints: 1,
            }],
            logs: vec!["/state/logs/2026-10-01.md".into()],
            kept: vec![Kept {
                session: "s2".into(),
                reason: "its recovery is still pending".into(),
            }],
            done: true,
        };
        assert_eq!(
            render(&report, 30, now, true),
            "would remove session s1: idle since 2026-11-01 (60 days), 1 checkpoint\n\
             would remove log /state/logs/2026-10-01.md\n\
             kept session s2: its recovery is still pending\n\
             1 session and 1 daily log older than 30 days would be removed (dry run: nothing was)\n"
        );
        assert_eq!(
            render(&Report::default(), 30, now, false),
            "nothing to prune: no session idle and no daily log older than 30 days\n"
        );
        assert_eq!(
            render(&Report::default(), 0, now, false),
            "nothing to prune: no idle session and no daily log from before today\n"
        );
        assert!(render(&report, 0, now, false)
            .ends_with("1 session and 1 daily log (idle at all, or from before today) removed\n"));
    }
}
