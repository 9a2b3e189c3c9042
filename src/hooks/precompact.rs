//! `ctxguard precompact`: runs when a compaction starts. It writes a mechanical checkpoint of the
//! part of the transcript the compaction is about to summarise, appends to the daily log, starts
//! a new marker cycle and records that a recovery is pending. Nothing on stdout: PreCompact
//! accepts no `hookSpecificOutput`, and its plain stdout would be merged into the compaction
//! instructions.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use chrono::{DateTime, Local, Utc};

use crate::checkpoint::{self, Checkpoint, CheckpointStore, Meta, Reading};
use crate::config::{Config, Env};
use crate::daily_log;
use crate::files;
use crate::hooks::Diag;
use crate::input::HookInput;
use crate::marker::{self, Event, Marker, Store, LOCK_WAIT};
use crate::text::{cut, sanitize};
use crate::usage;

/// The checkpoint for this compaction, from the hook input, what the transcript gave (or why it
/// could not be read), and the session's marker.
pub fn decide(
    input: &HookInput,
    reading: Result<Reading, String>,
    marker: &Marker,
    id: String,
    previous: Option<String>,
    config: &Config,
    now: DateTime<Utc>,
) -> Checkpoint {
    let (body, tokens, cwd, branch, error) = match reading {
        Ok(r) => (r.body, r.tokens, r.cwd, r.git_branch, None),
        Err(e) => (Checkpoint::default(), None, None, None, Some(e)),
    };
    let tokens_before = tokens.or(marker.tokens);
    let window = marker.window.or_else(|| {
        Some(usage::window(
            config.window_tokens,
            marker.reported_window,
            tokens_before,
        ))
    });
    let instructions = sanitize(&input.custom_instructions, false);
    let cwd = if input.cwd.is_empty() {
        cwd.unwrap_or_default()
    } else {
        input.cwd.clone()
    };
    Checkpoint {
        id,
        meta: Meta {
            session_id: input.session_id.clone(),
            cwd,
            git_branch: branch,
            trigger: cut(&sanitize(&input.trigger, true), 20),
            custom_instructions: (!instructions.trim().is_empty())
                .then(|| cut(instructions.trim(), 2000)),
            tokens_before,
            window,
            cycle: marker.cycle,
            compaction: marker.compactions + 1,
            created_at: Some(now),
            previous,
            transcript_path: input.transcript_path.clone(),
            transcript_error: error,
        },
        ..body
    }
}

pub fn run(diag: &mut Diag) -> Result<Option<String>> {
    let input = super::read_event("PreCompact")?;
    let env = Env::from_process();
    let paths = env.paths()?;
    let config = super::config(&paths, &env, diag);

    // The transcript is read before the lock: it is the slow part.
    let reading = if input.transcript_path.is_empty() {
        Err("no transcript_path in the PreCompact input".to_string())
    } else {
        checkpoint::read_transcript(Path::new(&input.transcript_path)).map_err(|e| format!("{e:#}"))
    };
    if let Err(e) = &reading {
        diag.note(format!("{e}; the checkpoint holds only metadata"));
    }

    let store = Store::new(&paths, &input.session_id);
    let checkpoints = CheckpointStore::new(&paths, &input.session_id);
    let now = Utc::now();
    let lock = store.lock(LOCK_WAIT)?;
    let current = lock.load(&input.session_id);
    if let Some(problem) = current.problem {
        diag.note(problem);
    }
    let previous = match checkpoints.latest() {
        Ok(latest) => latest.map(|cp| cp.id),
        Err(e) => {
            diag.note(format!("{e:#}"));
            None
        }
    };
    let cp = decide(
        &input,
        reading,
        &current.marker,
        checkpoints.next_id()?,
        previous,
        &config,
        now,
    );
    let cp_path = checkpoints.save(&cp)?;
    let stale = Duration::from_secs(config.stale_after_secs);
    let event = Event::Compacted {
        checkpoint: cp_path.display().to_string(),
    };
    lock.save(&marker::transition(&current.marker, &event, now, stale))?;
    // A writer killed mid-write leaves its temp file; compaction is rare enough to tidy up.
    for dir in [store.dir(), checkpoints.dir()] {
        files::sweep_temp_files(dir, Duration::from_secs(60));
    }
    drop(lock);

    let local = now.with_timezone(&Local);
    if let Err(e) = daily_log::append(
        &paths,
        local.date_naive(),
        &daily_log::entry(&cp, &cp_path, local),
    ) {
        diag.note(format!("{e:#}"));
    }
    Ok(None)
}
