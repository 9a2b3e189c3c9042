//! `ctxguard status`: what ctxguard believes about each session.

use std::time::Duration;

use anyhow::Result;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::config::{Config, Env};
use crate::marker::{Marker, Source};
use crate::usage::human;
use crate::window::{CompactSource, WindowSource};

/// One session in `status --json`. Exactly these fields: scripts rely on them.
#[derive(Debug, Serialize)]
pub struct SessionStatus {
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
}

#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub sessions: Vec<SessionStatus>,
}

impl SessionStatus {
    /// The state shown is the one hooks act on: a stale marker is reported as idle.
    pub fn from_marker(m: &Marker, now: DateTime<Utc>, stale_after: Duration) -> SessionStatus {
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
        }
    }
}

fn opt_tokens(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), human)
}

fn opt_time(v: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    match v {
        None => "-".to_string(),
        Some(t) => {
            let age = now.signed_duration_since(t).num_seconds().max(0);
            let ago = match age {
                0..=119 => format!("{age}s"),
                120..=7199 => format!("{}m", age / 60),
                _ => format!("{}h", age / 3600),
            };
            format!("{} ({ago} ago)", t.format("%Y-%m-%d %H:%M:%S UTC"))
        }
    }
}

pub fn run(session: Option<String>, json: bool) -> Result<()> {
    let env = Env::from_process();
    let paths = env.paths()?;
    let loaded = Config::load(&paths, &env)?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let stale = Duration::from_secs(loaded.config.stale_after_secs);
    let now = env.now();
    let markers: Vec<Marker> = match &session {
        Some(id) => {
            let store = super::known_session(&paths, id)?;
            vec![store.peek()?.unwrap_or_else(|| Marker::new(id))]
        }
        None => super::sessions(&paths)?
            .into_iter()
            .filter_map(|(_, marker)| match marker {
                Ok(m) => Some(m),
                Err(e) => {
                    eprintln!(
                        "warning: {e:#} (the next hook run replaces it; or `ctxguard reset --session` it)"
                    );
                    None
                }
            })
            .collect(),
    };
    let report = StatusReport {
        sessions: markers
            .iter()
            .map(|m| SessionStatus::from_marker(m, now, stale))
            .collect(),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    if report.sessions.is_empty() {
        println!("no sessions yet under {}", paths.sessions_dir().display());
        return Ok(());
    }
    if session.is_some() {
        let (s, m) = (&report.sessions[0], &markers[0]);
        let stale_note = if m.is_stale(now, stale) {
            format!(" (stale; stored as {})", m.state.as_str())
        } else {
            String::new()
        };
        println!("session     {}", s.session_id);
        println!("state       {}{stale_note}", s.state);
        println!("cycle       {}", s.cycle);
        println!("tokens      {}", opt_tokens(s.tokens));
        println!(
            "window      {}{}",
            opt_tokens(s.window),
            s.window_source
                .map(|w| format!(" ({})", w.describe()))
                .unwrap_or_default()
        );
        println!("model       {}", s.model.as_deref().unwrap_or("-"));
        println!("trigger_at  {}", opt_tokens(s.trigger_at));
        println!(
            "compact_at  {}{}",
            opt_tokens(s.compact_at),
            s.compact_source
                .as_ref()
                .map(|c| format!(" (from {})", c.describe()))
                .unwrap_or_default()
        );
        if s.idle_compaction_applies {
            println!("idle        the client may compact it while idle (200k or more tokens)");
        }
        println!("armed_at    {}", opt_time(s.armed_at, now));
        println!("nudged_at   {}", opt_time(s.nudged_at, now));
        println!("updated_at  {}", opt_time(s.updated_at, now));
        println!("source      {}", s.source.unwrap_or("-"));
        println!("compactions {}", s.compactions);
        println!(
            "checkpoint  {}{}",
            s.last_checkpoint.as_deref().unwrap_or("-"),
            if s.recovery_pending {
                " (recovery pending)"
            } else {
                ""
            }
        );
        return Ok(());
    }
    println!(
        "{:<38} {:<15} {:>5} {:>7} {:>7} {:>7} {:>7}  {:<10} UPDATED",
        "SESSION", "STATE", "CYCLE", "TOKENS", "WINDOW", "TRIGGER", "COMPACT", "SOURCE"
    );
    for s in &report.sessions {
        println!(
            "{:<38} {:<15} {:>5} {:>7} {:>7} {:>7} {:>7}  {:<10} {}",
            s.session_id,
            s.state,
            s.cycle,
            opt_tokens(s.tokens),
            opt_tokens(s.window),
            opt_tokens(s.trigger_at),
            opt_tokens(s.compact_at),
            s.source.unwrap_or("-"),
            opt_time(s.updated_at, now)
        );
    }
    Ok(())
}
