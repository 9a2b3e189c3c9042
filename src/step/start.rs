//! The session step on `SessionStart`'s route (`Route::SessionStart`): this session's own
//! pending recovery, after a compaction or on resume. The same shape as the other routes:
//!
//! 1. the marker peeked once, without the lock (by [`super::take`]);
//! 2. the transcript read at most once for each thing, lazily (`transcript::Newest`: the newest
//!    boundary, for the catch-up, the hand-over and a summary prepared ahead alike);
//! 3. a compaction no `PreCompact` counted caught up first ([`dropped::catch_up`], through
//!    `checkpointing::take`), or a summary prepared ahead rebuilt ([`precomputed::rebuild`], an
//!    occasion of it that hands the recovery over in its own update);
//! 4. otherwise [`decide`] (pure): the pending recovery handed over (the boundary it follows
//!    counted), or one a resume lost handed over again, and the model the start names; recorded
//!    under the session's lock once, decided again on the marker as it is then, and not at all
//!    when nothing changed;
//! 5. then the side effect: the recovery block rendered (`recovering::handed_over`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use super::Call;
use crate::checkpoint::{self, Checkpoint, CheckpointStore};
use crate::checkpointing::{hand_over, name_model, HandOver};
use crate::config::{Config, Env};
use crate::diag::Diag;
use crate::dropped;
use crate::input::{Client, HookInput};
use crate::marker::{self, Event, Marker, Store, REFRESH};
use crate::precomputed;
use crate::receipt;
use crate::recovery::Kind;
use crate::text::sanitize;
use crate::transcript;

/// A Codex `SessionStart(resume)` this soon after a compaction is followed by that
/// compaction's `SessionStart(compact)`.
const CODEX_COMPACT_FOLLOWS: Duration = Duration::from_secs(120);

/// The model a `SessionStart` names, when it is one to record.
pub fn model_of(input: &HookInput) -> Option<String> {
    let model = sanitize(input.model.trim(), true);
    (!model.is_empty() && model.chars().count() <= 200 && !input.session_id.is_empty())
        .then_some(model)
}

/// `SessionStart`'s decision on `m` (pure): a pending recovery handed over (consumed even if
/// unreadable, so a broken one is not retried on every start; the boundary it follows counted),
/// or else the recovery a resume `lost` handed over again; the model the start names recorded.
/// The marker after it, and the checkpoint whose recovery this start gives.
fn decide(
    m: &Marker,
    hand: &HandOver,
    lost: Option<&receipt::Pending>,
    stale: Duration,
) -> (Marker, Option<String>) {
    if m.recovery_pending {
        let path = m.last_checkpoint.clone();
        return (hand_over(m, hand, path.clone(), stale), path);
    }
    let named = name_model(m, hand, stale);
    match lost {
        Some(pending) => {
            let handed = Event::Handed(Some(pending.clone()));
            let next = marker::transition(&named, &handed, hand.at, stale);
            (next, Some(pending.checkpoint.clone()))
        }
        None => (named, None),
    }
}

fn load_checkpoint(root: &Path, path: &str, diag: &mut Diag) -> Option<(Checkpoint, PathBuf)> {
    let path = PathBuf::from(path);
    match checkpoint::load(root, &path) {
        Ok(Some(cp)) => Some((cp, path)),
        Ok(None) => {
            diag.note(format!("checkpoint {} is missing", path.display()));
            None
        }
        Err(e) => {
            diag.note(format!("{e:#}"));
            None
        }
    }
}

/// The step on `SessionStart`'s route for the session of `input` (`kind`: after a compaction, or
/// on resume): the recovery block to give, if any.
pub(super) fn take(
    input: &HookInput,
    env: &Env,
    kind: Kind,
    diag: &mut Diag,
) -> Result<Option<String>> {
    let paths = env.paths()?;
    let store = Store::new(&paths, &input.session_id);
    let peeked = super::peek(&store, &input.session_id, diag);
    let config = Config::for_hook(&paths, env, diag);
    let call = Call {
        input,
        env,
        paths,
        config,
        route: super::Route::SessionStart(kind),
    };
    call.start(kind, peeked, &store, diag)
}

impl Call<'_> {
    /// This session's own recovery at `SessionStart` (`kind`: after a compaction, or on
    /// resume), on the marker `peeked`: the block to give, if any.
    fn start(
        &self,
        kind: Kind,
        peeked: Marker,
        store: &Store,
        diag: &mut Diag,
    ) -> Result<Option<String>> {
        let (input, env, config) = (self.input, self.env, &self.config);
        let (stale, now) = (config.stale(), env.now());
        let codex = input.client() == Client::Codex;
        let compact = input.source == "compact";
        let newest = transcript::Newest::of(Path::new(&input.transcript_path));
        let mut peeked = peeked;
        if compact {
            let caught =
                dropped::catch_up(env, config, input, &peeked, (None, false), &newest, diag)?;
            if caught.is_some() {
                peeked = super::peek(store, &input.session_id, diag);
            }
        }
        // Codex resuming a session compacts before the turn, then starts it twice: `resume`,
        // then `compact`. The compaction's own start gives its recovery.
        let follows = peeked
            .compacted_at
            .is_some_and(|c| marker::within(c, now, CODEX_COMPACT_FOLLOWS));
        if codex && input.source == "resume" && peeked.recovery_pending && follows {
            return Ok(None);
        }
        let hand = HandOver {
            at: now,
            client_pid: env.client_pid,
            // The boundary this start follows (Claude Code's; Codex counts its `compacted`
            // lines).
            boundary: (compact && !codex && peeked.recovery_pending)
                .then(|| newest.get())
                .flatten()
                .and_then(|b| b.at),
            model: model_of(input),
        };
        // A summary prepared ahead (applied at a compaction, or on resume from a saved
        // summary): the checkpoint is rebuilt to cover the turns between it and the boundary,
        // and handed over in the same locked update. (Claude Code's; Codex prepares none.)
        let loaded = peeked
            .last_checkpoint
            .clone()
            .filter(|_| peeked.recovery_pending && !codex)
            .filter(|_| matches!(input.source.as_str(), "compact" | "resume"))
            .and_then(|p| load_checkpoint(self.paths.root(), &p, &mut Diag::default()));
        if let Some((cp, _)) = &loaded {
            if let Some(due) = precomputed::due(input, cp, &newest) {
                match precomputed::rebuild(env, config, input, cp, &due, Some(&hand), diag) {
                    Ok(taken) if taken.handed => {
                        return Ok(Some(self.block((taken.cp, taken.path), kind, diag)));
                    }
                    // Another start took the recovery meanwhile.
                    Ok(_) => return Ok(None),
                    Err(e) => {
                        diag.note(format!("refreshing the checkpoint at the boundary: {e:#}"));
                    }
                }
            }
        }
        let lost = self.lost(&peeked, diag);
        let (next, given) = decide(&peeked, &hand, lost.as_ref().map(|(p, _)| p), stale);
        if given.is_none() && !marker::worth_saving(&peeked, &next, REFRESH) {
            return Ok(None);
        }
        // One locked update, decided again on the marker as it is then.
        let path = store.update(&input.session_id, diag, |m, _| {
            let (next, given) = decide(m, &hand, lost.as_ref().map(|(p, _)| p), stale);
            Ok((next, given))
        })?;
        // The checkpoint read above, unless another compaction came meanwhile.
        let found = match (path, loaded.or(lost.map(|(_, found)| found))) {
            (Some(p), Some((cp, at))) if at == Path::new(&p) => Some((cp, at)),
            (path, _) => path.and_then(|p| load_checkpoint(self.paths.root(), &p, diag)),
        };
        Ok(found.map(|given| self.block(given, kind, diag)))
    }

    /// The recovery handed over at this session's last compaction that a resume lost (see
    /// [`recovery_lost`]), to hand over again: its receipt and its checkpoint.
    fn lost(
        &self,
        m: &Marker,
        diag: &mut Diag,
    ) -> Option<(receipt::Pending, (Checkpoint, PathBuf))> {
        let input = self.input;
        let codex = input.client() == Client::Codex;
        // A recovery kept in memory only, lost to a resume, is Claude Code 2.1.14's (Codex
        // writes SessionStart's context into its rollout).
        let resumed = input.source == "resume" && !m.recovery_pending && m.compactions > 0;
        if !resumed || codex || !recovery_lost(&input.transcript_path) {
            return None;
        }
        let (cp, path) = CheckpointStore::new(&self.paths, &input.session_id)
            .latest_compaction()
            .unwrap_or_else(|e| {
                diag.note(format!("{e:#}"));
                None
            })?;
        let pending = receipt::Pending {
            compaction: cp.meta.compaction,
            checkpoint: path.display().to_string(),
            handed_at: self.env.now(),
            client_pid: self.env.client_pid,
        };
        Some((pending, (cp, path)))
    }

    /// The recovery block of the checkpoint a start gives.
    fn block(&self, (cp, path): super::Given, kind: Kind, diag: &mut Diag) -> String {
        crate::recovering::handed_over(
            &self.paths,
            self.env,
            &self.config,
            &self.input.cwd,
            cp,
            &path,
            kind,
            diag,
        )
    }
}

/// How much of the transcript's end [`recovery_lost`] reads: right after a compaction the part
/// after its boundary is the summary and a few records.
const LOST_TAIL: u64 = 256 * 1024;

/// Did the recovery handed over at the session's last compaction never reach the conversation?
/// Some clients (2.1.14) keep `SessionStart`'s context in memory only: `claude -p "/compact"`
/// ends with it, and the next `--resume` starts without it. A client that keeps it (2.1.330)
/// writes it into the transcript. So: after the newest `compact_boundary`, no reply yet and no
/// line carrying the block. Unreadable, or no boundary in the tail: not lost.
fn recovery_lost(transcript: &str) -> bool {
    if transcript.is_empty() {
        return false;
    }
    let Ok((mut file, len)) = crate::files::open_regular(Path::new(transcript), "transcript")
    else {
        return false;
    };
    lost_in(&mut file, len)
}

/// [`recovery_lost`] on a transcript of `len` bytes.
fn lost_in<R: std::io::Read + std::io::Seek>(reader: &mut R, len: u64) -> bool {
    let carried = |line: &[u8]| {
        matches!(
            transcript::classify(line),
            transcript::Verdict::Usage { .. }
        ) || memchr::memmem::find(line, b"ctxguard recovery: compaction #").is_some()
    };
    matches!(
        transcript::any_since_newest_boundary(reader, len, LOST_TAIL, carried),
        Ok(Some(false))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, TimeZone, Utc};

    fn t(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
    }

    /// A pending recovery is handed over with the boundary it follows and the model named, in
    /// one decision; decided again on what it recorded, nothing is left to give.
    #[test]
    fn a_start_hands_the_pending_recovery_over_once_and_names_the_model() {
        let stale = Duration::from_secs(3600);
        let hand = HandOver {
            at: t(100),
            client_pid: Some(7),
            boundary: Some(t(90)),
            model: Some("claude-opus-4-6".into()),
        };
        let pending = Marker {
            compactions: 1,
            compacted_at: Some(t(0)),
            recovery_pending: true,
            last_checkpoint: Some("cp_001".into()),
            ..Marker::new("s")
        };
        let (m, given) = decide(&pending, &hand, None, stale);
        assert_eq!(given.as_deref(), Some("cp_001"));
        assert!(!m.recovery_pending);
        let receipt = m.receipt_pending.clone().expect("a receipt waits");
        assert_eq!(
            (receipt.checkpoint.as_str(), receipt.client_pid),
            ("cp_001", Some(7))
        );
        assert_eq!(m.boundary_counted, Some(t(90)));
        assert_eq!(m.session_model.as_deref(), Some("claude-opus-4-6"));
        let (again, given) = decide(&m, &hand, None, stale);
        assert_eq!(given, None);
        assert!(!marker::worth_saving(&m, &again, REFRESH));
        // Nothing pending: the model alone; a recovery a resume lost: handed over again.
        let (named, given) = decide(&Marker::new("s"), &hand, None, stale);
        assert_eq!(
            (named.session_model.as_deref(), given),
            (Some("claude-opus-4-6"), None)
        );
        let lost = receipt::Pending {
            compaction: 1,
            checkpoint: "cp_001".into(),
            handed_at: t(100),
            client_pid: None,
        };
        let (m, given) = decide(&again, &hand, Some(&lost), stale);
        assert_eq!(given.as_deref(), Some("cp_001"));
        assert_eq!(m.receipt_pending, Some(lost));
    }

    #[test]
    fn a_recovery_is_lost_when_nothing_after_the_boundary_carries_it() {
        let boundary = r#"{"type":"system","subtype":"compact_boundary"}"#;
        let summary = r#"{"type":"user","isCompactSummary":true,"message":{"content":"..."}}"#;
        let reply = r#"{"type":"assistant","message":{"content":[],"usage":{"input_tokens":20000,"output_tokens":5}}}"#;
        let kept = r###"{"type":"attachment","attachment":{"type":"hook_additional_context","content":["## ctxguard recovery: compaction #1 of this session"]}}"###;
        let lost_in = |bytes: Vec<u8>| {
            let len = bytes.len() as u64;
            lost_in(&mut std::io::Cursor::new(bytes), len)
        };
        let text = |lines: &[&str]| (lines.join("\n") + "\n").into_bytes();
        // 2.1.14 after `-p "/compact"`: the summary, nothing else.
        assert!(lost_in(text(&[reply, boundary, summary])));
        // 2.1.330 writes the block into the transcript; or the conversation went on.
        assert!(!lost_in(text(&[reply, boundary, summary, kept])));
        assert!(!lost_in(text(&[boundary, summary, reply])));
        // Only the newest boundary counts; none in the tail: not lost.
        assert!(lost_in(text(&[boundary, kept, reply, boundary, summary])));
        assert!(!lost_in(text(&[reply, summary])));
        assert!(!recovery_lost(""));
        assert!(!recovery_lost("/nonexistent/t.jsonl"));
    }
}
