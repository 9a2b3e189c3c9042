//! The checks of ctxguard's Codex CLI setup, made only when Codex's directory (`$CODEX_HOME`,
//! else `~/.codex`) exists, so that a user of Claude Code alone sees nothing of them: each of
//! ctxguard's Codex hooks is registered once in `hooks.json`, and trusted (`config.toml` holds the
//! hash of the handler as it is now; Codex skips it otherwise), and what `config.toml` sets for
//! compaction. [`Setup::gather`] reads the files; the checks are pure.

use std::path::PathBuf;

use serde_json::Value;
use toml_edit::{DocumentMut, Item};

use super::{finding, Context, Finding, Status};
use crate::codex::hooks::{self, Handler, Trust};
use crate::codex::{self as codex_files, MAX_CONFIG_BYTES};
use crate::config::Env;
use crate::files;
use crate::hook_list::{CODEX_HOOKS, HOOKS};
use crate::settings;
use crate::usage::human;
use crate::version::{LONG, TESTED_CODEX};

/// Codex's files, read once.
#[derive(Debug)]
pub struct Setup {
    /// Codex's directory, as found.
    pub home: PathBuf,
    /// `hooks.json` as Codex names it in trust keys (under the canonical directory).
    pub key_file: String,
    /// `hooks.json` parsed (`None`: there is none), or why it cannot be read.
    pub hooks: Result<Option<Value>, String>,
    /// `config.toml`'s text (`None`: there is none), or why it cannot be read.
    pub config: Result<Option<String>, String>,
}

impl Setup {
    /// What doctor looks at, when Codex's directory exists.
    pub fn gather(env: &Env) -> Option<Setup> {
        let home = env.codex_home().filter(|h| h.is_dir())?;
        let real = files::canonicalize(&home).unwrap_or_else(|_| home.clone());
        let path = hooks::hooks_path(&home);
        let hooks = files::read_regular(&path, "Codex's hooks.json", hooks::MAX_HOOKS_BYTES)
            .map_err(|e| format!("{e:#}"))
            .and_then(|bytes| {
                bytes
                    .map(|b| {
                        serde_json::from_slice(&b)
                            .map_err(|e| format!("{} is not valid JSON ({e})", path.display()))
                    })
                    .transpose()
            });
        let config = files::read_regular(
            &codex_files::config_path(&home),
            "Codex's config.toml",
            MAX_CONFIG_BYTES,
        )
        .map(|b| b.map(|b| String::from_utf8_lossy(&b).into_owned()))
        .map_err(|e| format!("{e:#}"));
        Some(Setup {
            key_file: hooks::hooks_path(&real).to_string_lossy().into_owned(),
            home,
            hooks,
            config,
        })
    }
}

/// The ctxguard hook subcommand a command line runs, by the rules every caller shares.
fn sub_of(line: &str) -> Option<String> {
    HOOKS
        .iter()
        .find(|h| settings::runs_ctxguard(line, h.name))
        .map(|h| h.name.to_string())
}

const CHECK: &str = "codex";
const INSTALL: &str = "run `ctxguard install --client codex`";

/// For `doctor --client codex`: Codex's directory exists.
pub fn present(ctx: &Context) -> Vec<Finding> {
    if ctx.codex.is_some() {
        return Vec::new();
    }
    let message = match &ctx.codex_home {
        Some(home) => format!("no Codex directory at {}", home.display()),
        None => "no Codex directory: neither CODEX_HOME nor a home directory is set".to_string(),
    };
    vec![finding(
        CHECK,
        Status::Fail,
        message,
        Some("set CODEX_HOME to Codex's directory, or run Codex once to make ~/.codex"),
    )]
}

/// [`hooks`] for `doctor --client codex`, where hooks not registered at all are a failure.
pub fn hooks_required(ctx: &Context) -> Vec<Finding> {
    let mut out = hooks(ctx);
    for f in &mut out {
        if f.status == Status::Info {
            f.status = Status::Fail;
        }
    }
    out
}

/// Each of ctxguard's Codex hooks registered once and trusted as it is now.
pub fn hooks(ctx: &Context) -> Vec<Finding> {
    let Some(setup) = &ctx.codex else {
        return Vec::new();
    };
    let path = hooks::hooks_path(&setup.home);
    let doc = match &setup.hooks {
        Err(e) => {
            return vec![finding(
                CHECK,
                Status::Fail,
                format!("{e}: Codex cannot read it either"),
                Some("fix the JSON (a backup made by `ctxguard install` sits beside it)"),
            )]
        }
        Ok(doc) => doc.clone().unwrap_or(Value::Null),
    };
    let ours = hooks::ours(&doc, &sub_of);
    if ours.is_empty() {
        return vec![finding(
            CHECK,
            Status::Info,
            format!(
                "ctxguard is not registered with Codex CLI ({} has none of its hooks)",
                path.display()
            ),
            Some(&format!("to use ctxguard with Codex, {INSTALL}")),
        )];
    }
    let mut out = Vec::new();
    let mut found: Vec<&Handler> = Vec::new();
    let mut missing = Vec::new();
    for c in CODEX_HOOKS {
        let mine: Vec<&Handler> = ours
            .iter()
            .filter(|(h, sub)| h.at.event == c.event && sub == c.command)
            .map(|(h, _)| h)
            .collect();
        match mine.len() {
            0 => missing.push(format!("{} (`ctxguard {}`)", c.event, c.command)),
            1 => {}
            n => out.push(finding(
                CHECK,
                Status::Warn,
                format!(
                    "{} runs `ctxguard {}` {n} times in {}",
                    c.event,
                    c.command,
                    path.display()
                ),
                Some(&format!("{INSTALL}: it keeps one")),
            )),
        }
        found.extend(mine.first());
    }
    if !missing.is_empty() {
        out.push(finding(
            CHECK,
            Status::Fail,
            format!("{} lacks {}", path.display(), missing.join(", ")),
            Some(INSTALL),
        ));
    }
    // Codex's own answer, where it gave one, says which hooks it trusts
    // ([`trusted_by_codex`]); else the hashes in config.toml, as ctxguard computes them.
    if !matches!(
        &ctx.codex_probe,
        Probe::Found {
            listed: Some(Ok(_)),
            ..
        }
    ) {
        out.extend(trust(setup, &found));
    }
    out.extend(config_hooks(setup));
    out
}

/// Whether Codex trusts each handler found.
fn trust(setup: &Setup, found: &[&Handler]) -> Vec<Finding> {
    let config = match &setup.config {
        Ok(text) => text.as_deref().unwrap_or("").parse::<DocumentMut>(),
        Err(e) => {
            return vec![finding(
                CHECK,
                Status::Warn,
                format!("cannot say which hooks Codex trusts: {e}"),
                None,
            )]
        }
    };
    let Ok(config) = config else {
        return vec![finding(
            CHECK,
            Status::Fail,
            format!(
                "{} is not valid TOML: Codex cannot read it either, nor which hooks are trusted",
                codex_files::config_path(&setup.home).display()
            ),
            Some("fix it (a backup made by `ctxguard install --trust` may sit beside it)"),
        )];
    };
    let skipped: Vec<String> = found
        .iter()
        .filter_map(|h| {
            let hash = h.hash.as_deref().unwrap_or_default();
            let why = match hooks::trust(&config, &h.at.key(&setup.key_file), hash) {
                Trust::Trusted => return None,
                Trust::Untrusted => "not trusted",
                Trust::Modified => "changed since it was trusted",
                Trust::Disabled => "turned off (enabled = false)",
            };
            Some(format!("{} ({why})", h.at.event))
        })
        .collect();
    if skipped.is_empty() {
        return vec![finding(
            CHECK,
            Status::Ok,
            format!(
                "Codex runs ctxguard's {} hooks from {}, each trusted",
                found.len(),
                hooks::hooks_path(&setup.home).display()
            ),
            None,
        )];
    }
    vec![finding(
        CHECK,
        Status::Fail,
        format!(
            "Codex skips ctxguard's {}: it runs a hook of hooks.json only once trusted",
            skipped.join(", ")
        ),
        Some(
            "review and trust them in Codex (start `codex`, type /hooks), or run `ctxguard \
             install --client codex --trust`",
        ),
    )]
}

/// ctxguard's hooks in `config.toml`'s `[hooks]` too: Codex loads both files, so they would run
/// twice.
fn config_hooks(setup: &Setup) -> Vec<Finding> {
    let Some(Ok(doc)) = setup
        .config
        .as_ref()
        .ok()
        .and_then(Option::as_deref)
        .map(str::parse::<DocumentMut>)
    else {
        return Vec::new();
    };
    let Some(table) = doc.get("hooks").and_then(Item::as_table_like) else {
        return Vec::new();
    };
    let mut events: Vec<String> = Vec::new();
    for (event, groups) in table.iter().filter(|(k, _)| *k != "state") {
        let Some(groups) = groups.as_array_of_tables() else {
            continue;
        };
        let runs = groups.iter().any(|g| {
            g.get("hooks")
                .and_then(Item::as_array_of_tables)
                .is_some_and(|list| {
                    list.iter().any(|h| {
                        h.get("command")
                            .and_then(Item::as_str)
                            .and_then(sub_of)
                            .is_some()
                    })
                })
        });
        if runs {
            events.push(event.to_string());
        }
    }
    if events.is_empty() {
        return Vec::new();
    }
    vec![finding(
        CHECK,
        Status::Warn,
        format!(
            "{} registers ctxguard under [hooks] too ({}): Codex loads both it and hooks.json, so \
             those hooks run twice",
            codex_files::config_path(&setup.home).display(),
            events.join(", ")
        ),
        Some("take ctxguard's entries out of config.toml's [hooks] (hooks.json has them)"),
    )]
}

/// Where Codex compacts, as `config.toml` sets it.
pub fn compaction(ctx: &Context) -> Vec<Finding> {
    let Some(setup) = &ctx.codex else {
        return Vec::new();
    };
    let Ok(text) = &setup.config else {
        return Vec::new();
    };
    let shown = codex_files::config_path(&setup.home).display().to_string();
    let c = codex_files::compaction(text.as_deref().unwrap_or(""), &shown);
    vec![
        finding(
            CHECK,
            Status::Info,
            compaction_message(&c, text.is_some(), &shown),
            None,
        ),
        finding(CHECK, Status::Info, LIMITS.to_string(), None),
    ]
}

/// What `config.toml`'s compaction settings mean, by the rule every command uses
/// ([`crate::window::codex_limits`]): the effective window Codex counts against (95% of the
/// model's), and where it compacts.
fn compaction_message(c: &codex_files::Compaction, exists: bool, shown: &str) -> String {
    let facts = crate::window::CodexFacts {
        reported: None,
        window: c.window.clone(),
        limit: c.limit.clone(),
    };
    let point = match crate::window::codex_limits(&facts, &crate::usage::Policy::default()) {
        Some((limits, _)) => limits.compact_at,
        None => 0,
    };
    let Some((window, wfrom)) = &c.window else {
        return match (&c.limit, exists) {
            (Some((limit, from)), _) => format!(
                "Codex compacts at {} tokens ({from}), or at 90% of the model's window if that is \
                 less",
                human(*limit)
            ),
            (None, false) => format!("no {shown}: Codex compacts at 90% of the model's window"),
            (None, true) => format!(
                "{shown} sets no compaction limit: Codex compacts at 90% of the model's window"
            ),
        };
    };
    let effective = window * crate::window::CODEX_EFFECTIVE_PCT / 100;
    let counts = format!(
        "Codex counts the context against {} tokens, 95% of the {}-token window ({wfrom})",
        human(effective),
        human(*window)
    );
    match &c.limit {
        Some((limit, from)) if *limit > window * 9 / 10 => format!(
            "{counts}, and compacts at {}, 90% of the window: {from} asks for {} and Codex caps it",
            human(point),
            human(*limit)
        ),
        Some((_, from)) => format!("{counts}, and compacts at {} ({from})", human(point)),
        None => format!(
            "{counts}, and compacts at {}, 90% of the window",
            human(point)
        ),
    }
}

/// What ctxguard cannot do the same way on Codex, said once (docs/clients.md has the rest).
const LIMITS: &str = "on Codex, the nudge reads the rollout's token counts (Codex has no status \
line, so no gauge), and Codex's summary can be neither steered nor kept (its PreCompact and \
PostCompact carry no instructions and no summary): the recovery block brings every fact back \
after the compaction (docs/clients.md)";

#[cfg(test)]
mod tests;

pub mod probe;
use probe::Probe;

/// Whether `hooks.json` registers any of ctxguard's hooks (then doctor asks Codex about them).
pub fn registered(setup: &Setup) -> bool {
    matches!(&setup.hooks, Ok(Some(doc)) if !hooks::ours(doc, &sub_of).is_empty())
}

/// For `doctor --client codex`: ctxguard's version and commit, then the `codex` on PATH and
/// whether the end-to-end tests cover its version. Nothing of Claude Code.
pub fn version(ctx: &Context) -> Vec<Finding> {
    let tested = TESTED_CODEX.join(", ");
    let ours = finding("version", Status::Info, format!("ctxguard {LONG}"), None);
    let theirs = match &ctx.codex_probe {
        Probe::NotFound => finding(
            "client",
            Status::Info,
            format!(
                "no `codex` on PATH, so its version is unknown (the end-to-end tests cover Codex \
                 CLI {tested})"
            ),
            None,
        ),
        Probe::Found {
            path,
            version: Err(why),
            ..
        } => finding(
            "client",
            Status::Warn,
            format!("{} --version: {why}", path.display()),
            Some("check that `codex --version` runs in this shell"),
        ),
        Probe::Found {
            path,
            version: Ok(v),
            ..
        } if TESTED_CODEX.contains(&v.as_str()) => finding(
            "client",
            Status::Ok,
            format!(
                "Codex CLI {v} ({}), a version the end-to-end tests cover",
                path.display()
            ),
            None,
        ),
        Probe::Found {
            path,
            version: Ok(v),
            ..
        } => finding(
            "client",
            Status::Info,
            format!(
                "Codex CLI {v} ({}) is not a version the end-to-end tests cover ({tested}); its \
                 hook payloads were not checked against ctxguard",
                path.display()
            ),
            None,
        ),
    };
    vec![ours, theirs]
}

const TRUST_FIX: &str = "review and trust them in Codex (start `codex`, type /hooks), or run \
`ctxguard install --client codex --trust`";

/// Which of ctxguard's hooks Codex itself trusts, as its app-server's `hooks/list` says: the
/// word that counts, since ctxguard's own hashes are only its reading of Codex's rule.
pub fn trusted_by_codex(ctx: &Context) -> Vec<Finding> {
    let (
        Some(setup),
        Probe::Found {
            path,
            version,
            listed: Some(listed),
        },
    ) = (&ctx.codex, &ctx.codex_probe)
    else {
        return Vec::new();
    };
    let codex = match version {
        Ok(v) => format!("Codex {v}"),
        Err(_) => "Codex".to_string(),
    };
    let listed = match listed {
        Ok(listed) => listed,
        Err(why) => {
            return vec![finding(
                CHECK,
                Status::Warn,
                format!(
                    "could not ask {codex} which hooks it trusts ({} app-server: {why}); judged \
                     from config.toml by ctxguard's reading of Codex's hashes",
                    path.display()
                ),
                None,
            )]
        }
    };
    let ours: Vec<&probe::Listed> = listed
        .iter()
        .filter(|h| sub_of(&h.command).is_some())
        .collect();
    if ours.is_empty() {
        return vec![finding(
            CHECK,
            Status::Fail,
            format!(
                "{codex} lists none of ctxguard's hooks (codex app-server, hooks/list), though {} \
                 registers them: it does not run them",
                hooks::hooks_path(&setup.home).display()
            ),
            Some("check that CODEX_HOME is the directory this Codex uses, then run `ctxguard install --client codex`"),
        )];
    }
    let skipped: Vec<String> = ours
        .iter()
        .filter(|h| h.trust != "trusted")
        .map(|h| format!("{} ({})", event_name(&h.event), h.trust))
        .collect();
    if skipped.is_empty() {
        return vec![finding(
            CHECK,
            Status::Ok,
            format!(
                "{codex} runs ctxguard's {} hooks: it reports each trusted (codex app-server, \
                 hooks/list)",
                ours.len()
            ),
            None,
        )];
    }
    // ctxguard's reading of the hashes says trusted, Codex says not: Codex hashes otherwise now.
    let file_says_trusted = file_says_trusted(setup);
    let why = if file_says_trusted {
        ", although config.toml holds the hashes ctxguard computes for them: this Codex hashes \
         hooks another way, so trust them in Codex itself"
    } else {
        ""
    };
    vec![finding(
        CHECK,
        Status::Fail,
        format!(
            "{codex} itself reports ctxguard's {} not trusted, and skips them{why}",
            skipped.join(", ")
        ),
        Some(if file_says_trusted {
            "start `codex`, type /hooks, and trust ctxguard's hooks"
        } else {
            TRUST_FIX
        }),
    )]
}

/// Whether config.toml holds, for every handler of ctxguard's in `hooks.json`, the hash
/// ctxguard computes for it.
fn file_says_trusted(setup: &Setup) -> bool {
    let Ok(Some(doc)) = &setup.hooks else {
        return false;
    };
    let ours = hooks::ours(doc, &sub_of);
    let handlers: Vec<&Handler> = ours.iter().map(|(h, _)| h).collect();
    trust(setup, &handlers)
        .first()
        .is_some_and(|f| f.status == Status::Ok)
}

/// `preToolUse` as Codex's hooks.json names it: `PreToolUse`.
fn event_name(codex: &str) -> String {
    let mut chars = codex.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}
