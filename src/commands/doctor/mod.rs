//! `ctxguard doctor`: checks that ctxguard is registered and can work, and explains what the
//! auto-compaction settings mean for the trigger. Everything is read once into a [`Context`];
//! doctor is then a list of small checks ([`CLAUDE_CODE_CHECKS`], then Codex's and pi's), each a function from the context to
//! findings, unit-tested with literals. Each finding says how to fix it; any failure makes the
//! exit code 1.

mod checks;
mod codex;
mod compaction;
mod pi;
mod plugin;
pub mod version;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::client;
use crate::config::{Config, Env, Loaded};
use crate::exit::Exit;
use crate::paths::Paths;
use crate::usage::human;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Info,
    Warn,
    Fail,
}

#[derive(Debug, Serialize)]
pub struct Finding {
    pub check: &'static str,
    pub status: Status,
    pub message: String,
    pub fix: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Threshold {
    pub window: u64,
    /// Where the client compacts, or, with auto-compaction off, stops accepting requests.
    pub compact_at: u64,
    /// Auto-compaction is off: `compact_at` is where the client stops.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stops: bool,
    pub trigger_at: u64,
    pub critical_at: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub ok: bool,
    pub findings: Vec<Finding>,
    pub thresholds: Vec<Threshold>,
}

fn finding(check: &'static str, status: Status, message: String, fix: Option<&str>) -> Finding {
    Finding {
        check,
        status,
        message,
        fix: fix.map(str::to_string),
    }
}

type Check = fn(&Context) -> Vec<Finding>;

/// The checks of `doctor --client claude-code`; plain `doctor` runs these, then
/// [`CODEX_WHEN_PRESENT`].
const CLAUDE_CODE_CHECKS: &[Check] = &[
    version::version,
    version::summary_facts,
    checks::settings_files,
    checks::hooks,
    checks::binaries,
    checks::state,
    checks::config,
    checks::status_line,
    plugin::plugin,
    compaction::auto_compaction,
    compaction::autocompact_pct,
    compaction::autocompact_window,
    compaction::idle_compaction,
    compaction::window_variables,
    compaction::auto_memory,
    compaction::sources,
];

/// Codex's checks in plain `doctor`: they say nothing without Codex's directory.
const CODEX_WHEN_PRESENT: &[Check] = &[codex::hooks, codex::trusted_by_codex, codex::compaction];

/// pi's check in plain `doctor`: it says nothing without pi's agent directory.
const PI_WHEN_PRESENT: &[Check] = &[pi::extension];

/// The checks of `doctor --client pi`: ctxguard's own, then pi's (asked headless whether it
/// loads the extension), which fail without pi's agent directory.
const PI_CHECKS: &[Check] = &[
    pi::version,
    checks::state,
    checks::config,
    pi::present,
    pi::extension_required,
    pi::loading,
    pi::compaction,
];

/// The checks of `doctor --client codex`: ctxguard's own, then Codex's, which fail without
/// Codex's directory.
const CODEX_CHECKS: &[Check] = &[
    codex::version,
    checks::state,
    checks::config,
    codex::present,
    codex::hooks_required,
    codex::trusted_by_codex,
    codex::compaction,
];

/// What the checks look at, read once.
#[derive(Debug)]
pub struct Context {
    /// Claude Code's settings files (user, project in the current directory, local, managed)
    /// and its variables.
    pub client: client::Settings,
    /// For a command whose program starts with `~/`.
    pub home: Option<PathBuf>,
    /// `PATH`, for a command that names `ctxguard` without a directory.
    pub search_path: Option<OsString>,
    /// The state root, or why there is none.
    pub paths: Result<Paths, String>,
    /// ctxguard's configuration, loaded strictly; `None` without a state root.
    pub config: Option<Result<Loaded, String>>,
    /// The `claude` on `PATH` and its version (asked once).
    pub claude: version::Client,
    /// Codex CLI's files, when its directory exists.
    pub codex: Option<codex::Setup>,
    /// Codex's directory (`$CODEX_HOME`, else `~/.codex`), whether or not it exists.
    pub codex_home: Option<PathBuf>,
    /// The `codex` on `PATH`, its version and the hooks it trusts (asked once, when Codex's
    /// setup is checked).
    pub codex_probe: codex::probe::Probe,
    /// pi's agent directory and files, when a directory for it can be named.
    pub pi: Option<pi::Setup>,
    /// The `pi` on `PATH`, its version and the extensions it loads (asked only by `doctor
    /// --client pi`).
    pub pi_probe: pi::probe::Probe,
    /// The running binary, when it is the one the plugin downloaded.
    pub plugin_binary: Option<PathBuf>,
    /// `~/.local/bin/ctxguard` when it is the plugin's link, and where it points.
    pub plugin_link: Option<(PathBuf, PathBuf)>,
}

impl Context {
    /// What the settings may hold for the client found (everything when none was).
    pub fn accepts(&self) -> client::Accepts {
        match &self.claude {
            version::Client::Version(_, v) => client::Accepts::version(v),
            _ => client::Accepts::ALL,
        }
    }
}

impl Context {
    /// Everything but the client's version, which [`check`] asks for (or is given).
    fn gather_without_client(env: &Env) -> Context {
        let project = std::env::current_dir().ok();
        let locations = client::locations(
            env.home.as_deref(),
            project.as_deref(),
            Path::new(client::MANAGED_SETTINGS),
        );
        let paths = env.paths().map_err(|e| format!("{e:#}"));
        let config = paths
            .as_ref()
            .ok()
            .map(|p| Config::load(p, env).map_err(|e| format!("{e:#}")));
        Context {
            client: client::Settings::read(locations, env.client().clone()),
            home: env.home.clone(),
            search_path: env.search_path.clone(),
            paths,
            config,
            claude: version::Client::NotFound,
            codex: codex::Setup::gather(env),
            codex_home: env.codex_home(),
            codex_probe: codex::probe::Probe::NotFound,
            pi: pi::Setup::gather(env, project.as_deref()),
            pi_probe: pi::probe::Probe::NotAsked,
            plugin_binary: crate::commands::plugin::running(),
            plugin_link: crate::commands::plugin::link(env.home.as_deref()),
        }
    }
}

/// Which client's setup doctor checks: both by default (Codex's when its directory exists).
pub type Only = Option<crate::commands::install::ClientArg>;

pub fn check(env: &Env, client_version: Option<&str>, only: Only) -> Result<Report> {
    use crate::commands::install::ClientArg;
    let mut ctx = Context::gather_without_client(env);
    // `doctor --client codex` and `--client pi` ask nothing of Claude Code.
    if only.is_none() || only == Some(ClientArg::ClaudeCode) {
        ctx.claude = version::client(env, client_version)?;
    }
    if only == Some(ClientArg::Pi) {
        let cwd = std::env::current_dir().ok();
        ctx.pi_probe = pi::probe::Probe::ask(env.search_path.as_deref(), cwd.as_deref());
    }
    // Codex is asked (its version; which hooks it trusts, once ctxguard's are registered) when
    // its setup is checked: always under `--client codex`, else when they are registered.
    let registered = ctx.codex.as_ref().is_some_and(codex::registered);
    let ask = match only {
        Some(ClientArg::Codex) => true,
        Some(ClientArg::ClaudeCode | ClientArg::Pi) => false,
        None => registered,
    };
    if ask {
        ctx.codex_probe = codex::probe::Probe::ask(env.search_path.as_deref(), registered);
    }
    Ok(report(&ctx, only))
}

/// Runs every check, in order, and works out the thresholds (Claude Code's).
fn report(ctx: &Context, only: Only) -> Report {
    use crate::commands::install::ClientArg;
    let checks: &[&[Check]] = match only {
        None => &[CLAUDE_CODE_CHECKS, CODEX_WHEN_PRESENT, PI_WHEN_PRESENT],
        Some(ClientArg::ClaudeCode) => &[CLAUDE_CODE_CHECKS],
        Some(ClientArg::Codex) => &[CODEX_CHECKS],
        Some(ClientArg::Pi) => &[PI_CHECKS],
    };
    let findings: Vec<Finding> = checks
        .iter()
        .flat_map(|list| list.iter())
        .flat_map(|check| check(ctx))
        .collect();
    let windows: &[u64] = if matches!(only, Some(ClientArg::Codex | ClientArg::Pi)) {
        &[]
    } else {
        &[200_000, 1_000_000]
    };
    let thresholds = windows
        .iter()
        .copied()
        .map(|w| {
            let l = compaction::limits(ctx, w);
            Threshold {
                window: w,
                compact_at: l.compact_at,
                stops: ctx.client.auto_compact_off().is_some(),
                trigger_at: l.trigger_at,
                critical_at: l.critical_at,
            }
        })
        .collect();
    Report {
        ok: findings.iter().all(|f| f.status != Status::Fail),
        findings,
        thresholds,
    }
}

/// A line of the report, at most.
const WIDTH: usize = 100;
/// Where a finding's explanation starts, and its continuation lines.
const INDENT: usize = 17;

/// The report for a person: each finding (and its fix) wrapped under its item, then the
/// thresholds.
fn render(report: &Report) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let tag = match f.status {
            Status::Ok => "ok  ",
            Status::Info => "info",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        };
        // The ok/FAIL column stays in sight: explanations wrap under their item.
        let mut head = format!("{tag} {:<11} ", f.check);
        for line in crate::text::wrap(&f.message, WIDTH - INDENT) {
            out.push_str(&format!("{head:<INDENT$}{line}\n"));
            head.clear();
        }
        if let Some(fix) = &f.fix {
            for line in crate::text::wrap(&format!("fix: {fix}"), WIDTH - INDENT) {
                out.push_str(&format!("{:INDENT$}{line}\n", ""));
            }
        }
    }
    if report.thresholds.is_empty() {
        return out;
    }
    out.push('\n');
    let point = if report.thresholds.iter().any(|t| t.stops) {
        "client stops at"
    } else {
        "compacts at"
    };
    out.push_str(&format!(
        "thresholds   window  nudge at  critical at  {point}\n"
    ));
    for t in &report.thresholds {
        out.push_str(&format!(
            "             {:>6}  {:>8}  {:>11}  {:>11}\n",
            human(t.window),
            human(t.trigger_at),
            t.critical_at.map_or("off".to_string(), human),
            human(t.compact_at)
        ));
    }
    out
}

pub fn run(json: bool, client_version: Option<&str>, only: Only) -> Result<Exit> {
    let env = Env::from_process();
    let report = check(&env, client_version, only)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(if report.ok { Exit::Ok } else { Exit::Failure })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::client::{Scope, Settings};

    /// A context with these settings files (see [`Settings::literal`]), a home of `/home/u` and
    /// no state root.
    pub fn ctx(files: &[(Scope, &str)]) -> Context {
        ctx_env(files, &[])
    }

    pub fn ctx_env(files: &[(Scope, &str)], env: &[(&'static str, &str)]) -> Context {
        Context {
            client: Settings::literal(files, env),
            home: Some(PathBuf::from("/home/u")),
            search_path: None,
            paths: Err("cannot find the home directory: set CTXGUARD_HOME".into()),
            config: None,
            claude: super::version::Client::NotFound,
            codex: None,
            codex_home: None,
            codex_probe: super::codex::probe::Probe::NotFound,
            pi: None,
            pi_probe: super::pi::probe::Probe::NotAsked,
            plugin_binary: None,
            plugin_link: None,
        }
    }

    /// Each finding as `status: message`.
    pub fn lines(findings: &[Finding]) -> Vec<String> {
        findings
            .iter()
            .map(|f| {
                let status = serde_json::to_value(f.status).unwrap();
                format!("{}: {}", status.as_str().unwrap(), f.message)
            })
            .collect()
    }

    #[test]
    fn a_report_renders_one_line_per_finding_then_the_thresholds() {
        let report = Report {
            ok: false,
            findings: vec![
                Finding {
                    check: "hooks",
                    status: Status::Fail,
                    message: "PreToolUse does not run `ctxguard pretooluse`".into(),
                    fix: Some("run `ctxguard install`".into()),
                },
                Finding {
                    check: "autocompact",
                    status: Status::Ok,
                    message: "auto-compaction is on".into(),
                    fix: None,
                },
            ],
            thresholds: vec![Threshold {
                window: 200_000,
                compact_at: 167_000,
                stops: false,
                trigger_at: 127_000,
                critical_at: None,
            }],
        };
        let expected = [
            "FAIL hooks       PreToolUse does not run `ctxguard pretooluse`",
            "                 fix: run `ctxguard install`",
            "ok   autocompact auto-compaction is on",
            "",
            "thresholds   window  nudge at  critical at  compacts at",
            "               200k      127k          off         167k",
        ]
        .map(|line| format!("{line}\n"))
        .concat();
        assert_eq!(render(&report), expected);
    }

    #[test]
    fn the_report_fails_on_any_failure_and_the_thresholds_follow_the_overrides() {
        let ctx = ctx(&[(
            Scope::User,
            r#"{"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}}"#,
        )]);
        let r = report(&ctx, None);
        assert!(!r.ok, "no hooks and no state root");
        assert_eq!(
            (r.thresholds[0].compact_at, r.thresholds[0].trigger_at),
            (90_000, 50_000)
        );
        assert_eq!(r.thresholds[1].window, 1_000_000);
    }
}
