//! `ctxguard doctor`: checks that ctxguard is registered and can work, and explains what the
//! auto-compaction settings mean for the trigger. Each finding says how to fix it; any failure
//! makes the exit code 1.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use crate::config::{Config, Env};
use crate::exit::Exit;
use crate::files;
use crate::settings::{self, hook_events};
use crate::usage::{human, Limits};

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
    pub compact_at: u64,
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

/// A settings file Claude Code reads, parsed (or why not).
struct SettingsFile {
    path: PathBuf,
    value: Option<Value>,
}

fn settings_files(env: &Env) -> Vec<SettingsFile> {
    let mut paths = Vec::new();
    if let Some(home) = &env.home {
        paths.push(home.join(".claude/settings.json"));
    }
    if let Ok(cwd) = std::env::current_dir() {
        paths.push(cwd.join(".claude/settings.json"));
        paths.push(cwd.join(".claude/settings.local.json"));
    }
    paths
        .into_iter()
        .filter(|p| p.exists())
        .map(|path| {
            let value = fs::read_to_string(&path)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok());
            SettingsFile { path, value }
        })
        .collect()
}

/// Where a program named in a command would be found, if anywhere.
fn resolve_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.exists().then_some(p);
    }
    std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(program))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.is_file())
}

fn executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A value from a settings file's `env` block or, failing that, the process environment.
fn setting_env(files: &[SettingsFile], name: &str) -> Option<String> {
    files
        .iter()
        .rev()
        .filter_map(|f| f.value.as_ref()?.get("env")?.get(name))
        .find_map(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        })
        .or_else(|| std::env::var(name).ok())
        .filter(|v| !v.trim().is_empty())
}

pub fn check(env: &Env) -> Report {
    let mut out = Vec::new();
    let files = settings_files(env);

    for f in files.iter().filter(|f| f.value.is_none()) {
        out.push(finding(
            "settings",
            Status::Fail,
            format!(
                "{} is not valid JSON: Claude Code cannot read it either",
                f.path.display()
            ),
            Some("fix the JSON (a backup made by `ctxguard install` sits beside it)"),
        ));
    }

    // Registrations: every hook command that runs ctxguard, per event, per file.
    let mut plugin = Vec::new();
    for f in &files {
        if let Some(enabled) = f
            .value
            .as_ref()
            .and_then(|v| v.get("enabledPlugins"))
            .and_then(Value::as_object)
        {
            for (name, on) in enabled {
                if name.split('@').next() == Some("ctxguard") && on.as_bool() == Some(true) {
                    plugin.push(f.path.display().to_string());
                }
            }
        }
    }
    let mut programs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (event, _, sub) in hook_events() {
        let mut places = Vec::new();
        for f in &files {
            let Some(groups) = f
                .value
                .as_ref()
                .and_then(|v| v.get("hooks")?.get(event)?.as_array().cloned())
            else {
                continue;
            };
            for group in &groups {
                for hook in group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(cmd) = hook.get("command").and_then(Value::as_str) {
                        if settings::runs_ctxguard(cmd, sub) {
                            places.push(f.path.display().to_string());
                            if let Some(words) = settings::shell_words(cmd) {
                                programs
                                    .entry(words[0].clone())
                                    .or_default()
                                    .push(event.to_string());
                            }
                        }
                    }
                }
            }
        }
        places.extend(
            plugin
                .iter()
                .map(|p| format!("the ctxguard plugin (enabled in {p})")),
        );
        out.push(match places.len() {
            0 => finding(
                "hooks",
                Status::Fail,
                format!("{event} does not run `ctxguard {sub}`"),
                Some("run `ctxguard install` (or install the plugin)"),
            ),
            1 => finding("hooks", Status::Ok, format!("{event} runs `ctxguard {sub}` ({})", places[0]), None),
            n => finding(
                "hooks",
                Status::Warn,
                format!("{event} runs `ctxguard {sub}` {n} times: {}", places.join("; ")),
                Some("keep one: `ctxguard uninstall --settings PATH` for the extra settings file, or disable the plugin"),
            ),
        });
    }
    for (program, events) in &programs {
        match resolve_program(program) {
            Some(p) if executable(&p) => out.push(finding(
                "binary",
                Status::Ok,
                format!("{} exists ({})", p.display(), events.join(", ")),
                None,
            )),
            _ => out.push(finding(
                "binary",
                Status::Fail,
                format!(
                    "`{program}` in the {} hook command(s) does not exist or is not executable",
                    events.join(", ")
                ),
                Some("run `ctxguard install` to point the hooks at this binary"),
            )),
        }
    }

    // State directory.
    match env.paths() {
        Ok(paths) => {
            let probe = (|| -> Result<()> {
                files::ensure_state_dir(paths.root(), paths.root())?;
                files::write_atomic(&paths.root().join(".doctor-probe"), b"ok", false)?;
                fs::remove_file(paths.root().join(".doctor-probe"))?;
                Ok(())
            })();
            out.push(match probe {
                Ok(()) => finding(
                    "state",
                    Status::Ok,
                    format!("{} is writable", paths.root().display()),
                    None,
                ),
                Err(e) => finding(
                    "state",
                    Status::Fail,
                    format!("{e:#}"),
                    Some("set CTXGUARD_HOME to a writable directory you own"),
                ),
            });
            match Config::load(&paths, env) {
                Ok(loaded) => {
                    for w in loaded.warnings {
                        out.push(finding(
                            "config",
                            Status::Warn,
                            w,
                            Some("see docs/configuration.md"),
                        ));
                    }
                }
                Err(e) => out.push(finding(
                    "config",
                    Status::Fail,
                    format!("{e:#}"),
                    Some("fix the value (hooks fall back to the defaults meanwhile)"),
                )),
            }
        }
        Err(e) => out.push(finding(
            "state",
            Status::Fail,
            format!("{e:#}"),
            Some("set CTXGUARD_HOME"),
        )),
    }

    // Status line: the most specific file that sets one wins.
    let line = files.iter().rev().find_map(|f| {
        Some((
            f.path.display().to_string(),
            f.value
                .as_ref()?
                .get("statusLine")?
                .get("command")?
                .as_str()?
                .to_string(),
        ))
    });
    out.push(match line {
        Some((file, cmd)) if settings::runs_ctxguard(&cmd, crate::registry::STATUSLINE.name) => {
            finding("statusline", Status::Ok, format!("the status line runs ctxguard ({file})"), None)
        }
        Some((file, cmd)) => finding(
            "statusline",
            Status::Warn,
            format!("the status line runs `{cmd}` ({file}), not ctxguard: usage comes from the transcript, and a nudge can come a tool call late"),
            Some("`ctxguard install` (wraps your command), or pipe its input to `ctxguard statusline --quiet`"),
        ),
        None => finding(
            "statusline",
            Status::Warn,
            "no status line: usage comes from the transcript, and a nudge can come a tool call late".into(),
            Some("run `ctxguard install`"),
        ),
    });

    // Auto-compaction: what Claude Code will do, and what it means for the trigger.
    let disabled_setting = files
        .iter()
        .rev()
        .find_map(|f| f.value.as_ref()?.get("autoCompactEnabled")?.as_bool());
    if disabled_setting == Some(false)
        || setting_env(&files, "DISABLE_AUTO_COMPACT").is_some_and(|v| v != "0" && v != "false")
    {
        out.push(finding(
            "autocompact",
            Status::Warn,
            "auto-compaction is off (autoCompactEnabled false or DISABLE_AUTO_COMPACT): the nudge still comes at the trigger, but nothing compacts until you run /compact, and the context can fill up".into(),
            Some("compact by hand when nudged, or turn auto-compaction back on"),
        ));
    } else {
        out.push(finding(
            "autocompact",
            Status::Ok,
            "auto-compaction is on".into(),
            None,
        ));
    }
    let mut policy = Config::default().policy();
    if let Ok(loaded) = env.paths().and_then(|p| Config::load(&p, env)) {
        policy = loaded.config.policy();
    }
    if let Some(v) = setting_env(&files, "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE") {
        match v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|p| *p > 0.0 && *p <= 100.0)
        {
            Some(p) => {
                policy.autocompact_pct = Some(p);
                out.push(finding("autocompact", Status::Info, format!("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE={v}: compaction comes at {p}% of the window (if earlier than usual); the thresholds below include it"), None));
            }
            None => out.push(finding(
                "autocompact",
                Status::Warn,
                format!("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE={v:?} is not a percent"),
                Some("use a number from 1 to 100"),
            )),
        }
    }
    let window_setting = setting_env(&files, "CLAUDE_CODE_AUTO_COMPACT_WINDOW").or_else(|| {
        files.iter().rev().find_map(|f| {
            f.value
                .as_ref()?
                .get("autoCompactWindow")
                .map(|v| v.to_string())
        })
    });
    if let Some(v) = window_setting {
        match v.trim().parse::<u64>().ok().filter(|w| *w > 0) {
            Some(w) => {
                policy.autocompact_window = Some(w);
                out.push(finding("autocompact", Status::Info, format!("the auto-compact window is {w} tokens: compaction comes earlier on larger windows; the thresholds below include it"), None));
            }
            None => out.push(finding(
                "autocompact",
                Status::Warn,
                format!("the auto-compact window {v:?} is not a token count"),
                Some("use a whole number of tokens"),
            )),
        }
    }

    let thresholds = [200_000, 1_000_000]
        .into_iter()
        .map(|w| {
            let l = Limits::compute(w, &policy);
            Threshold {
                window: w,
                compact_at: l.compact_at,
                trigger_at: l.trigger_at,
                critical_at: l.critical_at,
            }
        })
        .collect();
    let ok = out.iter().all(|f| f.status != Status::Fail);
    Report {
        ok,
        findings: out,
        thresholds,
    }
}

pub fn run(json: bool) -> Result<Exit> {
    let env = Env::from_process();
    let report = check(&env);
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for f in &report.findings {
            let tag = match f.status {
                Status::Ok => "ok  ",
                Status::Info => "info",
                Status::Warn => "warn",
                Status::Fail => "FAIL",
            };
            println!("{tag} {:<11} {}", f.check, f.message);
            if let Some(fix) = &f.fix {
                println!("     {:<11} fix: {fix}", "");
            }
        }
        println!();
        println!("thresholds   window  nudge at  critical at  compacts at");
        for t in &report.thresholds {
            println!(
                "             {:>6}  {:>8}  {:>11}  {:>11}",
                human(t.window),
                human(t.trigger_at),
                t.critical_at.map_or("off".to_string(), human),
                human(t.compact_at)
            );
        }
    }
    Ok(if report.ok { Exit::Ok } else { Exit::Failure })
}
