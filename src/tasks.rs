//! The client's own task store. Claude Code 2.1.330 keeps a session's task list (`TaskCreate`,
//! `TaskUpdate`) itself, one file per task: `~/.claude/tasks/<session id>/<id>.json` with
//! `{"id", "subject", "status", ...}` (under `$CLAUDE_CONFIG_DIR` instead of `~/.claude` when
//! that is set). Where it exists it is the authority for which tasks are open, whatever part of
//! the transcript a checkpoint reads. Read like any outside data: no symlinks, regular files
//! only, bounded in number and size, sanitised.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::checkpoint::Todo;
use crate::files;
use crate::text::{cut, sanitize};

/// At most this many tasks are read.
const MAX_TASKS: usize = 200;
/// A task file larger than this is not a task file.
const MAX_TASK_FILE: u64 = 64 * 1024;

#[derive(Deserialize)]
struct TaskFile {
    #[serde(default)]
    id: serde_json::Value,
    #[serde(default)]
    subject: String,
    #[serde(default)]
    status: String,
}

/// The task directory of `session_id` under the client's config dir, if the id can name one.
pub fn dir(config_dir: &Path, session_id: &str) -> Option<PathBuf> {
    let safe = !session_id.is_empty()
        && session_id.len() <= 128
        && session_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    safe.then(|| config_dir.join("tasks").join(session_id))
}

/// The tasks in `dir`, by id, or `None` when there is no such directory (the client keeps no
/// store for this session). At most `2 * MAX_TASKS` entries are looked at; a link, anything but
/// a regular file, or a file over [`MAX_TASK_FILE`] is skipped unread and noted
/// ([`crate::diag::refused`]); a malformed one is skipped.
pub fn read(dir: &Path) -> Option<Vec<Todo>> {
    let meta = fs::symlink_metadata(dir).ok()?;
    if !meta.is_dir() {
        return None;
    }
    let mut tasks: Vec<(u64, String, Todo)> = Vec::new();
    for entry in fs::read_dir(dir).ok()?.flatten().take(MAX_TASKS * 2) {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.ends_with(".json") || name.starts_with('.') {
            continue;
        }
        let bytes = match files::read_nofollow(&entry.path(), "task file", MAX_TASK_FILE) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => continue,
            Err(e) => {
                crate::diag::refused(&format!("{e:#}"));
                continue;
            }
        };
        let Ok(task) = serde_json::from_slice::<TaskFile>(&bytes) else {
            continue;
        };
        let id = match &task.id {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => name.trim_end_matches(".json").to_string(),
        };
        let subject = cut(&sanitize(&task.subject, true), 200);
        if subject.is_empty() {
            continue;
        }
        tasks.push((
            id.parse().unwrap_or(u64::MAX),
            id,
            Todo {
                content: subject,
                status: cut(&sanitize(&task.status, true), 20),
                id: None,
            },
        ));
        if tasks.len() >= MAX_TASKS {
            break;
        }
    }
    tasks.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    Some(tasks.into_iter().map(|(_, _, t)| t).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_read_by_id_and_safely() {
        let root = tempfile::tempdir().unwrap();
        let dir = dir(root.path(), "15806bdf-3cba").unwrap();
        assert!(read(&dir).is_none(), "no store");
        fs::create_dir_all(&dir).unwrap();
        let task = |id: &str, subject: &str, status: &str| {
            serde_json::json!({"id": id, "subject": subject, "status": status, "blocks": []})
                .to_string()
        };
        fs::write(dir.join("10.json"), task("10", "ship it", "pending")).unwrap();
        fs::write(
            dir.join("2.json"),
            task("2", "test the parser", "in_progress"),
        )
        .unwrap();
        fs::write(
            dir.join("1.json"),
            task("1", "write the parser\u{1b}[31m", "completed"),
        )
        .unwrap();
        fs::write(dir.join(".lock"), "").unwrap();
        fs::write(dir.join("3.json"), "{not json").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc/passwd", dir.join("4.json")).unwrap();
        let got: Vec<(String, String)> = read(&dir)
            .unwrap()
            .into_iter()
            .map(|t| (t.content, t.status))
            .collect();
        assert_eq!(
            got,
            [
                ("write the parser".to_string(), "completed".to_string()),
                ("test the parser".into(), "in_progress".into()),
                ("ship it".into(), "pending".into()),
            ]
        );
    }

    /// Generated task stores: files of every size around the limit, malformed ones, and on Unix
    /// links, FIFOs and folders among them. Reading never panics or blocks, takes a task only
    /// from a regular file within [`MAX_TASK_FILE`] that parses, at most [`MAX_TASKS`], and
    /// notes each refused file.
    #[test]
    fn generated_stores_give_only_the_tasks_of_regular_bounded_files() {
        let root = tempfile::tempdir().unwrap();
        let mut seed = 0x7a5c_0001_dead_0042_u64;
        for round in 0..20 {
            let dir = root.path().join(format!("s{round}"));
            fs::create_dir_all(&dir).unwrap();
            let mut expected = 0;
            let mut refused = 0;
            for n in 0..(seed % 30) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let path = dir.join(format!("{n}.json"));
                let task = serde_json::json!({"id": n.to_string(), "subject": format!("task {n}"),
                                              "status": "pending"})
                .to_string();
                match seed % 7 {
                    0 => {
                        // Padded past the limit.
                        let pad = " ".repeat(MAX_TASK_FILE as usize);
                        fs::write(&path, format!("{task}{pad}")).unwrap();
                        refused += 1;
                    }
                    1 => fs::write(&path, &task[..task.len() / 2]).unwrap(),
                    #[cfg(unix)]
                    2 => {
                        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
                        refused += 1;
                    }
                    #[cfg(unix)]
                    3 => {
                        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
                        // SAFETY: a valid NUL-terminated path.
                        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
                        refused += 1;
                    }
                    4 => {
                        fs::create_dir(&path).unwrap();
                        refused += 1;
                    }
                    _ => {
                        fs::write(&path, &task).unwrap();
                        expected += 1;
                    }
                }
            }
            let _ = crate::diag::take_refused();
            let tasks = read(&dir).unwrap();
            assert_eq!(tasks.len(), expected.min(MAX_TASKS), "round {round}");
            assert!(tasks.iter().all(|t| t.content.starts_with("task ")));
            assert_eq!(
                crate::diag::take_refused().len(),
                refused.min(8),
                "round {round}"
            );
        }
    }

    #[test]
    fn odd_session_ids_name_no_directory() {
        let root = Path::new("/c");
        assert!(dir(root, "../x").is_none());
        assert!(dir(root, "").is_none());
        assert!(dir(root, "a/b").is_none());
        assert_eq!(dir(root, "abc-1").unwrap(), Path::new("/c/tasks/abc-1"));
    }
}
