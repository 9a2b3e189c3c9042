//! `ctxguard replay --all`: every session transcript under the client's projects folder
//! (`~/.claude/projects/<project>/<session>.jsonl`, or `$CLAUDE_CONFIG_DIR/projects`), and every
//! Codex rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`, `~/.codex` without the
//! variable), replayed as [`super::run`] replays one, each with the client's settings of its own
//! working directory (the `cwd` its lines name), as the hooks would have read them. One line per
//! session with its verdicts (a Codex session's named so), then the verdicts summed across
//! sessions and a chart of them. Progress goes to stderr; a transcript that cannot be read is
//! skipped and named there.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::SystemTime;

use anyhow::{bail, Result};
use serde::Serialize;

use super::sessions::{
    folder_name, newest_first, rollouts, transcripts, Filter, Found, MAX_ROLLOUTS,
};
use crate::input::Client;

use super::cost::Totals;
use super::render::plural;
use super::report::{Report, Verdict};
use super::simulate::Options;
use crate::commands::usage::grouped;
use crate::facts::Gathered;

/// Every verdict, in the order of the summary.
const VERDICTS: [Verdict; 9] = [
    Verdict::InTime,
    Verdict::Late,
    Verdict::Missed,
    Verdict::FalseAlarm,
    Verdict::Open,
    Verdict::Stopped,
    Verdict::Manual,
    Verdict::Quiet,
    Verdict::NoData,
];

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
    /// Compactions followed by a reply but by no recovery block (`recoveries::Tally`).
    recoveries_missing: usize,
    /// What its compactions cost.
    cost: Totals,
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
    /// What every session's compactions cost.
    cost: Totals,
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
    match client {
        "codex" => "Codex: ",
        "pi" => "pi: ",
        _ => "",
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
        let cost = if s.cost.compactions > 0 {
            let recovery = match s.cost.recovery_chars {
                0 => "no recovery recorded".to_string(),
                n => format!("recovery {} characters", grouped(n as u64)),
            };
            // Codex does not say what it writes to a cache.
            match s.cost.refill.value() {
                Some(refill) if s.cost.refill.unknown == 0 => {
                    format!(" (refilled {} tokens, {recovery})", grouped(refill))
                }
                _ => format!(" ({recovery})"),
            }
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{}{}  {}, {}{cost}: {verdicts}\n",
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
    let t = &summary.cost;
    if t.compactions > 0 {
        let known = |sum: &super::cost::Sum| match (sum.value(), sum.unknown) {
            (None, _) => "not known".to_string(),
            (Some(n), 0) => grouped(n),
            (Some(n), u) => format!("{} and {u} not known", grouped(n)),
        };
        let refill = match (t.refill.value(), t.refill.unknown) {
            (Some(n), 0) => format!("{} tokens written to the cache to refill it", grouped(n)),
            (None, _) => "the refill of the cache not known".to_string(),
            (Some(n), u) => format!(
                "{} tokens written to the cache to refill it ({u} compaction{} not known)",
                grouped(n),
                if u == 1 { "" } else { "s" }
            ),
        };
        out.push_str(&format!(
            "what the compactions cost: {refill}, {} characters of recovery (context {} before, \
             {} after)\n",
            grouped(t.recovery_chars as u64),
            known(&t.before),
            known(&t.after)
        ));
    }
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

/// The sessions `--all` replays, newest first: Claude Code's under `projects`, Codex's under
/// `sessions`. None at all is an error naming where they were looked for.
fn listed(
    projects: Option<&Path>,
    sessions: Option<&Path>,
    pi: Option<&Path>,
    filter: &Filter,
) -> Result<Vec<Found>> {
    let now = SystemTime::now();
    let mut files = match projects {
        Some(projects) => transcripts(projects, filter, now)?,
        None => Vec::new(),
    };
    // Codex's and pi's sessions come beside Claude Code's: a folder that cannot be listed is
    // said, and the rest replayed.
    if let Some(sessions) = sessions {
        beside(
            &mut files,
            rollouts(sessions, filter, now),
            sessions,
            "Codex",
            "rollouts",
        );
    }
    if let Some(pi) = pi {
        let found = super::sessions::pi_sessions(pi, filter, now);
        beside(&mut files, found, pi, "pi", "sessions");
    }
    let files = newest_first(files);
    if files.is_empty() {
        let folders: Vec<String> = [projects, sessions, pi]
            .into_iter()
            .flatten()
            .map(|f| f.display().to_string())
            .collect();
        bail!(
            "no session transcript under {}{}: nothing to replay (check --project and --since, \
             or CLAUDE_CONFIG_DIR, CODEX_HOME and PI_CODING_AGENT_DIR)",
            folders.join(" or "),
            filter
                .project
                .as_deref()
                .map(|p| format!(" for a project matching {p:?}"))
                .unwrap_or_default()
        );
    }
    Ok(files)
}

/// The sessions another client's folder `dir` holds (`found`), added to `files`; when there
/// were more than are replayed, or the folder could not be listed, said on stderr.
fn beside(
    files: &mut Vec<Found>,
    found: Result<(Vec<Found>, bool)>,
    dir: &Path,
    client: &str,
    kind: &str,
) {
    match found {
        Ok((found, more)) => {
            if more {
                eprintln!(
                    "ctxguard: only the newest {MAX_ROLLOUTS} {client} {kind} under {} are \
                     replayed (narrow with --since or --project)",
                    super::shown_name(&dir.display().to_string())
                );
            }
            files.extend(found);
        }
        Err(e) => eprintln!(
            "skipped {client}'s sessions: {}",
            super::shown_name(&format!("{e:#}"))
        ),
    }
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
    let pi_sessions = crate::pi::config::sessions_dir_of(&env);
    if projects.is_none() && sessions.is_none() {
        bail!("cannot find Claude Code's folder: set HOME or CLAUDE_CONFIG_DIR");
    }
    let files = listed(
        projects.as_deref(),
        sessions.as_deref(),
        pi_sessions.as_deref(),
        filter,
    )?;
    let mut summary = Summary {
        sessions: Vec::new(),
        skipped: Vec::new(),
        totals: Vec::new(),
        recoveries_missing: 0,
        cost: Totals::default(),
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
            Client::Pi => (shown_under(path, pi_sessions.as_deref()), "pi"),
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
                pi: None,
            }
        };
        let replayed = if found.client == Client::Pi {
            super::replay_pi(path, &env, &config, statusline, window, autocompact)
                .inspect(|(_, cwd)| directory.clone_from(cwd))
                .map(|(report, _)| report)
        } else {
            super::replay_file_with(path, &config, options)
        };
        match replayed {
            Ok(report) => {
                let mut s = session(shown, &report);
                s.recoveries_missing = report.recoveries_missing;
                if report.client == Client::Pi {
                    s.client = "pi";
                    s.project = directory
                        .map(|d| folder_name(&d.to_string_lossy()))
                        .unwrap_or_default();
                } else if report.client == Client::Codex {
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
    for s in &summary.sessions {
        summary.cost.add(&s.cost);
    }
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
        cost: report.cost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::PathBuf;

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
    fn the_summary_counts_every_cycle_and_draws_a_bar_per_verdict() {
        let known = |n| super::super::cost::Sum {
            known: n,
            of: 2,
            unknown: 0,
        };
        let sessions = vec![
            Session {
                transcript: "-p/a.jsonl".into(),
                client: "claude_code",
                project: "-p".into(),
                replies: 10,
                compactions: 2,
                verdicts: vec![Verdict::InTime, Verdict::Missed, Verdict::Open],
                recoveries_missing: 1,
                cost: Totals {
                    compactions: 2,
                    before: known(300_000),
                    after: known(30_000),
                    refill: known(24_000),
                    recovery_chars: 2_500,
                },
            },
            Session {
                transcript: "-p/b.jsonl".into(),
                client: "codex",
                project: "-p".into(),
                replies: 1,
                compactions: 0,
                verdicts: vec![Verdict::InTime],
                recoveries_missing: 0,
                cost: Totals::default(),
            },
        ];
        let totals = verdict_counts(&sessions);
        let sessions_cost = sessions[0].cost;
        assert_eq!(totals[0], (Verdict::InTime, 2));
        assert_eq!(totals[2], (Verdict::Missed, 1));
        let text = render(&Summary {
            sessions,
            skipped: vec![],
            totals,
            recoveries_missing: 1,
            cost: sessions_cost,
        });
        assert!(
            text.contains(
                "-p/a.jsonl  10 replies, 2 compactions (refilled 24,000 tokens, recovery 2,500 \
                 characters): in time, missed, open\n"
            ),
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
        assert!(
            text.contains(
                "what the compactions cost: 24,000 tokens written to the cache to refill it, \
                 2,500 characters of recovery (context 300,000 before, 30,000 after)\n"
            ),
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
