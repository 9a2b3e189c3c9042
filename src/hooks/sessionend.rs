//! `ctxguard sessionend`: when a session ends (`/clear`, exit, logout), writes a final
//! checkpoint of it: what was being worked on since its last compaction, carried forward as at a
//! compaction. The next session started in the same directory (`clear`, and `startup` when
//! enabled) gets a short digest of it, once (see [`super::sessionstart`]). Nothing on stdout:
//! `SessionEnd` accepts no output. A session that did nothing worth recalling writes nothing.

use std::path::Path;

use anyhow::Result;

use crate::checkpoint::{self, CheckpointStore};
use crate::checkpointing;
use crate::config::{Config, Env};
use crate::event;
use crate::hooks::{Diag, Outcome};
use crate::input::HookInput;
use crate::marker::{self, Event, Store};
use crate::tasks;

/// Does this checkpoint hold anything a later session could use?
fn worth_a_digest(cp: &checkpoint::Checkpoint) -> bool {
    !cp.asks.is_empty()
        || !cp.earlier_asks.is_empty()
        || cp.todos.iter().any(checkpoint::Todo::is_open)
        || !cp.files_modified.is_empty()
}

/// The hook, given its input and environment.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let mut input: HookInput = super::parse_event(bytes, event::SESSION_END)?;
    if !input.agent_id.is_empty() {
        return Ok(Outcome::Quiet);
    }
    let paths = env.paths()?;
    let config = Config::for_hook(&paths, env, diag);
    let now = env.now();
    let reading = if input.transcript_path.is_empty() {
        Err("no transcript_path in the SessionEnd input".to_string())
    } else {
        checkpoint::read_transcript(Path::new(&input.transcript_path)).map_err(|e| format!("{e:#}"))
    };
    // The checkpoint says how the session ended.
    let reason = crate::text::cut(&crate::text::sanitize(&input.reason, true), 20);
    input.trigger = if reason.is_empty() {
        "end".to_string()
    } else {
        format!("end: {reason}")
    };
    let task_store = env
        .client_dir()
        .and_then(|d| tasks::dir(&d, &input.session_id))
        .and_then(|d| tasks::read(&d));
    let checkpoints = CheckpointStore::new(&paths, &input.session_id);
    let store = Store::new(&paths, &input.session_id);
    let memory_dir = crate::memory::client_dir_for(env, &input.cwd, &input.transcript_path);
    let project = crate::memory::project_of(env, &input.cwd);
    let places = crate::memory::Places {
        home: env.home.as_deref(),
        project: &project,
    };
    let stale = config.stale();
    store.update(&input.session_id, diag, |current, diag| {
        let latest = checkpoints.latest().unwrap_or_else(|e| {
            diag.note(format!("{e:#}"));
            None
        });
        let mut cp = checkpointing::decide(
            &input,
            reading,
            current,
            checkpoints.next_id()?,
            latest.as_ref().map(|l| l.id.clone()),
            &config,
            now,
        );
        checkpointing::note_saved_memories(
            &mut cp,
            memory_dir.as_deref(),
            latest.as_ref(),
            &places,
        );
        checkpointing::carry_forward(&mut cp, latest.as_ref(), task_store);
        // Not a compaction: it keeps the session's compaction count.
        cp.meta.compaction = current.compactions;
        // Ended again with nothing new (resumed and left at once): the end checkpoint there is
        // stays, given as a digest or not, never offered again.
        let ended_again = latest
            .as_ref()
            .is_some_and(|l| l.meta.at_session_end() && checkpointing::same_content(l, &cp));
        if !worth_a_digest(&cp) || ended_again {
            return Ok((current.clone(), ()));
        }
        let path = checkpoints.save(&cp)?;
        checkpointing::record_in_index(&paths, &cp, diag);
        let event = Event::Ended {
            checkpoint: path.display().to_string(),
        };
        Ok((marker::transition(current, &event, now, stale), ()))
    })?;
    // Once a day, after the session's own work: old sessions and logs go.
    crate::retention::run_if_due(&paths, &config, now, diag);
    Ok(Outcome::Quiet)
}
