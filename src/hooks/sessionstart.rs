//! `ctxguard sessionstart`: after a compaction (and on resume), injects this session's pending
//! recovery block once: the checkpoint `PreCompact` wrote, then the memory files. On startup,
//! a short digest of the previous session in the same directory, once; after `/clear`, one line
//! pointing to that session's checkpoint instead (the user cleared the context to leave it), or
//! its whole block when ctxguard had asked it to save with auto-compaction off
//! (`recovering::full_after_clear`: the soft restart).
//!
//! Ownership: a compaction's recovery belongs to the session that compacted. It is consumed
//! under that session's lock, by that session only. A digest for another session never consumes
//! it, and is never taken from a session that may still be compacting ([`OWNER_GRACE`]): its
//! SessionStart(compact) comes tens of seconds after `PreCompact`, once the summary is written.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Result};
use chrono::{DateTime, Utc};

use crate::checkpoint::{self, Checkpoint, CheckpointStore};
use crate::checkpointing::{hand_over, name_model, HandOver};
use crate::config::{Config, Env};
use crate::dropped;
use crate::event;
use crate::hooks::{additional_context, Diag, Outcome};
use crate::index;
use crate::input::{Client, HookInput};
use crate::marker::{self, Event, Marker, Store};
use crate::paths::Paths;
use crate::recovery::{self, Kind};
use crate::text::sanitize;
use crate::transcript;

/// A new session only hears about a previous one this recent.
const PREVIOUS_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// A Codex `SessionStart(resume)` this soon after a compaction is followed by that
/// compaction's `SessionStart(compact)`.
const CODEX_COMPACT_FOLLOWS: Duration = Duration::from_secs(120);

/// A pending recovery this young may still be claimed by the session that compacted.
const OWNER_GRACE: Duration = Duration::from_secs(10 * 60);

/// What this `SessionStart` will look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Nothing: the source is not in `recover_on`.
    Quiet,
    /// This session's own pending recovery.
    Own(Kind),
    /// A digest of the previous session in the same directory.
    Previous,
    /// After `/clear`: one line pointing to the previous session's checkpoint, not its digest.
    Pointer,
}

/// The plan for a `SessionStart` `source`. A new session nobody attends (`-p`, the SDK) is a
/// scripted task of its own: it never gets the previous session's digest at `startup`.
fn plan(source: &str, config: &Config, unattended: bool) -> Result<Plan> {
    let plan = match source {
        "compact" => Plan::Own(Kind::Compact),
        "resume" => Plan::Own(Kind::Resume),
        "startup" if unattended => Plan::Quiet,
        "clear" => Plan::Pointer,
        "startup" | "fork" => Plan::Previous,
        other => bail!("unknown SessionStart source {other:?}"),
    };
    Ok(if config.recover_on.iter().any(|s| s == source) {
        plan
    } else {
        Plan::Quiet
    })
}

/// What the digest choice needs to know of another session.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::struct_excessive_bools)] // independent facts about a session, not a state
struct Candidate {
    pub session_id: String,
    pub cwd: String,
    pub created_at: Option<DateTime<Utc>>,
    pub recovery_pending: bool,
    pub digest_given: bool,
    /// The session ended (`SessionEnd` wrote this checkpoint): no owner will claim it.
    pub ended: bool,
    /// Its checkpoint holds more than a single exchange ([`Checkpoint::substantial`]).
    pub substantial: bool,
}

/// Which candidate's checkpoint a new session in `cwd` gets as a digest: the newest checkpoint of
/// another session in the same directory, less than a day old, that no session has had as a
/// digest yet, and either written when that session ended, or a compaction recovery its owner
/// never took and can no longer be waiting for. A substantial session comes before a newer
/// trivial one (a one-prompt question asked in passing).
fn pick_previous(
    candidates: &[Candidate],
    session_id: &str,
    cwd: &str,
    now: DateTime<Utc>,
) -> Option<usize> {
    let age = |c: &Candidate| {
        c.created_at
            .and_then(|t| now.signed_duration_since(t).to_std().ok())
    };
    candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            c.session_id != session_id
                && !cwd.is_empty()
                && c.cwd == cwd
                && !c.digest_given
                // An unknown or future time is not old enough to be safe.
                && age(c).is_some_and(|a| {
                    a <= PREVIOUS_MAX_AGE && (c.ended || (c.recovery_pending && a >= OWNER_GRACE))
                })
        })
        .max_by_key(|(_, c)| (c.substantial, c.created_at))
        .map(|(i, _)| i)
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

/// This session's pending recovery, consumed under its lock (after taking the checkpoint of a
/// compaction no `PreCompact` counted: [`dropped::catch_up`]).
fn own(
    paths: &Paths,
    env: &Env,
    config: &Config,
    input: &HookInput,
    peeked: Option<Marker>,
    diag: &mut Diag,
) -> Result<Option<(Checkpoint, PathBuf)>> {
    let (stale, now, client_pid) = (config.stale(), env.now(), env.client_pid);
    let mut peeked = peeked;
    let mut hand = HandOver {
        at: now,
        client_pid,
        boundary: None,
        model: model_of(input),
    };
    let store = Store::new(paths, &input.session_id);
    let codex = input.client() == Client::Codex;
    // The boundary this start follows (Claude Code's; Codex counts its `compacted` lines).
    hand.boundary = (input.source == "compact" && !codex)
        .then(|| transcript::newest_boundary(Path::new(&input.transcript_path)).ok())
        .flatten()
        .flatten()
        .and_then(|b| b.at);
    if input.source == "compact" {
        let m = peeked
            .clone()
            .unwrap_or_else(|| Marker::new(&input.session_id));
        if dropped::catch_up(env, config, input, &m, None, false, diag)?.is_some() {
            peeked = store.peek().ok().flatten();
        }
    }
    // Codex resuming a session compacts before the turn, then starts it twice: `resume`, then
    // `compact`. The compaction's own start gives its recovery.
    if codex
        && input.source == "resume"
        && peeked.as_ref().is_some_and(|m| {
            m.recovery_pending
                && m.compacted_at
                    .is_some_and(|c| marker::within(c, now, CODEX_COMPACT_FOLLOWS))
        })
    {
        return Ok(None);
    }
    if !peeked.as_ref().is_some_and(|m| m.recovery_pending) {
        let compacted = peeked.is_some_and(|m| m.compactions > 0);
        // A recovery kept in memory only, lost to a resume, is Claude Code 2.1.14's (Codex
        // writes SessionStart's context into its rollout).
        if input.source == "resume" && compacted && !codex && recovery_lost(&input.transcript_path)
        {
            // Handed over, but it never reached the conversation: again, for this start.
            let found = CheckpointStore::new(paths, &input.session_id)
                .latest_compaction()
                .unwrap_or_else(|e| {
                    diag.note(format!("{e:#}"));
                    None
                });
            if let Some((cp, path)) = &found {
                let pending = crate::receipt::Pending {
                    compaction: cp.meta.compaction,
                    checkpoint: path.display().to_string(),
                    handed_at: now,
                    client_pid,
                };
                store.update(&input.session_id, diag, |m, _| {
                    let handed = Event::Handed(Some(pending));
                    Ok((marker::transition(m, &handed, now, stale), ()))
                })?;
            }
            return Ok(found);
        }
        return Ok(None);
    }
    // A summary prepared ahead (applied at a compaction, or on resume from a saved summary):
    // the checkpoint is rebuilt to cover the turns between it and the boundary, and handed over
    // in the same locked update. (Claude Code's; Codex prepares no summary ahead.)
    let pending = peeked.as_ref().and_then(|m| m.last_checkpoint.clone());
    let loaded = pending
        .filter(|_| !codex && matches!(input.source.as_str(), "compact" | "resume"))
        .and_then(|p| load_checkpoint(paths.root(), &p, &mut Diag::default()));
    if let Some((cp, _)) = &loaded {
        if let Some(due) = crate::precomputed::due(input, cp) {
            match crate::precomputed::rebuild(env, config, input, cp, &due, Some(&hand), diag) {
                Ok(taken) if taken.handed => return Ok(Some((taken.cp, taken.path))),
                // Another start took the recovery meanwhile.
                Ok(_) => return Ok(None),
                Err(e) => diag.note(format!("refreshing the checkpoint at the boundary: {e:#}")),
            }
        }
    }
    // One locked update: the recovery handed over (consumed even if unreadable), the boundary
    // it follows counted, the model named.
    let path = store.update(&input.session_id, diag, |m, _| {
        let path = m.last_checkpoint.clone().filter(|_| m.recovery_pending);
        Ok((hand_over(m, &hand, path.clone(), stale), path))
    })?;
    // The checkpoint read above, unless another compaction came meanwhile.
    match (path, loaded) {
        (Some(p), Some((cp, at))) if at == Path::new(&p) => Ok(Some((cp, at))),
        (path, _) => Ok(path.and_then(|p| load_checkpoint(paths.root(), &p, diag))),
    }
}

/// The model a `SessionStart` names, when it is one to record.
fn model_of(input: &HookInput) -> Option<String> {
    let model = sanitize(input.model.trim(), true);
    (!model.is_empty() && model.chars().count() <= 200 && !input.session_id.is_empty())
        .then_some(model)
}

/// Keeps the model `SessionStart` names (the client sends it after a compaction and on resume),
/// when it is new: the window is judged by it where the transcript's replies drop its `[1m]`.
/// (A start that hands over a recovery names it in that update.)
fn record_model(
    paths: &Paths,
    input: &HookInput,
    peeked: Option<&Marker>,
    stale: Duration,
    now: DateTime<Utc>,
    diag: &mut Diag,
) -> Result<()> {
    let Some(model) = model_of(input) else {
        return Ok(());
    };
    if peeked.is_some_and(|m| m.session_model.as_deref() == Some(model.as_str())) {
        return Ok(());
    }
    let store = Store::new(paths, &input.session_id);
    let hand = HandOver {
        at: now,
        client_pid: None,
        boundary: None,
        model: Some(model),
    };
    store.update(&input.session_id, diag, |m, _| {
        Ok((name_model(m, &hand, stale), ()))
    })
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

/// Is the newest checkpoint of this session the one `SessionEnd` wrote?
fn ended_checkpoint(m: &Marker) -> bool {
    m.ended_at
        .is_some_and(|ended| m.compacted_at.is_none_or(|c| c < ended))
        && m.last_checkpoint.is_some()
}

/// The digest of the previous session in this directory, marked as given on that session.
fn previous(
    paths: &Paths,
    input: &HookInput,
    stale: Duration,
    now: DateTime<Utc>,
    diag: &mut Diag,
) -> Result<Option<(Checkpoint, PathBuf)>> {
    if input.cwd.is_empty() {
        return Ok(None);
    }
    // Only sessions that left a checkpoint here within the day (the directory's index).
    let since = now - chrono::Duration::from_std(PREVIOUS_MAX_AGE)?;
    let mut stores: Vec<(Store, Marker, Checkpoint, PathBuf)> = Vec::new();
    for (store, marker) in index::sessions_in(paths, &input.cwd, since)? {
        let Ok(m) = marker else { continue };
        let ended = ended_checkpoint(&m);
        if !(m.recovery_pending || ended) || m.digest_given || m.session_id == input.session_id {
            continue;
        }
        let Some(path) = m.last_checkpoint.clone() else {
            continue;
        };
        if let Ok(Some(cp)) = checkpoint::load(paths.root(), Path::new(&path)) {
            stores.push((store, m, cp, PathBuf::from(path)));
        }
    }
    let candidates: Vec<Candidate> = stores
        .iter()
        .map(|(_, m, cp, _)| Candidate {
            session_id: m.session_id.clone(),
            cwd: cp.meta.cwd.clone(),
            created_at: cp.meta.created_at,
            recovery_pending: m.recovery_pending,
            digest_given: m.digest_given,
            ended: ended_checkpoint(m),
            substantial: cp.substantial(),
        })
        .collect();
    let Some(i) = pick_previous(&candidates, &input.session_id, &input.cwd, now) else {
        return Ok(None);
    };
    let (store, m, cp, path) = stores.swap_remove(i);
    let checkpoint = path.display().to_string();
    // Once: under the owner's lock, and only if nothing changed since it was read.
    let given = store.update(&m.session_id, diag, |current, _| {
        let same = (current.recovery_pending || ended_checkpoint(current))
            && !current.digest_given
            && current.last_checkpoint.as_deref() == Some(checkpoint.as_str());
        if !same {
            return Ok((current.clone(), false));
        }
        Ok((
            marker::transition(current, &Event::DigestGiven, now, stale),
            true,
        ))
    })?;
    Ok(given.then_some((cp, path)))
}

/// The hook, given its input and environment.
pub fn handle(bytes: &[u8], env: &Env, diag: &mut Diag) -> Result<Outcome> {
    let input = super::parse_event(bytes, event::SESSION_START, env)?;
    let paths = env.paths()?;
    let config = Config::for_hook(&paths, env, diag);
    let stale = config.stale();
    let now = env.now();
    // `codex exec` is a scripted run, as `claude -p` is.
    let unattended = env.unattended
        || (input.client() == Client::Codex
            && crate::rollout::is_exec(Path::new(&input.transcript_path)));
    let plan = plan(&input.source, &config, unattended)?;
    // The model this start names, recorded in the update that hands a recovery over when there
    // is one (`own`), else on its own, when it is new.
    // The marker, read once without the lock (most starts have nothing pending).
    let peeked = Store::new(&paths, &input.session_id).peek().ok().flatten();
    let pending = peeked.as_ref().is_some_and(|m| m.recovery_pending);
    if !(matches!(plan, Plan::Own(_)) && pending) {
        if let Err(e) = record_model(&paths, &input, peeked.as_ref(), stale, now, diag) {
            diag.note(format!("{e:#}"));
        }
    }
    let (found, kind) = match plan {
        Plan::Quiet => return Ok(Outcome::Quiet),
        Plan::Own(kind) => (own(&paths, env, &config, &input, peeked, diag)?, kind),
        Plan::Previous => (previous(&paths, &input, stale, now, diag)?, Kind::Previous),
        Plan::Pointer => {
            let Some((cp, path)) = previous(&paths, &input, stale, now, diag)? else {
                return Ok(Outcome::Quiet);
            };
            let id = &input.session_id;
            if crate::recovering::full_after_clear(&paths, env, &config, id, &cp, &path, diag) {
                (Some((cp, path)), Kind::Clear)
            } else {
                return Ok(Outcome::Print(additional_context(
                    event::SESSION_START,
                    recovery::pointer(&cp, now),
                )));
            }
        }
    };
    let Some((cp, path)) = found else {
        return Ok(Outcome::Quiet);
    };
    let block =
        crate::recovering::handed_over(&paths, env, &config, &input.cwd, cp, &path, kind, diag);
    Ok(Outcome::Print(additional_context(
        event::SESSION_START,
        block,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
    }

    fn candidate(id: &str, cwd: &str, at: i64) -> Candidate {
        Candidate {
            session_id: id.into(),
            cwd: cwd.into(),
            created_at: Some(t(at)),
            recovery_pending: true,
            digest_given: false,
            ended: false,
            substantial: true,
        }
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

    #[test]
    fn plans_by_source_and_recover_on() {
        let config = Config::default();
        let attended = |source| plan(source, &config, false).unwrap();
        assert_eq!(attended("compact"), Plan::Own(Kind::Compact));
        assert_eq!(attended("resume"), Plan::Own(Kind::Resume));
        assert_eq!(attended("clear"), Plan::Pointer);
        assert_eq!(attended("startup"), Plan::Previous);
        assert_eq!(attended("fork"), Plan::Quiet);
        assert!(plan("reboot", &config, false).is_err());
        // Unattended (-p, the SDK): its own recoveries, never a digest at startup.
        let unattended = |source| plan(source, &config, true).unwrap();
        assert_eq!(unattended("compact"), Plan::Own(Kind::Compact));
        assert_eq!(unattended("resume"), Plan::Own(Kind::Resume));
        assert_eq!(unattended("startup"), Plan::Quiet);
        let only_compact = Config {
            recover_on: vec!["compact".into()],
            ..Config::default()
        };
        assert_eq!(plan("resume", &only_compact, false).unwrap(), Plan::Quiet);
        assert_eq!(plan("startup", &only_compact, false).unwrap(), Plan::Quiet);
    }

    #[test]
    fn the_newest_abandoned_checkpoint_of_another_session_in_the_same_directory() {
        let hour = 3600;
        let now = t(10 * hour);
        let list = vec![
            candidate("a", "/p", 5 * hour),
            candidate("b", "/p", 8 * hour),
            candidate("c", "/elsewhere", 9 * hour),
            candidate("me", "/p", 9 * hour),
        ];
        assert_eq!(pick_previous(&list, "me", "/p", now), Some(1));
        assert_eq!(pick_previous(&list, "me", "/q", now), None);
        assert_eq!(pick_previous(&list, "me", "", now), None);
        // A newer trivial session (one question asked in passing) does not hide the work.
        let mut list = list;
        list.push(Candidate {
            substantial: false,
            ..candidate("quick", "/p", 9 * hour)
        });
        assert_eq!(pick_previous(&list, "me", "/p", now), Some(1));
        list[1].substantial = false;
        assert_eq!(pick_previous(&list, "me", "/p", now), Some(0));
        list[0].substantial = false;
        assert_eq!(
            pick_previous(&list, "me", "/p", now),
            Some(4),
            "all trivial: the newest"
        );
    }

    #[test]
    fn never_a_recovery_its_owner_may_still_claim_or_already_took() {
        let now = t(10_000);
        let grace = OWNER_GRACE.as_secs() as i64;
        // Compacting right now: the owner's SessionStart(compact) is still to come.
        let young = vec![candidate("a", "/p", 10_000 - grace + 1)];
        assert_eq!(pick_previous(&young, "me", "/p", now), None);
        let old_enough = vec![candidate("a", "/p", 10_000 - grace)];
        assert_eq!(pick_previous(&old_enough, "me", "/p", now), Some(0));
        // Taken by its owner, given as a digest already, too old, from the future, unknown.
        let mut taken = candidate("a", "/p", 0);
        taken.recovery_pending = false;
        let mut given = candidate("a", "/p", 0);
        given.digest_given = true;
        let old = candidate("a", "/p", 10_000 - PREVIOUS_MAX_AGE.as_secs() as i64 - 1);
        let future = candidate("a", "/p", 20_000);
        let mut unknown = candidate("a", "/p", 0);
        unknown.created_at = None;
        // Ended: no owner is coming back, so no grace is needed; still once, still a day.
        let mut ended = candidate("a", "/p", 10_000 - 5);
        ended.recovery_pending = false;
        ended.ended = true;
        assert_eq!(
            pick_previous(std::slice::from_ref(&ended), "me", "/p", now),
            Some(0)
        );
        let mut ended_given = ended.clone();
        ended_given.digest_given = true;
        for c in [taken, given, old, future, unknown, ended_given] {
            assert_eq!(
                pick_previous(std::slice::from_ref(&c), "me", "/p", now),
                None,
                "{c:?}"
            );
        }
    }
}
