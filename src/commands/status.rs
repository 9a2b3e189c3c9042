//! `ctxguard status`: what ctxguard believes about each session, the most recently active
//! first. Only the sessions shown are read (see [`crate::marker::activity`]), so it stays quick
//! with thousands of sessions; `--all` reads every one.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::checkpoint;
use crate::config::{Config, Env};
use crate::exit::Exit;
use crate::marker::{self, LastNudge, Marker, Source};
use crate::paths::Paths;
use crate::text::sanitize;
use crate::usage::human;
use crate::window::{CompactSource, WindowSource};

mod newest;

/// One session in `status --json`. Exactly these fields: scripts rely on them.
#[derive(Debug, Serialize)]
struct SessionStatus {
    pub session_id: String,
    pub state: &'static str,
    pub cycle: u64,
    pub tokens: Option<u64>,
    pub window: Option<u64>,
    /// Where the window came from (`window::WindowSource`), and the model it follows.
    pub window_source: Option<WindowSource>,
    pub model: Option<String>,
    pub compact_at: Option<u64>,
    /// Where the compaction point came from.
    pub compact_source: Option<CompactSource>,
    /// The client may compact this session while it waits for the user (≥ 200k tokens).
    pub idle_compaction_applies: bool,
    pub trigger_at: Option<u64>,
    pub armed_at: Option<DateTime<Utc>>,
    pub nudged_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    pub source: Option<&'static str>,
    pub compactions: u64,
    pub last_checkpoint: Option<String>,
    pub recovery_pending: bool,
    /// The session's working directory, when known (status line, else its checkpoint).
    pub cwd: Option<String>,
    /// The newest nudge of any cycle: when, at what usage, whether critical.
    pub last_nudge: Option<LastNudge>,
    /// When the newest checkpoint was written (a compaction, or the session's end).
    pub last_checkpoint_at: Option<DateTime<Utc>>,
    /// The newest end-of-turn nudge before an idle compaction, kept even when a later nudge
    /// is the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_nudge: Option<LastNudge>,
    /// With `--session`: a receipt per compaction whose checkpoint is still kept (whether and
    /// how its recovery arrived); absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receipts: Option<Vec<crate::receipt::Receipt>>,
    /// With `--session`: the newest reply in the session's transcript, which the hooks may not
    /// have read yet (a turn's last reply comes after its last hook); absent when the
    /// transcript cannot be found or read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub newest: Option<newest::Newest>,
    /// For the table: the transcript was written after the hooks last saved their reading, so
    /// the usage shown is older than it (marked `*`).
    #[serde(skip)]
    pub behind: bool,
}

#[derive(Debug, Serialize)]
struct StatusReport {
    pub sessions: Vec<SessionStatus>,
    /// Older sessions were left out (`--limit`); `--all` lists every one.
    pub more: bool,
}

impl SessionStatus {
    /// The state shown is the one hooks act on: a stale marker is reported as idle.
    fn from_marker(
        root: &Path,
        m: &Marker,
        now: DateTime<Utc>,
        stale_after: Duration,
    ) -> SessionStatus {
        SessionStatus {
            session_id: m.session_id.clone(),
            state: m.effective_state(now, stale_after).as_str(),
            cycle: m.cycle,
            tokens: m.tokens,
            window: m.window,
            window_source: m.window_source,
            model: m.model.clone(),
            compact_at: m.compact_at,
            compact_source: m.compact_source.clone(),
            idle_compaction_applies: m.idle_compaction_applies(),
            trigger_at: m.trigger_at,
            armed_at: m.armed_at,
            nudged_at: m.nudged_at,
            updated_at: m.updated_at,
            source: m.source.map(Source::as_str),
            compactions: m.compactions,
            last_checkpoint: m.last_checkpoint.clone(),
            recovery_pending: m.recovery_pending,
            cwd: cwd_of(root, m),
            last_nudge: m.last_nudge.clone(),
            idle_nudge: m.idle_nudge.clone(),
            last_checkpoint_at: m
                .last_checkpoint
                .as_ref()
                .and(m.compacted_at.max(m.ended_at)),
            receipts: None,
            newest: None,
            behind: false,
        }
    }
}

/// The session's working directory: as the status line reported it, else as its newest
/// checkpoint recorded it.
fn cwd_of(root: &Path, m: &Marker) -> Option<String> {
    m.cwd.clone().or_else(|| {
        let path = m.last_checkpoint.as_deref()?;
        let cp = checkpoint::load(root, Path::new(path)).ok()??;
        (!cp.meta.cwd.is_empty()).then_some(cp.meta.cwd)
    })
}

/// What to list.
#[derive(Debug, Default)]
pub struct Query {
    /// Only this session.
    pub session: Option<String>,
    /// The newest this many (`None`: every session).
    pub limit: Option<usize>,
    /// Only sessions working in this directory.
    pub cwd: Option<PathBuf>,
    pub json: bool,
}

fn opt_tokens(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), human)
}

/// `12s`, `5m`, `3h`, `12d`.
fn age(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let age = now.signed_duration_since(t).num_seconds().max(0);
    match age {
        0..=119 => format!("{age}s"),
        120..=7199 => format!("{}m", age / 60),
        7200..=172_799 => format!("{}h", age / 3600),
        _ => format!("{}d", age / 86_400),
    }
}

fn opt_time(v: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    match v {
        None => "-".to_string(),
        Some(t) => format!(
            "{} ({} ago)",
            t.format("%Y-%m-%d %H:%M:%S UTC"),
            age(t, now)
        ),
    }
}

/// `930k 5m ago`, `, critical` for a critical nudge.
fn nudge_cell(n: Option<&LastNudge>, now: DateTime<Utc>) -> String {
    n.map_or_else(
        || "-".to_string(),
        |n| {
            format!(
                "{} {} ago{}",
                opt_tokens(n.tokens),
                age(n.at, now),
                if n.critical {
                    ", critical"
                } else if n.idle {
                    ", idle"
                } else {
                    ""
                }
            )
        },
    )
}

/// `cp_001 3m ago`, `, pending` while its recovery is pending.
fn checkpoint_cell(s: &SessionStatus, now: DateTime<Utc>) -> String {
    let Some(path) = s.last_checkpoint.as_deref() else {
        return "-".to_string();
    };
    let name = Path::new(path)
        .file_stem()
        .map(|n| sanitize(&n.to_string_lossy(), true))
        .unwrap_or_default();
    let when = s
        .last_checkpoint_at
        .map(|t| format!(" {} ago", age(t, now)))
        .unwrap_or_default();
    let pending = if s.recovery_pending { ", pending" } else { "" };
    format!("{name}{when}{pending}")
}

/// The directory `--cwd` names, as sessions record theirs: absolute, without a trailing slash;
/// also its canonical form when that differs (a symlinked path).
fn cwd_forms(dir: &Path) -> Vec<String> {
    // Rooted is enough: on Windows `\p` (or `/p`) names a directory of the current drive, and
    // is compared as written.
    let absolute = if dir.has_root() {
        dir.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| dir.to_path_buf(), |d| d.join(dir))
    };
    let mut forms = vec![absolute.clone()];
    if let Ok(real) = absolute.canonicalize() {
        forms.push(real);
    }
    forms
        .iter()
        .map(|p| trim_slash(&p.to_string_lossy()).to_string())
        .collect()
}

fn trim_slash(s: &str) -> &str {
    match s.trim_end_matches(std::path::is_separator) {
        "" => "/",
        t => t,
    }
}

pub fn run(query: Query) -> Result<Exit> {
    let env = Env::from_process();
    let paths = env.paths()?;
    let loaded = Config::load(&paths, &env)?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let stale = loaded.config.stale();
    let now = env.now();
    if let Some(id) = &query.session {
        let (id, store) = super::known_session(&paths, id)?;
        let m = store.peek()?.unwrap_or_else(|| Marker::new(&id));
        let mut s = SessionStatus::from_marker(paths.root(), &m, now, stale);
        let receipts = crate::receipt::list(&paths, &id);
        s.receipts = (!receipts.is_empty()).then_some(receipts);
        s.newest = newest::read(
            &env,
            &paths,
            &id,
            s.cwd.as_deref(),
            s.last_checkpoint.as_deref(),
            m.compacted_at,
        );
        if query.json {
            let report = StatusReport {
                sessions: vec![s],
                more: false,
            };
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print!("{}", render_one(&s, &m, now, stale));
        }
        return Ok(Exit::Ok);
    }
    let wanted = query.cwd.as_deref().map(cwd_forms);
    let newest = marker::newest(&paths, query.limit, |m| match &wanted {
        None => true,
        Some(forms) => {
            cwd_of(paths.root(), m).is_some_and(|c| forms.iter().any(|f| f == trim_slash(&c)))
        }
    })?;
    for e in &newest.unreadable {
        eprintln!(
            "warning: {e:#} (the next hook run replaces it; or `ctxguard reset --session` it)"
        );
    }
    let report = StatusReport {
        sessions: newest
            .markers
            .iter()
            .map(|m| {
                let mut s = SessionStatus::from_marker(paths.root(), m, now, stale);
                s.behind = !query.json
                    && newest::written_since(&env, &s.session_id, s.cwd.as_deref(), s.updated_at);
                s
            })
            .collect(),
        more: newest.more,
    };
    if query.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render_table(&report, &query, &paths, now));
    }
    Ok(Exit::Ok)
}

/// The session's usage, the newest known, and how old it is: the transcript's newest reply when
/// it was read, else the hooks' reading with the time they last saved.
fn tokens_row(s: &SessionStatus, now: DateTime<Utc>) -> String {
    let hooks = opt_tokens(s.tokens);
    match &s.newest {
        Some(n) if n.tokens.is_some() => {
            let newest = opt_tokens(n.tokens);
            let behind = match s.tokens {
                t if t == n.tokens => String::new(),
                None => "; the hooks have not read it yet".into(),
                Some(_) => format!("; the hooks last read {hooks}"),
            };
            format!(
                "{newest} at {} (the transcript's newest reply{behind})",
                opt_time(n.reply_at, now)
            )
        }
        _ if s.tokens.is_none() => hooks,
        _ => format!(
            "{hooks} (the hooks' reading, saved at {})",
            opt_time(s.updated_at, now)
        ),
    }
}

/// One session, a line per field.
fn render_one(s: &SessionStatus, m: &Marker, now: DateTime<Utc>, stale: Duration) -> String {
    let stale_note = if m.is_stale(now, stale) {
        format!(" (stale; stored as {})", m.state.as_str())
    } else {
        String::new()
    };
    let mut lines = vec![
        format!("session     {}", s.session_id),
        format!("state       {}{stale_note}", s.state),
        format!("cycle       {}", s.cycle),
        format!("tokens      {}", tokens_row(s, now)),
        format!(
            "window      {}{}",
            opt_tokens(s.window),
            s.window_source
                .map(|w| format!(" ({})", w.describe()))
                .unwrap_or_default()
        ),
        format!("model       {}", s.model.as_deref().unwrap_or("-")),
        format!("trigger_at  {}", opt_tokens(s.trigger_at)),
        format!(
            "compact_at  {}{}",
            opt_tokens(s.compact_at),
            s.compact_source
                .as_ref()
                .map(|c| format!(" (from {})", c.describe()))
                .unwrap_or_default()
        ),
    ];
    if s.idle_compaction_applies {
        lines.push("idle        the client may compact it while idle (200k or more tokens)".into());
    }
    lines.extend([
        format!("armed_at    {}", opt_time(s.armed_at, now)),
        format!("nudged_at   {}", opt_time(s.nudged_at, now)),
        format!("updated_at  {}", opt_time(s.updated_at, now)),
        format!("source      {}", s.source.unwrap_or("-")),
        format!(
            "cwd         {}",
            s.cwd.as_deref().map_or("-".into(), |c| sanitize(c, true))
        ),
        format!(
            "last nudge  {}",
            s.last_nudge.as_ref().map_or("-".into(), |n| format!(
                "{}{} at {}",
                if n.critical {
                    "critical, "
                } else if n.idle {
                    "idle (end of turn), "
                } else {
                    ""
                },
                opt_tokens(n.tokens),
                opt_time(Some(n.at), now)
            ))
        ),
    ]);
    if let Some(n) = s
        .idle_nudge
        .as_ref()
        .filter(|n| !s.last_nudge.as_ref().is_some_and(|l| l == *n))
    {
        lines.push(format!(
            "idle nudge  {} at {} (at the end of a turn, before an idle compaction)",
            opt_tokens(n.tokens),
            opt_time(Some(n.at), now)
        ));
    }
    lines.extend([
        format!("compactions {}", s.compactions),
        format!(
            "checkpoint  {}{}",
            s.last_checkpoint.as_deref().unwrap_or("-"),
            if s.recovery_pending {
                " (recovery pending)"
            } else {
                ""
            }
        ),
    ]);
    if s.last_checkpoint.is_some() {
        lines.push(format!(
            "written     {}",
            opt_time(s.last_checkpoint_at, now)
        ));
    }
    for r in s.receipts.iter().flatten() {
        lines.push(format!("receipt     {}", r.describe()));
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The sessions as a table, newest first, and a note when older ones were left out.
fn render_table(report: &StatusReport, query: &Query, paths: &Paths, now: DateTime<Utc>) -> String {
    if report.sessions.is_empty() {
        return match &query.cwd {
            Some(dir) => format!(
                "no sessions in {} under {}\n",
                sanitize(&dir.to_string_lossy(), true),
                paths.sessions_dir().display()
            ),
            None => format!("no sessions yet under {}\n", paths.sessions_dir().display()),
        };
    }
    let mut out = format!(
        "{:<38} {:<15} {:>5} {:>10}  {:<22} {:<24} {:<8} CWD\n",
        "SESSION", "STATE", "CYCLE", "USAGE", "LAST NUDGE", "LAST CHECKPOINT", "UPDATED"
    );
    for s in &report.sessions {
        let usage = match (s.tokens, s.window) {
            (None, None) => "-".to_string(),
            (t, w) => format!("{}/{}", opt_tokens(t), opt_tokens(w)),
        };
        let usage = if s.behind { usage + "*" } else { usage };
        out.push_str(&format!(
            "{:<38} {:<15} {:>5} {:>10}  {:<22} {:<24} {:<8} {}\n",
            sanitize(&s.session_id, true),
            s.state,
            s.cycle,
            usage,
            nudge_cell(s.last_nudge.as_ref(), now),
            checkpoint_cell(s, now),
            s.updated_at
                .map_or("-".into(), |t| format!("{} ago", age(t, now))),
            s.cwd.as_deref().map_or("-".into(), |c| sanitize(c, true)),
        ));
    }
    if report.sessions.iter().any(|s| s.behind) {
        out.push_str(
            "* the hooks' last reading: the transcript was written since (a turn's last reply \
             comes after its last hook); `ctxguard status --session ID` reads it now\n",
        );
    }
    if report.more {
        if let Some(limit) = query.limit {
            out.push_str(&format!(
                "(the {limit} most recently active; --limit N for more, --all for every session)\n"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn ages_and_cells() {
        let now = Utc.with_ymd_and_hms(2026, 11, 21, 20, 0, 0).unwrap();
        let ago = |secs| now - chrono::Duration::seconds(secs);
        assert_eq!(age(ago(5), now), "5s");
        assert_eq!(age(ago(600), now), "10m");
        assert_eq!(age(ago(3 * 3600), now), "3h");
        assert_eq!(age(ago(3 * 86_400), now), "3d");
        assert_eq!(age(now + chrono::Duration::seconds(9), now), "0s");
        let n = LastNudge {
            at: ago(300),
            tokens: Some(930_000),
            critical: true,
            idle: false,
        };
        assert_eq!(nudge_cell(Some(&n), now), "930k 5m ago, critical");
        let idle = LastNudge {
            critical: false,
            idle: true,
            ..n
        };
        assert_eq!(nudge_cell(Some(&idle), now), "930k 5m ago, idle");
        assert_eq!(nudge_cell(None, now), "-");
        assert_eq!(trim_slash("/p/"), "/p");
        assert_eq!(trim_slash("/"), "/");
    }
}
