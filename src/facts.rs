//! The I/O behind [`crate::window`]'s rules: the windows learned from status lines (kept in
//! `models.json` under the state root), Claude Code's settings for this project, and the running
//! client's own command line (`--autocompact N`, read from `/proc/$CLAUDE_PID/cmdline` on
//! Linux and with `sysctl(KERN_PROCARGS2)` on macOS; on Windows that source is simply absent).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use chrono::{DateTime, Utc};

use crate::client;
use crate::config::{Config, Env};
use crate::files;
use crate::marker::{Marker, Observation, Source};
use crate::paths::Paths;
use crate::usage::Limits;
use crate::window::{self, CompactFacts, CompactSource, WindowFacts, WindowSource};

/// No more models than this are remembered (a guard against a flood of made-up ids).
const MAX_LEARNED: usize = 64;

fn learned_path(paths: &Paths) -> PathBuf {
    paths.root().join("models.json")
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

/// `--autocompact N` (or `--autocompact=N`) in an argument list.
fn autocompact_arg<S: AsRef<str>>(args: &[S]) -> Option<u64> {
    let mut it = args.iter().map(AsRef::as_ref);
    while let Some(arg) = it.next() {
        if arg == "--autocompact" {
            return it.next().and_then(client::window_tokens);
        }
        if let Some(v) = arg.strip_prefix("--autocompact=") {
            return client::window_tokens(v);
        }
    }
    None
}

/// The running client's `--autocompact` argument, where the OS lets a hook read its parent's
/// command line.
fn client_flag(env: &Env) -> Option<u64> {
    let pid = env.client_pid?;
    read_cmdline(pid).and_then(|args| autocompact_arg(&args))
}

#[cfg(target_os = "linux")]
fn read_cmdline(pid: u32) -> Option<Vec<String>> {
    use std::io::Read;
    let path = PathBuf::from(format!("/proc/{pid}/cmdline"));
    let (file, _) = files::open_regular(&path, "command line").ok()?;
    let mut bytes = Vec::new();
    file.take(64 * 1024).read_to_end(&mut bytes).ok()?;
    Some(
        bytes
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

/// macOS has no /proc: the kernel gives a process's arguments through
/// `sysctl(KERN_PROCARGS2)` (to the same user), read by [`procargs2`].
#[cfg(target_os = "macos")]
fn read_cmdline(pid: u32) -> Option<Vec<String>> {
    let pid = libc::c_int::try_from(pid).ok()?;
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
    let mut len: libc::size_t = 0;
    // SAFETY: a valid name of 3 integers; a null buffer asks for the size only.
    let sized = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            std::ptr::null_mut(),
            &raw mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if sized != 0 || len == 0 {
        return None;
    }
    let mut buf = vec![0u8; len];
    // SAFETY: the buffer holds `len` bytes, and `len` says so.
    let read = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            buf.as_mut_ptr().cast(),
            &raw mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if read != 0 {
        return None;
    }
    buf.truncate(len);
    procargs2(&buf)
}

/// The arguments in a `KERN_PROCARGS2` buffer: the argument count (a native-endian 32-bit
/// integer), the executable's path, NUL padding, then the arguments, each ending in NUL (the
/// environment follows; it is not read).
#[cfg(any(test, target_os = "macos"))]
fn procargs2(buf: &[u8]) -> Option<Vec<String>> {
    let argc = usize::try_from(i32::from_ne_bytes(buf.get(..4)?.try_into().ok()?)).ok()?;
    let rest = &buf[4..];
    let exec_end = rest.iter().position(|b| *b == 0)?;
    let args_start = exec_end + rest[exec_end..].iter().position(|b| *b != 0)?;
    let args: Vec<String> = rest[args_start..]
        .split(|b| *b == 0)
        .take(argc)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (args.len() == argc).then_some(args)
}

/// Windows has no way to read another process's command line short of reading its memory;
/// there the client's `--autocompact` is simply not a source.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn read_cmdline(_pid: u32) -> Option<Vec<String>> {
    None
}

/// Claude Code's settings for a project (user, project, local, managed).
pub fn client_settings(env: &Env, project: Option<&Path>) -> client::Settings {
    let project = env.project_dir.as_deref().or(project);
    client::Settings::read(
        client::locations(
            env.home.as_deref(),
            project,
            Path::new(client::MANAGED_SETTINGS),
        ),
        env.client().clone(),
    )
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
        }
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

/// Claude Code's auto-compaction settings, as its variables (process and `env` blocks) and
/// settings files set them, independent of the model: what [`resolve_with`] applies.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientCompaction {
    /// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`.
    pub pct: Option<f64>,
    /// `CLAUDE_CODE_AUTO_COMPACT_WINDOW`.
    pub window_var: Option<u64>,
    /// The top-level `autoCompactWindow` (`None` tokens for `"auto"`), with its origin.
    pub window_setting: Option<(Option<u64>, String)>,
    /// `modelSettings.<model>.autoCompactWindow`: the key as written, its tokens (`None` for
    /// `"auto"`, which overrides the top-level setting with the model's own window), its origin.
    pub per_model: Vec<(String, Option<u64>, String)>,
    /// What turned auto-compaction off (`DISABLE_COMPACT`, `DISABLE_AUTO_COMPACT`,
    /// `autoCompactEnabled: false`), if anything.
    pub off: Option<String>,
    /// Idle compaction: `None` when off (`idleCompaction: false`), else the tokens from which it
    /// takes an attended session.
    pub idle_from: Option<u64>,
    /// `CLAUDE_CODE_MAX_OUTPUT_TOKENS`, which older clients reserve in full.
    pub max_output: Option<u64>,
    /// `CLAUDE_CODE_MAX_CONTEXT_TOKENS`: the window of a model the client does not know (of
    /// every model with `DISABLE_COMPACT`).
    pub max_context: Option<u64>,
    /// `DISABLE_COMPACT` is set.
    pub compact_off: bool,
}

impl Default for ClientCompaction {
    /// The client's defaults: nothing set, idle compaction on from 200k.
    fn default() -> ClientCompaction {
        ClientCompaction {
            pct: None,
            window_var: None,
            window_setting: None,
            per_model: Vec::new(),
            off: None,
            idle_from: Some(crate::marker::IDLE_COMPACTION_TOKENS),
            max_output: None,
            max_context: None,
            compact_off: false,
        }
    }
}

impl ClientCompaction {
    /// Read from the client's merged settings and variables.
    pub fn from_settings(settings: &client::Settings) -> ClientCompaction {
        ClientCompaction {
            pct: settings.autocompact_pct().and_then(|r| r.value),
            window_var: settings.compact_window_var().and_then(|r| r.value),
            window_setting: None,
            per_model: Vec::new(),
            off: settings.auto_compact_off().map(|o| o.to_string()),
            idle_from: settings.idle_compaction(crate::marker::IDLE_COMPACTION_TOKENS),
            max_output: settings
                .var(client::MAX_OUTPUT_TOKENS)
                .and_then(|v| client::window_tokens(&v)),
            max_context: settings
                .var(client::MAX_CONTEXT_TOKENS)
                .and_then(|v| client::window_tokens(&v)),
            compact_off: settings.compact_off(),
        }
        .with_windows(settings)
    }

    /// The compaction-window settings merged across files as the client merges them
    /// ([`client::Settings::model_compact_windows`]): the entries it can use, the one that
    /// applies to a model first.
    fn with_windows(mut self, settings: &client::Settings) -> ClientCompaction {
        self.per_model = settings
            .model_compact_windows()
            .into_iter()
            .filter_map(|(model, r)| Some((model, r.value?.tokens(), r.origin.to_string())))
            .collect();
        self.window_setting = settings
            .usable_compact_window()
            .and_then(|r| Some((r.value?.tokens(), r.origin.to_string())));
        self
    }

    /// The compaction window for `model`, and where it came from, as the client picks it:
    /// `CLAUDE_CODE_AUTO_COMPACT_WINDOW`, else the running client's `--autocompact` (`flag`),
    /// else a `modelSettings` entry naming the model, else the top-level setting.
    pub fn window_for(
        &self,
        model: Option<&str>,
        flag: Option<u64>,
    ) -> Option<(u64, CompactSource)> {
        if let Some(w) = self.window_var {
            return Some((w, CompactSource::Env));
        }
        if let Some(w) = flag {
            return Some((w, CompactSource::Flag));
        }
        if let Some(model) = model {
            if let Some((_, w, origin)) = self
                .per_model
                .iter()
                .find(|(key, _, _)| client::same_model(key, model))
            {
                // `"auto"` for this model: its own window, whatever the top-level says.
                return w.map(|w| (w, CompactSource::Setting(origin.clone())));
            }
        }
        let (w, origin) = self.window_setting.as_ref()?;
        w.map(|w| (w, CompactSource::Setting(origin.clone())))
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
    let gathered = gather(ctx, model);
    resolve_with(ctx.config, marker, model, reported, tokens, &gathered)
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
mod tests {
    use super::*;

    #[test]
    fn a_procargs2_buffer_gives_the_arguments() {
        let mut buf = 3i32.to_ne_bytes().to_vec();
        buf.extend_from_slice(
            b"/usr/local/bin/claude\0\0\0\0claude\0--autocompact\x00300000\0HOME=/x\0",
        );
        let args = procargs2(&buf).unwrap();
        assert_eq!(args, ["claude", "--autocompact", "300000"]);
        assert_eq!(autocompact_arg(&args), Some(300_000));
        // Truncated or empty buffers give nothing rather than a guess.
        assert_eq!(procargs2(&buf[..20]), None);
        assert_eq!(procargs2(&buf[..2]), None);
        assert_eq!(procargs2(&[]), None);
    }

    #[cfg(any(target_os = "linux", target_os = "macos"))]
    #[test]
    fn this_process_command_line_can_be_read() {
        let args = read_cmdline(std::process::id()).unwrap();
        assert!(args[0].contains("ctxguard"), "{args:?}");
    }

    #[test]
    fn the_autocompact_argument_in_both_spellings() {
        assert_eq!(
            autocompact_arg(&["claude", "-p", "--autocompact", "300000", "hi"]),
            Some(300_000)
        );
        assert_eq!(
            autocompact_arg(&["claude", "--autocompact=250000"]),
            Some(250_000)
        );
        assert_eq!(autocompact_arg(&["claude", "--autocompact"]), None);
        assert_eq!(autocompact_arg(&["claude", "--autocompact", "lots"]), None);
        assert_eq!(autocompact_arg(&["claude", "-p", "300000"]), None);
    }

    fn t(secs: i64) -> DateTime<Utc> {
        use chrono::TimeZone;
        Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
    }

    #[test]
    fn cached_limits_are_used_while_fresh_and_for_the_same_model() {
        let marker = Marker {
            model: Some("claude-opus-5-5".into()),
            window: Some(1_000_000),
            compact_at: Some(967_000),
            trigger_at: Some(927_000),
            critical_at: Some(952_000),
            limits_at: Some(t(0)),
            reported_window: Some(1_000_000),
            limits_key: Some(7),
            ..Marker::new("s")
        };
        assert_eq!(
            cached_limits(&marker, 7, Some("claude-opus-5-5"), None, None, t(60))
                .map(|l| l.trigger_at),
            Some(927_000)
        );
        assert_eq!(
            cached_limits(&marker, 7, None, Some(1_000_000), Some(1_000_000), t(60))
                .map(|l| l.window),
            Some(1_000_000)
        );
        assert_eq!(
            cached_limits(&marker, 7, Some("claude-opus-5-5"), None, None, t(61)),
            None
        );
        assert_eq!(
            cached_limits(&marker, 7, Some("claude-sonnet-4-5"), None, None, t(1)),
            None
        );
        // Another config, a different report, or usage over the window: resolve again.
        assert_eq!(cached_limits(&marker, 8, None, None, None, t(1)), None);
        assert_eq!(
            cached_limits(&marker, 7, None, Some(200_000), None, t(1)),
            None
        );
        assert_eq!(
            cached_limits(&marker, 7, None, None, Some(1_000_001), t(1)),
            None
        );
    }

    #[test]
    fn older_clients_reserve_the_whole_output_and_unknown_models_take_the_clients_max() {
        let config = Config::default();
        let marker = Marker::new("s");
        let at = |version: Option<&str>, client: ClientCompaction, model: &str| {
            let gathered = Gathered {
                client,
                client_version: version.map(str::to_string),
                ..Gathered::default()
            };
            resolve_with(&config, &marker, Some(model), None, None, &gathered)
        };
        // A model every version compacts at its threshold.
        let sonnet = "claude-opus-4-6";
        // 2.1.14: 200k − 32k − 13k; with CLAUDE_CODE_MAX_OUTPUT_TOKENS=64000, 123k.
        let r = at(Some("2.1.14"), ClientCompaction::default(), sonnet);
        assert_eq!(
            (r.limits.compact_at, r.limits.trigger_at),
            (155_000, 115_000)
        );
        let big = ClientCompaction {
            max_output: Some(64_000),
            ..ClientCompaction::default()
        };
        assert_eq!(at(Some("2.1.3"), big, sonnet).limits.compact_at, 123_000);
        // 2.1.330, an unread later or earlier one, or no version: 20k at most.
        for v in [Some("2.1.330"), Some("2.1.200"), Some("2.0.76"), None] {
            assert_eq!(
                at(v, ClientCompaction::default(), sonnet).limits.compact_at,
                167_000
            );
        }
        // A buffer set in the config is kept.
        let own = Config {
            compact_buffer_tokens: 50_000,
            ..Config::default()
        };
        let gathered = Gathered {
            client_version: Some("2.1.14".into()),
            ..Gathered::default()
        };
        let r = resolve_with(&own, &marker, Some(sonnet), None, None, &gathered);
        assert_eq!(r.limits.compact_at, 150_000);
        // CLAUDE_CODE_MAX_CONTEXT_TOKENS: the window of a model the client does not know, of
        // every model with DISABLE_COMPACT.
        let max = ClientCompaction {
            max_context: Some(400_000),
            ..ClientCompaction::default()
        };
        let r = at(None, max.clone(), "my-proxy-model");
        assert_eq!(
            (r.limits.window, r.window_source),
            (400_000, WindowSource::ClientMax)
        );
        assert_eq!(at(None, max.clone(), sonnet).limits.window, 200_000);
        let all = ClientCompaction {
            compact_off: true,
            ..max
        };
        assert_eq!(at(None, all, sonnet).limits.window, 400_000);
    }

    /// Read in 2.1.330's code and seen on the real client: without a compaction window set,
    /// the client compacts claude-sonnet-4-5 and claude-haiku-4-5 (and a 1M window opted into
    /// with `[1m]` on a 200k model) only when a request no longer fits; claude-opus-4-6 and the
    /// native 1M models at the threshold. 2.1.14 compacts every model at the threshold.
    #[test]
    fn models_the_client_compacts_only_when_full() {
        let config = Config::default();
        let marker = Marker::new("s");
        let at = |version: &str, client: ClientCompaction, model: &str| {
            let gathered = Gathered {
                client,
                client_version: Some(version.to_string()),
                ..Gathered::default()
            };
            let r = resolve_with(&config, &marker, Some(model), None, None, &gathered);
            (r.limits.compact_at, r.limits.trigger_at, r.compact_source)
        };
        let reactive = |model: &str| CompactSource::Reactive(model.to_string());
        for model in [
            "claude-sonnet-4-5-20250929",
            "claude-haiku-4-5",
            "claude-opus-4-1",
        ] {
            let canonical = crate::client::reactive_model(model, None).unwrap();
            assert_eq!(
                at("2.1.330", ClientCompaction::default(), model),
                (200_000, 160_000, reactive(&canonical)),
                "{model}"
            );
            assert_eq!(
                at("2.1.14", ClientCompaction::default(), model).0,
                155_000,
                "{model}"
            );
            // 2.1.152 was the last to compact them at the threshold; 2.1.153 the first not to.
            assert_eq!(at("2.1.152", ClientCompaction::default(), model).0, 167_000);
            assert_eq!(at("2.1.153", ClientCompaction::default(), model).0, 200_000);
        }
        assert_eq!(
            at("2.1.330", ClientCompaction::default(), "claude-opus-4-6"),
            (167_000, 127_000, CompactSource::Window)
        );
        // 2.1.153 to 2.1.162 compacted it only when full too.
        assert_eq!(
            at("2.1.160", ClientCompaction::default(), "claude-opus-4-6").0,
            200_000
        );
        assert_eq!(
            at(
                "2.1.330",
                ClientCompaction::default(),
                "claude-opus-4-6[1m]"
            ),
            (1_000_000, 960_000, reactive("claude-opus-4-6"))
        );
        assert_eq!(
            at("2.1.330", ClientCompaction::default(), "claude-opus-5-5").0,
            967_000
        );
        // A compaction window set (the variable, a setting) makes it a threshold again.
        let var = ClientCompaction {
            window_var: Some(200_000),
            ..ClientCompaction::default()
        };
        assert_eq!(
            at("2.1.330", var, "claude-sonnet-4-5"),
            (167_000, 127_000, CompactSource::Window)
        );
        let setting = ClientCompaction {
            window_setting: Some((Some(150_000), "autoCompactWindow in x".into())),
            ..ClientCompaction::default()
        };
        assert_eq!(at("2.1.330", setting, "claude-haiku-4-5").0, 117_000);
        // "auto" is no window: the client's own rule.
        let auto = ClientCompaction {
            window_setting: Some((None, "autoCompactWindow in x".into())),
            ..ClientCompaction::default()
        };
        assert_eq!(at("2.1.330", auto, "claude-haiku-4-5").0, 200_000);
        // Auto-compaction off wins.
        let off = ClientCompaction {
            off: Some("DISABLE_AUTO_COMPACT".into()),
            ..ClientCompaction::default()
        };
        assert!(matches!(
            at("2.1.330", off, "claude-haiku-4-5").2,
            CompactSource::Off(_)
        ));
    }

    #[test]
    fn learned_windows_round_trip_and_stay_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path().join("state"));
        assert!(learned(&paths).is_empty());
        learn(&paths, "claude-opus-5-5", 1_000_000).unwrap();
        learn(&paths, "", 5).unwrap();
        assert_eq!(
            learned(&paths),
            BTreeMap::from([("claude-opus-5-5".to_string(), 1_000_000)])
        );
        for i in 0..100 {
            learn(&paths, &format!("m{i}"), 200_000).unwrap();
        }
        assert_eq!(learned(&paths).len(), MAX_LEARNED);
    }
}
