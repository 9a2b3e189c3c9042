//! `ctxguard reset`: puts markers back to idle, under the same lock the hooks use.

use std::time::Duration;

use anyhow::Result;
use chrono::Utc;

use crate::config::{Config, Env};
use crate::marker::{self, Event, Store, LOCK_WAIT};

fn reset_one(store: &Store, session_id: Option<&str>, stale: Duration) -> Result<String> {
    let lock = store.lock(LOCK_WAIT)?;
    let loaded = lock.load(session_id.unwrap_or_default());
    if let Some(problem) = &loaded.problem {
        eprintln!("warning: {problem}");
    }
    let mut current = loaded.marker;
    if current.session_id.is_empty() {
        current.session_id = session_id.unwrap_or_default().to_string();
    }
    let next = marker::transition(&current, &Event::Reset, Utc::now(), stale);
    lock.save(&next)?;
    Ok(next.session_id)
}

pub fn run(session: Option<String>, all: bool) -> Result<()> {
    let env = Env::from_process();
    let paths = env.paths()?;
    let stale = Duration::from_secs(Config::load(&paths, &env)?.config.stale_after_secs);
    if all {
        let sessions = super::sessions(&paths)?;
        for (store, _) in &sessions {
            reset_one(store, None, stale)?;
        }
        println!("reset {} session(s) to idle", sessions.len());
        return Ok(());
    }
    // clap guarantees one of the two.
    let id = session.unwrap_or_default();
    let store = super::known_session(&paths, &id)?;
    let id = reset_one(&store, Some(&id), stale)?;
    println!("reset session {id} to idle");
    Ok(())
}
