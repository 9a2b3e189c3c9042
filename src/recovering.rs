//! Gathering a recovery block, as `SessionStart` injects it and `checkpoint show` prints it: the
//! checkpoint without what the compaction's own summary states, the memory files, and the
//! memories the agent saved since the previous checkpoint (their current contents), then the
//! block rendered. One place, so what a user inspects is what the agent got; [`handed_over`]
//! is the same block as a hook gives it, its notes on the hook's stderr line.

use std::path::Path;

use crate::checkpoint::{self, Checkpoint};
use crate::config::{Config, Env};
use crate::diag::Diag;
use crate::memory;
use crate::paths::Paths;
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
