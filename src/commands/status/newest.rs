//! The session's newest usage, for `status --session`. The hooks record a reading when they run,
//! but a turn's last reply is written after its last hook: the marker lags what `usage` reads.
//! So for the one session shown, the transcript's tail is read as `usage` reads it (bounded:
//! [`crate::transcript::tail_usage`], or the rollout's), never for the table of sessions.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::config::Env;
use crate::paths::Paths;

/// What the transcript's tail says now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Newest {
    /// Context tokens of the newest main-chain reply after the newest compaction (`None`: none
    /// since it).
    pub tokens: Option<u64>,
    /// When that reply was written.
    pub reply_at: Option<DateTime<Utc>>,
    /// The transcript read.
    pub transcript: String,
}

/// The session's transcript: Claude Code's `projects/<its directory's folder>/<id>.jsonl`, else
/// the one its newest checkpoint was built from.
fn transcript_of(
    env: &Env,
    paths: &Paths,
    id: &str,
    cwd: Option<&str>,
    checkpoint: Option<&str>,
) -> Option<PathBuf> {
    let client = env
        .client_dir()
        .zip(cwd)
        .map(|(dir, cwd)| {
            dir.join("projects")
                .join(crate::commands::replay::folder_name(cwd))
                .join(format!("{id}.jsonl"))
        })
        .filter(|p| p.is_file());
    client.or_else(|| {
        let cp = crate::checkpoint::load(paths.root(), Path::new(checkpoint?))
            .ok()
            .flatten()?;
        Some(PathBuf::from(cp.meta.transcript_path)).filter(|p| p.is_file())
    })
}

/// Whether the session's transcript (Claude Code's, in its projects folder: one `stat`, no read)
/// was written after `at`, the hooks' last save, by more than a moment: the figure they saved is
/// then older than what the transcript holds. For the table, which reads no transcript.
pub fn written_since(env: &Env, id: &str, cwd: Option<&str>, at: Option<DateTime<Utc>>) -> bool {
    let (Some(dir), Some(cwd), Some(at)) = (env.client_dir(), cwd, at) else {
        return false;
    };
    let path = dir
        .join("projects")
        .join(crate::commands::replay::folder_name(cwd))
        .join(format!("{id}.jsonl"));
    let Ok(modified) = std::fs::metadata(&path).and_then(|m| m.modified()) else {
        return false;
    };
    DateTime::<Utc>::from(modified) > at + chrono::Duration::seconds(2)
}

/// The newest reading of the session's transcript, when it can be found and read and its reply
/// is not older than the session's last compaction (`compacted_at`: the client may not have
/// written the boundary yet).
pub fn read(
    env: &Env,
    paths: &Paths,
    id: &str,
    cwd: Option<&str>,
    checkpoint: Option<&str>,
    compacted_at: Option<DateTime<Utc>>,
) -> Option<Newest> {
    let path = transcript_of(env, paths, id, cwd, checkpoint)?;
    let scan = if crate::rollout::is_rollout(&path) {
        crate::rollout::tail_usage(&path)
    } else {
        crate::transcript::tail_usage(&path)
    }
    .ok()?;
    let before_compaction = scan.reply_at.zip(compacted_at).is_some_and(|(r, c)| r < c);
    if scan.gave_up || before_compaction {
        return None;
    }
    Some(Newest {
        tokens: scan.tokens,
        reply_at: scan.reply_at,
        transcript: crate::text::sanitize(&path.to_string_lossy(), true),
    })
}
