//! `ctxguard checkpoint show`: the latest checkpoint, as `SessionStart` would inject it (without
//! consuming it), or as raw JSON.

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::checkpoint::{self, checkpoints_dir, Checkpoint, CheckpointStore};
use crate::config::{Config, Env};
use crate::exit::Exit;
use crate::files;
use crate::paths::Paths;
use crate::recovering;
use crate::recovery::Kind;

/// The newest `_latest.json` of any session whose checkpoint holds more than a single exchange
/// ([`Checkpoint::substantial`]); the newest of all when none does. A session's directory that
/// is a link is refused with a warning, like any directory under the state root.
fn newest(paths: &Paths) -> Result<Option<(Checkpoint, PathBuf)>> {
    let mut best: Option<(Checkpoint, PathBuf)> = None;
    for entry in files::list_state_dir(paths.root(), &checkpoints_dir(paths))? {
        let path = entry.path().join("_latest.json");
        match checkpoint::load(paths.root(), &path) {
            Ok(Some(cp)) => {
                let key = |c: &Checkpoint| (c.substantial(), c.meta.created_at);
                if best.as_ref().is_none_or(|(b, _)| key(&cp) > key(b)) {
                    best = Some((cp, path));
                }
            }
            Ok(None) => {}
            Err(e) => eprintln!("warning: {e:#}"),
        }
    }
    Ok(best)
}

pub fn show(session: Option<String>, json: bool) -> Result<Exit> {
    let env = Env::from_process();
    let paths = env.paths()?;
    let loaded = Config::load(&paths, &env)?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let found = match &session {
        Some(id) => {
            let full = super::session_id(&paths, id)?;
            let store = CheckpointStore::new(&paths, full.as_deref().unwrap_or(id));
            store.latest()?.map(|cp| (cp, store.latest_path()))
        }
        None => newest(&paths)?,
    };
    let Some((cp, latest_path)) = found else {
        match session {
            Some(id) => bail!(
                "no checkpoint for session {id:?} under {} (one is written when the session compacts; `ctxguard status` lists sessions)",
                checkpoints_dir(&paths).display()
            ),
            None => bail!(
                "no checkpoints yet under {} (one is written when a session compacts)",
                checkpoints_dir(&paths).display()
            ),
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&cp)?);
        return Ok(Exit::Ok);
    }
    // Name the immutable file, not `_latest.json`, when it is still there.
    let file = latest_path.with_file_name(format!("{}.json", cp.id));
    let file = if file.exists() { file } else { latest_path };
    let config = loaded.config;
    if session.is_none() {
        println!(
            "Session {} (the newest with work to recover; `--session ID` shows another)\n",
            crate::text::sanitize(&cp.meta.session_id, true)
        );
    }
    // As the recovery showed it (or will): the same gathering, the same block.
    let cwd = cp.meta.cwd.clone();
    let (block, notes) =
        recovering::block(cp, &file, paths.root(), Kind::Compact, &cwd, &config, &env);
    for note in notes {
        eprintln!("warning: {note}");
    }
    print!("{block}");
    Ok(Exit::Ok)
}
