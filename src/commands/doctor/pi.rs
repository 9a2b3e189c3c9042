//! The checks of ctxguard's setup for pi (the coding agent): pi found and its version, the
//! extension in pi's folder (`$PI_CODING_AGENT_DIR/extensions/ctxguard.ts`, default
//! `~/.pi/agent`) written by `ctxguard install --client pi` and running a binary that is there,
//! pi loading it (asked headless, [`probe`]), and where pi compacts: the model's window less
//! `compaction.reserveTokens`, from pi's settings (global merged with the project's) and
//! `models.json`, read by `crate::pi::config`. [`Setup::gather`] reads; the checks are pure.

pub mod probe;

use std::path::{Path, PathBuf};

use super::{finding, Context, Finding, Status};
use crate::commands::install::pi::{self as ext, Existing};
use crate::config::Env;
use crate::pi::config::{self as pi_config, Settings};
use crate::usage::human;
use crate::version::{LONG, TESTED_PI};
use probe::Probe;

/// pi's files, read once.
#[derive(Debug)]
pub struct Setup {
    /// pi's agent directory, as found, and whether it exists.
    pub agent: PathBuf,
    pub exists: bool,
    /// What is at the extension's path (or why it cannot be read).
    pub extension: Result<Existing, String>,
    /// pi's settings for the current directory (global, then the project's).
    pub settings: Settings,
    /// The default model (`provider/id`, or a bare id) and its window in `models.json`, when
    /// the settings name one.
    pub model: Option<(String, Option<u64>)>,
}

impl Setup {
    pub fn gather(env: &Env, project: Option<&Path>) -> Option<Setup> {
        let agent = pi_config::agent_dir_of(env)?;
        let exists = agent.is_dir();
        let extension = ext::existing(&ext::extension_path(&agent)).map_err(|e| format!("{e:#}"));
        let settings = pi_config::settings(Some(&agent), project);
        let model = settings.default_model.as_ref().map(|id| {
            let name = match &settings.default_provider {
                Some(p) if !id.contains('/') => format!("{p}/{id}"),
                _ => id.clone(),
            };
            let window = pi_config::model_window(&agent, &name);
            (name, window)
        });
        Some(Setup {
            agent,
            exists,
            extension,
            settings,
            model,
        })
    }

    /// Whether ctxguard's extension is in pi's folder (then plain `doctor` shows pi's checks).
    pub fn registered(&self) -> bool {
        matches!(self.extension, Ok(Existing::Ours(..)))
    }
}

const CHECK: &str = "pi";
const INSTALL: &str = "run `ctxguard install --client pi`";

/// For `doctor --client pi`: ctxguard's version, then the `pi` on PATH and whether the
/// end-to-end tests cover its version.
pub fn version(ctx: &Context) -> Vec<Finding> {
    let tested = TESTED_PI.join(", ");
    let ours = finding("version", Status::Info, format!("ctxguard {LONG}"), None);
    let theirs = match &ctx.pi_probe {
        Probe::NotAsked => return vec![ours],
        Probe::NotFound => finding(
            "client",
            Status::Warn,
            format!("no `pi` on PATH: its version is unknown, and whether it loads the extension (the end-to-end tests cover pi {tested})"),
            Some("install pi (`npm install -g @earendil-works/pi-coding-agent`), or put it on PATH"),
        ),
        Probe::Found { path, version: Err(why), .. } => finding(
            "client",
            Status::Warn,
            format!("{} --version: {why}", path.display()),
            Some("check that `pi --version` runs in this shell"),
        ),
        Probe::Found { path, version: Ok(v), .. } if TESTED_PI.contains(&v.as_str()) => finding(
            "client",
            Status::Ok,
            format!("pi {v} ({}), a version the end-to-end tests cover", path.display()),
            None,
        ),
        Probe::Found { path, version: Ok(v), .. } => finding(
            "client",
            Status::Info,
            format!(
                "pi {v} ({}) is not a version the end-to-end tests cover ({tested}); its events \
                 were not checked against ctxguard's extension",
                path.display()
            ),
            None,
        ),
    };
    vec![ours, theirs]
}

/// For `doctor --client pi`: pi's agent directory exists.
pub fn present(ctx: &Context) -> Vec<Finding> {
    match &ctx.pi {
        Some(setup) if setup.exists => Vec::new(),
        Some(setup) => vec![finding(
            CHECK,
            Status::Fail,
            format!("no pi agent directory at {}", setup.agent.display()),
            Some("run pi once to make it, or set PI_CODING_AGENT_DIR to the one pi uses"),
        )],
        None => vec![finding(
            CHECK,
            Status::Fail,
            "no pi agent directory: neither PI_CODING_AGENT_DIR nor a home directory is set".into(),
            Some("set PI_CODING_AGENT_DIR (or HOME)"),
        )],
    }
}

/// [`extension`] for `doctor --client pi`, where no extension at all is a failure, unless pi
/// loads ctxguard's from elsewhere (the npm package, `pi install npm:ctxguard`).
pub fn extension_required(ctx: &Context) -> Vec<Finding> {
    let mut out = extension(ctx);
    let elsewhere = !loaded_from(ctx).is_empty();
    for f in &mut out {
        if f.status == Status::Info && !elsewhere {
            f.status = Status::Fail;
        }
    }
    out
}

/// The files pi said it loaded `/ctxguard` from, when it was asked and answered.
fn loaded_from(ctx: &Context) -> Vec<&str> {
    match &ctx.pi_probe {
        Probe::Found {
            loaded: Ok(listed), ..
        } => listed
            .iter()
            .filter(|c| c.name == "ctxguard")
            .map(|c| c.path.as_str())
            .collect(),
        _ => Vec::new(),
    }
}

/// The extension is ctxguard's, and the binary it runs is there.
pub fn extension(ctx: &Context) -> Vec<Finding> {
    let Some(setup) = ctx.pi.as_ref().filter(|s| s.exists) else {
        return Vec::new();
    };
    let path = ext::extension_path(&setup.agent);
    let mut out = match &setup.extension {
        Err(e) => vec![finding(CHECK, Status::Fail, e.clone(), None)],
        Ok(Existing::None) => vec![finding(
            CHECK,
            Status::Info,
            format!("ctxguard's extension is not in pi's folder ({} does not exist)", path.display()),
            Some(&format!("to use ctxguard with pi, {INSTALL}")),
        )],
        Ok(Existing::Theirs(what)) => vec![finding(
            CHECK,
            Status::Fail,
            format!("{} is {what}: pi loads it, not ctxguard's extension", path.display()),
            Some("move it away (pi loads every .ts file of that folder, under any name), then run `ctxguard install --client pi`"),
        )],
        Ok(Existing::Ours(text, _)) => vec![binary_finding(&path, ext::binary_in(text))],
    };
    out.extend(packaged_too(setup));
    out
}

fn binary_finding(path: &Path, bin: Option<String>) -> Finding {
    let Some(bin) = bin else {
        return finding(
            CHECK,
            Status::Fail,
            format!("{} names no ctxguard binary", path.display()),
            Some(INSTALL),
        );
    };
    let bin_path = Path::new(&bin);
    if !crate::files::is_executable(bin_path) {
        return finding(
            CHECK,
            Status::Fail,
            format!(
                "{} runs {bin}, which is not an executable file: every hook call does nothing",
                path.display()
            ),
            Some(&format!("{INSTALL} again (it writes this binary's path)")),
        );
    }
    if !crate::version::is_ctxguard_binary(bin_path) {
        return finding(
            CHECK,
            Status::Fail,
            format!(
                "{} runs {bin}, which is not a ctxguard binary",
                path.display()
            ),
            Some(&format!("{INSTALL} again (it writes this binary's path)")),
        );
    }
    finding(
        CHECK,
        Status::Ok,
        format!(
            "ctxguard's extension is in {}, and runs {bin}",
            path.display()
        ),
        None,
    )
}

/// The npm package installed as a pi package as well (`pi install npm:ctxguard`): pi would load
/// both copies, and every hook would run twice.
fn packaged_too(setup: &Setup) -> Option<Finding> {
    let file = pi_config::global_settings(&setup.agent);
    let text = crate::files::read_regular(&file, "pi's settings.json", pi_config::MAX_FILE_BYTES)
        .ok()
        .flatten()?;
    let doc: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let named = doc["packages"].as_array()?.iter().any(|p| {
        let source = p
            .as_str()
            .or_else(|| p["source"].as_str())
            .unwrap_or_default();
        source.starts_with("npm:ctxguard")
    });
    (named && setup.registered()).then(|| {
        finding(
            CHECK,
            Status::Warn,
            format!(
                "{} also has the npm package ctxguard in `packages`: pi loads both copies, so \
                 every hook runs twice",
                file.display()
            ),
            Some("keep one: `pi remove npm:ctxguard`, or `ctxguard uninstall --client pi`"),
        )
    })
}

/// pi itself loads the extension: its headless `get_commands` lists `/ctxguard` from the file
/// (or, with no copy in pi's folder, from the npm package), and from nowhere else.
pub fn loading(ctx: &Context) -> Vec<Finding> {
    let Some(setup) = ctx.pi.as_ref().filter(|s| s.exists) else {
        return Vec::new();
    };
    let Probe::Found { path, loaded, .. } = &ctx.pi_probe else {
        return Vec::new();
    };
    if let Err(why) = loaded {
        return vec![finding(
            CHECK,
            Status::Warn,
            format!(
                "could not ask pi whether it loads the extension ({} --mode rpc: {why}); \
                 checked: the file and the binary it runs",
                path.display()
            ),
            None,
        )];
    }
    let file = ext::extension_path(&setup.agent);
    let same = |p: &str| {
        let p = Path::new(p);
        p == file
            || matches!(
                (crate::files::canonicalize(p), crate::files::canonicalize(&file)),
                (Ok(a), Ok(b)) if a == b
            )
    };
    let from = loaded_from(ctx);
    let (ours, others): (Vec<&str>, Vec<&str>) = from.iter().partition(|p| same(p));
    let mut out = Vec::new();
    match (setup.registered(), ours.is_empty(), others.first()) {
        (true, false, _) => out.push(finding(
            CHECK,
            Status::Ok,
            format!("pi loads it: headless, it lists /ctxguard from {}", file.display()),
            None,
        )),
        (true, true, _) => out.push(finding(
            CHECK,
            Status::Fail,
            format!(
                "pi ({}) does not load {}: its headless get_commands lists no /ctxguard from it",
                path.display(),
                file.display()
            ),
            Some("check that PI_CODING_AGENT_DIR is the directory this pi uses, that `pi config` has not turned the extension off, and run `pi` to see its extension errors"),
        )),
        (false, _, Some(other)) => out.push(finding(
            CHECK,
            Status::Ok,
            format!("pi loads ctxguard's extension from {other} (a package: `pi install npm:ctxguard`)"),
            None,
        )),
        (false, _, None) => {}
    }
    if setup.registered() && !others.is_empty() {
        out.push(finding(
            CHECK,
            Status::Warn,
            format!(
                "pi also loads ctxguard's extension from {}: every hook runs twice",
                others.join(", ")
            ),
            Some("keep one: `pi remove npm:ctxguard`, or `ctxguard uninstall --client pi`"),
        ));
    }
    out
}

/// Where pi compacts, as its settings and `models.json` say.
pub fn compaction(ctx: &Context) -> Vec<Finding> {
    let Some(setup) = ctx.pi.as_ref().filter(|s| s.exists) else {
        return Vec::new();
    };
    let s = &setup.settings;
    let mut out = Vec::new();
    for file in &s.unreadable {
        out.push(finding(
            CHECK,
            Status::Warn,
            format!(
                "{} is not a JSON object: pi cannot read it either",
                file.display()
            ),
            Some("fix its JSON"),
        ));
    }
    let reserve = s.reserve_tokens();
    let reserve_from = s
        .reserve
        .as_ref()
        .map_or("pi's default".to_string(), |(_, f)| f.clone());
    if !s.compaction_enabled() {
        let from = s
            .enabled
            .as_ref()
            .map_or(String::new(), |(_, f)| format!(" ({f})"));
        out.push(finding(
            CHECK,
            Status::Warn,
            format!(
                "pi's auto-compaction is off{from}: pi compacts only on /compact, or when the \
                 provider reports the context overflowed"
            ),
            None,
        ));
    }
    let message = match &setup.model {
        Some((model, Some(window))) => format!(
            "pi compacts {model} at {} tokens: its {}-token window ({}) less \
             compaction.reserveTokens {} ({reserve_from})",
            human(window.saturating_sub(reserve)),
            human(*window),
            pi_config::models_file(&setup.agent).display(),
            human(reserve)
        ),
        Some((model, None)) => format!(
            "pi compacts {model} at its window less compaction.reserveTokens {} \
             ({reserve_from}); a built-in model, whose window pi knows (ctxguard reads it from \
             the extension's payload)",
            human(reserve)
        ),
        None => format!(
            "pi compacts at the model's window less compaction.reserveTokens {} \
             ({reserve_from}); no default model is set in pi's settings",
            human(reserve)
        ),
    };
    out.push(finding(CHECK, Status::Info, message, None));
    out
}

#[cfg(test)]
mod tests;
