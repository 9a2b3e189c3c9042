//! Claude Code's variables that move auto-compaction, as a process sees them, and the values
//! they (and the matching settings) carry: a reading with its origin, a percent, a window.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

/// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`: compaction at this percent of the window, if earlier.
pub const AUTOCOMPACT_PCT: &str = "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE";
/// `CLAUDE_CODE_AUTO_COMPACT_WINDOW`: the window auto-compaction is computed against.
pub const AUTO_COMPACT_WINDOW: &str = "CLAUDE_CODE_AUTO_COMPACT_WINDOW";
/// `DISABLE_AUTO_COMPACT`: any value but `0` or `false` turns auto-compaction off.
pub const DISABLE_AUTO_COMPACT: &str = "DISABLE_AUTO_COMPACT";

/// The client's variables ctxguard reads.
const VARS: [&str; 3] = [AUTOCOMPACT_PCT, AUTO_COMPACT_WINDOW, DISABLE_AUTO_COMPACT];

/// Claude Code's variables ([`VARS`]) as found in a process environment; blank ones are unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientEnv {
    vars: Vec<(&'static str, String)>,
}

impl ClientEnv {
    /// Looks each of [`VARS`] up with `lookup` (which should treat a blank value as unset).
    pub fn read(lookup: impl Fn(&str) -> Option<String>) -> ClientEnv {
        ClientEnv {
            vars: VARS
                .iter()
                .filter_map(|name| lookup(name).map(|v| (*name, v)))
                .collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` from the process alone (what a hook sees: the client
    /// has already applied its settings' `env` blocks to its own environment).
    pub fn autocompact_pct(&self) -> Option<Reading<f64>> {
        self.get(AUTOCOMPACT_PCT).map(read_pct)
    }

    /// `CLAUDE_CODE_AUTO_COMPACT_WINDOW` from the process alone.
    pub fn auto_compact_window(&self) -> Option<Reading<u64>> {
        self.get(AUTO_COMPACT_WINDOW).map(|raw| Reading {
            origin: Origin::Variable(AUTO_COMPACT_WINDOW),
            raw: raw.to_string(),
            value: window_tokens(raw),
        })
    }
}

/// A value as written and what it means; `value` is `None` when it is unusable.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading<T> {
    pub origin: Origin,
    /// The text as written (a JSON value's own text for a setting).
    pub raw: String,
    pub value: Option<T>,
}

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// An environment variable (set in the process or in a settings file's `env` block).
    Variable(&'static str),
    /// A top-level key of a settings file.
    Setting { key: &'static str, file: PathBuf },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Variable(name) => f.write_str(name),
            Origin::Setting { key, file } => write!(f, "{key} in {}", file.display()),
        }
    }
}

/// A percent in (0, 100].
pub fn percent(text: &str) -> Option<f64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|p| *p > 0.0 && *p <= 100.0)
}

/// A whole number of tokens above 0.
pub fn window_tokens(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().filter(|w| *w > 0)
}

pub(super) fn read_pct(raw: &str) -> Reading<f64> {
    Reading {
        origin: Origin::Variable(AUTOCOMPACT_PCT),
        raw: raw.to_string(),
        value: percent(raw),
    }
}

/// One window size in `autoCompactWindow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// `"auto"`: the client picks (the model's own window).
    Auto,
    Tokens(u64),
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Window::Auto => f.write_str("auto"),
            Window::Tokens(w) => write!(f, "{w}"),
        }
    }
}

/// The auto-compaction window, as `autoCompactWindow` or `CLAUDE_CODE_AUTO_COMPACT_WINDOW` sets
/// it: one for every model (a number or `"auto"`), or a map of model ids to one (the form
/// `/autocompact` writes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutoCompactWindow {
    Every(Window),
    /// In the file's order.
    PerModel(Vec<(String, Window)>),
}

impl AutoCompactWindow {
    /// The setting's JSON value; `None` for any other shape.
    pub fn from_json(value: &Value) -> Option<AutoCompactWindow> {
        fn window(value: &Value) -> Option<Window> {
            match value {
                Value::String(s) if s == "auto" => Some(Window::Auto),
                Value::Number(n) => n.as_u64().filter(|w| *w > 0).map(Window::Tokens),
                _ => None,
            }
        }
        match value {
            Value::Object(models) => models
                .iter()
                .map(|(model, w)| Some((model.clone(), window(w)?)))
                .collect::<Option<Vec<_>>>()
                .map(AutoCompactWindow::PerModel),
            other => window(other).map(AutoCompactWindow::Every),
        }
    }
}
