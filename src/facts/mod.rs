//! The I/O behind [`crate::window`]'s rules: the windows learned from status lines (kept in
//! `models.json` under the state root), Claude Code's settings for this project, and the running
//! client's own command line (`--autocompact N`, read from `/proc/$CLAUDE_PID/cmdline` on
//! Linux and with `sysctl(KERN_PROCARGS2)` on macOS; on Windows that source is simply absent).
//!
//! The running client's command line is [`cmdline`]'s; Claude Code's settings for a project and
//! the auto-compaction they set ([`ClientCompaction`]), [`compaction`]'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use chrono::{DateTime, Utc};

use crate::client;
use crate::config::{Config, Env};
use crate::files;
use crate::input::Client;
use crate::marker::{Marker, Observation, Source};
use crate::paths::Paths;
use crate::usage::Limits;
use crate::window::{self, CompactFacts, CompactSource, WindowFacts, WindowSource};

mod cmdline;
mod compaction;

use cmdline::client_flag;
pub use compaction::{client_settings, ClientCompaction};

/// No more models than this are remembered (a guard against a flood of made-up ids).
const MAX_LEARNED: usize = 64;

fn learned_path(paths: &Paths) -> PathBuf {
    paths.root().join("models.json")
}

/// The key a pi model's window is learned under (`pi:provider/id`): never a Claude Code model's.
pub fn learned_key(pi_model: &str) -> String {
    format!("pi:{pi_model}")
}

/// Windows status lines reported, by model id.
pub fn learned(paths: &Paths) -> BTreeMap<String, u64> {
    files::read_state_file_in(paths.root(), &learned_path(paths), "learned windows")
        .ok()
        .flatten()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Remembers that `model` has `window` (written only when that is news).
pub fn learn(paths: &Paths, model: &str, window: u64) -> Result<()> {
    let model = model.trim();
    if model.is_empty() || model.len() > 200 || window == 0 {
        return Ok(());
    }
    let mut known = learned(paths);
    if known.get(model) == Some(&window) {
        return Ok(());
    }
    if known.len() >= MAX_LEARNED && !known.contains_key(model) {
        return Ok(());
    }
    known.insert(model.to_string(), window);
    files::ensure_state_dir(paths.root(), paths.root())?;
    let bytes = serde_json::to_vec_pretty(&known).context("encoding learned windows")?;
    files::write_atomic(&learned_path(paths), &bytes, false)
}

/// What the hooks know about a session's window and compaction point.
pub struct Resolved {
    pub limits: Limits,
    pub window_source: WindowSource,
    pub compact_source: CompactSource,
    /// The client's idle compaction: `None` when off (`idleCompaction: false`), else the tokens
    /// from which it applies.
    pub idle_compaction: Option<u64>,
}

/// Limits for an observation: resolved afresh (with their sources), or kept from the marker.
pub struct LimitsFor {
    pub limits: Limits,
    /// Set when resolved afresh, with the config fingerprint and whether idle compaction is on.
    pub sources: Option<(WindowSource, CompactSource, u64, Option<u64>)>,
}

impl LimitsFor {
    /// An observation of `tokens` from `source` on these limits.
    pub fn observation(self, tokens: Option<u64>, source: Source) -> Observation {
        let mut obs = Observation::new(tokens, self.limits, source);
        if let Some((w, c, key, idle)) = self.sources {
            obs.window_source = Some(w);
            obs.compact_source = Some(c);
            obs.limits_key = Some(key);
            obs.idle_compaction = Some(idle.is_some());
            obs.idle_from = idle;
        }
        obs
    }
}

/// What resolving the limits needs.
pub struct Context<'a> {
    pub config: &'a Config,
    pub env: &'a Env,
    pub paths: &'a Paths,
    /// The session's directory (settings of the project), if known.
    pub project: Option<&'a Path>,
    /// A compaction window given by hand (`usage`/`replay --autocompact`), in place of the
    /// running client's `--autocompact`.
    pub flag: Option<u64>,
    /// The client's version, when the hook's input or the transcript tells it.
    pub client_version: Option<&'a str>,
    /// The coding agent the session runs in: Codex's compaction follows its own rules.
    pub client: Client,
    /// The window pi's extension reported with the hook (the model's `contextWindow`).
    pub pi_window: Option<u64>,
}

impl<'a> Context<'a> {
    /// The context of a hook run in the session directory `cwd` (empty when unknown).
    pub fn new(config: &'a Config, env: &'a Env, paths: &'a Paths, cwd: &'a str) -> Context<'a> {
        Context {
            config,
            env,
            paths,
            project: (!cwd.is_empty()).then(|| Path::new(cwd)),
            flag: None,
            client_version: None,
            client: Client::ClaudeCode,
            pi_window: None,
        }
    }

    /// The context of the hook `input` runs for: its session's directory and client.
    pub fn for_hook(
        config: &'a Config,
        env: &'a Env,
        paths: &'a Paths,
        input: &'a crate::input::HookInput,
    ) -> Context<'a> {
        let mut ctx = Context::new(config, env, paths, &input.cwd);
        ctx.client = input.client();
        ctx.pi_window = input.context_window;
        ctx
    }
}

/// Limits older than this are resolved again from the config and the client's settings.
pub const LIMITS_FRESH: Duration = Duration::from_secs(60);

/// The limits kept in the marker, if they may still be used: resolved less than
/// [`LIMITS_FRESH`] ago, for the same model and reported window, and with usage inside them.
fn cached_limits(
    marker: &Marker,
    key: u64,
    model: Option<&str>,
    reported: Option<u64>,
    tokens: Option<u64>,
    now: DateTime<Utc>,
) -> Option<Limits> {
    let fresh = marker.limits_at.is_some_and(|at| {
        now.signed_duration_since(at)
            .to_std()
            .is_ok_and(|age| age <= LIMITS_FRESH)
    });
    let same_model = model.is_none() || model == marker.model.as_deref();
    let same_report = reported.is_none() || reported == marker.reported_window;
    if !fresh || !same_model || !same_report || marker.limits_key != Some(key) {
        return None;
    }
    let limits = Limits {
        window: marker.window?,
        compact_at: marker.compact_at?,
        trigger_at: marker.trigger_at?,
        critical_at: marker.critical_at,
    };
    // Usage over the window proves it wrong.
    tokens.is_none_or(|t| t <= limits.window).then_some(limits)
}

/// The limits for a reading of `tokens` from a reply of `model` (and the window the status line
/// reported, if it did): the marker's while fresh, else resolved from every source.
pub fn limits_for(
    ctx: &Context,
    marker: &Marker,
    model: Option<&str>,
    reported: Option<u64>,
    tokens: Option<u64>,
    now: DateTime<Utc>,
) -> LimitsFor {
    cached_or(ctx.config, marker, model, reported, tokens, now, || {
        resolve(ctx, marker, model, reported, tokens)
    })
}

/// The marker's limits while they may be used ([`cached_limits`]), else `resolve()`'s.
pub fn cached_or(
    config: &Config,
    marker: &Marker,
    model: Option<&str>,
    reported: Option<u64>,
    tokens: Option<u64>,
    now: DateTime<Utc>,
    resolve: impl FnOnce() -> Resolved,
) -> LimitsFor {
    let key = config.limits_key();
    if let Some(limits) = cached_limits(marker, key, model, reported, tokens, now) {
        return LimitsFor {
            limits,
            sources: None,
        };
    }
    let r = resolve();
    LimitsFor {
        limits: r.limits,
        sources: Some((r.window_source, r.compact_source, key, r.idle_compaction)),
    }
}

/// What only I/O tells about the limits: a learned window for the model, the running client's
/// `--autocompact`, and its compaction settings.
#[derive(Debug, Clone, Default)]
pub struct Gathered {
    pub learned: Option<u64>,
    pub flag: Option<u64>,
    pub client: ClientCompaction,
    /// The client's version (from the transcript or the status line), when known: older
    /// clients reserve more for the reply before compacting.
    pub client_version: Option<String>,
}

impl Gathered {
    /// What a manual command (`usage`, `replay`) knows: the client's settings for `project`
    /// (its variables from this process), and `--autocompact N` given by hand.
    pub fn for_command(env: &Env, project: Option<&Path>, flag: Option<u64>) -> Gathered {
        Gathered {
            learned: None,
            flag,
            client: ClientCompaction::from_settings(&client_settings(env, project)),
            client_version: None,
        }
    }
}

/// Gathers [`Gathered`] for a session on `model`.
fn gather(ctx: &Context, model: Option<&str>) -> Gathered {
    let settings = client_settings(ctx.env, ctx.project);
    Gathered {
        learned: model.and_then(|m| learned(ctx.paths).get(m).copied()),
        flag: ctx.flag.or_else(|| client_flag(ctx.env)),
        client: ClientCompaction::from_settings(&settings),
        client_version: ctx.client_version.map(str::to_string),
    }
}

/// The limits of a session on `model` with `tokens` in context, from every source: the config,
/// what the status line reported (`reported`, else what the marker remembers), learned windows,
/// the model, the client's command line, environment and settings, and where the session was
/// seen auto-compacting.
pub fn resolve(
    ctx: &Context,
    marker: &Marker,
    model: Option<&str>,
    reported: Option<u64>,
    tokens: Option<u64>,
) -> Resolved {
    let model = model.or(marker.model.as_deref());
    if ctx.client == Client::Pi {
        // The model's window as pi knows it, remembered for the commands that read this
        // model's sessions later without pi (`usage`, `replay`): here, where the limits are
        // resolved (at most once a minute), not on every hook. A cache: one not written is only
        // a default window there.
        if let (Some(window), Some(model)) = (ctx.pi_window, model) {
            let _ = learn(ctx.paths, &learned_key(model), window);
        }
        let facts = pi_facts(
            ctx.env,
            ctx.project,
            model,
            ctx.pi_window.or(marker.reported_window),
        );
        return resolve_pi(ctx.config, &facts);
    }
    if ctx.client == Client::Codex {
        let facts = codex_facts(ctx.env, reported.or(marker.reported_window));
        if let Some(resolved) = resolve_codex(ctx.config, &facts) {
            return resolved;
        }
    }
    let gathered = gather(ctx, model);
    resolve_with(ctx.config, marker, model, reported, tokens, &gathered)
}

/// What pi's files tell about a session on `model` (`provider/id`) in `project`: the window
/// the extension reported, else the model's in `models.json`, else the one pi's extension
/// reported for the model in an earlier session ([`learned`]), else the default (a model pi
/// ships has its window in pi's registry only: Claude Code's table of windows is not pi's,
/// which gives `claude-opus-4-6` 1M); and its compaction settings.
pub fn pi_facts(
    env: &Env,
    project: Option<&Path>,
    model: Option<&str>,
    reported: Option<u64>,
) -> window::PiFacts {
    let agent_dir = crate::pi::config::agent_dir_of(env);
    let window = reported
        .filter(|w| *w > 0)
        .map(|w| (w, WindowSource::PiReported))
        .or_else(|| {
            let found = crate::pi::config::model_window(agent_dir.as_deref()?, model?)?;
            Some((found, WindowSource::PiModels))
        })
        .or_else(|| {
            let paths = env.paths().ok()?;
            let w = learned(&paths).get(&learned_key(model?)).copied()?;
            Some((w, WindowSource::PiLearned))
        })
        .unwrap_or((crate::usage::DEFAULT_WINDOW, WindowSource::Default));
    let settings = crate::pi::config::settings(agent_dir.as_deref(), project);
    window::PiFacts {
        window,
        reserve: (
            settings.reserve_tokens(),
            settings.reserve.as_ref().map(|(_, file)| file.clone()),
        ),
        off: (!settings.compaction_enabled())
            .then(|| settings.enabled.as_ref().map(|(_, file)| file.clone()))
            .flatten(),
    }
}

/// A pi session's limits from what its files tell (no I/O). A window set in ctxguard's config
/// is the user's word.
pub fn resolve_pi(config: &Config, facts: &window::PiFacts) -> Resolved {
    let mut facts = facts.clone();
    if let Some(forced) = config.window_tokens {
        facts.window = (forced, WindowSource::Config);
    }
    let (limits, compact_source) = window::pi_limits(&facts, &config.policy());
    Resolved {
        limits,
        window_source: facts.window.1,
        compact_source,
        // pi does not compact an idle session.
        idle_compaction: None,
    }
}

/// What Codex's `config.toml` and its rollout's reported window tell about its compaction.
pub fn codex_facts(env: &Env, reported: Option<u64>) -> window::CodexFacts {
    let compaction = env
        .codex_home()
        .and_then(|home| {
            let shown = crate::codex::config_path(&home).display().to_string();
            crate::codex::read_compaction(&home, &shown).ok()
        })
        .unwrap_or_default();
    window::CodexFacts {
        reported,
        window: compaction.window,
        limit: compaction.limit,
    }
}

/// A Codex session's limits from what its config and rollout tell (no I/O): `None` when no
/// window is known yet. A window set in ctxguard's config is the user's word and is shown.
pub fn resolve_codex(config: &Config, facts: &window::CodexFacts) -> Option<Resolved> {
    let mut facts = facts.clone();
    // The user's window for ctxguard is the effective window, in place of Codex's.
    if let Some(forced) = config.window_tokens {
        facts.reported = Some(forced);
        facts.window = None;
    }
    let (limits, compact_source) = window::codex_limits(&facts, &config.policy())?;
    Some(Resolved {
        limits,
        // In the order `codex_limits` takes them.
        window_source: if config.window_tokens.is_some() {
            WindowSource::Config
        } else if facts.window.is_some() {
            WindowSource::CodexConfig
        } else if facts.reported.is_some() {
            WindowSource::Rollout
        } else {
            WindowSource::CodexDefault
        },
        compact_source,
        // Codex does not compact an idle session.
        idle_compaction: None,
    })
}

/// [`resolve`] on facts already gathered: no I/O (`replay` calls it with what a transcript
/// alone tells).
pub fn resolve_with(
    config: &Config,
    marker: &Marker,
    model: Option<&str>,
    reported: Option<u64>,
    tokens: Option<u64>,
    gathered: &Gathered,
) -> Resolved {
    let model = window::judged_model(
        model.or(marker.model.as_deref()),
        marker.session_model.as_deref(),
    );
    let window = window::resolve(&WindowFacts {
        config_models: Some(&config.model_windows),
        config: config.window_tokens,
        client_max: gathered
            .client
            .max_context
            .filter(|_| gathered.client.compact_off || model.and_then(window::known).is_none()),
        model,
        reported: reported.or(marker.reported_window),
        learned: gathered.learned,
        tokens,
    });
    let mut policy = config.policy();
    policy.autocompact_pct = gathered.client.pct;
    // The client's buffer is its output reservation plus 13k; an older client reserves more.
    // A buffer set in the config is the user's word and stays.
    if config.compact_buffer_tokens == crate::usage::Policy::default().compact_buffer_tokens {
        policy.compact_buffer_tokens = client::output_reserve(
            gathered.client_version.as_deref(),
            gathered.client.max_output,
        ) + crate::usage::AUTOCOMPACT_MARGIN;
    }
    let (limits, compact_source) = window::limits(
        window.tokens,
        &policy,
        &CompactFacts {
            setting: gathered.client.window_for(model, gathered.flag),
            off: gathered.client.off.clone(),
            reactive: model
                .and_then(|m| client::reactive_model(m, gathered.client_version.as_deref())),
            observed: marker.auto_compacted_at,
            uncompacted: marker.uncompacted_max,
            stop_buffer: client::stop_reserve(
                gathered.client_version.as_deref(),
                gathered.client.max_output,
            ) + crate::usage::BLOCKING_MARGIN,
            stop_override: gathered.client.blocking_override,
        },
    );
    Resolved {
        limits,
        window_source: window.source,
        compact_source,
        idle_compaction: gathered
            .client
            .idle_from
            .filter(|_| client::idle_compaction(gathered.client_version.as_deref())),
    }
}

#[cfg(test)]
mod tests;
