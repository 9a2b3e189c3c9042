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
//!
//! A compaction nobody counted is lost context too: `PreCompact` fails open (the session's lock
//! held past its wait, a timeout) or is not registered (settings written by hand, an older
//! install), or Codex compacts without running it (a switch to a model with a smaller window).
//! The transcript then holds a boundary newer than any compaction the marker counted, with no
//! recovery pending ([`unseen`]). [`catch_up`] checkpoints the transcript up to that boundary
//! as `PreCompact` would have, counts and logs it; the next hook that can give context gives its
//! recovery (`SessionStart(compact)` when it comes, else the drop's hook itself), with a
//! receipt.

use std::path::Path;

use anyhow::Result;
use chrono::{DateTime, Local, Utc};

use crate::checkpoint::Checkpoint;
use crate::checkpointing::{self, Occasion, Taken};
use crate::config::{Config, Env};
use crate::diag::Diag;
use crate::input::{Client, HookInput};
use crate::marker::{Marker, PendingDrop};
use crate::transcript;

/// What a pending drop turned out to be, once the transcript was read (pure inputs: the drop,
/// the newest boundary's time, whether the newer reply descends from the older one).
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Context lost: checkpoint it and give the recovery.
    Lost,
    /// A compaction the transcript shows after the older reading, counted: the receipt's, not
    /// ours.
    Compacted,
    /// A compaction the transcript shows after the older reading that nobody counted
    /// ([`unseen`]): caught up by the hook that took the drop.
    Unseen,
    /// The user rewound the conversation: nothing was lost that they still want.
    Rewound,
}

/// Is this pending drop context lost, a compaction, or a rewind (pure)? `descends`: whether
/// the newer reply's `parentUuid` chain passes through the older reply (`None`: the transcript
/// cannot tell, taken as a drop).
pub fn judge(
    drop: &PendingDrop,
    boundary: Option<DateTime<Utc>>,
    descends: Option<bool>,
    marker: &Marker,
) -> Verdict {
    match boundary.filter(|b| *b >= drop.before_at) {
        Some(b) if unseen(marker, b, Some(drop.before_at)) => Verdict::Unseen,
        Some(_) => Verdict::Compacted,
        None if descends == Some(false) => Verdict::Rewound,
        None => Verdict::Lost,
    }
}

/// Is the compaction whose boundary was written at `boundary` one nobody counted (pure)? A
/// reading of the session came after the newest compaction the marker counted and before the
/// boundary (`before`, the reply a drop was measured from, else the marker's last reply:
/// `PreCompact` forgets it, so after a counted compaction there is none from before its
/// boundary), no recovery is pending or waiting for its receipt, and no boundary the marker
/// accounted for is as new.
pub fn unseen(m: &Marker, boundary: DateTime<Utc>, before: Option<DateTime<Utc>>) -> bool {
    let read_before = before
        .or(m.last_reply.map(|(_, at, _)| at))
        .is_some_and(|at| at < boundary && m.compacted_at.is_none_or(|c| c < at));
    read_before
        && !m.recovery_pending
        && m.receipt_pending.is_none()
        && m.boundary_counted.is_none_or(|c| c < boundary)
}

/// What [`catch_up`] checkpoints: the transcript up to byte `until` (the compaction's line),
/// the boundary's time, whether the client compacted by itself, and how a hook that took it
/// meanwhile is recognised (the same compaction, its checkpoint replaced).
struct Target {
    until: u64,
    boundary: Option<DateTime<Utc>>,
    auto: bool,
    repeat: Box<dyn Fn(&Marker) -> bool>,
}

/// Takes the checkpoint of a compaction no `PreCompact` counted, from the transcript up to its
/// boundary, and counts and logs it: on Claude Code a boundary newer than any the marker
/// accounts for ([`unseen`]); on Codex a `compacted` line beyond the compactions the marker
/// counted (its rollout's own count). `before`: the reading before the boundary a drop was
/// measured from, if any; `given`: the hook gives the recovery itself (else it is left pending
/// for `SessionStart`); `newest`: the transcript's newest boundary, searched for once in the
/// hook's call. `None` when there is none to catch up.
pub fn catch_up(
    env: &Env,
    config: &Config,
    input: &HookInput,
    peeked: &Marker,
    (before, given): (Option<DateTime<Utc>>, bool),
    newest: &transcript::Newest,
    diag: &mut Diag,
) -> Result<Option<Taken>> {
    let path = Path::new(&input.transcript_path);
    if input.transcript_path.is_empty() || peeked.recovery_pending {
        return Ok(None);
    }
    let target: Target = if input.client() == Client::Codex {
        // Compactions are counted by the rollout's `compacted` lines (a drop of context is in
        // none).
        let counted = |m: &Marker| m.compactions.saturating_sub(m.drops);
        let Ok(written) = crate::rollout::compaction_count(path) else {
            return Ok(None);
        };
        if written <= counted(peeked) {
            return Ok(None);
        }
        let (mut file, len) = crate::files::open_regular(path, "rollout")?;
        let Some((newest, _)) = crate::rollout::newest_compaction(&mut file, len)? else {
            return Ok(None);
        };
        // Another hook that took it meanwhile: the same compaction, its checkpoint replaced.
        Target {
            until: newest,
            boundary: None,
            auto: true,
            repeat: Box::new(move |m| counted(m) >= written),
        }
    } else {
        let Some(b) = newest.get() else {
            return Ok(None);
        };
        let Some(at) = b.at.filter(|at| unseen(peeked, *at, before)) else {
            return Ok(None);
        };
        // Another hook that took it meanwhile has counted its boundary.
        Target {
            until: b.start,
            boundary: Some(at),
            auto: b.auto,
            repeat: Box::new(move |m| m.boundary_counted.is_some_and(|c| c >= at)),
        }
    };
    let Target {
        until,
        boundary,
        auto,
        repeat,
    } = target;
    let compaction = HookInput {
        session_id: input.session_id.clone(),
        transcript_path: input.transcript_path.clone(),
        cwd: input.cwd.clone(),
        trigger: if auto { "auto" } else { "manual" }.to_string(),
        ..HookInput::default()
    };
    // No summarizer can be steered any more: it ran.
    let no_facts = |_: &Checkpoint, _: Option<&str>| None;
    let occasion = Occasion::Compaction {
        repeat: &*repeat,
        facts: &no_facts,
        after: true,
        boundary,
        given,
    };
    let paths = env.paths()?;
    let taken = checkpointing::take(
        &paths,
        env,
        config,
        &compaction,
        checkpointing::Until::at(until),
        &occasion,
        diag,
    )?;
    if taken.is_some() {
        diag.note("a compaction no PreCompact counted: checkpointed from the transcript");
    }
    Ok(taken)
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
        assert_eq!(judge(&d, None, None, &Marker::new("s")), Verdict::Lost);
        assert_eq!(
            judge(&d, Some(t(-30)), Some(true), &Marker::new("s")),
            Verdict::Lost
        );
        // A boundary after the older reading: a compaction, the receipt's to check when it was
        // counted (a recovery pending, or `PreCompact` ran at or after the boundary's time)...
        let counted = Marker {
            recovery_pending: true,
            ..Marker::new("s")
        };
        assert_eq!(
            judge(&d, Some(t(30)), Some(true), &counted),
            Verdict::Compacted
        );
        let accounted = Marker {
            boundary_counted: Some(t(30)),
            ..Marker::new("s")
        };
        assert_eq!(
            judge(&d, Some(t(30)), Some(true), &accounted),
            Verdict::Compacted
        );
        // ...and one nobody counted (`PreCompact` failed, or is not registered) when not.
        assert_eq!(
            judge(&d, Some(t(30)), Some(true), &Marker::new("s")),
            Verdict::Unseen
        );
        let older = Marker {
            compacted_at: Some(t(-100)),
            boundary_counted: Some(t(-90)),
            ..Marker::new("s")
        };
        assert_eq!(judge(&d, Some(t(30)), Some(true), &older), Verdict::Unseen);
        // `PreCompact` counted one after the older reading: the receipt's.
        let after = Marker {
            compacted_at: Some(t(10)),
            ..Marker::new("s")
        };
        assert_eq!(
            judge(&d, Some(t(30)), Some(true), &after),
            Verdict::Compacted
        );
        // Without a drop, the marker's last reply before the boundary is the evidence; none
        // (`PreCompact` forgot it) is no evidence.
        let read = Marker {
            last_reply: Some((170_000, t(0), 200_000)),
            ..Marker::new("s")
        };
        assert!(unseen(&read, t(30), None));
        assert!(!unseen(&Marker::new("s"), t(30), None));
        assert!(
            !unseen(&read, t(-10), None),
            "a boundary older than the reading"
        );
        // The newer reply does not descend from the older one: a rewind.
        assert_eq!(
            judge(&d, None, Some(false), &Marker::new("s")),
            Verdict::Rewound
        );
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
