//! Claude Code's own memory folder for a session (auto memory, where the client tells the model
//! to save one file per memory), and where the nudge says to save.

use std::path::{Path, PathBuf};

use super::{resolve, Places, DEFAULT_FILES};
use crate::config::{Config, Env};
use crate::text::{cut, sanitize};

/// Claude Code's own memory ("auto memory", on by default): the folder it tells the model to
/// save one file per memory in, with a `MEMORY.md` index it loads into every session itself.
/// `None` when it is turned off (`autoMemoryEnabled: false`, `CLAUDE_CODE_DISABLE_AUTO_MEMORY`).
pub(super) fn client_memory_dir(
    env: &Env,
    settings: &crate::client::Settings,
    transcript_path: &str,
    cwd: &str,
) -> Option<PathBuf> {
    // Claude Code's auto memory is Claude Code's: a Codex or pi session has none.
    if settings.auto_memory_off().is_some()
        || crate::input::Client::of_transcript(transcript_path) != crate::input::Client::ClaudeCode
    {
        return None;
    }
    // The client takes the value of the first file that sets one, managed settings first then
    // local, project and user (a `null` is no value), and stays on its default folder when it
    // refuses that value. The project's files count for it in a trusted workspace (its
    // `qk()`: the trust dialog accepted, as it is in a session whose hooks run), unless a
    // second condition holds that the carved code does not resolve (`BX()`).
    let setting = settings
        .files
        .iter()
        .rev()
        .find_map(|f| f.get("autoMemoryDirectory").filter(|v| !v.is_null()));
    if let Some(serde_json::Value::String(dir)) = setting {
        if let Some(dir) = crate::client::memory_directory(dir, env.home.as_deref()) {
            return Some(dir);
        }
    }
    // The project's folder is the one its transcripts are in: ~/.claude/projects/<folder>/.
    let client = env.client_dir()?;
    let projects = client.join("projects");
    let folder = Path::new(transcript_path)
        .parent()
        .filter(|p| p.parent() == Some(projects.as_path()))
        .and_then(Path::file_name)
        .map_or_else(
            || {
                cwd.chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                    .collect()
            },
            |f| f.to_string_lossy().into_owned(),
        );
    Some(projects.join(folder).join("memory"))
}

/// The words a nudge uses to say where to save, so what is saved comes back: Claude Code's own
/// memory folder in its format when auto memory is on, else ctxguard's user memory file, which
/// every recovery block shows.
pub(super) fn save_place(client_dir: Option<&Path>, own_file: Option<&Path>) -> String {
    let shown = |p: &Path| cut(&sanitize(&p.display().to_string(), true), 300);
    match (client_dir, own_file) {
        (Some(dir), _) => format!(
            "in Claude Code's memory folder {}: one file per memory, with frontmatter (name, \
             description, metadata.type), and a one-line pointer to it in {}, which Claude Code \
             loads into every session",
            shown(dir),
            shown(&dir.join("MEMORY.md"))
        ),
        (None, Some(file)) => format!(
            "in {} (ctxguard shows it again after every compaction)",
            shown(file)
        ),
        (None, None) => "in your memory file or tool".to_string(),
    }
}

/// [`save_place`] in a few words, for a text the user reads too (the idle nudge: the client
/// shows a Stop hook's context in the TUI): Claude Code's own memory is named by the client's
/// system prompt already, so "your memory" says it; ctxguard's file is named by its path.
pub(super) fn short_place(client_dir: Option<&Path>, own_file: Option<&Path>) -> String {
    match (client_dir, own_file) {
        (Some(_), _) => "your memory".to_string(),
        (None, Some(file)) => cut(&sanitize(&file.display().to_string(), true), 300),
        (None, None) => "your memory file or tool".to_string(),
    }
}

/// Where a session's memories should go (the words of [`save_place`]), and what the user can run
/// to make room: `/compact or /clear`, or `/clear` alone when `DISABLE_COMPACT` is set. Worked
/// out only when a nudge is given.
pub fn save_place_for(
    env: &Env,
    cwd: &str,
    transcript_path: &str,
    config: &Config,
) -> (String, &'static str) {
    let (client, own, make_room) = places_for(env, cwd, transcript_path, config);
    (save_place(client.as_deref(), own.as_deref()), make_room)
}

/// Where a session's memories should go in a few words ([`short_place`]): the idle nudge's.
pub fn short_save_place_for(
    env: &Env,
    cwd: &str,
    transcript_path: &str,
    config: &Config,
) -> String {
    let (client, own, _) = places_for(env, cwd, transcript_path, config);
    short_place(client.as_deref(), own.as_deref())
}

/// The client's memory folder, ctxguard's memory file the nudge may name, and what the user can
/// run to make room.
fn places_for(
    env: &Env,
    cwd: &str,
    transcript_path: &str,
    config: &Config,
) -> (Option<PathBuf>, Option<PathBuf>, &'static str) {
    let project = (!cwd.is_empty()).then(|| Path::new(cwd));
    let settings = crate::facts::client_settings(env, project);
    let make_room = if settings.compact_off() {
        "/clear"
    } else {
        "/compact or /clear"
    };
    let client = client_memory_dir(env, &settings, transcript_path, cwd);
    let files: Vec<String> = config
        .memory_files
        .clone()
        .unwrap_or_else(|| DEFAULT_FILES.iter().map(|f| (*f).to_string()).collect());
    // Codex's default sandbox (workspace-write) lets the agent write inside the project only:
    // there, the first memory file in the project (a relative entry) is where to save.
    let codex = crate::input::Client::of_transcript(transcript_path) == crate::input::Client::Codex;
    let in_project = |f: &&String| !f.starts_with("~/") && !Path::new(f.as_str()).is_absolute();
    let places = Places {
        home: env.home.as_deref(),
        project: project.unwrap_or(Path::new(".")),
    };
    // Only a file ctxguard would read back (never a link, never out of its place): the nudge
    // promises it comes back after the compaction.
    let own = files
        .iter()
        .filter(|f| !codex || in_project(f))
        .map(|f| resolve(f, &places))
        .find(|p| super::read(p, &places).is_ok() && no_link_on_the_way(p, &places));
    (client, own, make_room)
}

/// Claude Code's memory folder for a session in `cwd` whose transcript is `transcript_path`,
/// with the client's settings read as the client reads them; `None` when auto memory is off.
pub fn client_dir_for(env: &Env, cwd: &str, transcript_path: &str) -> Option<PathBuf> {
    let project = (!cwd.is_empty()).then(|| Path::new(cwd));
    let settings = crate::facts::client_settings(env, project);
    client_memory_dir(env, &settings, transcript_path, cwd)
}

/// No directory between the file's place (the project, the home directory) and the file is a
/// link, dangling or not: a file written behind one would be refused when read back.
fn no_link_on_the_way(path: &Path, places: &Places) -> bool {
    let within = |root: &Path| path.starts_with(root);
    let root = if within(places.project) {
        places.project
    } else {
        match places.home {
            Some(home) if within(home) => home,
            _ => return true,
        }
    };
    path.ancestors()
        .skip(1)
        .take_while(|a| *a != root && a.starts_with(root))
        .all(|a| !std::fs::symlink_metadata(a).is_ok_and(|m| m.file_type().is_symlink()))
}
