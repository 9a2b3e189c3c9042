//! The settings files Claude Code reads, in its precedence order, and each one read and parsed
//! (or why it cannot be used).
//!
//! A project's settings come from a repository anyone may have written, and git keeps a
//! symlink: `.claude/settings.json -> /dev/zero` or a FIFO there must neither exhaust memory
//! nor block a hook. A settings file is read as [`crate::files::read_regular`] reads: through a
//! link (dotfile managers make the user's a link), only when it resolves to a regular file, at
//! most [`MAX_SETTINGS`] bytes, without blocking; anything else is refused and said.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::env::{Origin, Reading, Window};

/// Where Claude Code looks for the organisation's managed settings.
#[cfg(target_os = "macos")]
pub const MANAGED_SETTINGS: &str = "/Library/Application Support/ClaudeCode/managed-settings.json";
#[cfg(windows)]
pub const MANAGED_SETTINGS: &str = r"C:\Program Files\ClaudeCode\managed-settings.json";
#[cfg(not(any(target_os = "macos", windows)))]
pub const MANAGED_SETTINGS: &str = "/etc/claude-code/managed-settings.json";

/// A settings file larger than this is refused unread. Those in use are a few KiB; a user's
/// with a large `env` or permission list stays far below (`install` is tested on 8 MB).
pub const MAX_SETTINGS: u64 = 16 * 1024 * 1024;

/// Which settings file, in the client's precedence order (a later one wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// `~/.claude/settings.json`
    User,
    /// `.claude/settings.json` in the project
    Project,
    /// `.claude/settings.local.json` in the project
    Local,
    /// The organisation's [`MANAGED_SETTINGS`]
    Managed,
}

/// The settings files Claude Code reads for a project, lowest precedence first (present or not).
pub fn locations(
    home: Option<&Path>,
    project: Option<&Path>,
    managed: &Path,
) -> Vec<(Scope, PathBuf)> {
    let mut out = Vec::new();
    let user = home.map(|home| home.join(".claude").join("settings.json"));
    if let Some(user) = &user {
        out.push((Scope::User, user.clone()));
    }
    if let Some(project) = project {
        let dir = project.join(".claude");
        let shared = dir.join("settings.json");
        // A session in the home directory: its project settings are the user's, read once.
        if !user.as_deref().is_some_and(|u| same_file(u, &shared)) {
            out.push((Scope::Project, shared));
        }
        out.push((Scope::Local, dir.join("settings.local.json")));
    }
    out.push((Scope::Managed, managed.to_path_buf()));
    out
}

/// The same path, or two paths to the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || match (fs::canonicalize(a), fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}

/// Why a settings file that exists cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    Unreadable(String),
    /// Not a regular file once resolved (a FIFO, a device, a directory), or too large: ctxguard
    /// does not read it, whatever the client does.
    Refused(String),
    NotJson(String),
    NotObject,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Unreadable(e) => write!(f, "cannot be read ({e})"),
            Problem::Refused(why) => write!(f, "is {why}: ctxguard does not read it"),
            Problem::NotJson(e) => write!(f, "is not valid JSON ({e})"),
            Problem::NotObject => f.write_str("is not a JSON object"),
        }
    }
}

/// One settings file that exists, parsed (or why not).
#[derive(Debug, Clone)]
pub struct SettingsFile {
    pub scope: Scope,
    pub path: PathBuf,
    pub contents: Result<Map<String, Value>, Problem>,
}

impl SettingsFile {
    /// `None` when there is no file. A file that is not a regular one once resolved, or is
    /// larger than [`MAX_SETTINGS`], is refused unread, and the refusal noted
    /// ([`crate::diag::refused`]).
    pub fn read(scope: Scope, path: PathBuf) -> Option<SettingsFile> {
        let contents = match crate::files::read_regular(&path, "settings", MAX_SETTINGS) {
            Ok(Some(bytes)) => parse(&bytes),
            Ok(None) => return None,
            Err(e) => Err(problem(&e)),
        };
        if let Err(Problem::Refused(why)) = &contents {
            crate::diag::refused(&format!("settings {} not read: {why}", path.display()));
        }
        Some(SettingsFile {
            scope,
            path,
            contents,
        })
    }

    /// A file with this text (for tests, which build settings from literals).
    #[cfg(test)]
    pub fn literal(scope: Scope, path: &str, text: &str) -> SettingsFile {
        SettingsFile {
            scope,
            path: PathBuf::from(path),
            contents: parse(text.as_bytes()),
        }
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.contents.as_ref().ok()?.get(key)
    }

    /// This file's top-level `autoCompactWindow`, if it sets one.
    pub fn compact_window(&self) -> Option<Reading<Window>> {
        let value = self.get("autoCompactWindow")?;
        Some(Reading {
            origin: Origin::Setting {
                key: "autoCompactWindow".into(),
                file: self.path.clone(),
            },
            raw: value.to_string(),
            value: Window::from_json(value),
        })
    }

    /// This file's `modelSettings.<model>.autoCompactWindow` entries (what `/autocompact`
    /// writes), in its order, each with the model key as written.
    pub fn model_compact_windows(&self) -> Vec<(String, Reading<Window>)> {
        let Some(Value::Object(models)) = self.get("modelSettings") else {
            return Vec::new();
        };
        models
            .iter()
            .filter_map(|(model, entry)| {
                let value = entry.get("autoCompactWindow")?;
                let key = crate::text::cut(&crate::text::sanitize(model, true), 80);
                let reading = Reading {
                    origin: Origin::Setting {
                        key: format!("modelSettings.{key}.autoCompactWindow"),
                        file: self.path.clone(),
                    },
                    raw: value.to_string(),
                    value: Window::from_json(value),
                };
                Some((model.clone(), reading))
            })
            .collect()
    }
}

/// What a failed read means: refused for what the file is or its size, or unreadable
/// (permissions, a link loop, I/O).
fn problem(e: &anyhow::Error) -> Problem {
    if let Some(refusal) = e.downcast_ref::<crate::files::Refusal>() {
        return Problem::Refused(refusal.why.clone());
    }
    match e.chain().find_map(|c| c.downcast_ref::<std::io::Error>()) {
        Some(io) => Problem::Unreadable(io.to_string()),
        None => Problem::Unreadable(format!("{e:#}")),
    }
}

fn parse(bytes: &[u8]) -> Result<Map<String, Value>, Problem> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Problem::NotObject),
        Err(e) => Err(Problem::NotJson(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_follow_the_clients_precedence() {
        let l = locations(
            Some(Path::new("/home/u")),
            Some(Path::new("/p")),
            Path::new("/etc/m.json"),
        );
        let scopes: Vec<Scope> = l.iter().map(|(s, _)| *s).collect();
        assert_eq!(
            scopes,
            [Scope::User, Scope::Project, Scope::Local, Scope::Managed]
        );
        assert!(scopes.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(l[2].1, Path::new("/p/.claude/settings.local.json"));
        assert_eq!(locations(None, None, Path::new("/m")).len(), 1);
    }

    /// Generated settings files: bytes cut, corrupted and padded from a real one, sizes around
    /// the limit, and on Unix FIFOs, devices and directories behind the name. Reading never
    /// panics or blocks; what parses is exactly what is a JSON object in a regular file within
    /// [`MAX_SETTINGS`]; every other kind is refused, and the refusal noted.
    #[test]
    fn generated_settings_files_are_parsed_or_refused_never_more() {
        let dir = tempfile::tempdir().unwrap();
        let real =
            br#"{"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}, "model": "opus", "hooks": {}}"#;
        let mut seed = 0x5eed_0f5e_7711_65aa_u64;
        let _ = crate::diag::take_refused();
        for n in 0..300 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let path = dir.path().join(format!("s{n}.json"));
            let mut bytes = real.to_vec();
            match seed % 8 {
                0 => bytes.truncate((seed >> 8) as usize % real.len()),
                1 => {
                    let at = (seed >> 8) as usize % bytes.len();
                    bytes[at] = (seed >> 20) as u8;
                }
                2 => bytes = b"[1, 2]".to_vec(),
                3 => bytes = vec![0xff, 0xfe, b'{', b'}'],
                // Over the limit (sparse: nothing written but the length).
                4 => bytes.clear(),
                _ => {}
            }
            let oversized = seed % 8 == 4;
            #[cfg(unix)]
            let kind_refused = match (seed >> 32) % 6 {
                0 => {
                    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
                    // SAFETY: a valid NUL-terminated path.
                    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
                    true
                }
                1 => {
                    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
                    true
                }
                2 => {
                    fs::create_dir(&path).unwrap();
                    true
                }
                _ => false,
            };
            #[cfg(not(unix))]
            let kind_refused = false;
            if oversized && !kind_refused {
                let file = fs::File::create(&path).unwrap();
                file.set_len(MAX_SETTINGS + 1 + (seed >> 40) % 1000)
                    .unwrap();
            } else if !kind_refused {
                fs::write(&path, &bytes).unwrap();
            }
            let file = SettingsFile::read(Scope::Project, path.clone()).unwrap();
            let too_large = oversized;
            let object = matches!(
                serde_json::from_slice::<Value>(&bytes),
                Ok(Value::Object(_))
            );
            match &file.contents {
                Ok(_) => assert!(!kind_refused && !too_large && object, "{n}"),
                Err(Problem::Refused(why)) => {
                    assert!(kind_refused || too_large, "{n}: {why}");
                    let notes = crate::diag::take_refused();
                    assert_eq!(notes.len(), 1, "{n}: {notes:?}");
                    assert!(notes[0].contains(&format!("s{n}.json")), "{notes:?}");
                }
                Err(other) => assert!(!kind_refused && !too_large && !object, "{n}: {other}"),
            }
        }
        // At the limit exactly: read and parsed; one byte more: refused.
        let at = dir.path().join("at.json");
        let mut bytes = b" ".repeat(MAX_SETTINGS as usize - 2);
        bytes.splice(0..0, *b"{}");
        fs::write(&at, &bytes).unwrap();
        assert!(SettingsFile::read(Scope::User, at.clone())
            .unwrap()
            .contents
            .is_ok());
        bytes.push(b' ');
        fs::write(&at, &bytes).unwrap();
        assert!(matches!(
            SettingsFile::read(Scope::User, at).unwrap().contents,
            Err(Problem::Refused(_))
        ));
        let _ = crate::diag::take_refused();
    }

    #[test]
    fn a_project_in_the_home_directory_reads_the_user_settings_once() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        fs::create_dir_all(home.join(".claude")).unwrap();
        fs::write(home.join(".claude/settings.json"), "{}").unwrap();
        let scopes = |project: &Path| -> Vec<Scope> {
            locations(Some(&home), Some(project), Path::new("/m"))
                .into_iter()
                .map(|(s, _)| s)
                .collect()
        };
        assert_eq!(scopes(&home), [Scope::User, Scope::Local, Scope::Managed]);
        // Also when named another way (`home/.` here; a symlink alike).
        assert_eq!(
            scopes(&home.join(".")),
            [Scope::User, Scope::Local, Scope::Managed]
        );
        assert_eq!(
            scopes(&dir.path().join("proj")),
            [Scope::User, Scope::Project, Scope::Local, Scope::Managed]
        );
    }
}
