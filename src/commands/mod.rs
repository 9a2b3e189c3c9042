//! Commands run by hand. Unlike hooks they fail loudly: a clear error naming what and where, and
//! exit 1.

pub mod checkpoint;
pub mod doctor;
pub mod install;
pub mod log;
pub mod prune;
pub mod purge;
pub mod replay;
pub mod reset;
pub mod status;
pub mod usage;

use anyhow::Result;

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

/// The store of one session named on the command line, which must exist.
fn known_session(paths: &Paths, id: &str) -> Result<Store> {
    let store = Store::new(paths, id);
    if !store.marker_path().exists() {
        anyhow::bail!(
            "no state for session {id:?} under {} (run `ctxguard status` to list known sessions)",
            paths.sessions_dir().display()
        );
    }
    Ok(store)
}
