//! The state root (`$CTXGUARD_HOME`, default `~/.claude-memory/ctxguard`) and the locations
//! derived from it that several modules share (the config file, the sessions directory), plus
//! the session-id sanitiser that keeps every per-session path inside that root. Session ids come
//! from hook payloads, so they are untrusted input. Locations only one module uses are named
//! there (checkpoints in `checkpoint::store`, logs in `daily_log`, learned windows in `facts`).

use std::path::{Path, PathBuf};

/// The user's home directory as Claude Code finds it (Node's `os.homedir()`): `$HOME` on Unix,
/// `%USERPROFILE%` on Windows, else what the system records for the user.
pub fn home_dir() -> Option<PathBuf> {
    #[cfg(windows)]
    if let Some(profile) = std::env::var_os("USERPROFILE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(profile));
    }
    dirs::home_dir()
}

/// The state root and what lives under it.
#[derive(Debug, Clone)]
pub struct Paths {
    root: PathBuf,
}

impl Paths {
    pub fn new(root: PathBuf) -> Paths {
        Paths { root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.json")
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// `sessions/<safe id>/`: the only place per-session state is written.
    pub fn session_dir(&self, session_id: &str) -> PathBuf {
        self.sessions_dir().join(safe_session_id(session_id))
    }
}

/// Longest id used verbatim as a directory name.
const MAX_PLAIN_LEN: usize = 64;
/// How much of a hashed id's readable prefix is kept.
const HASHED_PREFIX_LEN: usize = 24;

/// Maps a session id to a single, safe directory name.
///
/// Ids made only of `[a-z0-9-]` (Claude Code's UUIDs), up to 64 characters, are used as they
/// are. Every other id (upper case, `.`, `/`, NUL, unicode, empty, over-long, a reserved device
/// name) becomes `~<readable prefix>~<128-bit FNV-1a hash of the raw bytes>`. The `~` cannot occur
/// in a plain name, so the two forms never meet, and two ids that differ in any byte (case
/// included, which matters on case-insensitive file systems) get different names.
pub fn safe_session_id(id: &str) -> String {
    let plain = !id.is_empty()
        && id.len() <= MAX_PLAIN_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !is_reserved_name(id);
    if plain {
        return id.to_string();
    }
    let prefix: String = id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(HASHED_PREFIX_LEN)
        .collect::<String>()
        .to_ascii_lowercase();
    format!("~{prefix}~{:032x}", fnv1a_128(id.as_bytes()))
}

/// Is `name` one [`safe_session_id`] can give (a session's or a directory's state folder)?
pub fn is_safe_session_id(name: &str) -> bool {
    if safe_session_id(name) == name {
        return true;
    }
    let Some((prefix, hash)) = name.strip_prefix('~').and_then(|rest| rest.split_once('~')) else {
        return false;
    };
    prefix.len() <= HASHED_PREFIX_LEN
        && prefix
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && hash.len() == 32
        && hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Names some platforms treat as devices (Windows) or that tools trip over.
fn is_reserved_name(id: &str) -> bool {
    let stem = id.split('.').next().unwrap_or(id);
    matches!(stem, "con" | "prn" | "aux" | "nul")
        || ((stem.starts_with("com") || stem.starts_with("lpt"))
            && stem.len() == 4
            && stem.as_bytes()[3].is_ascii_digit())
}

fn fnv1a_128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    bytes
        .iter()
        .fold(OFFSET, |h, b| (h ^ u128::from(*b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::path::Component;

    fn is_single_normal_component(name: &str) -> bool {
        let mut comps = Path::new(name).components();
        matches!(comps.next(), Some(Component::Normal(_))) && comps.next().is_none()
    }

    #[test]
    fn every_safe_id_is_recognised_and_nothing_else() {
        for id in [
            "225d8c26-5cbd-4b52-b720-e8fe94443567",
            "UPPER",
            "a/b",
            "",
            "con",
            "/home/user/proj",
            &"x".repeat(300),
            "日本",
        ] {
            assert!(is_safe_session_id(&safe_session_id(id)), "{id:?}");
        }
        for name in [
            "",
            "Photos",
            "my notes",
            "a.b",
            "con",
            "~x~",
            "~x~0123",
            "~UP~0123456789abcdef0123456789abcdef",
            "~x~0123456789abcdef0123456789abcdeg",
        ] {
            assert!(!is_safe_session_id(name), "{name:?}");
        }
    }

    #[test]
    fn uuids_are_kept_verbatim() {
        let id = "225d8c26-5cbd-4b52-b720-e8fe94443567";
        assert_eq!(safe_session_id(id), id);
    }

    #[test]
    fn hostile_ids_stay_one_component_inside_the_root() {
        let long = "a".repeat(4096);
        let ids = [
            "",
            ".",
            "..",
            "../x",
            "../../etc",
            "/abs/path",
            "a/b",
            "a\0b",
            "con",
            "CON",
            "com1",
            "lpt9.txt",
            "nul",
            "ÄÖü-ß",
            "日本語",
            "a\\b",
            "~x~0",
            &long,
            " ",
            "-",
            "a\nb",
        ];
        for id in ids {
            let safe = safe_session_id(id);
            assert!(is_single_normal_component(&safe), "{id:?} -> {safe:?}");
            assert!(
                !safe.contains('/') && !safe.contains('\0'),
                "{id:?} -> {safe:?}"
            );
            assert!(safe.len() <= 80, "{id:?} -> {} bytes", safe.len());
            assert!(safe != "." && safe != "..");
        }
        assert!(safe_session_id("../x").starts_with("~x~"));
    }

    #[test]
    fn distinct_ids_never_share_a_name() {
        let long_a = "a".repeat(4096);
        let long_b = format!("{}b", "a".repeat(4095));
        let ids = [
            "abc", "ABC", "Abc", "a/b", "a_b", "ab", "a b", "", ".", "..", "con", "Con", "~abc~0",
            &long_a, &long_b,
        ];
        let names: HashSet<String> = ids.iter().map(|i| safe_session_id(i)).collect();
        assert_eq!(names.len(), ids.len());
        // Case-insensitive file systems: no two names may differ only by case either.
        let folded: HashSet<String> = names.iter().map(|n| n.to_lowercase()).collect();
        assert_eq!(folded.len(), ids.len());
    }

    #[test]
    fn session_dir_is_under_sessions() {
        let p = Paths::new(PathBuf::from("/state"));
        assert_eq!(
            p.session_dir("../../etc"),
            PathBuf::from("/state/sessions").join(safe_session_id("../../etc"))
        );
        assert!(p.session_dir("/abs").starts_with("/state/sessions/"));
    }
}
