//! Claude Code's variables that move auto-compaction, as a process sees them, and the values
//! they (and the matching settings) carry: a reading with its origin, a percent, a window.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use super::accepts::parse;

/// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`: compaction at this percent of the window, if earlier.
pub const AUTOCOMPACT_PCT: &str = "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE";
/// `CLAUDE_CODE_AUTO_COMPACT_WINDOW`: the window auto-compaction is computed against.
pub const AUTO_COMPACT_WINDOW: &str = "CLAUDE_CODE_AUTO_COMPACT_WINDOW";
/// `DISABLE_AUTO_COMPACT`: a true value turns auto-compaction off (`/compact` still works).
pub const DISABLE_AUTO_COMPACT: &str = "DISABLE_AUTO_COMPACT";
/// `DISABLE_COMPACT`: a true value turns compaction off altogether, auto and `/compact`.
pub const DISABLE_COMPACT: &str = "DISABLE_COMPACT";
/// `CLAUDE_CODE_DISABLE_AUTO_MEMORY`: a true value turns the client's auto memory off.
pub const DISABLE_AUTO_MEMORY: &str = "CLAUDE_CODE_DISABLE_AUTO_MEMORY";
/// `CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS`: idle compaction takes sessions from this many tokens.
pub const IDLE_COMPACT_MIN_TOKENS: &str = "CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS";
/// `CLAUDE_CODE_MAX_CONTEXT_TOKENS`: the context window the client assumes for the model.
pub const MAX_CONTEXT_TOKENS: &str = "CLAUDE_CODE_MAX_CONTEXT_TOKENS";

/// `CLAUDE_CODE_MAX_OUTPUT_TOKENS`: the reply's output limit, which older clients reserve in
/// full before auto-compacting.
pub const MAX_OUTPUT_TOKENS: &str = "CLAUDE_CODE_MAX_OUTPUT_TOKENS";

/// `CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE`: the token count at which the client stops accepting
/// requests, in place of its blocking limit (what matters with auto-compaction off).
pub const BLOCKING_LIMIT_OVERRIDE: &str = "CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE";

/// The client's variables ctxguard reads, each from the process and from the settings files'
/// `env` blocks (see [`crate::client::Settings::var`]).
const VARS: [&str; 9] = [
    MAX_OUTPUT_TOKENS,
    BLOCKING_LIMIT_OVERRIDE,
    AUTOCOMPACT_PCT,
    AUTO_COMPACT_WINDOW,
    DISABLE_AUTO_COMPACT,
    DISABLE_COMPACT,
    DISABLE_AUTO_MEMORY,
    IDLE_COMPACT_MIN_TOKENS,
    MAX_CONTEXT_TOKENS,
];

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
    /// A key of a settings file (`modelSettings.<model>.autoCompactWindow` for a nested one).
    Setting { key: String, file: PathBuf },
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

/// The smallest compaction window the client takes (a smaller one is raised to it).
pub const MIN_COMPACT_WINDOW: u64 = 100_000;

/// A window size as the client reads `CLAUDE_CODE_AUTO_COMPACT_WINDOW`: a whole number of
/// tokens, or thousands and millions written `200k`, `1m` (any case).
pub fn window_size(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, unit) = match t.strip_suffix('k') {
        Some(d) => (d, 1_000.0),
        None => match t.strip_suffix('m') {
            Some(d) => (d, 1_000_000.0),
            None => (t.as_str(), 1.0),
        },
    };
    let n: f64 = digits
        .trim()
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite() && *n > 0.0)?;
    let tokens = (n * unit).round();
    // In range, the cast is exact.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    (1.0..1e15).contains(&tokens).then_some(tokens as u64)
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

impl Window {
    /// An `autoCompactWindow` value: a positive whole number of tokens or `"auto"`; `None` for
    /// anything else.
    pub fn from_json(value: &Value) -> Option<Window> {
        match value {
            Value::String(s) if s == "auto" => Some(Window::Auto),
            Value::Number(n) => n.as_u64().filter(|w| *w > 0).map(Window::Tokens),
            _ => None,
        }
    }

    /// The tokens it names (`"auto"` names none: the model's own window).
    pub fn tokens(self) -> Option<u64> {
        match self {
            Window::Tokens(n) => Some(n),
            Window::Auto => None,
        }
    }
}

/// The model id two ids are compared by (a `modelSettings` key with the session's model, say): the canonical name, without the
/// spellings the client also accepts for it (the schema: "The canonical model name as key also
/// matches its dated, [1m], Bedrock and Vertex spellings"): lower case, no `[1m]`, no Bedrock
/// region and `anthropic.` prefix nor `-v1:0` version, no Vertex `@20250929`, no `-20250929`.
fn canonical_model(id: &str) -> String {
    let mut id = id.trim().to_ascii_lowercase();
    if let Some(base) = id.strip_suffix("[1m]") {
        id = base.to_string();
    }
    // Bedrock: `us.anthropic.claude-opus-4-1-20250805-v1:0`, `anthropic.claude-…-v1:0`.
    if let Some(at) = id.find("anthropic.") {
        if id[..at]
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'.')
        {
            id = id[at + "anthropic.".len()..].to_string();
        }
    }
    if let Some(at) = id.rfind("-v") {
        let version = &id[at + 2..];
        if !version.is_empty()
            && version.bytes().all(|b| b.is_ascii_digit() || b == b':')
            && version.as_bytes()[0].is_ascii_digit()
        {
            id.truncate(at);
        }
    }
    // Vertex: `claude-opus-4-1@20250805`.
    if let Some(at) = id.find('@') {
        id.truncate(at);
    }
    // The API's release date: `claude-sonnet-4-5-20250929`.
    if let Some(at) = id.rfind('-') {
        let date = &id[at + 1..];
        if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) {
            id.truncate(at);
        }
    }
    id
}

/// Models the client compacts only when a request no longer fits the window, unless a
/// compaction window is set (`CLAUDE_CODE_AUTO_COMPACT_WINDOW`, `--autocompact`,
/// `autoCompactWindow`, `modelSettings.<model>.autoCompactWindow`). Read in 2.1.330's and
/// 2.1.332's code: its `shouldAutoCompact` returns false when the window's source is `"auto"`,
/// which its model table gives these models on their own window (200k, no larger window without
/// opting in); a 1M model, a model whose window is below what the API allows without opting in
/// (`claude-opus-4-6` on 200k), and a model it does not know all compact at the threshold. The
/// client's schema: `enforced` is "False when the worker defers to the API's prompt-too-long
/// (reactive mode)"; seen on the real 2.1.330: `claude-sonnet-4-5-20250929` and
/// `claude-haiku-4-5` never compacted up to 199k of 200k, `claude-opus-4-6` at about 170k.
const REACTIVE_MODELS: &[&str] = &[
    "claude-haiku-4-5",
    "claude-sonnet-4",
    "claude-sonnet-4-0",
    "claude-sonnet-4-5",
    "claude-opus-4",
    "claude-opus-4-0",
    "claude-opus-4-1",
    "claude-opus-4-5",
];

/// With `[1m]` (a 1M window opted into), these too: the window is then what the API allows,
/// and the model is no native 1M model.
const REACTIVE_WITH_1M: &[&str] = &["claude-sonnet-4-6", "claude-opus-4-6"];

/// The first version that compacts [`REACTIVE_MODELS`] only when full by default (2.1.152 is
/// the last that compacts them at the threshold; 2.1.105 to 2.1.152 did so only behind a
/// server flag, off by default): read in each version's code.
const REACTIVE_SINCE: (u64, u64, u64) = (2, 1, 153);

/// From 2.1.163 on, [`REACTIVE_WITH_1M`] on their own 200k window compact at the threshold
/// again (a model default the client added); before, every model without a set window did not.
const THRESHOLD_AGAIN_SINCE: (u64, u64, u64) = (2, 1, 163);

/// Does a client of `version` (unknown: the current rule) compact `model` only when a request
/// no longer fits the window, when no compaction window is set? `None` when it compacts it at
/// the threshold; else the model's canonical name.
pub fn reactive_model(model: &str, version: Option<&str>) -> Option<String> {
    let version = version.and_then(parse);
    if version.is_some_and(|v| v < REACTIVE_SINCE) {
        return None;
    }
    let early = version.is_some_and(|v| v < THRESHOLD_AGAIN_SINCE);
    let one_m = model.trim().to_ascii_lowercase().ends_with("[1m]");
    let id = canonical_model(model);
    let reactive = REACTIVE_MODELS.contains(&id.as_str())
        || ((one_m || early) && REACTIVE_WITH_1M.contains(&id.as_str()));
    reactive.then_some(id)
}

/// Do two model ids name the same model, by the client's rule (a `modelSettings` key and the
/// session's model; a `[1m]` id the client was started with and the transcript's reply)?
pub fn same_model(a: &str, b: &str) -> bool {
    let a = canonical_model(a);
    !a.is_empty() && a == canonical_model(b)
}
