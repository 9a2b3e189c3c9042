//! Summaries prepared ahead of time: a checkpoint older than the boundary that uses it.
//!
//! Claude Code may prepare a compaction's summary before it applies it, and runs the
//! `PreCompact` hooks then (`trigger: "auto"`): 2.1.330 while the session is idle, 2.1.332 also
//! right after a turn (`armTrigger: "after_turn"` / `"beside_turn"`) and from a summary it saved
//! for a later resume ("Resumed from a saved summary to save usage."). The boundary lands later,
//! after more turns. The client keeps those turns verbatim after the summary
//! (`messagesToPreserve:[...r.ready.result.messagesToPreserve,...R]`, `R` being the messages since
//! the precompute), and marks the boundary `compactMetadata.precomputed: true`. So the summary,
//! and the facts block `PreCompact` handed it, cover the transcript up to the precompute: the
//! facts block is right for the summary it steers. The recovery block, though, must cover the
//! turns between the checkpoint and the boundary too.
//!
//! So at `SessionStart(compact)`: when the transcript holds a main-chain prompt or reply written
//! after the checkpoint and before the newest boundary, a fresh checkpoint is built from the part
//! between the previous boundary and this one (carrying forward from the same previous
//! checkpoint), saved as the session's newest, and the recovery shows it.

use std::path::Path;

use anyhow::Result;
use chrono::{DateTime, Local, Utc};
use serde_json::Value;

use crate::checkpoint::Checkpoint;
use crate::checkpointing;
use crate::config::{Config, Env};
use crate::daily_log;
use crate::diag::Diag;
use crate::input::HookInput;
use crate::transcript;

/// How far before the newest boundary the turns after a checkpoint are looked for.
const LOOK_BACK: u64 = 8 * 1024 * 1024;

/// A checkpoint this much older than a line still counts as taken after it (clocks, flushes).
const SLACK_SECS: i64 = 1;

/// Main-chain prompts and replies in `region` (lines of a transcript) written after `after`:
/// how many.
fn turns_after(region: &[u8], after: DateTime<Utc>) -> usize {
    region
        .split(|b| *b == b'\n')
        .filter(|line| {
            // Cheap before parsing: only user and assistant lines.
            memchr::memmem::find(line, b"\"type\":\"user\"").is_some()
                || memchr::memmem::find(line, b"\"type\":\"assistant\"").is_some()
        })
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(|v| {
            let kind = v.get("type").and_then(Value::as_str);
            let main = v.get("isSidechain").and_then(Value::as_bool) != Some(true)
                && v.get("isMeta").and_then(Value::as_bool) != Some(true)
                && v.get("isCompactSummary").and_then(Value::as_bool) != Some(true);
            let at = v
                .get("timestamp")
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<DateTime<Utc>>().ok());
            matches!(kind, Some("user" | "assistant"))
                && main
                && at.is_some_and(|at| at > after + chrono::Duration::seconds(SLACK_SECS))
        })
        .count()
}

/// Where the newest boundary (in `newest`, the one found there) starts, and how many turns the
/// transcript holds between `after` and it; `None` when it has none or cannot be read.
fn grown(newest: &transcript::Newest, after: DateTime<Utc>) -> Option<(u64, usize)> {
    let start = newest.get()?.start;
    let region = newest.read_before(start, LOOK_BACK)?;
    Some((start, turns_after(&region, after)))
}

/// A rebuild due at `SessionStart`: the transcript, where its newest boundary starts, and how
/// many turns came between the checkpoint and it.
pub struct Due {
    transcript: String,
    boundary: u64,
    turns: usize,
}

/// Is a rebuild of `cp` due: did the session go on after it and before the boundary? `newest`:
/// the newest boundary of the input's transcript, as the hook's call found it (the checkpoint's
/// own transcript is searched when the input names none).
pub fn due(input: &HookInput, cp: &Checkpoint, newest: &transcript::Newest) -> Option<Due> {
    let created = cp.meta.created_at?;
    let (transcript, (boundary, turns)) = if input.transcript_path.is_empty() {
        let own = transcript::Newest::of(Path::new(&cp.meta.transcript_path));
        (cp.meta.transcript_path.clone(), grown(&own, created)?)
    } else {
        (input.transcript_path.clone(), grown(newest, created)?)
    };
    (turns > 0).then_some(Due {
        transcript,
        boundary,
        turns,
    })
}

/// A fresh checkpoint of the compaction `old` stands for, up to its boundary, saved as the
/// session's newest and logged; its recovery handed over in the same update when `hand` is
/// given (unless another start took it meanwhile: `Taken::handed` says).
pub fn rebuild(
    env: &Env,
    config: &Config,
    input: &HookInput,
    old: &Checkpoint,
    due: &Due,
    hand: Option<&checkpointing::HandOver>,
    diag: &mut Diag,
) -> Result<checkpointing::Taken> {
    let (transcript, boundary, turns) = (due.transcript.as_str(), due.boundary, due.turns);
    let paths = env.paths()?;
    let now = env.now();
    let hook_input = HookInput {
        session_id: input.session_id.clone(),
        trigger: old.meta.trigger.clone(),
        custom_instructions: old.meta.custom_instructions.clone().unwrap_or_default(),
        transcript_path: transcript.to_string(),
        cwd: old.meta.cwd.clone(),
        ..HookInput::default()
    };
    // One way to take a checkpoint: the same compaction, read further ([`checkpointing::take`]
    // says what the rebuilt one keeps).
    let occasion = checkpointing::Occasion::Rebuild { old, hand };
    let Some(taken) = checkpointing::take(
        &paths,
        env,
        config,
        &hook_input,
        checkpointing::Until::at(boundary),
        &occasion,
        diag,
    )?
    else {
        anyhow::bail!("no checkpoint rebuilt");
    };
    let cp = &taken.cp;
    let local = now.with_timezone(&Local);
    let line = format!(
        "- {} · session {} · compaction #{}: the summary was prepared ahead ({}), {turns} \
         prompts and replies came after it before the boundary; checkpoint {} rebuilt as {}\n\n",
        local.format("%H:%M"),
        crate::text::sanitize(&input.session_id, true)
            .chars()
            .take(8)
            .collect::<String>(),
        cp.meta.compaction,
        old.meta
            .created_at
            .map(|t| t.with_timezone(&Local).format("%H:%M").to_string())
            .unwrap_or_default(),
        old.id,
        cp.id,
    );
    if let Err(e) = daily_log::append(&paths, local.date_naive(), &line) {
        diag.note(format!("{e:#}"));
    }
    Ok(taken)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_main_chain_turns_after_the_checkpoint_count() {
        let at: DateTime<Utc> = "2026-11-25T10:00:00Z".parse().unwrap();
        let line = |kind: &str, t: &str, extra: &str| {
            format!(r#"{{"type":"{kind}","timestamp":"{t}"{extra},"message":{{"content":"x"}}}}"#)
        };
        let region = [
            line("user", "2026-11-25T09:59:00Z", ""),
            line("assistant", "2026-11-25T10:00:00Z", ""),
            line("user", "2026-11-25T10:02:00Z", ""),
            line("assistant", "2026-11-25T10:02:05Z", ""),
            line(
                "assistant",
                "2026-11-25T10:02:06Z",
                r#","isSidechain":true"#,
            ),
            line("user", "2026-11-25T10:02:07Z", r#","isMeta":true"#),
            line("attachment", "2026-11-25T10:02:08Z", ""),
        ]
        .join("\n");
        assert_eq!(turns_after(region.as_bytes(), at), 2);
        assert_eq!(turns_after(b"", at), 0);
    }
}
