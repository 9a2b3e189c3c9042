//! The recovery block as it is handed over ([`recovering::block`]: the checkpoint with what its
//! compaction's summary already names left out, the memories saved since the previous one, and
//! the memory files), its notes on the hook's stderr line. `SessionStart` gives it; so do `PreToolUse` and `UserPromptSubmit` when the
//! first one never arrived (`receipt`) or context was lost without a compaction (`dropped`).

use std::path::Path;

use crate::checkpoint::Checkpoint;
use crate::config::{Config, Env};
use crate::diag::Diag;
use crate::paths::Paths;
use crate::recovering;
use crate::recovery::Kind;

/// The recovery block for `cp` (at `path`) as `SessionStart` gives it: the summary's named parts
/// left out, the memories saved since, the memory files. Also what a later hook gives again when
/// the first one never arrived (`receipt`).
#[allow(clippy::too_many_arguments)]
pub fn render_block(
    paths: &Paths,
    env: &Env,
    config: &Config,
    cwd: &str,
    cp: Checkpoint,
    path: &Path,
    kind: Kind,
    diag: &mut Diag,
) -> String {
    let (block, notes) = recovering::block(cp, path, paths.root(), kind, cwd, config, env);
    for n in notes {
        diag.note(n);
    }
    block
}
