//! A pi session, kept in Claude Code's transcript form beside the session's state
//! (`sessions/<id>/pi-transcript.jsonl`), so every reader reads it as it reads a transcript
//! ([`super::session`] says what each entry becomes). The copy is brought up to date at each
//! hook: only the lines pi appended since are read (the file's identity, the offset read up to
//! and a hash of the bytes before it are kept in `pi-transcript.state.json`), and a file pi
//! rewrote is read afresh into a new copy that replaces the old one atomically. Lines longer than
//! a transcript line may be are skipped unread; memory stays bounded whatever the file's size.
//! It is ctxguard's own file, under its state root, and goes with the session's state.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::session::{self, State};
use crate::files;
use crate::paths::Paths;
use crate::reading::seal;
use crate::transcript::MAX_LINE;

use crate::input::is_pi_session_name as is_session_name;
/// The copy's file name: [`crate::input::Client::of_transcript`] knows a pi session by it.
pub use crate::input::PI_COPY_NAME as COPY_NAME;

/// Where the copy's reading stands.
const STATE_NAME: &str = "pi-transcript.state.json";

/// Held while the copy is brought up to date.
const LOCK_NAME: &str = "pi-transcript.lock";

/// How long a hook waits for another one bringing the same copy up to date.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// At most this much of pi's file is read into the copy by one hook: a long session met for
/// the first time (ctxguard installed midway) is caught up over several calls, each well
/// within the extension's time bound, instead of one that bound would cut off every time.
const MAX_PER_CALL: u64 = 32 * 1024 * 1024;

/// What was read of pi's file, and into what.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct Progress {
    /// pi's file, as the hook named it.
    source: String,
    dev: u64,
    ino: u64,
    /// The end of the last complete line read.
    offset: u64,
    seal: u64,
    /// The copy's length when this was written (a copy changed behind ctxguard's back is made
    /// afresh).
    copy_len: u64,
    /// `offset` lies inside a line too long to keep, skipped on to its end.
    skipping: bool,
    /// What the reader carries from line to line.
    state: State,
}

/// Is `path` a pi session file (not ctxguard's copy of one)?
pub fn is_pi_source(path: &str) -> bool {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    is_session_name(name)
}

/// The copy of `source` (pi's session file) for session `session_id`, brought up to date; its
/// path (the copy may not exist yet: pi writes its file only after the first reply).
pub fn up_to_date(paths: &Paths, session_id: &str, source: &Path) -> Result<PathBuf> {
    let dir = paths.session_dir(session_id);
    files::ensure_state_dir(paths.root(), &dir)?;
    let copy = dir.join(COPY_NAME);
    let _lock = crate::marker::lock_within(&dir.join(LOCK_NAME), LOCK_WAIT)?;
    let (mut file, len) = match files::open_regular(source, "pi's session file") {
        Ok(opened) => opened,
        Err(e) if files::is_not_found(&e) => return Ok(copy),
        Err(e) => return Err(e),
    };
    let (dev, ino) = files::identity(&file)?;
    let state_path = dir.join(STATE_NAME);
    let progress: Option<Progress> = files::read_state_file_in(paths.root(), &state_path, "pi")
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let copy_len = std::fs::symlink_metadata(&copy).map_or(0, |m| m.len());
    let source_name = source.display().to_string();
    let continues = progress.filter(|p| {
        p.source == source_name
            && (p.dev, p.ino) == (dev, ino)
            && p.offset <= len
            && p.copy_len == copy_len
            && seal(&mut file, p.offset).is_ok_and(|s| s == p.seal)
    });
    let read = |file: &mut File, from: u64, skipping, state: &mut State, out: &mut dyn Write| {
        file.seek(SeekFrom::Start(from))?;
        let share = (len - from).min(MAX_PER_CALL);
        convert(&mut BufReader::new(file.take(share)), state, out, skipping)
    };
    if continues.as_ref().is_some_and(|p| p.offset == len) {
        // Nothing appended (most calls): nothing more is read, not even the branch.
        return Ok(copy);
    }
    // The branch of the session's directory, given to the records read now.
    let cwd = match &continues {
        Some(p) => Some(p.state.cwd.clone()),
        None => header_cwd(&mut file),
    };
    let mut state = State {
        branch: branch_of(cwd.as_deref().filter(|c| !c.is_empty()).map(Path::new)),
        ..State::default()
    };
    let (offset, copy_len, skipping) = if let Some(p) = &continues {
        state = State {
            branch: state.branch,
            ..p.state.clone()
        };
        let mut out = files::open_append(&copy)?;
        let mut buf = Vec::new();
        let (used, skipping) = read(&mut file, p.offset, p.skipping, &mut state, &mut buf)?;
        out.write_all(&buf)
            .with_context(|| format!("writing {}", copy.display()))?;
        (p.offset + used, copy_len + buf.len() as u64, skipping)
    } else {
        let mut temp = tempfile::NamedTempFile::new_in(&dir)
            .with_context(|| format!("creating a file in {}", dir.display()))?;
        let (used, skipping) = {
            let mut out = std::io::BufWriter::new(temp.as_file_mut());
            let read = read(&mut file, 0, false, &mut state, &mut out)?;
            out.flush()?;
            read
        };
        let written = temp.as_file().metadata()?.len();
        temp.persist(&copy)
            .with_context(|| format!("replacing {}", copy.display()))?;
        (used, written, skipping)
    };
    let progress = Progress {
        source: source_name,
        dev,
        ino,
        offset,
        seal: seal(&mut file, offset)?,
        copy_len,
        skipping,
        state,
    };
    let bytes = serde_json::to_vec(&progress).context("encoding pi's reading")?;
    files::replace_cache(&state_path, &bytes)?;
    Ok(copy)
}

/// A pi session file read whole into a temporary copy, for a manual command (`usage`,
/// `replay`): the copy lives as long as this value.
pub struct Copy {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
    pub session_id: String,
    /// The directory the session's header names (whose `.pi/settings.json` pi reads).
    pub cwd: String,
    /// The newest model the session names (`provider/id`).
    pub model: Option<String>,
}

/// The copy of the pi session file at `source`, made in a temporary directory.
pub fn temporary(source: &Path) -> Result<Copy> {
    let (mut file, len) = files::open_regular(source, "pi's session file")?;
    let cwd = header_cwd(&mut file);
    let mut state = State {
        branch: branch_of(cwd.as_deref().filter(|c| !c.is_empty()).map(Path::new)),
        ..State::default()
    };
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let path = dir.path().join(COPY_NAME);
    let mut out = std::io::BufWriter::new(
        File::create(&path).with_context(|| format!("creating {}", path.display()))?,
    );
    file.seek(SeekFrom::Start(0))?;
    convert(
        &mut BufReader::new(file.take(len)),
        &mut state,
        &mut out,
        false,
    )
    .with_context(|| format!("reading {}", source.display()))?;
    out.flush()?;
    Ok(Copy {
        _dir: dir,
        path,
        session_id: state.session_id,
        cwd: state.cwd,
        model: state.model,
    })
}

/// Converts the complete lines `input` holds into records on `out`; the bytes used (up to the
/// end of the last complete line). A line longer than [`MAX_LINE`] is skipped, never held.
/// `skipping`: the input starts inside a line being skipped (it goes on to its end); the same
/// is returned of where the input ended (the bytes used then include that line's so far).
fn convert(
    input: &mut dyn BufRead,
    state: &mut State,
    out: &mut dyn Write,
    mut skipping: bool,
) -> Result<(u64, bool)> {
    let (mut consumed, mut used) = (0u64, 0u64);
    let mut line = Vec::new();
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            // A line being skipped is skipped on from here next time; a last line without its
            // newline is still being written (or cut by this call's share): read it next time.
            return Ok(if skipping {
                (consumed, true)
            } else {
                (used, false)
            });
        }
        let (take, ends) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if !skipping {
            if line.len() + take > MAX_LINE + 1 {
                skipping = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(&chunk[..take]);
            }
        }
        input.consume(take);
        consumed += take as u64;
        if ends {
            if !skipping {
                let text = line.strip_suffix(b"\n").unwrap_or(&line);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                for record in session::records(text, state) {
                    out.write_all(record.as_bytes())?;
                    out.write_all(b"\n")?;
                }
            }
            line.clear();
            skipping = false;
            used = consumed;
        }
    }
}

/// The directory the header of the pi session file at `path` names.
pub fn session_cwd(path: &Path) -> Option<String> {
    let (mut file, _) = files::open_regular(path, "pi's session file").ok()?;
    header_cwd(&mut file)
}

/// The directory a session file's header names (its first line, read bounded).
fn header_cwd(file: &mut File) -> Option<String> {
    file.seek(SeekFrom::Start(0)).ok()?;
    let mut head = Vec::new();
    file.take(64 * 1024).read_to_end(&mut head).ok()?;
    let first = head.split(|b| *b == b'\n').next()?;
    let v: serde_json::Value = serde_json::from_slice(first).ok()?;
    (v.get("type")?.as_str()? == "session").then(|| v.get("cwd")?.as_str().map(str::to_string))?
}

/// The branch checked out in `dir` (its `.git/HEAD`, or a worktree's `gitdir:`): the name after
/// `ref: refs/heads/`, `HEAD` when detached; `None` outside a repository.
fn branch_of(dir: Option<&Path>) -> Option<String> {
    let dir = dir?;
    let dot_git = dir.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        let text = files::read_regular(&dot_git, "a .git file", 4096).ok()??;
        let text = String::from_utf8_lossy(&text);
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        dir.join(target)
    };
    let head = files::read_regular(&git_dir.join("HEAD"), "a git HEAD", 4096).ok()??;
    let head = String::from_utf8_lossy(&head);
    let head = head.trim();
    Some(match head.strip_prefix("ref: refs/heads/") {
        Some(name) if !name.is_empty() => name.chars().take(200).collect(),
        _ => "HEAD".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pi_session_is_known_by_its_file_name() {
        let name = "2026-12-01T21-55-55-409Z_01a2339b-7390-72d2-9bf7-8ed8a20a51ce.jsonl";
        assert!(is_session_name(name));
        assert!(is_pi_source(&format!("/h/.pi/agent/sessions/--p--/{name}")));
        for other in [
            "rollout-2026-06-06T20-37-47-019e9ea7-f3e7-7463-8542-41b2e0fcb033.jsonl",
            "225d8c26-5cbd-4b52-b720-e8fe94443567.jsonl",
            "2026-12-01T21-55-55-409Z_.jsonl",
            "2026-12-01T21-55-55-409Z_x/y.jsonl",
            "2026-12-01T21:55:55.409Z_01a2.jsonl",
        ] {
            assert!(!is_session_name(other), "{other}");
        }
    }

    #[test]
    fn only_complete_lines_are_converted_and_an_overlong_one_is_skipped() {
        let mut input = Vec::new();
        input.extend_from_slice(br#"{"type":"session","id":"s","cwd":"/p"}"#);
        input.push(b'\n');
        input.extend_from_slice(br#"{"type":"label","id":"l1","parentId":null,"timestamp":"t"}"#);
        input.push(b'\n');
        input.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        input.push(b'\n');
        input.extend_from_slice(br#"{"type":"label","id":"l2","parentId":"l1","timestamp":"t"}"#);
        input.push(b'\n');
        input.extend_from_slice(br#"{"type":"label","id":"l3""#);
        let mut out = Vec::new();
        let mut state = State::default();
        let (used, skipping) = convert(&mut &input[..], &mut state, &mut out, false).unwrap();
        assert!(!skipping);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.contains("\"l2\""));
        assert_eq!(state.session_id, "s");
        // Up to the end of the last complete line: the torn one is read next time.
        assert_eq!(
            used as usize,
            input.len() - br#"{"type":"label","id":"l3""#.len()
        );
    }

    #[test]
    fn a_line_too_long_cut_by_a_calls_share_is_skipped_on_the_next() {
        let mut first = br#"{"type":"session","id":"s","cwd":"/p"}"#.to_vec();
        first.push(b'\n');
        let long_start = first.len();
        first.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        let mut state = State::default();
        let mut out = Vec::new();
        // The share ends inside the long line: all of it counts as read, and skipping goes on.
        let (used, skipping) = convert(&mut &first[..], &mut state, &mut out, false).unwrap();
        assert_eq!((used as usize, skipping), (first.len(), true));
        assert!(used as usize > long_start);
        let rest =
            b"xxxx\n{\"type\":\"label\",\"id\":\"l1\",\"parentId\":null,\"timestamp\":\"t\"}\n";
        let (used, skipping) = convert(&mut &rest[..], &mut state, &mut out, true).unwrap();
        assert_eq!((used as usize, skipping), (rest.len(), false));
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("\"l1\""));
    }
}
