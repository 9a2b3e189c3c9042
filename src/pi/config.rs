//! pi's own files, read the way pi reads them: its agent directory (`$PI_CODING_AGENT_DIR`, else
//! `~/.pi/agent`), the compaction settings of `settings.json` (the global file's, overridden by
//! the project's `.pi/settings.json`, objects merged), and a model's `contextWindow` in
//! `models.json`. pi compacts when a reply's `totalTokens > contextWindow − reserveTokens`
//! (`compaction.js` `shouldCompact`, 0.73.1 and 1.6.0 alike). Pure but for the bounded reads.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::files;

/// A settings or models file larger than this is not read (a real one is a few kilobytes).
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// `compaction.reserveTokens` when no settings file sets it.
const DEFAULT_RESERVE: u64 = 16_384;

/// The window pi gives a custom model of `models.json` that sets no `contextWindow`.
const CUSTOM_MODEL_WINDOW: u64 = 128_000;

/// pi's agent directory: `$PI_CODING_AGENT_DIR` when set, else `~/.pi/agent`.
pub fn agent_dir(var: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    var.map(Path::to_path_buf)
        .or_else(|| home.map(|h| h.join(".pi").join("agent")))
}

/// pi's agent directory for this environment (see [`agent_dir`]).
pub fn agent_dir_of(env: &crate::config::Env) -> Option<PathBuf> {
    agent_dir(env.pi_agent_dir_var.as_deref(), env.home.as_deref())
}

/// `~` and `~/…` as pi expands them (`expandTildePath`).
fn tilde(path: &str, home: Option<&Path>) -> PathBuf {
    match (path, home) {
        ("~", Some(home)) => home.to_path_buf(),
        (p, Some(home)) if p.starts_with("~/") => home.join(&p[2..]),
        (p, _) => PathBuf::from(p),
    }
}

/// Where pi keeps its sessions, as its `main.js` decides when no `--session-dir` is given:
/// `$PI_CODING_AGENT_SESSION_DIR`, else the settings' `sessionDir` (the global file's: the
/// project's is not known here), both with `~` expanded; sessions lie directly in such a
/// folder. Else `sessions/` in the agent directory, one `--<cwd>--` folder per project.
pub fn sessions_dir_of(env: &crate::config::Env) -> Option<PathBuf> {
    let home = env.home.as_deref();
    if let Some(dir) = &env.pi_session_dir_var {
        return Some(tilde(&dir.to_string_lossy(), home));
    }
    let agent = agent_dir_of(env)?;
    let set = read_text(&global_settings(&agent), "pi's settings.json")
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.get("sessionDir")?.as_str().map(str::to_string))
        .filter(|d| !d.trim().is_empty());
    Some(match set {
        Some(d) => tilde(&d, home),
        None => agent.join("sessions"),
    })
}

/// The global settings file in the agent directory.
fn global_settings(agent_dir: &Path) -> PathBuf {
    agent_dir.join("settings.json")
}

/// A project's settings file.
fn project_settings(project: &Path) -> PathBuf {
    project.join(".pi").join("settings.json")
}

/// The custom models file in the agent directory.
fn models_file(agent_dir: &Path) -> PathBuf {
    agent_dir.join("models.json")
}

/// What pi's settings say about compaction and the default model, each value with the file
/// that set it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Settings {
    /// `compaction.enabled` (pi's default: on).
    pub enabled: Option<(bool, String)>,
    /// `compaction.reserveTokens`.
    pub reserve: Option<(u64, String)>,
    /// `compaction.keepRecentTokens`.
    pub keep_recent: Option<(u64, String)>,
    /// `defaultProvider` and `defaultModel`.
    pub default_provider: Option<String>,
    pub default_model: Option<String>,
    /// The files read, in pi's order (global, then project); a file that does not parse is
    /// named in `unreadable` and sets nothing.
    pub read: Vec<PathBuf>,
    pub unreadable: Vec<PathBuf>,
}

impl Settings {
    /// Is compaction on (pi's default when unset)?
    pub fn compaction_enabled(&self) -> bool {
        self.enabled.as_ref().is_none_or(|(on, _)| *on)
    }

    /// `reserveTokens`, pi's default when unset.
    pub fn reserve_tokens(&self) -> u64 {
        self.reserve.as_ref().map_or(DEFAULT_RESERVE, |(r, _)| *r)
    }
}

/// Merges `over` into `base` as pi merges a project's settings into the global ones: an object
/// into an object key by key, anything else replaced.
fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

/// The settings in the texts of pi's settings files (`(path, text)`, global first): merged, then
/// read. A text that is no JSON object sets nothing.
fn settings_of(texts: &[(PathBuf, String)]) -> Settings {
    let mut out = Settings::default();
    let mut merged = Value::Object(Map::new());
    // Which file set each compaction key last (the project's over the global's).
    let origin = |key: &str, doc: &Value, path: &Path, slot: &mut Option<String>| {
        if doc.pointer(key).is_some() {
            *slot = Some(path.display().to_string());
        }
    };
    let (mut from_enabled, mut from_reserve, mut from_keep) = (None, None, None);
    for (path, text) in texts {
        match serde_json::from_str::<Value>(text) {
            Ok(doc @ Value::Object(_)) => {
                origin("/compaction/enabled", &doc, path, &mut from_enabled);
                origin("/compaction/reserveTokens", &doc, path, &mut from_reserve);
                origin("/compaction/keepRecentTokens", &doc, path, &mut from_keep);
                merge(&mut merged, doc);
                out.read.push(path.clone());
            }
            _ => out.unreadable.push(path.clone()),
        }
    }
    let tokens = |key: &str| merged.pointer(key).and_then(Value::as_u64);
    out.enabled = merged
        .pointer("/compaction/enabled")
        .and_then(Value::as_bool)
        .zip(from_enabled);
    out.reserve = tokens("/compaction/reserveTokens").zip(from_reserve);
    out.keep_recent = tokens("/compaction/keepRecentTokens").zip(from_keep);
    let text = |key: &str| {
        merged
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    out.default_provider = text("defaultProvider");
    out.default_model = text("defaultModel");
    out
}

/// A file's text when it exists and is readable (bounded, never blocking); `None` otherwise.
fn read_text(path: &Path, what: &str) -> Option<String> {
    files::read_regular(path, what, MAX_FILE_BYTES)
        .ok()
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// pi's settings for a session in `project` (the global file, then the project's).
pub fn settings(agent_dir: Option<&Path>, project: Option<&Path>) -> Settings {
    let mut texts = Vec::new();
    if let Some(dir) = agent_dir {
        let path = global_settings(dir);
        if let Some(text) = read_text(&path, "pi's settings.json") {
            texts.push((path, text));
        }
    }
    if let Some(project) = project {
        let path = project_settings(project);
        if let Some(text) = read_text(&path, "pi's project settings.json") {
            texts.push((path, text));
        }
    }
    settings_of(&texts)
}

/// The window `models.json` (its text) gives `model` of `provider`: the model's
/// `contextWindow`, [`CUSTOM_MODEL_WINDOW`] when the model is there without one; `None` when
/// the file does not define the model (a built-in one, whose window only pi knows).
fn model_window_in(text: &str, provider: Option<&str>, model: &str) -> Option<u64> {
    let doc: Value = serde_json::from_str(text).ok()?;
    let providers = doc.get("providers")?.as_object()?;
    let found = providers
        .iter()
        .filter(|(name, _)| provider.is_none_or(|p| p == name.as_str()))
        .filter_map(|(_, p)| p.get("models")?.as_array())
        .flatten()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))?;
    Some(
        found
            .get("contextWindow")
            .and_then(Value::as_u64)
            .filter(|w| *w > 0)
            .unwrap_or(CUSTOM_MODEL_WINDOW),
    )
}

/// The window of `model` (`provider/id` or a bare id) from `models.json` in `agent_dir`.
pub fn model_window(agent_dir: &Path, model: &str) -> Option<u64> {
    let (provider, id) = split_model(model);
    let text = read_text(&models_file(agent_dir), "pi's models.json")?;
    model_window_in(&text, provider, id)
}

/// `provider/id` split at its first slash (an id may hold slashes of its own: `openrouter`'s
/// `anthropic/claude-sonnet-4`); a bare id has no provider.
fn split_model(model: &str) -> (Option<&str>, &str) {
    match model.split_once('/') {
        Some((p, id)) if !p.is_empty() && !id.is_empty() => (Some(p), id),
        _ => (None, model),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(items: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
        items
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect()
    }

    #[test]
    fn the_project_settings_override_the_global_ones_key_by_key() {
        let s = settings_of(&texts(&[
            (
                "/a/settings.json",
                r#"{"defaultProvider":"mock","defaultModel":"m1",
                    "compaction":{"enabled":true,"reserveTokens":4000,"keepRecentTokens":100}}"#,
            ),
            (
                "/p/.pi/settings.json",
                r#"{"compaction":{"reserveTokens":8000}}"#,
            ),
        ]));
        assert_eq!(s.reserve, Some((8000, "/p/.pi/settings.json".into())));
        assert_eq!(s.keep_recent, Some((100, "/a/settings.json".into())));
        assert_eq!(s.enabled, Some((true, "/a/settings.json".into())));
        assert_eq!(s.default_model.as_deref(), Some("m1"));
        assert_eq!(s.reserve_tokens(), 8000);
        assert!(s.compaction_enabled());
    }

    #[test]
    fn unset_or_unreadable_settings_leave_pi_defaults() {
        let s = settings_of(&texts(&[
            ("/a/settings.json", "{not json"),
            (
                "/p/.pi/settings.json",
                r#"{"compaction":{"enabled":false}}"#,
            ),
        ]));
        assert_eq!(s.unreadable, vec![PathBuf::from("/a/settings.json")]);
        assert_eq!(s.reserve_tokens(), DEFAULT_RESERVE);
        assert!(!s.compaction_enabled());
        // A project object over a global number replaces it, as pi's merge does.
        let s = settings_of(&texts(&[
            ("/a", r#"{"compaction":5}"#),
            ("/b", r#"{"compaction":{"reserveTokens":1}}"#),
        ]));
        assert_eq!(s.reserve_tokens(), 1);
    }

    #[test]
    fn a_custom_model_has_its_window_or_pis_default() {
        let text = r#"{"providers":{
            "mock":{"models":[{"id":"mock-model","contextWindow":40000},{"id":"bare"}]},
            "other":{"models":[{"id":"mock-model","contextWindow":99}]}}}"#;
        assert_eq!(
            model_window_in(text, Some("mock"), "mock-model"),
            Some(40_000)
        );
        assert_eq!(model_window_in(text, Some("other"), "mock-model"), Some(99));
        assert_eq!(
            model_window_in(text, Some("mock"), "bare"),
            Some(CUSTOM_MODEL_WINDOW)
        );
        assert_eq!(model_window_in(text, Some("mock"), "gpt-x"), None);
        assert_eq!(model_window_in("[]", None, "m"), None);
        assert_eq!(
            split_model("openrouter/anthropic/c"),
            (Some("openrouter"), "anthropic/c")
        );
        assert_eq!(split_model("bare"), (None, "bare"));
    }

    #[test]
    fn the_agent_dir_is_the_variable_else_under_home() {
        let home = Path::new("/h");
        assert_eq!(
            agent_dir(None, Some(home)),
            Some(PathBuf::from("/h/.pi/agent"))
        );
        assert_eq!(
            agent_dir(Some(Path::new("/x")), Some(home)),
            Some(PathBuf::from("/x"))
        );
    }
}
