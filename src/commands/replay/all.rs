//! `ctxguard replay --all`: every session transcript under the client's projects folder
//! (`~/.claude/projects/<project>/<session>.jsonl`, or `$CLAUDE_CONFIG_DIR/projects`), and every
//! Codex rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`, `~/.codex` without the
//! variable), replayed as [`super::run`] replays one, each with the client's settings of its own
//! working directory (the `cwd` its lines name), as the hooks would have read them. One line per
//! session with its verdicts (a Codex session's named so), then the verdicts summed across
//! sessions and a chart of them. Progress goes to stderr; a transcript that cannot be read is
//! skipped and named there.

use std::fs;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context as _, Result};
use serde::Serialize;

use crate::input::Client;
use crate::rollout::Item;
use crate::transcript::{Line, LineReader};

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
    /// Its file, under the projects folder (Claude Code) or the sessions folder (Codex).
    transcript: String,
    /// `claude_code`, or `codex`.
    client: &'static str,
    /// The project's folder name, as Claude Code names it (a Codex session's from its `cwd`).
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

/// A session transcript found: when it was last written, where, and which client wrote it.
#[derive(Debug, Clone, PartialEq)]
struct Found {
    modified: SystemTime,
    path: PathBuf,
    client: Client,
}

/// Newest first (then by path).
fn newest_first(mut found: Vec<Found>) -> Vec<Found> {
    found.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| a.path.cmp(&b.path))
    });
    found
}

/// `--project` as a folder name: a path is first named as the client names its folder.
fn wanted_project(filter: &Filter) -> Option<String> {
    filter.project.as_deref().map(|p| {
        if p.contains('/') || p.contains('\\') {
            folder_name(p)
        } else {
            p.to_string()
        }
    })
}

/// The oldest modification time `--since` keeps.
fn oldest(filter: &Filter, now: SystemTime) -> Option<SystemTime> {
    filter
        .since_days
        .and_then(|d| now.checked_sub(Duration::from_secs(d.saturating_mul(86_400))))
}

/// When the file of `entry` was last written, if `--since` keeps it.
fn kept_since(entry: &fs::DirEntry, oldest: Option<SystemTime>) -> Option<SystemTime> {
    let modified = entry
        .metadata()
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    oldest.is_none_or(|o| modified >= o).then_some(modified)
}

/// The session transcripts under `projects`, newest first, that pass `filter` (subagents'
/// transcripts, in a session's own folder, are not sessions).
fn transcripts(projects: &Path, filter: &Filter, now: SystemTime) -> Result<Vec<Found>> {
    let entries = match fs::read_dir(projects) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", projects.display())),
    };
    let wanted = wanted_project(filter);
    let oldest = oldest(filter, now);
    let mut found = Vec::new();
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
            if let Some(modified) = kept_since(&file, oldest) {
                found.push(Found {
                    modified,
                    path,
                    client: Client::ClaudeCode,
                });
            }
        }
    }
    Ok(newest_first(found))
}

/// At most this many Codex rollouts are listed, the newest days first.
const MAX_ROLLOUTS: usize = 50_000;

/// The real folders (never a link) in `dir` named by digits, as Codex names a year, a month
/// and a day, the newest first.
fn dated_folders(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut folders: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let digits = !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit());
            digits.then(|| (name, e.path()))
        })
        .collect();
    folders.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| b.0.cmp(&a.0)));
    folders.into_iter().map(|(_, p)| p).collect()
}

/// How much of a rollout's first line (its `session_meta`) is read for its directory.
const META_BYTES: u64 = 256 * 1024;

/// The directory a rollout's session ran in, from its first line.
fn rollout_cwd(path: &Path) -> Option<String> {
    let (file, _) = crate::files::open_regular(path, "rollout").ok()?;
    let mut lines = LineReader::new(file.take(META_BYTES), META_BYTES as usize);
    match lines.next_line() {
        Ok(Some(Line::Text(first))) => match crate::rollout::item(first) {
            Item::Meta { cwd, .. } => cwd,
            _ => None,
        },
        _ => None,
    }
}

/// The Codex rollouts under `sessions` (`YYYY/MM/DD/rollout-*.jsonl`: real folders, regular
/// files, no link followed out of it), newest first, that pass `filter` (`--project` on the
/// folder name Claude Code would give the session's directory), at most [`MAX_ROLLOUTS`]; and
/// whether there were more.
fn rollouts(sessions: &Path, filter: &Filter, now: SystemTime) -> Result<(Vec<Found>, bool)> {
    match fs::metadata(sessions) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), false)),
        Err(e) => return Err(e).with_context(|| format!("listing {}", sessions.display())),
    }
    let wanted = wanted_project(filter);
    let oldest = oldest(filter, now);
    let mut found = Vec::new();
    for day in dated_folders(sessions)
        .iter()
        .flat_map(|year| dated_folders(year))
        .flat_map(|month| dated_folders(&month))
    {
        let Ok(files) = fs::read_dir(&day) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            let is_file = file.file_type().is_ok_and(|t| t.is_file());
            if !is_file || !crate::rollout::is_rollout(&path) {
                continue;
            }
            let Some(modified) = kept_since(&file, oldest) else {
                continue;
            };
            if let Some(w) = &wanted {
                let cwd = rollout_cwd(&path).unwrap_or_default();
                if cwd.is_empty() || !folder_name(&cwd).contains(w.as_str()) {
                    continue;
                }
            }
            if found.len() == MAX_ROLLOUTS {
                return Ok((newest_first(found), true));
            }
            found.push(Found {
                modified,
                path,
                client: Client::Codex,
            });
        }
    }
    Ok((newest_first(found), false))
}

/// A session's file as printed: under its folder, with `/` on every platform, sanitised as the
/// hooks sanitise every name they print (a name is anyone's to choose, and a newline or an
/// escape sequence in it must neither forge a line nor reach the terminal).
fn shown_under(path: &Path, under: Option<&Path>) -> String {
    let relative = under
        .and_then(|u| path.strip_prefix(u).ok())
        .unwrap_or(path);
    super::shown_name(
        &relative
            .iter()
            .map(|c| c.to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
    )
}

/// How a session's line begins: a Codex session's names its client.
fn label(client: &str) -> &'static str {
    if client == "codex" {
        "Codex: "
    } else {
        ""
    }
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
            "{}{}  {}, {}: {verdicts}\n",
            label(s.client),
            s.transcript,
            plural(s.replies, "reply"),
            plural(s.compactions, "compaction")
        ));
    }
    let cycles: usize = summary.totals.iter().map(|(_, n)| n).sum();
    let compactions: usize = summary.sessions.iter().map(|s| s.compactions).sum();
    let codex = summary
        .sessions
        .iter()
        .filter(|s| s.client == "codex")
        .count();
    out.push_str(&format!(
        "\n{}{}, {}, {} ({} whose recovery never arrived){}\n",
        plural(summary.sessions.len(), "session"),
        if codex > 0 {
            format!(" ({codex} of Codex)")
        } else {
            String::new()
        },
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
    let projects = env.client_dir().map(|c| c.join("projects"));
    let sessions = env.codex_home().map(|c| c.join("sessions"));
    if projects.is_none() && sessions.is_none() {
        bail!("cannot find Claude Code's folder: set HOME or CLAUDE_CONFIG_DIR");
    }
    let now = SystemTime::now();
    let mut files = match &projects {
        Some(projects) => transcripts(projects, filter, now)?,
        None => Vec::new(),
    };
    // Codex's sessions come beside Claude Code's: a folder that cannot be listed is said, and
    // the rest replayed.
    if let Some(sessions) = &sessions {
        match rollouts(sessions, filter, now) {
            Ok((rollouts, more)) => {
                if more {
                    eprintln!(
                        "ctxguard: only the newest {MAX_ROLLOUTS} Codex rollouts under {} are \
                         replayed (narrow with --since or --project)",
                        super::shown_name(&sessions.display().to_string())
                    );
                }
                files.extend(rollouts);
            }
            Err(e) => eprintln!(
                "skipped Codex's sessions: {}",
                super::shown_name(&format!("{e:#}"))
            ),
        }
    }
    let files = newest_first(files);
    if files.is_empty() {
        let folders: Vec<String> = [&projects, &sessions]
            .into_iter()
            .flatten()
            .map(|f| f.display().to_string())
            .collect();
        bail!(
            "no session transcript under {}{}: nothing to replay (check --project and --since, \
             or CLAUDE_CONFIG_DIR and CODEX_HOME)",
            folders.join(" or "),
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
    // Codex's config.toml, read once for every rollout.
    let codex = super::codex_facts(&env, Client::Codex);
    for (i, found) in files.iter().enumerate() {
        let path = &found.path;
        // `<project folder>/<session>.jsonl`, or `YYYY/MM/DD/rollout-*.jsonl`.
        let (shown, client) = match found.client {
            Client::ClaudeCode => (shown_under(path, projects.as_deref()), "claude_code"),
            Client::Codex => (shown_under(path, sessions.as_deref()), "codex"),
        };
        let named = format!("{}{shown}", label(client));
        if terminal {
            eprint!("\rreplaying {}/{}: {named}\x1b[K", i + 1, files.len());
        } else {
            eprintln!("replaying {}/{}: {named}", i + 1, files.len());
        }
        let mut directory = None;
        let options = |cwd: Option<&Path>, client| {
            directory = cwd.map(Path::to_path_buf);
            Options {
                statusline,
                window,
                gathered: Gathered::for_command(&env, cwd, autocompact),
                codex: codex.clone().filter(|_| client == Client::Codex),
            }
        };
        match super::replay_file_with(path, &config, options) {
            Ok(report) => {
                let mut s = session(shown, &report);
                s.recoveries_missing = report.recoveries_missing;
                if report.client == Client::Codex {
                    s.client = "codex";
                    s.project = directory
                        .map(|d| folder_name(&d.to_string_lossy()))
                        .unwrap_or_default();
                }
                summary.sessions.push(s);
            }
            Err(e) => {
                if terminal {
                    eprintln!();
                }
                // The error names the path too.
                let why = super::shown_name(&format!("{e:#}"));
                eprintln!("skipped {named}: {why}");
                summary.skipped.push((named, why));
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
        client: "claude_code",
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
            super::super::replay_file_with(&path, &crate::config::Config::default(), |cwd, _| {
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
            super::super::replay_file_with(&path, &crate::config::Config::default(), |cwd, _| {
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
            .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
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
            let only: Vec<_> = only.into_iter().map(|f| f.path).collect();
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

    /// `YYYY/MM/DD/rollout-*.jsonl` under the sessions folder: real folders named by digits and
    /// regular rollout files only, never through a link, the newest first; `--project` on the
    /// session's directory, `--since` on the file's time.
    #[test]
    fn rollouts_are_the_dated_sessions_of_codex_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        let meta = |cwd: &str| {
            format!(
                "{{\"timestamp\":\"2026-11-25T10:00:00Z\",\"type\":\"session_meta\",\"payload\":{{\"cwd\":\"{cwd}\"}}}}\n"
            )
        };
        let put = |day: &str, name: &str, cwd: &str| {
            let folder = sessions.join(day);
            fs::create_dir_all(&folder).unwrap();
            let path = folder.join(name);
            fs::write(&path, meta(cwd)).unwrap();
            path
        };
        let old = put(
            "2026/10/02",
            "rollout-2026-10-02T09-00-00-a.jsonl",
            "/home/u/alpha",
        );
        let new = put(
            "2026/11/25",
            "rollout-2026-11-25T09-00-00-b.jsonl",
            "/home/u/beta",
        );
        // Not a rollout, not a dated folder, not where Codex writes.
        put("2026/11/25", "notes.jsonl", "/home/u/beta");
        put("2026/11/archive", "rollout-x.jsonl", "/home/u/beta");
        put("2026", "rollout-y.jsonl", "/home/u/beta");
        // The older session last written an hour before the newer one.
        let same = SystemTime::now();
        for (path, at) in [(&old, same - Duration::from_secs(3600)), (&new, same)] {
            fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(at)
                .unwrap();
        }
        let paths = |filter: &Filter, now: SystemTime| -> Vec<PathBuf> {
            let (found, more) = rollouts(&sessions, filter, now).unwrap();
            assert!(!more);
            assert!(found.iter().all(|f| f.client == Client::Codex));
            found.into_iter().map(|f| f.path).collect()
        };
        assert_eq!(paths(&Filter::default(), same), [new.clone(), old.clone()]);
        for project in ["alpha", "/home/u/alpha"] {
            let f = Filter {
                project: Some(project.into()),
                ..Filter::default()
            };
            assert_eq!(paths(&f, same), [old.clone()], "{project}");
        }
        let f = Filter {
            since_days: Some(1),
            ..Filter::default()
        };
        assert!(paths(&f, same + Duration::from_secs(3 * 86_400)).is_empty());
        // No sessions folder (no ~/.codex): nothing, and no error.
        assert_eq!(
            rollouts(&dir.path().join("none"), &Filter::default(), same).unwrap(),
            (Vec::new(), false)
        );
    }

    /// A link to a folder or a file elsewhere is not followed out of the sessions folder.
    #[cfg(unix)]
    #[test]
    fn rollouts_never_follow_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        let outside = dir.path().join("outside");
        fs::create_dir_all(outside.join("25")).unwrap();
        fs::write(outside.join("25/rollout-a.jsonl"), "{}\n").unwrap();
        fs::write(outside.join("rollout-b.jsonl"), "{}\n").unwrap();
        fs::create_dir_all(sessions.join("2026/11/24")).unwrap();
        std::os::unix::fs::symlink(outside.join("25"), sessions.join("2026/11/25")).unwrap();
        std::os::unix::fs::symlink(
            outside.join("rollout-b.jsonl"),
            sessions.join("2026/11/24/rollout-b.jsonl"),
        )
        .unwrap();
        let (found, _) = rollouts(&sessions, &Filter::default(), SystemTime::now()).unwrap();
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn the_summary_counts_every_cycle_and_draws_a_bar_per_verdict() {
        let sessions = vec![
            Session {
                transcript: "-p/a.jsonl".into(),
                client: "claude_code",
                project: "-p".into(),
                replies: 10,
                compactions: 2,
                verdicts: vec![Verdict::InTime, Verdict::Missed, Verdict::Open],
                recoveries_missing: 1,
            },
            Session {
                transcript: "-p/b.jsonl".into(),
                client: "codex",
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
            text.contains(
                "2 sessions (1 of Codex), 4 cycles, 2 compactions (1 whose recovery never \
                 arrived)\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("Codex: -p/b.jsonl  1 reply, 0 compactions: in time\n"),
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
