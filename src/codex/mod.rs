//! Codex CLI's own files, read the way Codex reads them: where it keeps its state
//! (`$CODEX_HOME`, else `~/.codex`) and what its `config.toml` says about compaction
//! (`model_context_window`, `model_auto_compact_token_limit`, at the top level or in the
//! profile `profile` selects). Pure but for the one bounded read of the file.

pub mod hooks;

use std::path::{Path, PathBuf};

use anyhow::Result;
use toml_edit::{DocumentMut, Item, Table};

use crate::files;

/// A `config.toml` larger than this is not read (a real one is a few kilobytes).
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Codex's state directory: `$CODEX_HOME` when set, else `~/.codex`.
pub fn home(codex_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    codex_home
        .map(Path::to_path_buf)
        .or_else(|| home.map(|h| h.join(".codex")))
}

/// `config.toml` in Codex's state directory.
pub fn config_path(codex_home: &Path) -> PathBuf {
    codex_home.join("config.toml")
}

/// What `config.toml` sets for compaction, each value with where it was set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Compaction {
    /// `model_context_window`: the model's window.
    pub window: Option<(u64, String)>,
    /// `model_auto_compact_token_limit`: where Codex compacts (at most 90% of the window).
    pub limit: Option<(u64, String)>,
}

/// A positive integer at `key` in `table`.
fn tokens(table: &Table, key: &str) -> Option<u64> {
    table
        .get(key)
        .and_then(Item::as_integer)
        .and_then(|v| u64::try_from(v).ok())
        .filter(|v| *v > 0)
}

/// What the text of a `config.toml` (`shown` names the file) sets for compaction: the active
/// profile's values over the top level's. A file that does not parse sets nothing.
pub fn compaction(text: &str, shown: &str) -> Compaction {
    let Ok(doc) = text.parse::<DocumentMut>() else {
        return Compaction::default();
    };
    let root = doc.as_table();
    let profile = root.get("profile").and_then(Item::as_str).and_then(|name| {
        let table = root.get("profiles")?.as_table()?.get(name)?.as_table()?;
        Some((name.to_string(), table))
    });
    let mut out = Compaction::default();
    for key in ["model_context_window", "model_auto_compact_token_limit"] {
        let found = profile
            .as_ref()
            .and_then(|(name, t)| {
                Some((tokens(t, key)?, format!("profiles.{name}.{key} in {shown}")))
            })
            .or_else(|| Some((tokens(root, key)?, format!("{key} in {shown}"))));
        if key == "model_context_window" {
            out.window = found;
        } else {
            out.limit = found;
        }
    }
    out
}

/// What `config.toml` in `codex_home` sets for compaction; nothing when it is absent. Read as
/// every outside file is: a regular file, bounded, never blocking.
pub fn read_compaction(codex_home: &Path, shown: &str) -> Result<Compaction> {
    let path = config_path(codex_home);
    let Some(bytes) = files::read_regular(&path, "Codex's config.toml", MAX_CONFIG_BYTES)? else {
        return Ok(Compaction::default());
    };
    Ok(compaction(&String::from_utf8_lossy(&bytes), shown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compaction_settings_are_read_with_the_active_profile_over_the_top_level() {
        let text = r#"
# my settings
model = "gpt-5.1-codex"
model_context_window = 200000
model_auto_compact_token_limit = 150000
profile = "small"

[profiles.small]
model_auto_compact_token_limit = 60000

[profiles.other]
model_context_window = 1
"#;
        let c = compaction(text, "~/.codex/config.toml");
        assert_eq!(
            c.window,
            Some((
                200_000,
                "model_context_window in ~/.codex/config.toml".into()
            ))
        );
        assert_eq!(
            c.limit,
            Some((
                60_000,
                "profiles.small.model_auto_compact_token_limit in ~/.codex/config.toml".into()
            ))
        );
        // No profile: the top level; zero, negative or not a number: unset.
        let c = compaction(
            "model_auto_compact_token_limit = 0\nmodel_context_window = \"big\"\n",
            "f",
        );
        assert_eq!(c, Compaction::default());
        assert_eq!(compaction("not = [valid", "f"), Compaction::default());
        let c = compaction("model_auto_compact_token_limit = 20000", "f");
        assert_eq!(
            c.limit,
            Some((20_000, "model_auto_compact_token_limit in f".into()))
        );
    }

    #[test]
    fn codex_home_is_the_variable_else_dot_codex() {
        assert_eq!(
            home(Some(Path::new("/x")), Some(Path::new("/h"))),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(
            home(None, Some(Path::new("/h"))),
            Some(PathBuf::from("/h/.codex"))
        );
        assert_eq!(home(None, None), None);
    }
}
