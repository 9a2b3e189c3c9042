//! Gathering a recovery block, as `SessionStart` injects it and `checkpoint show` prints it: the
//! checkpoint without what the compaction's own summary states, the memory files, and the
//! memories the agent saved since the previous checkpoint (their current contents), then the
//! block rendered. One place, so what a user inspects is what the agent got.

use std::path::Path;

use crate::checkpoint::{self, Checkpoint};
use crate::config::{Config, Env};
use crate::memory;
use crate::recovery::{self, Kind};

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
