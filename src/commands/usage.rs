//! `ctxguard usage TRANSCRIPT`: the usage model applied to a transcript file, for checking what
//! the hooks would see.

use anyhow::Result;
use serde::Serialize;

use crate::config::Config;
use crate::exit::Exit;
use crate::facts::{self, Context};
use crate::input::Client;
use crate::marker::Store;
use crate::transcript;
use crate::usage::{percent, Level};
use crate::window::{CompactSource, WindowSource};

#[derive(Debug, Serialize)]
struct UsageReport {
    pub transcript: String,
    pub tokens: Option<u64>,
    pub window: u64,
    pub percent: Option<u64>,
    pub compact_at: u64,
    pub trigger_at: u64,
    pub critical_at: Option<u64>,
    /// `below`, `armed` or `critical`; null when tokens are unknown.
    pub level: Option<&'static str>,
    /// The newest event is a compaction: usage is unknown until the next reply.
    pub just_compacted: bool,
    /// The model of the newest reply, and where the window and compaction point came from.
    pub model: Option<String>,
    pub window_source: WindowSource,
    pub compact_source: CompactSource,
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::Below => "below",
        Level::Armed => "armed",
        Level::Critical => "critical",
    }
}

pub use crate::text::grouped;

#[allow(clippy::too_many_lines)] // one report, read, resolved and printed
pub fn run(
    path: &std::path::Path,
    window: Option<u64>,
    autocompact: Option<u64>,
    json: bool,
) -> Result<Exit> {
    let (env, paths, config) = crate::commands::setup()?;
    let codex = crate::rollout::is_rollout(path);
    // A pi session is read through its copy in a transcript's form, as the hooks read it.
    let pi = crate::pi::shadow::is_pi_source(&path.to_string_lossy())
        .then(|| crate::pi::shadow::temporary(path))
        .transpose()?;
    let shown = path;
    let path = pi.as_ref().map_or(path, |c| c.path.as_path());
    let scan = if codex {
        crate::rollout::tail_usage(path)?
    } else {
        transcript::tail_usage(path)?
    };
    if scan.gave_up {
        eprintln!(
            "warning: no usage found in the last {} MiB of {}; giving up",
            transcript::MAX_SCAN >> 20,
            shown.display()
        );
    }
    // Claude Code names a transcript after its session: what the hooks know of this session
    // (a window the status line reported, an observed auto-compaction) applies, as it does for
    // the hooks.
    // Codex names a rollout `rollout-<time>-<session id>.jsonl`.
    let marker = path
        .file_stem()
        .and_then(|s| s.to_str())
        .map(|stem| match &pi {
            Some(copy) => copy.session_id.as_str(),
            None if codex => crate::rollout::session_id_of(stem),
            None => stem,
        })
        .and_then(|id| Store::new(&paths, id).peek().ok().flatten())
        .unwrap_or_default();
    let config = Config {
        window_tokens: window.or(config.window_tokens),
        ..config
    };
    // The client's settings for the directory `usage` runs in, as the hooks read them.
    // pi's: the session's own directory, whose `.pi/settings.json` pi reads.
    let here = match &pi {
        Some(copy) if !copy.cwd.is_empty() => Some(std::path::PathBuf::from(&copy.cwd)),
        _ => std::env::current_dir().ok(),
    };
    let ctx = Context {
        config: &config,
        env: &env,
        paths: &paths,
        project: here.as_deref(),
        flag: autocompact,
        client_version: scan.version.as_deref(),
        client: if codex {
            Client::Codex
        } else if pi.is_some() {
            Client::Pi
        } else {
            Client::ClaudeCode
        },
        pi_window: None,
    };
    let resolved = facts::resolve(
        &ctx,
        &marker,
        scan.model.as_deref(),
        scan.window,
        scan.tokens,
    );
    let limits = resolved.limits;
    let window = limits.window;
    let report = UsageReport {
        transcript: shown.display().to_string(),
        tokens: scan.tokens,
        window,
        percent: scan.tokens.map(|t| percent(t, window)),
        compact_at: limits.compact_at,
        trigger_at: limits.trigger_at,
        critical_at: limits.critical_at,
        level: scan.tokens.map(|t| level_name(limits.level(t))),
        just_compacted: scan.boundary_at.is_some(),
        model: scan.model.clone(),
        window_source: resolved.window_source,
        compact_source: resolved.compact_source.clone(),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(Exit::Ok);
    }
    match report.tokens {
        Some(t) => println!(
            "tokens       {} ({}% of a {} window, {})",
            grouped(t),
            percent(t, window),
            grouped(window),
            match limits.level(t) {
                Level::Below => "below the nudge point",
                Level::Armed => "past the nudge point",
                Level::Critical => "past the critical point",
            }
        ),
        None if report.just_compacted => println!(
            "tokens       unknown: just compacted, no reply since (window {})",
            grouped(window)
        ),
        None => println!(
            "tokens       unknown: no assistant reply with usage (window {})",
            grouped(window)
        ),
    }
    println!(
        "window       {} ({}{})",
        grouped(window),
        report.window_source.describe(),
        report
            .model
            .as_deref()
            .map(|m| format!(
                "; model {}",
                crate::text::cut(&crate::text::sanitize(m, true), 80)
            ))
            .unwrap_or_default()
    );
    let to_go = report
        .tokens
        .map(|t| format!("{} to go; ", grouped(limits.headroom(t))))
        .unwrap_or_default();
    // With auto-compaction off nothing compacts: the point is where the client stops.
    let point = if matches!(report.compact_source, CompactSource::Off(_)) {
        "stops at     "
    } else {
        "compacts at  "
    };
    println!(
        "{point}{} ({to_go}from {})",
        grouped(limits.compact_at),
        report.compact_source.describe()
    );
    println!("nudge at     {}", grouped(limits.trigger_at));
    match limits.critical_at {
        Some(c) => println!("critical at  {}", grouped(c)),
        None => println!("critical at  off"),
    }
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    #[test]
    fn grouping() {
        assert_eq!(super::grouped(0), "0");
        assert_eq!(super::grouped(999), "999");
        assert_eq!(super::grouped(1_000), "1,000");
        assert_eq!(super::grouped(150_510), "150,510");
        assert_eq!(super::grouped(1_000_000), "1,000,000");
    }
}
