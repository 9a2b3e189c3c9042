//! Where checkpoints live: `checkpoints/<safe-session-id>/`, one immutable `cp_NNN.json` per
//! compaction, numbered upward, the newest [`KEEP`] kept, and `_latest.json` beside them.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{load, Checkpoint};
use crate::files;
use crate::paths::{safe_session_id, Paths};

/// Checkpoints kept per session.
const KEEP: usize = 5;

/// `checkpoints/<safe-session-id>/`: `cp_NNN.json` files, never rewritten, and `_latest.json`.
#[derive(Debug, Clone)]
pub struct CheckpointStore {
    root: PathBuf,
    dir: PathBuf,
}

pub fn checkpoints_dir(paths: &Paths) -> PathBuf {
    paths.root().join("checkpoints")
}

fn number_of(name: &str) -> Option<u64> {
    name.strip_prefix("cp_")?
        .strip_suffix(".json")?
        .parse()
        .ok()
}

impl CheckpointStore {
    pub fn new(paths: &Paths, session_id: &str) -> CheckpointStore {
        CheckpointStore {
            root: paths.root().to_path_buf(),
            dir: checkpoints_dir(paths).join(safe_session_id(session_id)),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn latest_path(&self) -> PathBuf {
        self.dir.join("_latest.json")
    }

    /// The numbers of the stored checkpoints, ascending.
    fn numbers(&self) -> Result<Vec<u64>> {
        let mut numbers: Vec<u64> = files::list_state_dir(&self.root, &self.dir)?
            .into_iter()
            .filter_map(|e| e.file_name().to_str().and_then(number_of))
            .collect();
        numbers.sort_unstable();
        Ok(numbers)
    }

    pub fn next_id(&self) -> Result<String> {
        let next = self.numbers()?.last().map_or(1, |n| n + 1);
        Ok(format!("cp_{next:03}"))
    }

    /// Writes `cp` as `<id>.json` (refusing to replace an existing one), then `_latest.json`,
    /// then removes all but the newest [`KEEP`]. Returns the path of the new file.
    pub fn save(&self, cp: &Checkpoint) -> Result<PathBuf> {
        files::ensure_state_dir(&self.root, &self.dir)?;
        let path = self.dir.join(format!("{}.json", cp.id));
        let mut bytes = serde_json::to_vec_pretty(cp).context("encoding checkpoint")?;
        bytes.push(b'\n');
        files::write_atomic(&path, &bytes, true)?;
        files::write_atomic(&self.latest_path(), &bytes, false)?;
        self.trim()?;
        Ok(path)
    }

    /// Keeps the newest [`KEEP`] checkpoints, and the newest [`KEEP`] written at a compaction
    /// even when later session ends (one per `-p` run) outnumber them; each removed one goes with
    /// the compaction summary kept beside it.
    fn trim(&self) -> Result<()> {
        let numbers = self.numbers()?;
        if numbers.len() <= KEEP {
            return Ok(());
        }
        let (mut kept, mut compactions) = (0, 0);
        for n in numbers.iter().rev() {
            let old = self.dir.join(format!("cp_{n:03}.json"));
            let at_end = load(&self.root, &old)
                .ok()
                .flatten()
                .is_some_and(|c| c.meta.at_session_end());
            if kept < KEEP || (!at_end && compactions < KEEP) {
                kept += 1;
                compactions += usize::from(!at_end);
                continue;
            }
            fs::remove_file(&old).with_context(|| format!("removing {}", old.display()))?;
            // The summary and the receipt kept beside it go with it.
            for beside in [super::summary::path(&old), super::receipt_path(&old)] {
                if let Err(e) = fs::remove_file(&beside) {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        return Err(e).with_context(|| format!("removing {}", beside.display()));
                    }
                }
            }
        }
        Ok(())
    }

    pub fn latest(&self) -> Result<Option<Checkpoint>> {
        load(&self.root, &self.latest_path())
    }

    /// The newest checkpoint written at a compaction (not at a session's end), with its path.
    pub fn latest_compaction(&self) -> Result<Option<(Checkpoint, PathBuf)>> {
        for n in self.numbers()?.iter().rev() {
            let path = self.dir.join(format!("cp_{n:03}.json"));
            if let Some(cp) = load(&self.root, &path)? {
                if !cp.meta.at_session_end() {
                    return Ok(Some((cp, path)));
                }
            }
        }
        Ok(None)
    }

    /// The checkpoint with this id (`cp_NNN`), if it is still kept.
    pub fn load_id(&self, id: &str) -> Result<Option<Checkpoint>> {
        if number_of(&format!("{id}.json")).is_none() {
            return Ok(None);
        }
        load(&self.root, &self.dir.join(format!("{id}.json")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_dir(root: PathBuf, dir: PathBuf) -> CheckpointStore {
        CheckpointStore { root, dir }
    }

    #[test]
    fn store_numbers_keeps_five_and_never_rewrites() {
        let dir = tempfile::tempdir().unwrap();
        let store = in_dir(dir.path().to_path_buf(), dir.path().join("s"));
        assert!(store.latest().unwrap().is_none());
        for i in 1..=7 {
            let id = store.next_id().unwrap();
            assert_eq!(id, format!("cp_{i:03}"));
            let cp = Checkpoint {
                id: id.clone(),
                ..Checkpoint::default()
            };
            let path = store.save(&cp).unwrap();
            assert!(path.ends_with(format!("{id}.json")));
            assert_eq!(store.latest().unwrap().unwrap().id, id);
            // The same id again is refused, not overwritten.
            assert!(store.save(&cp).is_err());
        }
        let mut names: Vec<_> = fs::read_dir(dir.path().join("s"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "_latest.json",
                "cp_003.json",
                "cp_004.json",
                "cp_005.json",
                "cp_006.json",
                "cp_007.json"
            ]
        );
    }

    #[test]
    fn session_ends_never_push_out_the_newest_compactions() {
        let dir = tempfile::tempdir().unwrap();
        let store = in_dir(dir.path().to_path_buf(), dir.path().join("s"));
        let save = |trigger: &str| {
            let id = store.next_id().unwrap();
            let mut cp = Checkpoint {
                id: id.clone(),
                ..Checkpoint::default()
            };
            cp.meta.trigger = trigger.into();
            let path = store.save(&cp).unwrap();
            fs::write(path.with_extension("summary.md"), "the summary").unwrap();
            id
        };
        // Two compactions, then eight `-p` runs ending.
        let compactions = [save("auto"), save("manual")];
        let mut ends: Vec<String> = (0..8).map(|_| save("end: other")).collect();
        let mut names: Vec<String> = fs::read_dir(dir.path().join("s"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("cp_"))
            .collect();
        names.sort();
        let mut kept: Vec<String> = compactions.to_vec();
        kept.extend(ends.split_off(3));
        let mut expected: Vec<String> = kept
            .iter()
            .flat_map(|id| [format!("{id}.json"), format!("{id}.summary.md")])
            .collect();
        expected.sort();
        // The oldest ends went, each with its summary; both compactions stayed.
        assert_eq!(names, expected);
    }
}
