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

use std::path::Path;

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
    let (file, _) = crate::files::open_regular(path, "transcript")?;
    let mut sim = Simulation::new(config, options);
    let mut lines = LineReader::new(file, MAX_LINE);
    while let Some(line) = lines
        .next_line()
        .with_context(|| format!("reading transcript {}", path.display()))?
    {
        match line {
            Line::Text(text) => sim.feed(text),
            // Still a line: the numbering stays the file's.
            Line::TooLong => sim.feed(b""),
        }
    }
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

#[cfg(test)]
mod tests;
