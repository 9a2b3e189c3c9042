//! The recovery block as it is handed over, read from disk: the checkpoint with what its
//! compaction's summary already names left out, the memories saved since the previous one, and
//! the memory files. `SessionStart` gives it; so do `PreToolUse` and `UserPromptSubmit` when the
//! first one never arrived (`receipt`) or context was lost without a compaction (`dropped`).

use std::path::Path;

use crate::checkpoint::{self, Checkpoint};
use crate::config::{Config, Env};
use crate::diag::Diag;
use crate::memory;
use crate::paths::Paths;
use crate::recovery::{self, Kind};

/// The recovery block for `cp` (at `path`) as `SessionStart` gives it: the summary's named parts
/// left out, the memories saved since, the memory files. Also what a later hook gives again when
/// the first one never arrived (`receipt`).
#[allow(clippy::too_many_arguments)]
pub fn render_block(
    paths: &Paths,
    env: &Env,
    config: &Config,
    cwd: &str,
    mut cp: Checkpoint,
    path: &Path,
    kind: Kind,
    diag: &mut Diag,
) -> String {
    if let Some(summary) = checkpoint::summary::load(paths.root(), path) {
        recovery::leave_out_named(&mut cp, &summary);
    }
    let (memory, notes) = memory::for_session(config, env, cwd);
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
    for n in notes.into_iter().chain(saved_notes) {
        diag.note(n);
    }
    recovery::render(
        &cp,
        path,
        kind,
        &memory,
        config.recovery_budget_chars,
        config.total_budget_chars,
        env.now(),
    )
}
