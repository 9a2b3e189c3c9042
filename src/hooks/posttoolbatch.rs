//! `ctxguard posttoolbatch`: the nudge's third route, after a batch of tool calls and before the
//! next model request. When `PreToolUse` runs, the reply that made the call is usually not on
//! disk yet (the client starts tools while it streams, and writes the reply once it is whole:
//! read in 2.1.330's code), so a turn whose replies jump past the trigger could reach its next
//! request with only the previous turn's usage read. `PostToolBatch` runs once the batch's
//! results are in, when that reply has been written, and its `additionalContext` reaches the
//! next request; when that reply is not there yet (the client writes it a moment later, at
//! times), it waits for it, at most a second. It takes the same session step ([`crate::step::take`]), under the same lock, so the
//! routes together still give each nudge at most once per level per cycle.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Deserialize;

use crate::config::Env;
use crate::event;
use crate::hooks::{additional_context, Diag, Outcome};

/// The batch's tool calls, as far as this hook needs them: their ids.
#[derive(Debug, Default, Deserialize)]
struct Batch {
    #[serde(default)]
    tool_calls: Vec<Call>,
}

#[derive(Debug, Default, Deserialize)]
struct Call {
    #[serde(default)]
    tool_use_id: Option<String>,
}

/// How long the hook waits for the reply that made the batch to reach the transcript: measured
/// on the real 2.1.330, it usually is there already, and at times is written a moment later.
const SETTLE: Duration = Duration::from_secs(1);

/// How much of the transcript's end is searched for that reply.
const TAIL: u64 = 512 * 1024;

/// Does the end of the transcript hold the reply that made the call `id` (its `tool_use` block,
/// `"id":"<id>"`)? An id that is not a plain token is not looked for (nothing waits on it), nor
/// is a transcript that cannot be read.
fn reply_on_disk(path: &Path, id: &str) -> bool {
    let plain = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !plain {
        return true;
    }
    let Ok((mut file, len)) = crate::files::open_regular(path, "transcript") else {
        return true;
    };
    let start = len.saturating_sub(TAIL);
    let mut tail = Vec::new();
    if file.seek(SeekFrom::Start(start)).is_err() || file.take(TAIL).read_to_end(&mut tail).is_err()
    {
        return true;
    }
    let needle = format!("\"id\":\"{id}\"");
    memchr::memmem::find(&tail, needle.as_bytes()).is_some()
}

/// Waits up to [`SETTLE`] for the batch's reply to be on disk, so the reading is of the reply
/// that made the calls, not the one before.
fn settle(transcript: &str, bytes: &[u8]) {
    let batch: Batch = serde_json::from_slice(bytes).unwrap_or_default();
    let Some(id) = batch.tool_calls.iter().find_map(|c| c.tool_use_id.clone()) else {
        return;
    };
    if transcript.is_empty() {
        return;
    }
    let started = Instant::now();
    while !reply_on_disk(Path::new(transcript), &id) && started.elapsed() < SETTLE {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The hook, given its input and environment.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let input = super::parse_event(bytes, event::POST_TOOL_BATCH, env)?;
    if !input.agent_id.is_empty() {
        return Ok(Outcome::Quiet);
    }
    settle(&input.transcript_path, bytes);
    // The same session step, without the receipt (the hooks before a request settle it); a
    // drop this batch's reply shows (PostToolBatch often reads a new reply first) is acted on
    // here, once.
    let text = crate::step::take(&input, env, crate::step::Route::PostToolBatch, diag)?;
    Ok(text
        .map(|text| additional_context(event::POST_TOOL_BATCH, text))
        .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_is_found_by_its_tool_use_id_not_by_a_result_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let result = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1"}]}}"#;
        std::fs::write(&path, format!("{result}\n")).unwrap();
        assert!(!reply_on_disk(&path, "toolu_1"));
        let reply = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Bash"}]}}"#;
        std::fs::write(&path, format!("{reply}\n{result}\n")).unwrap();
        assert!(reply_on_disk(&path, "toolu_1"));
        // Nothing to wait for: an id that is no plain token, a transcript that cannot be read.
        assert!(reply_on_disk(&path, "toolu\"1"));
        assert!(reply_on_disk(&dir.path().join("gone.jsonl"), "toolu_2"));
    }
}
