//! `ctxguard replay --all`: every session transcript under the client's projects folder
//! (`~/.claude/projects/<project>/<session>.jsonl`, or `$CLAUDE_CONFIG_DIR/projects`), replayed
//! as [`super::run`] replays one, each with the client's settings of its own working directory
//! (the `cwd` its lines name), as the hooks would have read them. One line per session with its
//! verdicts, then the verdicts summed across sessions and a chart of them. Progress goes to
//! stderr; a transcript that cannot be read is skipped and named there.

use std::fs;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context as _, Result};
use serde::Serialize;

use super::render::plural;
use super::report::{Report, Verdict};
use super::simulate::Options;
use crate::facts::Gathered;

/// Every verdict, in the order of the summary.
const VERDICTS: [Verdict; 8] = [
    Verdict::InTime,
    Verdict::Late,
    Verdict::Missed,
    Verdict::FalseAlarm,
    Verdict::Open,
    Verdict::Manual,
    Verdict::Quiet,
    Verdict::NoData,
];

/// Which transcripts `--all` takes.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only transcripts written in the last this many days.
    pub since_days: Option<u64>,
    /// Only projects whose folder name contains this (a path is first named as the client
    /// names its folder: every character but letters and digits becomes `-`).
    pub project: Option<String>,
}

/// One session's line.
#[derive(Debug, Serialize)]
struct Session {
    transcript: String,
    project: String,
    replies: usize,
    compactions: usize,
    /// Its cycles' verdicts, in order.
    verdicts: Vec<Verdict>,
    /// Compactions followed by a reply but by no recovery block (`receipt::Tally`).
    recoveries_missing: usize,
}

/// The whole answer, as `--json` prints it.
#[derive(Debug, Serialize)]
struct Summary {
    sessions: Vec<Session>,
    /// Transcripts that could not be replayed, with why.
    skipped: Vec<(String, String)>,
    /// Cycles by verdict, across every session.
    totals: Vec<(Verdict, usize)>,
    /// Compactions whose recovery never arrived, across every session.
    recoveries_missing: usize,
}

/// The folder name the client gives a project at `path`.
fn folder_name(path: &str) -> String {
    path.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The session transcripts under `projects`, newest first, that pass `filter` (subagents'
/// transcripts, in a session's own folder, are not sessions).
fn transcripts(projects: &Path, filter: &Filter, now: SystemTime) -> Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(projects) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", projects.display())),
    };
    let wanted = filter.project.as_deref().map(|p| {
        if p.contains('/') || p.contains('\\') {
            folder_name(p)
        } else {
            p.to_string()
        }
    });
    let oldest = filter
        .since_days
        .and_then(|d| now.checked_sub(Duration::from_secs(d.saturating_mul(86_400))));
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    for project in entries.flatten() {
        // Real folders only: a link is not followed out of the projects folder.
        if !project.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let name = project.file_name().to_string_lossy().into_owned();
        if wanted.as_deref().is_some_and(|w| !name.contains(w)) {
            continue;
        }
        let Ok(files) = fs::read_dir(project.path()) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            let is_file = file.file_type().is_ok_and(|t| t.is_file());
            if !is_file || path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let modified = file
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            if oldest.is_some_and(|o| modified < o) {
                continue;
            }
            found.push((modified, path));
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

fn verdict_counts(sessions: &[Session]) -> Vec<(Verdict, usize)> {
    VERDICTS
        .iter()
        .map(|v| {
            let n = sessions
                .iter()
                .flat_map(|s| &s.verdicts)
                .filter(|x| *x == v)
                .count();
            (*v, n)
        })
        .collect()
}

/// The text: a line per session, the totals, and a bar per verdict.
fn render(summary: &Summary) -> String {
    let mut out = String::new();
    for s in &summary.sessions {
        let verdicts = if s.verdicts.is_empty() {
            "no cycle".to_string()
        } else {
            s.verdicts
                .iter()
                .map(|v| v.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "{}  {}, {}: {verdicts}\n",
            s.transcript,
            plural(s.replies, "reply"),
            plural(s.compactions, "compaction")
        ));
    }
    let cycles: usize = summary.totals.iter().map(|(_, n)| n).sum();
    let compactions: usize = summary.sessions.iter().map(|s| s.compactions).sum();
    out.push_str(&format!(
        "\n{}, {}, {} ({} whose recovery never arrived){}\n",
        plural(summary.sessions.len(), "session"),
        plural(cycles, "cycle"),
        plural(compactions, "compaction"),
        summary.recoveries_missing,
        if summary.skipped.is_empty() {
            String::new()
        } else {
            format!(
                ", {} skipped (see above)",
                plural(summary.skipped.len(), "transcript")
            )
        }
    ));
    let most = summary.totals.iter().map(|(_, n)| *n).max().unwrap_or(0);
    for (v, n) in &summary.totals {
        let bar = if most == 0 {
            0
        } else {
            (n * 40).div_ceil(most)
        };
        let pct = (n * 100).checked_div(cycles).unwrap_or(0);
        out.push_str(&format!(
            "{:<12} {n:>5} {pct:>3}%  {}\n",
            v.name(),
            "█".repeat(bar)
        ));
    }
    out
}

/// `replay --all`.
pub fn run(
    filter: &Filter,
    window: Option<u64>,
    autocompact: Option<u64>,
    statusline: bool,
    json: bool,
) -> Result<()> {
    let (env, _, config) = crate::commands::setup()?;
    let Some(client) = env.client_dir() else {
        bail!("cannot find Claude Code's folder: set HOME or CLAUDE_CONFIG_DIR");
    };
    let projects = client.join("projects");
    let files = transcripts(&projects, filter, SystemTime::now())?;
    if files.is_empty() {
        bail!(
            "no session transcript under {}{}: nothing to replay (check --project and --since, \
             or CLAUDE_CONFIG_DIR)",
            projects.display(),
            filter
                .project
                .as_deref()
                .map(|p| format!(" for a project matching {p:?}"))
                .unwrap_or_default()
        );
    }
    let mut summary = Summary {
        sessions: Vec::new(),
        skipped: Vec::new(),
        totals: Vec::new(),
        recoveries_missing: 0,
    };
    let terminal = std::io::stderr().is_terminal();
    for (i, path) in files.iter().enumerate() {
        // `<project folder>/<session>.jsonl`, with `/` on every platform, sanitised as the
        // hooks sanitise every name they print: a name is anyone's to choose, and a newline or
        // an escape sequence in it must neither forge a line nor reach the terminal.
        let shown = super::shown_name(
            &path
                .strip_prefix(&projects)
                .unwrap_or(path)
                .iter()
                .map(|c| c.to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
        );
        if terminal {
            eprint!("\rreplaying {}/{}: {shown}\x1b[K", i + 1, files.len());
        } else {
            eprintln!("replaying {}/{}: {shown}", i + 1, files.len());
        }
        let options = |cwd: Option<&Path>| Options {
            statusline,
            window,
            gathered: Gathered::for_command(&env, cwd, autocompact),
        };
        match super::replay_file_with(path, &config, options) {
            Ok(report) => {
                let mut s = session(shown, &report);
                s.recoveries_missing = report.recoveries_missing;
                summary.sessions.push(s);
            }
            Err(e) => {
                if terminal {
                    eprintln!();
                }
                // The error names the path too.
                let why = super::shown_name(&format!("{e:#}"));
                eprintln!("skipped {shown}: {why}");
                summary.skipped.push((shown, why));
            }
        }
    }
    if terminal {
        eprintln!();
    }
    summary.totals = verdict_counts(&summary.sessions);
    summary.recoveries_missing = summary.sessions.iter().map(|s| s.recoveries_missing).sum();
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&summary)?)?;
    } else {
        write!(stdout, "{}", render(&summary))?;
    }
    Ok(())
}

fn session(shown: String, report: &Report) -> Session {
    Session {
        project: shown.split('/').next().unwrap_or_default().to_string(),
        transcript: shown,
        replies: report.replies,
        compactions: report.compactions,
        verdicts: report.cycles.iter().map(|c| c.verdict).collect(),
        recoveries_missing: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each transcript is read once: its options come from the first `cwd` its lines name, and
    /// the lines before it are replayed all the same.
    #[test]
    fn a_transcript_is_replayed_with_its_own_directory_in_one_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let reply = r#"{"type":"assistant","message":{"id":"m1","content":[],"usage":{"input_tokens":20000,"output_tokens":5}}}"#;
        let prompt =
            r#"{"type":"user","cwd":"/home/u/app","message":{"role":"user","content":"go"}}"#;
        fs::write(&path, format!("{reply}\n{prompt}\n{reply}\n")).unwrap();
        let mut seen = None;
        let report =
            super::super::replay_file_with(&path, &crate::config::Config::default(), |cwd| {
                seen = cwd.map(Path::to_path_buf);
                Options::default()
            })
            .unwrap();
        assert_eq!(seen, Some(PathBuf::from("/home/u/app")));
        assert_eq!(report.lines, 3);
        // No `cwd` at all: the options for none, and every line still replayed.
        fs::write(&path, format!("{reply}\n{reply}\n")).unwrap();
        let mut called = 0;
        let report =
            super::super::replay_file_with(&path, &crate::config::Config::default(), |cwd| {
                called += 1;
                assert_eq!(cwd, None);
                Options::default()
            })
            .unwrap();
        assert_eq!((called, report.lines), (1, 2));
    }

    #[test]
    fn transcripts_are_the_sessions_of_the_wanted_projects_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let projects = dir.path().join("projects");
        let a = projects.join("-home-u-alpha");
        let b = projects.join("-home-u-beta");
        fs::create_dir_all(a.join("s1/subagents")).unwrap();
        fs::create_dir_all(&b).unwrap();
        fs::write(a.join("s1.jsonl"), "{}\n").unwrap();
        fs::write(a.join("s1/subagents/agent-x.jsonl"), "{}\n").unwrap();
        fs::write(a.join("notes.txt"), "x").unwrap();
        fs::write(b.join("s2.jsonl"), "{}\n").unwrap();
        let all = transcripts(&projects, &Filter::default(), SystemTime::now()).unwrap();
        let names: Vec<_> = all
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.contains(&"s1.jsonl".into()) && names.contains(&"s2.jsonl".into()));
        // A project by a part of its folder name, or by its path.
        for p in ["beta", "/home/u/beta"] {
            let f = Filter {
                project: Some(p.into()),
                ..Filter::default()
            };
            let only = transcripts(&projects, &f, SystemTime::now()).unwrap();
            assert_eq!(only, [b.join("s2.jsonl")], "{p}");
        }
        // Written more than a day ago: not since 1 day.
        let later = SystemTime::now() + Duration::from_secs(3 * 86_400);
        let f = Filter {
            since_days: Some(1),
            ..Filter::default()
        };
        assert!(transcripts(&projects, &f, later).unwrap().is_empty());
        assert!(transcripts(&dir.path().join("none"), &f, later)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn the_summary_counts_every_cycle_and_draws_a_bar_per_verdict() {
        let sessions = vec![
            Session {
                transcript: "-p/a.jsonl".into(),
                project: "-p".into(),
                replies: 10,
                compactions: 2,
                verdicts: vec![Verdict::InTime, Verdict::Missed, Verdict::Open],
                recoveries_missing: 1,
            },
            Session {
                transcript: "-p/b.jsonl".into(),
                project: "-p".into(),
                replies: 1,
                compactions: 0,
                verdicts: vec![Verdict::InTime],
                recoveries_missing: 0,
            },
        ];
        let totals = verdict_counts(&sessions);
        assert_eq!(totals[0], (Verdict::InTime, 2));
        assert_eq!(totals[2], (Verdict::Missed, 1));
        let text = render(&Summary {
            sessions,
            skipped: vec![],
            totals,
            recoveries_missing: 1,
        });
        assert!(
            text.contains("-p/a.jsonl  10 replies, 2 compactions: in time, missed, open"),
            "{text}"
        );
        assert!(
            text.contains("2 sessions, 4 cycles, 2 compactions (1 whose recovery never arrived)\n"),
            "{text}"
        );
        let bar = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name))
                .unwrap()
                .matches('█')
                .count()
        };
        assert_eq!((bar("in time"), bar("missed"), bar("quiet")), (40, 20, 0));
    }
}
