//! Gathering a recovery block, as `SessionStart` injects it and `checkpoint show` prints it: the
//! checkpoint without what the compaction's own summary states, the memory files, and the
//! memories the agent saved since the previous checkpoint (their current contents), then the
//! block rendered. One place, so what a user inspects is what the agent got; [`handed_over`]
//! is the same block as a hook gives it, its notes on the hook's stderr line. After `/clear`,
//! whether the new session gets that block or one line pointing to it ([`after_clear`]).

use std::path::Path;

use crate::checkpoint::{self, Checkpoint};
use crate::config::{Config, Env};
use crate::diag::Diag;
use crate::marker::{self, Event, Marker, ReceiptPending, Store};
use crate::memory;
use crate::paths::Paths;
use crate::recovery::{self, Kind};
use crate::window::CompactSource;

/// The block for `cp` (stored at `path`, under the state root `root`), for a session working in
/// `cwd`, and the notes gathered while reading what it shows (files refused, say).
pub fn block(
    mut cp: Checkpoint,
    path: &Path,
    root: &Path,
    kind: Kind,
    cwd: &str,
    config: &Config,
    env: &Env,
) -> (String, Vec<String>) {
    if let Some(summary) = checkpoint::summary::load(root, path) {
        recovery::leave_out_named(&mut cp, &summary);
    }
    let (memory, mut notes) = memory::for_session(config, env, cwd);
    // The memories saved since the previous checkpoint, in the folder of the session that
    // saved them; the files `memory` holds are not shown twice.
    let (saved, saved_notes) = memory::saved_for(
        config,
        env,
        &cp.memories_saved,
        &cp.meta.cwd,
        &cp.meta.transcript_path,
    );
    cp.saved_contents = saved;
    notes.extend(saved_notes);
    let block = recovery::render(
        &cp,
        path,
        kind,
        &memory,
        config.recovery_budget_chars,
        config.total_budget_chars,
        env.now(),
    );
    (block, notes)
}

/// The recovery block for `cp` (at `path`) as `SessionStart` gives it: the summary's named parts
/// left out, the memories saved since, the memory files. Also what a later hook gives again when
/// the first one never arrived (`receipt`).
#[allow(clippy::too_many_arguments)]
pub fn handed_over(
    paths: &Paths,
    env: &Env,
    config: &Config,
    cwd: &str,
    cp: Checkpoint,
    path: &Path,
    kind: Kind,
    diag: &mut Diag,
) -> String {
    let (block, notes) = block(cp, path, paths.root(), kind, cwd, config, env);
    for n in notes {
        diag.note(n);
    }
    block
}

/// What the new session after a `/clear` gets of the session it cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterClear {
    /// The whole recovery block, once: the soft restart. Auto-compaction was off, ctxguard
    /// asked the agent to save in this cycle and told the user that `/clear` brings the
    /// checkpoint back, and the user cleared.
    Full,
    /// One line pointing to the checkpoint: a `/clear` the user chose with no nudge, to leave
    /// the context behind.
    Pointer,
}

/// Which of the two a `/clear` gives, from the marker of the session it cleared (pure): the
/// full block when that session was nudged in its current cycle (after its newest compaction,
/// if any) while its client's auto-compaction was off; else the pointer.
fn after_clear(cleared: Option<&Marker>) -> AfterClear {
    let soft_restart = cleared.is_some_and(|m| {
        matches!(m.compact_source, Some(CompactSource::Off(_)))
            && m.nudged_at
                .is_some_and(|n| m.compacted_at.is_none_or(|c| n > c))
    });
    if soft_restart {
        AfterClear::Full
    } else {
        AfterClear::Pointer
    }
}

/// After `/clear`, for the new session `session_id`: does the checkpoint `cp` (at `path`) come
/// back in full ([`after_clear`] on the marker of the session that left it)? If so, the
/// handover is recorded on the new session's marker, so that its first tool call or prompt
/// checks that the block arrived (its receipt) and gives it again if it did not.
pub fn full_after_clear(
    paths: &Paths,
    env: &Env,
    config: &Config,
    session_id: &str,
    cp: &Checkpoint,
    path: &Path,
    diag: &mut Diag,
) -> bool {
    let cleared = Store::new(paths, &cp.meta.session_id).peek().ok().flatten();
    if after_clear(cleared.as_ref()) == AfterClear::Pointer {
        return false;
    }
    let (now, stale) = (env.now(), config.stale());
    let pending = ReceiptPending {
        // The new session has not compacted: its recovery is number 0.
        compaction: 0,
        checkpoint: path.display().to_string(),
        handed_at: now,
        client_pid: env.client_pid,
    };
    let recorded = Store::new(paths, session_id).update(session_id, diag, |m, _| {
        let handed = Event::Handed(Some(pending));
        Ok((marker::transition(m, &handed, now, stale), ()))
    });
    if let Err(e) = recorded {
        diag.note(format!("{e:#}"));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    #[test]
    fn a_clear_after_a_nudge_with_auto_compaction_off_brings_the_work_back() {
        let at = |s: i64| Utc.timestamp_opt(1_800_000_000 + s, 0).unwrap();
        let nudged = Marker {
            compact_source: Some(CompactSource::Off("autoCompactEnabled".into())),
            nudged_at: Some(at(10)),
            ..Marker::new("s")
        };
        assert_eq!(after_clear(Some(&nudged)), AfterClear::Full);
        // No nudge this cycle, or none since the newest compaction: the user's own /clear.
        let quiet = Marker {
            nudged_at: None,
            ..nudged.clone()
        };
        assert_eq!(after_clear(Some(&quiet)), AfterClear::Pointer);
        let compacted_since = Marker {
            compacted_at: Some(at(20)),
            ..nudged.clone()
        };
        assert_eq!(after_clear(Some(&compacted_since)), AfterClear::Pointer);
        // A nudge with auto-compaction on announced a compaction, not a /clear.
        let on = Marker {
            compact_source: Some(CompactSource::Window),
            ..nudged
        };
        assert_eq!(after_clear(Some(&on)), AfterClear::Pointer);
        assert_eq!(after_clear(None), AfterClear::Pointer);
    }
}
