//! Claude Code's settings for a project, and the auto-compaction they set: its variables
//! (process and `env` blocks) and settings files merged as the client merges them.

use std::path::Path;

use crate::client;
use crate::config::Env;
use crate::window::CompactSource;

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
    /// `CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE`: where the client stops accepting requests.
    pub blocking_override: Option<u64>,
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
            blocking_override: None,
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
            blocking_override: settings
                .var(client::BLOCKING_LIMIT_OVERRIDE)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|v| *v > 0),
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
