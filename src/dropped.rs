//! Context lost without a boundary: a large drop in usage between two readings of the session's
//! own transcript, with no `compact_boundary`, no `PreCompact` and no `/clear` between them, is
//! treated as a compaction (users report 903k → 275k after an idle gap, with compaction off and no
//! notice). The first hook that can give context (`PreToolUse`, `UserPromptSubmit`,
//! `PostToolBatch`) then checkpoints what the transcript holds (the client does not rewrite the
//! file, so the part before the drop is still there), gives the recovery once by its own route,
//! and logs "context dropped without a compaction".
//!
//! Whichever hook reads the drop first records it: the marker's transition sees it (the newer
//! reply's tokens against `last_reply`'s) and keeps it as [`PendingDrop`], written at once. A hook
//! that cannot give context there (`Stop`, or `PreToolUse` on a client that drops its context)
//! leaves it in the marker for the next one that can.
//!
//! Only readings that can be trusted count: both are main-chain replies of this session's own
//! transcript (the marker's `last_reply`: never a sidechain, a subagent, a synthetic or API-error
//! line, a null status-line frame, or another session's status line), the newer written after the
//! older. A `/clear` starts another session id, so it never shows here. A rewind (the user edited
//! an earlier prompt: the newer reply's chain of `parentUuid` does not pass through the older
//! one) is no drop: the conversation is shorter because the user took part of it back, and
//! nothing of the branch they left is shown ([`crate::checkpoint::chain`]).

use chrono::{DateTime, Local};

use crate::checkpoint::Checkpoint;
use crate::marker::PendingDrop;
#[cfg(test)]
use crate::transcript;

/// What a pending drop turned out to be, once the transcript was read (pure inputs: the drop,
/// the newest boundary's time, whether the newer reply descends from the older one).
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Context lost: checkpoint it and give the recovery.
    Lost,
    /// A compaction the transcript shows after the older reading: the receipt's, not ours.
    Compacted,
    /// The user rewound the conversation: nothing was lost that they still want.
    Rewound,
}

/// Is this pending drop context lost, a compaction, or a rewind (pure)? `descends`: whether
/// the newer reply's `parentUuid` chain passes through the older reply (`None`: the transcript
/// cannot tell, taken as a drop).
pub fn judge(
    drop: &PendingDrop,
    boundary: Option<chrono::DateTime<chrono::Utc>>,
    descends: Option<bool>,
) -> Verdict {
    if boundary.is_some_and(|b| b >= drop.before_at) {
        Verdict::Compacted
    } else if descends == Some(false) {
        Verdict::Rewound
    } else {
        Verdict::Lost
    }
}

/// The daily log's line for a drop acted on (checkpoint `cp`, recovery given by `hook_event`).
pub fn log_line(
    session_id: &str,
    drop: &PendingDrop,
    cp: &Checkpoint,
    hook_event: &str,
    at: DateTime<Local>,
) -> String {
    format!(
        "- {} · session {} · context dropped without a compaction ({} → {} tokens, no \
         compact_boundary): checkpoint {}, recovery given by {hook_event}\n\n",
        at.format("%H:%M"),
        crate::text::sanitize(session_id, true)
            .chars()
            .take(8)
            .collect::<String>(),
        drop.before,
        drop.after,
        cp.id,
    )
}

/// The checkpoint trigger of a drop.
pub const TRIGGER: &str = "dropped";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marker::is_drop;
    use chrono::{DateTime, TimeZone, Utc};

    fn t(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + s, 0).unwrap()
    }

    fn drop_of(before: u64, after: u64) -> PendingDrop {
        PendingDrop {
            before,
            before_at: t(0),
            after,
            after_at: t(60),
        }
    }

    #[test]
    fn a_large_drop_with_nothing_between_is_context_lost() {
        assert!(is_drop(903_000, 275_000));
        assert!(!is_drop(90_000, 10_000), "too small to matter");
        assert!(!is_drop(300_000, 260_000), "a small drop");
        assert!(!is_drop(120_000, 80_000), "less than 50k lost");
        let d = drop_of(903_000, 275_000);
        assert_eq!(judge(&d, None, None), Verdict::Lost);
        assert_eq!(judge(&d, Some(t(-30)), Some(true)), Verdict::Lost);
        // A boundary after the older reading: a compaction, the receipt's to check.
        assert_eq!(judge(&d, Some(t(30)), Some(true)), Verdict::Compacted);
        // The newer reply does not descend from the older one: a rewind.
        assert_eq!(judge(&d, None, Some(false)), Verdict::Rewound);
    }

    /// The drops a transcript's readings would show, compared the strictest way a hook could
    /// (each main-chain reply against the largest one since the newest boundary, as if every
    /// reply between had gone unseen): (line, before, after) of each.
    fn drops_in(text: &str) -> Vec<(usize, u64, u64)> {
        let mut out = Vec::new();
        let mut max: Option<u64> = None;
        for (i, line) in text.lines().enumerate() {
            match transcript::classify(line.as_bytes()) {
                transcript::Verdict::Boundary { .. } => max = None,
                transcript::Verdict::Usage { tokens, .. } => {
                    if let Some(before) = max {
                        if is_drop(before, tokens) {
                            out.push((i + 1, before, tokens));
                        }
                    }
                    max = Some(max.map_or(tokens, |m| m.max(tokens)));
                }
                transcript::Verdict::Irrelevant => {}
            }
        }
        out
    }

    /// The excerpts of a real session in `../shared/from-project/fixtures/drops/` (never
    /// committed; `CTXGUARD_SHARED` names another folder), skipped in one line without it.
    #[test]
    fn the_excerpts_show_no_false_drop_and_the_synthetic_one_shows_one() {
        let shared = match std::env::var_os("CTXGUARD_SHARED") {
            Some(dir) if !dir.is_empty() => std::path::PathBuf::from(dir),
            _ => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"),
        };
        let dir = shared.join("from-project/fixtures/drops");
        if !shared.is_dir() {
            eprintln!(
                "skipped: {} is absent (the drop excerpts are read from there)",
                shared.display()
            );
            return;
        }
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(entry.path()).unwrap();
            let drops = drops_in(&text);
            if name.starts_with("synthetic-") {
                assert_eq!(drops.len(), 1, "{name}: {drops:?}");
            } else {
                assert!(drops.is_empty(), "{name}: {drops:?}");
            }
            seen += 1;
        }
        assert!(seen >= 2);
    }

    /// Every recorded real transcript in `../shared/transcripts` (when present): none shows a
    /// drop without a boundary. `cargo test -- --ignored real_transcripts` runs it.
    #[test]
    #[ignore = "reads ../shared/transcripts, which only some checkouts have"]
    fn real_transcripts_show_no_false_drop() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/transcripts");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!("skipped: no {}", dir.display());
            return;
        };
        let mut checked = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            let drops = drops_in(&text);
            eprintln!("{}: {} drops", path.display(), drops.len());
            assert!(drops.is_empty(), "{}: {drops:?}", path.display());
            checked += 1;
        }
        eprintln!("{checked} transcripts, no false drop");
    }
}
