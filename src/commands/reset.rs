//! `ctxguard reset`: puts markers back to idle, under the same lock the hooks use.

use std::time::Duration;

use anyhow::Result;
use chrono::{DateTime, Utc};

use crate::config::{Config, Env};
use crate::diag::Diag;
use crate::exit::Exit;
use crate::marker::{self, Event, Store};

fn reset_one(
    store: &Store,
    session_id: Option<&str>,
    stale: Duration,
    now: DateTime<Utc>,
) -> Result<String> {
    let mut diag = Diag::default();
    let id = store.update(session_id.unwrap_or_default(), &mut diag, |current, _| {
        let next = marker::transition(current, &Event::Reset, now, stale);
        let id = if next.session_id.is_empty() {
            session_id.unwrap_or_default().to_string()
        } else {
            next.session_id.clone()
        };
        Ok((next, id))
    })?;
    if let Some(line) = diag.line("reset") {
        eprintln!("warning: {line}");
    }
    Ok(id)
}

pub fn run(session: Option<String>, all: bool) -> Result<Exit> {
    let env = Env::from_process();
    let paths = env.paths()?;
    let stale = Config::load(&paths, &env)?.config.stale();
    if all {
        let sessions = super::sessions(&paths)?;
        for (store, _) in &sessions {
            reset_one(store, None, stale, env.now())?;
        }
        println!("reset {} session(s) to idle", sessions.len());
        return Ok(Exit::Ok);
    }
    // clap guarantees one of the two.
    let id = session.unwrap_or_default();
    let (id, store) = super::known_session(&paths, &id)?;
    let id = reset_one(&store, Some(&id), stale, env.now())?;
    println!("reset session {id} to idle");
    Ok(Exit::Ok)
}
