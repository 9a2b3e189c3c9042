//! `ctxguard replay TRANSCRIPT`: runs the hooks' own decisions over a real transcript, as if
//! they had been installed when it was recorded, and judges each compaction cycle: was the agent
//! nudged in time, late, or not at all? A way to check ctxguard's thresholds against real
//! sessions, and to explain a missed nudge after the fact.
//!
//! [`simulate`] is the replay (pure: lines in, a [`report::Report`] out), [`report`] what it finds, and
//! [`render`] the text form; [`all`] replays every transcript of the client's projects folder
//! (and every Codex rollout) and sums the verdicts. Nothing is written; the config, the client's
//! settings (as the hooks read them: Claude Code's, or Codex's `config.toml`) and the
//! transcripts are read, no marker and no learned window.
//!
//! A Codex rollout (a file named `rollout-*.jsonl`, or one whose first line is a
//! `session_meta`) is replayed as Codex's hooks see it ([`rollout`]).

mod all;
mod cost;
mod line;
mod recoveries;
mod render;
mod report;
mod rollout;
mod sessions;
mod simulate;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use crate::config::{Config, Env};
use crate::input::Client;
use crate::rollout::Item;
use crate::transcript::{Line, LineReader, MAX_LINE};

use simulate::{Options, Simulation};

pub use sessions::{folder_name, Filter};

use crate::exit::Exit;
use crate::facts::Gathered;

pub fn run(
    path: &Path,
    window: Option<u64>,
    autocompact: Option<u64>,
    statusline: bool,
    json: bool,
) -> Result<()> {
    let (env, _, config) = crate::commands::setup()?;
    refuse_other_files(path)?;
    if crate::pi::shadow::is_pi_source(&path.to_string_lossy()) {
        let (report, _) = replay_pi(path, &env, &config, statusline, window, autocompact)?;
        if json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print!("{}", render::render(&report));
        }
        return Ok(());
    }
    // The same client settings as the hooks would read, for the directory replay runs in.
    let here = std::env::current_dir().ok();
    let gathered = Gathered::for_command(&env, here.as_deref(), autocompact);
    let report = replay_file_with(path, &config, |_, client| Options {
        statusline,
        window,
        gathered,
        codex: codex_facts(&env, client),
        pi: None,
    })?;
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
) -> Result<Exit> {
    match transcript {
        Some(path) => run(path, window, autocompact, statusline, json)?,
        None => all::run(&filter, window, autocompact, statusline, json)?,
    }
    Ok(Exit::Ok)
}

/// What Codex's `config.toml` sets for compaction, for a rollout: the hooks read it on every
/// call, `replay` once.
fn codex_facts(env: &Env, client: Client) -> Option<crate::window::CodexFacts> {
    (client == Client::Codex).then(|| crate::facts::codex_facts(env, None))
}

/// A pi session replayed through its copy in a transcript's form, on pi's window and
/// compaction settings for the directory its header names (returned beside the report).
fn replay_pi(
    path: &Path,
    env: &Env,
    config: &Config,
    statusline: bool,
    window: Option<u64>,
    autocompact: Option<u64>,
) -> Result<(report::Report, Option<PathBuf>)> {
    let copy = crate::pi::shadow::temporary(path)?;
    let cwd = (!copy.cwd.is_empty()).then(|| PathBuf::from(&copy.cwd));
    let pi = crate::facts::pi_facts(env, cwd.as_deref(), copy.model.as_deref(), None);
    let gathered = Gathered::for_command(env, cwd.as_deref(), autocompact);
    let mut report = replay_file_with(&copy.path, config, |_, _| Options {
        statusline,
        window,
        gathered,
        codex: None,
        pi: Some(pi),
    })?;
    report.transcript = shown_name(&path.display().to_string());
    Ok((report, cwd))
}

/// How far into a transcript its working directory is looked for.
const CWD_WITHIN: usize = 256 * 1024;

/// One transcript replayed, read once, with the options `options_for` gives for the working
/// directory its lines name (the first `"cwd"` in its first 256 KiB; a rollout's
/// `session_meta` or `turn_context`) and the client that wrote it: `replay --all` replays each
/// with the settings of its own directory. The lines before it wait in memory.
fn replay_file_with(
    path: &Path,
    config: &Config,
    options_for: impl FnOnce(Option<&Path>, Client) -> Options,
) -> Result<report::Report> {
    let (file, _) = crate::files::open_regular(path, "transcript")?;
    let mut lines = LineReader::new(file, MAX_LINE);
    let mut head: Vec<Vec<u8>> = Vec::new();
    let mut head_bytes = 0;
    let mut options_for = Some(options_for);
    let mut sim: Option<Simulation> = None;
    // A rollout by its name, as the hooks tell it, else by its first line.
    let mut client = crate::rollout::is_rollout(path).then_some(Client::Codex);
    let mut start = |cwd: Option<PathBuf>, client: Client, head: &mut Vec<Vec<u8>>| {
        let options = options_for.take().map(|f| f(cwd.as_deref(), client));
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
        let client = *client.get_or_insert_with(|| client_of(text));
        let cwd = cwd_of(text, client);
        head.push(text.to_vec());
        head_bytes += text.len() + 1;
        if cwd.is_some() || head_bytes >= CWD_WITHIN {
            sim = Some(start(cwd, client, &mut head));
        }
    }
    let sim = match sim {
        Some(sim) => sim,
        None => start(None, client.unwrap_or_default(), &mut head),
    };
    let mut report = sim.finish();
    report.transcript = shown_name(&path.display().to_string());
    Ok(report)
}

/// A file `replay` is given that is not a transcript or a rollout, refused saying what it is:
/// both hold one JSON object per line, each with its `"type"` (a settings file, a whole JSON
/// document, a log or a binary would otherwise replay as a quiet session). An empty file, or one
/// whose first line is too long to judge, is replayed as it is.
fn refuse_other_files(path: &Path) -> Result<()> {
    let (file, _) = crate::files::open_regular(path, "transcript")?;
    let mut lines = LineReader::new(file, MAX_LINE);
    let first = loop {
        match lines
            .next_line()
            .with_context(|| format!("reading transcript {}", path.display()))?
        {
            None | Some(Line::TooLong) => return Ok(()),
            Some(Line::Text(text)) if text.trim_ascii().is_empty() => {}
            Some(Line::Text(text)) => break text.to_vec(),
        }
    };
    let what = match serde_json::from_slice::<serde_json::Value>(&first) {
        Ok(serde_json::Value::Object(o))
            if o.get("type").is_some_and(serde_json::Value::is_string) =>
        {
            return Ok(())
        }
        Ok(serde_json::Value::Object(o)) => {
            let keys: Vec<&str> = o.keys().take(4).map(String::as_str).collect();
            format!(
                "its first line is a JSON object without a \"type\" (keys: {})",
                keys.join(", ")
            )
        }
        Ok(_) => "its first line is JSON but not an object".to_string(),
        Err(_) if std::str::from_utf8(&first).is_err() || first.contains(&0) => {
            "it is not text".to_string()
        }
        Err(_) if first.trim_ascii() == b"{" || first.trim_ascii() == b"[" => {
            "it is one JSON document spread over lines (a settings or config file?)".to_string()
        }
        Err(_) => format!(
            "its first line is not JSON ({:?})",
            crate::text::cut(&String::from_utf8_lossy(&first), 40)
        ),
    };
    anyhow::bail!(
        "{} is not a transcript or a rollout: {what}. Give a Claude Code transcript \
         (~/.claude/projects/<project>/<session>.jsonl) or a Codex rollout \
         (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl), one JSON object per line; or \
         `ctxguard replay --all`",
        shown_name(&path.display().to_string())
    )
}

/// A transcript's name (or a message naming one) as printed: one line, without escape
/// sequences, control or invisible characters ([`crate::text::sanitize`]), at most 300
/// characters.
fn shown_name(name: &str) -> String {
    crate::text::cut(&crate::text::sanitize(name, true), 300)
}

/// The client whose transcript begins with this line: Codex's rollouts begin with a
/// `session_meta`.
fn client_of(first: &[u8]) -> Client {
    match crate::rollout::item(first) {
        Item::Meta { .. } => Client::Codex,
        _ => Client::ClaudeCode,
    }
}

/// The working directory a transcript line names, if any.
fn cwd_of(line: &[u8], client: Client) -> Option<PathBuf> {
    let cwd = match client {
        Client::Codex => match crate::rollout::item(line) {
            Item::Meta { cwd, .. } => cwd?,
            Item::Cwd(cwd) => cwd,
            _ => return None,
        },
        Client::ClaudeCode | Client::Pi => {
            let v: serde_json::Value = serde_json::from_slice(line).ok()?;
            v.get("cwd")?.as_str()?.to_string()
        }
    };
    (!cwd.is_empty()).then(|| PathBuf::from(cwd))
}

#[cfg(test)]
mod tests;
