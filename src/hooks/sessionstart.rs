//! `ctxguard sessionstart`: after a compaction (and on resume), injects this session's pending
//! recovery block once: the checkpoint `PreCompact` wrote, then the memory files (the session
//! step on its route, `step::Route::SessionStart`). On startup,
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

use crate::checkpoint::{self, Checkpoint};
use crate::checkpointing::{name_model, HandOver};
use crate::config::{Config, Env};
use crate::event;
use crate::hooks::{additional_context, Diag, Outcome};
use crate::index;
use crate::input::{Client, HookInput};
use crate::marker::{self, Event, Marker, Store};
use crate::paths::Paths;
use crate::recovery::{self, Kind};

/// A new session only hears about a previous one this recent.
const PREVIOUS_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

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
    let Some(model) = crate::step::model_of(input) else {
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
    // This session's own recovery is the session step's route, which records the model this
    // start names in its one update; any other start records it on its own, when it is new.
    if !matches!(plan, Plan::Own(_)) {
        let peeked = Store::new(&paths, &input.session_id).peek().ok().flatten();
        if let Err(e) = record_model(&paths, &input, peeked.as_ref(), stale, now, diag) {
            diag.note(format!("{e:#}"));
        }
    }
    let (found, kind) = match plan {
        Plan::Quiet => return Ok(Outcome::Quiet),
        Plan::Own(kind) => {
            let route = crate::step::Route::SessionStart(kind);
            let block = crate::step::take(&input, env, route, diag)?;
            return Ok(block.map_or(Outcome::Quiet, |block| {
                Outcome::Print(additional_context(event::SESSION_START, block))
            }));
        }
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
