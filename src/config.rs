//! Resolved settings. Defaults live in the key table below; the optional
//! `$CTXGUARD_HOME/config.json` is applied over them, then `CTXGUARD_<KEY>` environment variables
//! over that. This is also the one place the environment is read (ctxguard's own variables and,
//! through [`ClientEnv`], Claude Code's auto-compaction overrides), so tests and hooks see the
//! same resolution.
//!
//! Every key is declared once, in `keys!`: its `Config` field, its default and the rule that
//! checks a raw value. The generated [`KEYS`] table drives the file parsing, the environment
//! overlay and the error messages, so adding a key is one line there (and a row in
//! docs/configuration.md, which a test checks).

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::client::ClientEnv;
use crate::diag::Diag;
use crate::paths::Paths;
use crate::usage::Policy;
use crate::window::Ending;

/// What a hook needs from the environment, read once.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub ctxguard_home: Option<PathBuf>,
    pub home: Option<PathBuf>,
    pub no_color: bool,
    /// `CLAUDE_PROJECT_DIR`, set by Claude Code for hook commands.
    pub project_dir: Option<PathBuf>,
    /// Claude Code's own variables (auto-compaction overrides), read on first use like the
    /// overrides below: the `PreToolUse` fast path never needs them.
    client: OnceCell<ClientEnv>,
    /// `PATH`, where a registered command's bare program name is found.
    pub search_path: Option<OsString>,
    /// `CLAUDE_CONFIG_DIR`: where the client keeps its state instead of `~/.claude`.
    pub client_config_dir: Option<PathBuf>,
    /// `CODEX_HOME`: where Codex keeps its state instead of `~/.codex`.
    pub codex_home_var: Option<PathBuf>,
    /// `PI_CODING_AGENT_DIR`: where pi keeps its state instead of `~/.pi/agent`.
    pub pi_agent_dir_var: Option<PathBuf>,
    /// `PI_CODING_AGENT_SESSION_DIR`: where pi keeps its sessions instead.
    pub pi_session_dir_var: Option<PathBuf>,
    /// `CLAUDE_PID`: the running client, whose command line may hold `--autocompact N`.
    pub client_pid: Option<u32>,
    /// Nobody is at the keyboard: `-p` or the SDK (`CLAUDE_CODE_SESSION_ATTENDED=0`, or an
    /// `sdk-…` `CLAUDE_CODE_ENTRYPOINT`).
    pub unattended: bool,
    /// `CTXGUARD_NOW` (RFC 3339): the time every command and hook takes as now, for tests and
    /// for reproducing a report; the real clock when unset or unparsable.
    pub now: Option<DateTime<Utc>>,
    /// `CTXGUARD_<KEY>` overrides, in the order of [`KEYS`]; read on first use, so the
    /// `PreToolUse` fast path (which needs no configuration) never pays for the lookups.
    overrides: OnceCell<Vec<(&'static Key, String)>>,
}

fn var(name: &str) -> Option<String> {
    std::env::var_os(name)
        .map(OsString::into_string)
        .and_then(Result::ok)
        .filter(|s| !s.trim().is_empty())
}

impl Env {
    pub fn from_process() -> Env {
        Env {
            ctxguard_home: std::env::var_os("CTXGUARD_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            home: crate::paths::home_dir(),
            no_color: std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
            project_dir: var("CLAUDE_PROJECT_DIR").map(PathBuf::from),
            client: OnceCell::new(),
            search_path: std::env::var_os("PATH"),
            client_pid: var("CLAUDE_PID").and_then(|p| p.trim().parse().ok()),
            unattended: var("CLAUDE_CODE_SESSION_ATTENDED").is_some_and(|v| v.trim() == "0")
                || var("CLAUDE_CODE_ENTRYPOINT").is_some_and(|v| v.trim().starts_with("sdk")),
            client_config_dir: var("CLAUDE_CONFIG_DIR").map(PathBuf::from),
            codex_home_var: var("CODEX_HOME").map(PathBuf::from),
            pi_agent_dir_var: var("PI_CODING_AGENT_DIR").map(PathBuf::from),
            pi_session_dir_var: var("PI_CODING_AGENT_SESSION_DIR").map(PathBuf::from),
            now: var("CTXGUARD_NOW")
                .and_then(|s| DateTime::parse_from_rfc3339(&s).ok())
                .map(|t| t.with_timezone(&Utc)),
            overrides: OnceCell::new(),
        }
    }

    /// Claude Code's variables ctxguard reads, from this process (looked up once, when first
    /// needed).
    pub fn client(&self) -> &ClientEnv {
        self.client.get_or_init(|| ClientEnv::read(var))
    }

    /// The client's own state directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub fn client_dir(&self) -> Option<PathBuf> {
        self.client_config_dir
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".claude")))
    }

    /// Codex's state directory: `$CODEX_HOME`, else `~/.codex`.
    pub fn codex_home(&self) -> Option<PathBuf> {
        crate::codex::home(self.codex_home_var.as_deref(), self.home.as_deref())
    }

    /// Now: `CTXGUARD_NOW` when set, else the clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.now.unwrap_or_else(Utc::now)
    }

    /// An environment with only these two locations set (for tests driving hooks in-process).
    #[cfg(test)]
    pub fn isolated(ctxguard_home: PathBuf, home: PathBuf) -> Env {
        Env {
            ctxguard_home: Some(ctxguard_home),
            home: Some(home),
            no_color: true,
            ..Env::default()
        }
    }

    fn overrides(&self) -> &[(&'static Key, String)] {
        self.overrides.get_or_init(|| {
            KEYS.iter()
                .filter_map(|k| var(&env_name(k.name)).map(|v| (k, v)))
                .collect()
        })
    }

    /// The state root: `$CTXGUARD_HOME`, else `~/.claude-memory/ctxguard`.
    pub fn paths(&self) -> Result<Paths> {
        if let Some(root) = &self.ctxguard_home {
            return Ok(Paths::new(root.clone()));
        }
        let home = self
            .home
            .as_ref()
            .ok_or_else(|| anyhow!("cannot find the home directory: set CTXGUARD_HOME"))?;
        Ok(Paths::new(home.join(".claude-memory").join("ctxguard")))
    }
}

/// `SessionStart` sources a recovery can be injected on.
pub const SOURCES: &[&str] = &["startup", "resume", "clear", "compact", "fork"];

/// Is `name` a configuration key (of `config.json`)?
pub fn is_key(name: &str) -> bool {
    KEYS.iter().any(|k| k.name == name)
}

fn env_name(key: &str) -> String {
    format!("CTXGUARD_{}", key.to_ascii_uppercase())
}

const DEFAULT_NUDGE_TEXT: &str = "ctxguard: about {headroom} tokens are left before \
auto-compaction, which comes at {compact_at} tokens ({tokens} are in context now) and will \
summarise and drop the history. Before continuing, save durable knowledge to memory now, {where}: \
decisions and their reasons, user preferences, debugging insights, project facts, open tasks and \
next steps. Keep it brief, then continue with the task.";

const DEFAULT_CRITICAL_TEXT: &str = "ctxguard: auto-compaction is imminent: about {headroom} \
tokens are left before it comes at {compact_at} tokens ({tokens} are in context now). If \
decisions, open tasks and next steps are not yet saved, save them now, {where}, in a few lines, \
before anything else; then continue.";

/// The default texts when the client's auto-compaction is off: nothing will make room by itself,
/// and the client stops accepting requests at its blocking limit (`{compact_at}`, 23k before
/// the window's end on 2.1.332). The agent saves now, and tells the user what comes next
/// (`{restart}`: what `/compact` and `/clear` each do, the soft restart ctxguard completes).
const OFF_NUDGE_TEXT: &str = "ctxguard: about {headroom} tokens are left before Claude Code \
stops accepting requests, at {compact_at} tokens ({tokens} of {window} are in use): \
auto-compaction is off, so nothing makes room by itself. Save durable knowledge to memory now, \
{where}: decisions and their reasons, user preferences, debugging insights, project facts, open \
tasks and next steps. Keep it brief; then tell the user the context is nearly full and what \
comes next: {restart} Then continue with the task.";

const OFF_CRITICAL_TEXT: &str = "ctxguard: Claude Code stops accepting requests in about \
{headroom} tokens, at {compact_at} ({tokens} of {window} are in use), and auto-compaction is \
off. If decisions, open tasks and next steps are not yet saved, save them now, {where}, in a \
few lines, before anything else; then tell the user to make room now: {restart}";

/// The default texts when the client compacts only once a request no longer fits the window
/// (no threshold for this model): where a request overflows (4k before the window's end) is the
/// point, and a compaction comes there.
const FULL_NUDGE_TEXT: &str = "ctxguard: about {headroom} tokens are left before a request no \
longer fits ({tokens} of {window} tokens are in use). Claude Code compacts this session only \
then, and the compaction will summarise and drop the history. \
Before continuing, save durable knowledge to memory now, {where}: decisions and their reasons, \
user preferences, debugging insights, project facts, open tasks and next steps. Keep it brief, \
then continue with the task.";

const FULL_CRITICAL_TEXT: &str = "ctxguard: the context window is almost full: about \
{headroom} tokens are left before a request no longer fits ({tokens} of {window} tokens are in \
use), and Claude Code compacts this session then. If decisions, open tasks and next steps are not yet \
saved, save them now, {where}, in a few lines, before anything else; then continue.";

/// The texts of a nudge of either level: the configured ones, or, when they are the defaults,
/// the defaults that say what the client will do (`ending`): compact at its threshold, compact
/// only when the window is full, or never compact.
pub fn nudge_templates(config: &Config, ending: Ending) -> (&str, &str) {
    let (normal, critical) = match ending {
        Ending::Threshold => return (&config.nudge_text, &config.critical_text),
        Ending::CompactsWhenFull => (FULL_NUDGE_TEXT, FULL_CRITICAL_TEXT),
        Ending::Full => (OFF_NUDGE_TEXT, OFF_CRITICAL_TEXT),
    };
    // A text the user configured is theirs in every mode.
    (
        if config.nudge_text == DEFAULT_NUDGE_TEXT {
            normal
        } else {
            &config.nudge_text
        },
        if config.critical_text == DEFAULT_CRITICAL_TEXT {
            critical
        } else {
            &config.critical_text
        },
    )
}

/// The end-of-turn nudge before an idle compaction. Claude Code shows a Stop hook's context to
/// the user as well as to the model, in full ("Stop hook says: …", measured on the real 2.1.332:
/// docs/clients.md), and a `systemMessage` beside it would only add a line: so one short text
/// that serves both, about one line in the TUI.
const IDLE_NUDGE_TEXT: &str = "ctxguard: an hour idle compacts these {tokens} tokens. Briefly \
save decisions, open tasks, next steps to {where}; start nothing new.";

/// The text of the end-of-turn nudge before an idle compaction.
pub fn idle_nudge_text(tokens: u64, place: &str) -> String {
    IDLE_NUDGE_TEXT
        .replace("{tokens}", &crate::usage::human(tokens))
        .replace("{where}", place)
}

/// One configuration key: its name in config.json (upper-cased after `CTXGUARD_`, in the
/// environment), what a valid value looks like, and how a raw value is checked and stored.
struct Key {
    pub name: &'static str,
    pub expected: &'static str,
    set: fn(&mut Config, &Raw) -> Option<()>,
}

impl Key {
    /// Checks `raw` and stores it; the error names the key, what it must be and what it got.
    fn apply(&self, config: &mut Config, raw: &Raw) -> std::result::Result<(), String> {
        (self.set)(config, raw).ok_or_else(|| {
            format!(
                "`{}` must be {}, got {}",
                self.name,
                self.expected,
                raw.describe()
            )
        })
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// How a raw value becomes a field's value, and what a valid one looks like.
struct Rule<T> {
    expected: &'static str,
    parse: fn(&Raw) -> Option<T>,
}

/// Declares every key once (rustfmt's `create_config!` does the same): the `Config` field with
/// its doc, its default and its [`Rule`]. Generates `Config`, its `Default` and [`KEYS`].
macro_rules! keys {
    ($($(#[$attr:meta])* $name:ident: $ty:ty = $default:expr, $rule:expr;)*) => {
        #[derive(Debug, Clone, PartialEq)]
        pub struct Config {
            $($(#[$attr])* pub $name: $ty,)*
        }

        impl Default for Config {
            fn default() -> Self {
                Config {
                    $($name: $default,)*
                }
            }
        }

        /// Every configuration key, in declaration order.
        const KEYS: &[Key] = &[$(Key {
            name: stringify!($name),
            expected: $rule.expected,
            set: |config, raw| {
                config.$name = ($rule.parse)(raw)?;
                Some(())
            },
        },)*];
    };
}

keys! {
    /// Arm the nudge this many tokens before the compaction point.
    headroom_tokens: u64 = Policy::default().headroom_tokens, TOKENS;
    /// Arm at this percent of the window instead.
    threshold_pct: Option<f64> = None, PERCENT;
    /// The critical nudge fires this close to compaction; 0 turns it off.
    critical_headroom_tokens: u64 = Policy::default().critical_headroom_tokens, TOKENS;
    /// Force the window size (beats what the status line reports).
    window_tokens: Option<u64> = None, WINDOW;
    /// The window of particular models, by model id (beats `window_tokens` for that model).
    model_windows: BTreeMap<String, u64> = BTreeMap::new(), MODEL_WINDOWS;
    /// Also arm when this many more replies, each growing as much as the fastest recent one,
    /// would reach the compaction point; 0 turns it off.
    growth_replies: u64 = 2, COUNT;
    /// Claude Code compacts at `window - this`.
    compact_buffer_tokens: u64 = Policy::default().compact_buffer_tokens, TOKENS;
    /// A marker not refreshed for this long is treated as idle.
    stale_after_secs: u64 = 1800, SECONDS;
    nudge_text: String = DEFAULT_NUDGE_TEXT.to_string(), TEXT;
    critical_text: String = DEFAULT_CRITICAL_TEXT.to_string(), TEXT;
    /// `SessionStart` sources that inject a recovery.
    recover_on: Vec<String> = ["compact", "resume", "clear", "startup"].map(String::from).to_vec(), RECOVER_ON;
    /// Memory files appended to a recovery block; `None` means the defaults
    /// (`~/.claude-memory/MEMORY.md` and the project's `.claude/memory/MEMORY.md`).
    memory_files: Option<Vec<String>> = None, MEMORY_FILES;
    /// Size limit of the checkpoint part of a recovery block, in characters.
    recovery_budget_chars: usize = 3200, BUDGET;
    /// Size limit of the whole recovery block, in characters.
    total_budget_chars: usize = 12000, BUDGET;
    /// `PreCompact` may hold one auto-compaction per cycle until the nudge is delivered.
    gate_auto_compaction: bool = false, FLAG;
    /// Ask the agent to save at the end of its turn when the client's idle compaction could
    /// take the session before any tool call nudges it (the `Stop` hook), once per cycle.
    idle_nudge: bool = true, FLAG;
    /// `PreCompact` prints the checkpoint's facts for the client's summarizer, on the clients
    /// known to make that output part of the compaction's instructions.
    summary_facts: bool = true, FLAG;
    /// Sessions idle this long are removed with their checkpoints, and daily logs this old;
    /// 0 keeps everything.
    retention_days: u64 = 30, DAYS;
}

const TOKENS: Rule<u64> = Rule {
    expected: "a whole number of tokens (0 or more)",
    parse: |raw| raw.tokens(),
};
const WINDOW: Rule<Option<u64>> = Rule {
    expected: "a whole number of tokens above 0",
    parse: |raw| raw.tokens().filter(|w| *w > 0).map(Some),
};
const MODEL_WINDOWS: Rule<BTreeMap<String, u64>> = Rule {
    expected: "an object of model ids to token counts above 0, like {\"claude-opus-5-5\": 1000000} (in the environment: id=tokens,id=tokens)",
    parse: |raw| raw.pairs(),
};
const COUNT: Rule<u64> = Rule {
    expected: "a whole number (0 or more)",
    parse: |raw| raw.tokens(),
};
const SECONDS: Rule<u64> = Rule {
    expected: "a whole number of seconds (0 or more)",
    parse: |raw| raw.tokens(),
};
const DAYS: Rule<u64> = Rule {
    expected: "a whole number of days (0 keeps everything)",
    parse: |raw| raw.tokens(),
};
const PERCENT: Rule<Option<f64>> = Rule {
    expected: "a percent above 0, at most 100",
    parse: |raw| raw.number().filter(|p| *p > 0.0 && *p <= 100.0).map(Some),
};
const TEXT: Rule<String> = Rule {
    expected: "a string",
    parse: |raw| raw.text(),
};
const RECOVER_ON: Rule<Vec<String>> = Rule {
    // Lists SOURCES; a test keeps the two in step.
    expected: "a list of SessionStart sources (startup, resume, clear, compact, fork)",
    parse: |raw| {
        raw.list()
            .filter(|list| list.iter().all(|s| SOURCES.contains(&s.as_str())))
    },
};
const MEMORY_FILES: Rule<Option<Vec<String>>> = Rule {
    expected: "a list of file paths",
    parse: |raw| raw.list().map(Some),
};
const BUDGET: Rule<usize> = Rule {
    expected: "a number of characters from 200 to 1000000",
    parse: |raw| {
        raw.tokens()
            .filter(|n| (200..=1_000_000).contains(n))
            .map(|n| n as usize)
    },
};
const FLAG: Rule<bool> = Rule {
    expected: "true or false",
    parse: |raw| raw.flag(),
};

/// A configuration value from either source.
enum Raw<'a> {
    Json(&'a Value),
    Env(&'a str),
}

impl Raw<'_> {
    fn describe(&self) -> String {
        match self {
            Raw::Json(v) => v.to_string(),
            Raw::Env(s) => format!("{s:?}"),
        }
    }

    fn tokens(&self) -> Option<u64> {
        match self {
            Raw::Json(v) => v.as_u64(),
            Raw::Env(s) => s.trim().parse().ok(),
        }
    }

    fn number(&self) -> Option<f64> {
        match self {
            Raw::Json(v) => v.as_f64(),
            Raw::Env(s) => s.trim().parse().ok(),
        }
    }

    fn text(&self) -> Option<String> {
        match self {
            Raw::Json(v) => v.as_str().map(str::to_string),
            Raw::Env(s) => Some((*s).to_string()),
        }
    }

    fn flag(&self) -> Option<bool> {
        match self {
            Raw::Json(v) => v.as_bool(),
            Raw::Env(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Some(true),
                "false" | "0" | "no" | "off" => Some(false),
                _ => None,
            },
        }
    }

    /// A JSON object of names to positive numbers, or `name=n,name=n` in a variable.
    fn pairs(&self) -> Option<BTreeMap<String, u64>> {
        let pairs: Option<Vec<(String, u64)>> = match self {
            Raw::Json(v) => v
                .as_object()?
                .iter()
                .map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                .collect(),
            Raw::Env(s) => s
                .split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(|pair| {
                    let (k, v) = pair.split_once('=')?;
                    Some((k.trim().to_string(), v.trim().parse().ok()?))
                })
                .collect(),
        };
        pairs
            .filter(|p| p.iter().all(|(k, v)| !k.is_empty() && *v > 0))
            .map(|p| p.into_iter().collect())
    }

    /// A JSON array of strings, or a comma-separated variable.
    fn list(&self) -> Option<Vec<String>> {
        match self {
            Raw::Json(v) => v
                .as_array()?
                .iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect(),
            Raw::Env(s) => Some(
                s.split(',')
                    .map(str::trim)
                    .filter(|x| !x.is_empty())
                    .map(str::to_string)
                    .collect(),
            ),
        }
    }
}

/// The result of loading: settings plus warnings a caller prints (unknown keys, ignored values).
#[derive(Debug)]
pub struct Loaded {
    pub config: Config,
    pub warnings: Vec<String>,
}

impl Config {
    /// How long a marker keeps its cycle without a refresh (`stale_after_secs`): every site that
    /// ages a marker asks this, so the user's setting applies everywhere.
    pub fn stale(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.stale_after_secs)
    }

    /// Strict load, for manual commands: an unreadable or invalid file, or an invalid override,
    /// is an error naming the file (or variable) and the problem.
    pub fn load(paths: &Paths, env: &Env) -> Result<Loaded> {
        let file = paths.config_file();
        let mut config = Config::default();
        let mut warnings = Vec::new();
        if let Some(bytes) =
            crate::files::read_regular(&file, "config", crate::files::MAX_STATE_FILE)?
        {
            config.apply_file(&file, &bytes, &mut warnings)?;
        }
        for (key, value) in env.overrides() {
            key.apply(&mut config, &Raw::Env(value))
                .map_err(|problem| anyhow!("environment {}: {problem}", env_name(key.name)))?;
        }
        Ok(Loaded { config, warnings })
    }

    /// A hook's settings: a bad config file means the defaults, and a note.
    pub fn for_hook(paths: &Paths, env: &Env, diag: &mut Diag) -> Config {
        let loaded = Config::load_or_default(paths, env);
        loaded.warnings.into_iter().for_each(|w| diag.note(w));
        loaded.config
    }

    /// Lenient load, for hooks: any error falls back to the defaults (plus whatever valid
    /// overrides there are) and becomes a warning.
    pub fn load_or_default(paths: &Paths, env: &Env) -> Loaded {
        Config::load(paths, env).unwrap_or_else(|e| {
            let mut config = Config::default();
            let warnings = vec![format!("{e:#}; using the defaults")];
            for (key, value) in env.overrides() {
                // An invalid one is in the error above, or was shadowed by it; keep the rest.
                let _ = key.apply(&mut config, &Raw::Env(value));
            }
            Loaded { config, warnings }
        })
    }

    fn apply_file(&mut self, file: &Path, bytes: &[u8], warnings: &mut Vec<String>) -> Result<()> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            anyhow!(
                "config {}: not valid JSON ({e}); fix or remove the file",
                file.display()
            )
        })?;
        let Value::Object(map) = value else {
            bail!(
                "config {}: expected a JSON object like {{\"headroom_tokens\": 40000}}",
                file.display()
            );
        };
        for (name, value) in &map {
            let Some(key) = KEYS.iter().find(|k| k.name == name) else {
                let known: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
                warnings.push(format!(
                    "config {}: unknown key `{name}` ignored (known keys: {})",
                    file.display(),
                    known.join(", ")
                ));
                continue;
            };
            if value.is_null() {
                continue;
            }
            key.apply(self, &Raw::Json(value))
                .map_err(|problem| anyhow!("config {}: {problem}", file.display()))?;
        }
        Ok(())
    }

    /// A fingerprint of every setting the limits depend on: limits kept in a marker are reused
    /// only while it matches.
    pub fn limits_key(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        format!(
            "{:?}|{:?}|{:?}",
            self.policy(),
            self.window_tokens,
            self.model_windows
        )
        .hash(&mut h);
        h.finish()
    }

    pub fn policy(&self) -> Policy {
        Policy {
            headroom_tokens: self.headroom_tokens,
            threshold_pct: self.threshold_pct,
            critical_headroom_tokens: self.critical_headroom_tokens,
            compact_buffer_tokens: self.compact_buffer_tokens,
            autocompact_pct: None,
            autocompact_window: None,
        }
    }
}

/// The numbers a nudge text names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NudgeNumbers {
    /// Tokens in context now.
    pub tokens: u64,
    pub window: u64,
    /// Where the client compacts (the window's end when auto-compaction is off).
    pub compact_at: u64,
}

/// Fills `{tokens}`, `{window}`, `{compact_at}`, `{headroom}` (tokens left before
/// `compact_at`), `{pct}` (percent of the way to `compact_at`), `{where}` (where to save
/// memories) and `{make_room}` (what the user can run to make room) in a nudge text.
pub fn render_text(template: &str, n: NudgeNumbers, place: &str, make_room: &str) -> String {
    use crate::usage::{human, percent};
    template
        .replace("{tokens}", &human(n.tokens))
        .replace("{window}", &human(n.window))
        .replace("{compact_at}", &human(n.compact_at))
        .replace("{headroom}", &human(n.compact_at.saturating_sub(n.tokens)))
        .replace("{pct}", &percent(n.tokens, n.compact_at).to_string())
        .replace("{where}", place)
        .replace("{make_room}", make_room)
}

#[cfg(test)]
mod tests;
