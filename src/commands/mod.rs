//! Commands run by hand. Unlike hooks they fail loudly: a clear error naming what and where, and
//! exit 1.

pub mod checkpoint;
pub mod doctor;
pub mod install;
pub mod log;
mod plugin;
pub mod prune;
pub mod purge;
pub mod replay;
pub mod reset;
pub mod status;
pub mod usage;

use anyhow::Result;

use crate::checkpoint::{checkpoints_dir, CheckpointStore};
use crate::files;
pub use crate::marker::all_sessions as sessions;
use crate::marker::Store;
use crate::paths::Paths;

/// The environment, the state root and the configuration of a manual command, strictly loaded
/// (an invalid config fails the command), its warnings printed on stderr.
fn setup() -> Result<(crate::config::Env, Paths, crate::config::Config)> {
    let env = crate::config::Env::from_process();
    let paths = env.paths()?;
    let loaded = crate::config::Config::load(&paths, &env)?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    Ok((env, paths, loaded.config))
}

/// The full id of the session an id on the command line names: the id itself when ctxguard holds
/// state or checkpoints for it, else the one session whose id starts with it (`log` and `status`
/// print ids short). `None` when no session matches; an ambiguous prefix is an error naming its
/// candidates.
fn session_id(paths: &Paths, id: &str) -> Result<Option<String>> {
    let exact = Store::new(paths, id).marker_path().exists()
        || CheckpointStore::new(paths, id).dir().exists();
    // Only Claude Code's own ids (`[a-z0-9-]`) are stored under their name, so only those can
    // be found by their start.
    let plain = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    if exact || !plain(id) {
        return Ok(exact.then(|| id.to_string()));
    }
    let mut found: Vec<String> = Vec::new();
    for dir in [paths.sessions_dir(), checkpoints_dir(paths)] {
        for entry in files::list_state_dir(paths.root(), &dir)? {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(id) && plain(&name) && entry.file_type().is_ok_and(|t| t.is_dir()) {
                found.push(name);
            }
        }
    }
    found.sort_unstable();
    found.dedup();
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        n => {
            const SHOWN: usize = 10;
            let more = if n > SHOWN {
                format!(" and {} more", n - SHOWN)
            } else {
                String::new()
            };
            anyhow::bail!(
                "session id {id:?} is ambiguous: {n} sessions start with it ({}{more}); give more \
                 of the id",
                found[..n.min(SHOWN)].join(", ")
            )
        }
    }
}

/// The full id and the store of one session named on the command line (its full id or a unique
/// start of it), which must exist.
fn known_session(paths: &Paths, id: &str) -> Result<(String, Store)> {
    let found = session_id(paths, id)?
        .map(|full| (Store::new(paths, &full), full))
        .filter(|(store, _)| store.marker_path().exists());
    let Some((store, full)) = found else {
        anyhow::bail!(
            "no state for session {id:?} under {} (run `ctxguard status` to list known sessions)",
            paths.sessions_dir().display()
        );
    };
    Ok((full, store))
}
