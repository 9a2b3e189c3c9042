//! Commands run by hand. Unlike hooks they fail loudly: a clear error naming what and where, and
//! exit 1.

pub mod reset;
pub mod status;
pub mod usage;

use std::fs;
use std::io;

use anyhow::{Context, Result};

use crate::marker::{Marker, Store};
use crate::paths::Paths;

/// Every session directory under the state root, with its marker (or why it could not be read).
pub fn sessions(paths: &Paths) -> Result<Vec<(Store, Result<Marker>)>> {
    let dir = paths.sessions_dir();
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let store = Store::in_dir(entry.path());
        match store.peek() {
            Ok(Some(marker)) => found.push((store, Ok(marker))),
            Ok(None) => {}
            Err(e) => found.push((store, Err(e))),
        }
    }
    found.sort_by(|a, b| {
        let key = |m: &Result<Marker>| m.as_ref().ok().and_then(|m| m.updated_at);
        key(&b.1).cmp(&key(&a.1))
    });
    Ok(found)
}

/// The store of one session named on the command line, which must exist.
pub fn known_session(paths: &Paths, id: &str) -> Result<Store> {
    let store = Store::new(paths, id);
    if !store.marker_path().exists() {
        anyhow::bail!(
            "no state for session {id:?} under {} (run `ctxguard status` to list known sessions)",
            paths.sessions_dir().display()
        );
    }
    Ok(store)
}
