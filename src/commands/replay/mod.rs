//! `ctxguard replay TRANSCRIPT`: runs the hooks' own decisions over a real transcript, as if
//! they had been installed when it was recorded, and judges each compaction cycle: was the agent
//! nudged in time, late, or not at all? A way to check ctxguard's thresholds against real
//! sessions, and to explain a missed nudge after the fact.
//!
//! [`simulate`] is the replay (pure: lines in, a [`report::Report`] out), [`report`] what it finds, and
//! [`render`] the text form; [`all`] replays every transcript of the client's projects folder
//! and sums the verdicts. Nothing is written; the config, the client's settings (as the hooks
//! read them) and the transcripts are read, no marker and no learned window.

mod all;
mod line;
mod render;
mod report;
mod simulate;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use crate::config::Config;
use crate::transcript::{Line, LineReader, MAX_LINE};

use simulate::{Options, Simulation};

pub use all::Filter;

use crate::facts::Gathered;

pub fn run(
    path: &Path,
    window: Option<u64>,
    autocompact: Option<u64>,
    statusline: bool,
    json: bool,
) -> Result<()> {
    let (env, _, config) = crate::commands::setup()?;
    // The same client settings as the hooks would read, for the directory replay runs in.
    let here = std::env::current_dir().ok();
    let gathered = Gathered::for_command(&env, here.as_deref(), autocompact);
    let options = Options {
        statusline,
        window,
        gathered,
    };
    let report = replay_file(path, &config, options)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render::render(&report));
    }
    Ok(())
}

/// `replay TRANSCRIPT`, or `replay --all` (no transcript) over the transcripts `filter` takes.
pub fn run_either(
    transcript: Option<&Path>,
    filter: Filter,
    window: Option<u64>,
    autocompact: Option<u64>,
    statusline: bool,
    json: bool,
) -> Result<()> {
    match transcript {
        Some(path) => run(path, window, autocompact, statusline, json),
        None => all::run(&filter, window, autocompact, statusline, json),
    }
}

/// One transcript replayed with these options.
fn replay_file(path: &Path, config: &Config, options: Options) -> Result<report::Report> {
    replay_file_with(path, config, |_| options)
}

/// How far into a transcript its working directory is looked for.
const CWD_WITHIN: usize = 256 * 1024;

/// One transcript replayed, read once, with the options `options_for` gives for the working
/// directory its lines name (the first `"cwd"` in its first 256 KiB): `replay --all` replays
/// each with the settings of its own directory. The lines before it wait in memory.
fn replay_file_with(
    path: &Path,
    config: &Config,
    options_for: impl FnOnce(Option<&Path>) -> Options,
) -> Result<report::Report> {
    let (file, _) = crate::files::open_regular(path, "transcript")?;
    let mut lines = LineReader::new(file, MAX_LINE);
    let mut head: Vec<Vec<u8>> = Vec::new();
    let mut head_bytes = 0;
    let mut options_for = Some(options_for);
    let mut sim: Option<Simulation> = None;
    let mut start = |cwd: Option<PathBuf>, head: &mut Vec<Vec<u8>>| {
        let options = options_for.take().map(|f| f(cwd.as_deref()));
        let mut sim = Simulation::new(config, options.unwrap_or_default());
        for line in head.drain(..) {
            sim.feed(&line);
        }
        sim
    };
    while let Some(line) = lines
        .next_line()
        .with_context(|| format!("reading transcript {}", path.display()))?
    {
        // Still a line when too long: the numbering stays the file's.
        let text = match line {
            Line::Text(text) => text,
            Line::TooLong => b"",
        };
        if let Some(sim) = &mut sim {
            sim.feed(text);
            continue;
        }
        let cwd = cwd_of(text);
        head.push(text.to_vec());
        head_bytes += text.len() + 1;
        if cwd.is_some() || head_bytes >= CWD_WITHIN {
            sim = Some(start(cwd, &mut head));
        }
    }
    let sim = match sim {
        Some(sim) => sim,
        None => start(None, &mut head),
    };
    let mut report = sim.finish();
    report.transcript = shown_name(&path.display().to_string());
    Ok(report)
}

/// A transcript's name (or a message naming one) as printed: one line, without escape
/// sequences, control or invisible characters ([`crate::text::sanitize`]), at most 300
/// characters.
fn shown_name(name: &str) -> String {
    crate::text::cut(&crate::text::sanitize(name, true), 300)
}

/// The working directory a transcript line names, if any.
fn cwd_of(line: &[u8]) -> Option<PathBuf> {
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    let cwd = v.get("cwd")?.as_str()?;
    (!cwd.is_empty()).then(|| PathBuf::from(cwd))
}

#[cfg(test)]
mod tests;
