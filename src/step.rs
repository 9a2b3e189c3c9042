//! One session step: what the hooks that read the session (`PreToolUse`, `UserPromptSubmit`,
//! `PostToolBatch`, `Stop`, and `SessionStart` for its own recovery: a [`Route`]) do with it, in
//! one pass.
//!
//! 1. [`peek`] the marker once, without the lock;
//! 2. [`read`] what the transcript added since the last call once (and, only while the marker
//!    waits for a compaction's receipt, what the client recorded after its newest boundary);
//! 3. [`decide`] the receipt, the nudge and the drop together (pure: unit tests call it with
//!    literals); when nothing is worth recording, answer there, without the lock;
//! 4. record the decision under the session's lock once ([`Store::update`]), decided again on
//!    the marker as it is then, so that of parallel hooks exactly one gives each thing;
//! 5. then the side effects: the receipt written and logged, a drop judged, checkpointed and
//!    logged, the texts rendered, in the order the model reads them (the recovery given
//!    again, the drop's recovery, the nudge).
//!
//! `Stop` takes the same step on its own route: its reading waits a moment for the turn's reply
//! when no usage is known yet, it decides the idle nudge (`nudge::decide_idle`) instead of the
//! trigger's, and it leaves a drop or a compaction nobody counted to the next hook that can give
//! its recovery (its context reaches the user too, not as a recovery should). A compaction no
//! `PreCompact` counted that this reading shows is caught up first ([`dropped::catch_up`]).
//!
//! `SessionStart` takes the step on its route too ([`start`]): after the peek, the transcript's
//! newest boundary read once for all its parts, a compaction nobody counted caught up or a
//! summary prepared ahead rebuilt, one decision on the marker (the recovery handed over, the
//! model named), one locked update, then the block.

mod start;

use std::path::{Path, PathBuf};

use anyhow::Result;
use chrono::{DateTime, Local, Utc};

use crate::checkpoint;
use crate::checkpointing::{self, Occasion};
use crate::config::{Config, Env};
use crate::daily_log;
use crate::diag::Diag;
use crate::dropped::{self, Verdict};
use crate::event;
use crate::facts::{self, Context};
use crate::input::HookInput;
use crate::marker::{self, Event, Marker, Nudge, Observation, PendingDrop, Store, REFRESH};
use crate::memory;
use crate::nudge;
use crate::paths::Paths;
use crate::reading::Reading;
use crate::receipt::{self, AfterBoundary, Arrival};
use crate::recovery::Kind;

pub use start::model_of;

/// The hook a step is taken for: what arrives, turned into one typed value once (each hook's
/// `handle` names its route), then matched on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Before a tool call: the receipt, a drop, the nudge (on a client that passes its context
    /// on).
    PreToolUse,
    /// Before a prompt: the same, for turns with no tool call.
    UserPromptSubmit,
    /// After a batch of tool calls: a drop and the nudge; the receipt is left to the hooks that
    /// run before a request.
    PostToolBatch,
    /// At the end of a turn: the idle nudge only.
    Stop,
    /// At the start after a compaction (`Kind::Compact`) or on resume (`Kind::Resume`): this
    /// session's own recovery, handed over once.
    SessionStart(Kind),
}

impl Route {
    /// The client's name of the event.
    pub fn event(self) -> &'static str {
        match self {
            Route::PreToolUse => event::PRE_TOOL_USE,
            Route::UserPromptSubmit => event::USER_PROMPT_SUBMIT,
            Route::PostToolBatch => event::POST_TOOL_BATCH,
            Route::Stop => event::STOP,
            Route::SessionStart(_) => event::SESSION_START,
        }
    }

    /// Does this route settle a compaction's receipt?
    fn settles_receipts(self) -> bool {
        matches!(self, Route::PreToolUse | Route::UserPromptSubmit)
    }

    /// Can this route give a recovery (a drop's, a compaction nobody counted)?
    fn gives_recoveries(self) -> bool {
        matches!(
            self,
            Route::PreToolUse | Route::UserPromptSubmit | Route::PostToolBatch
        )
    }
}

/// What the step found before deciding: the observation of this call's reading (if it is
/// news), what the client recorded after the newest boundary (only while a receipt waits), and
/// what this route can do.
#[derive(Debug)]
struct Seen {
    pub route: Route,
    pub observation: Option<Observation>,
    pub after_boundary: Option<AfterBoundary>,
    /// The client process this hook runs under (`CLAUDE_PID`), for the receipt.
    pub client_pid: Option<u32>,
    /// This route's context reaches the model (not `PreToolUse` on a client before 2.1).
    pub can_deliver: bool,
    /// A nudge on this route is withheld past the compaction point
    /// ([`nudge::withheld_past_the_point`]).
    pub at_prompt: bool,
    /// This hook may act on a drop of context (it can give its recovery, and has a transcript
    /// to checkpoint).
    pub acts_on_drops: bool,
}

/// What one step decided.
#[derive(Debug, PartialEq)]
#[allow(clippy::struct_excessive_bools)]
struct Decision {
    /// The marker after this call.
    pub marker: Marker,
    /// The newest compaction's receipt, settled here: its checkpoint, and how it arrived.
    pub receipt: Option<(String, Arrival)>,
    /// The nudge to give.
    pub nudge: Option<Nudge>,
    /// The drop of context this hook took, to act on once.
    pub drop: Option<PendingDrop>,
    /// The idle nudge to give (`Stop`).
    pub idle: bool,
    /// A drop of context this reading showed, left for the next hook that can act on it.
    pub new_drop: bool,
}

impl Decision {
    /// Nothing for this call to do or record: answered without the lock.
    fn nothing_new(&self, before: &Marker) -> bool {
        self.receipt.is_none()
            && self.nudge.is_none()
            && self.drop.is_none()
            && !self.idle
            && !self.new_drop
            && !marker::worth_saving(before, &self.marker, REFRESH)
    }
}

/// The step's decision on `m` (pure): the receipt settled when the client's record after the
/// newest boundary is there and is this compaction's, then the reading applied and the nudge
/// due on this route, then a drop of context taken by a hook that can act on it.
fn decide(m: &Marker, seen: &Seen, config: &Config, now: DateTime<Utc>) -> Decision {
    let stale = config.stale();
    if seen.route == Route::Stop {
        // The idle nudge, a level of its own; a drop the reading shows stays pending.
        let (next, idle) = nudge::decide_idle(m, seen.observation.as_ref(), config, now, true);
        let new_drop = next.pending_drop.is_some() && next.pending_drop != m.pending_drop;
        return Decision {
            marker: next,
            receipt: None,
            nudge: None,
            drop: None,
            idle,
            new_drop,
        };
    }
    let (m, receipt) = match &seen.after_boundary {
        Some(after) => receipt::settle(m, after, seen.client_pid, now, stale),
        None => (m.clone(), None),
    };
    let (mut m, nudge) = nudge::decide_route(
        &m,
        seen.observation.as_ref(),
        config,
        now,
        seen.can_deliver,
        seen.at_prompt,
    );
    let drop = m.pending_drop.filter(|_| seen.acts_on_drops);
    if let Some(d) = drop {
        m = marker::transition(&m, &Event::DropTaken(d), now, stale);
    }
    Decision {
        marker: m,
        receipt,
        nudge,
        drop,
        idle: false,
        new_drop: false,
    }
}

/// The session's marker, read without the lock: `Marker::new` when there is none, or it cannot
/// be read (with a note).
fn peek(store: &Store, session_id: &str, diag: &mut Diag) -> Marker {
    match store.peek() {
        Ok(Some(m)) => m,
        Ok(None) => Marker::new(session_id),
        Err(e) => {
            diag.note(format!("{e:#}"));
            Marker::new(session_id)
        }
    }
}

/// The transcript reading for this call (continued from the session's cached one). `None`
/// (with a note) when the transcript cannot be read; a missing one is not worth a note while
/// the status line reports the usage (`quiet_if_missing`).
fn read(
    store: &Store,
    input: &HookInput,
    quiet_if_missing: bool,
    settle: Option<&Marker>,
    diag: &mut Diag,
) -> Option<Reading> {
    if input.transcript_path.is_empty() {
        diag.note("no transcript_path in the input; usage unknown");
        return None;
    }
    let started = std::time::Instant::now();
    let path = Path::new(&input.transcript_path);
    let mut reading = store.transcript_reading(path);
    // `Stop` (`settle`): the turn's reply may not be on disk yet when no usage is known at all.
    while let (Some(m), Ok(r)) = (settle, &reading) {
        let known = r.tokens.is_some() || m.tokens.is_some();
        if known || started.elapsed() >= SETTLE {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        reading = store.transcript_reading(path);
    }
    match reading {
        Ok(r) => {
            if r.gave_up {
                diag.note(format!(
                    "no usage in the tail of {}; usage unknown",
                    input.transcript_path
                ));
            }
            Some(r)
        }
        Err(e) => {
            // With a fresh status-line report the marker knows the usage anyway.
            if !(quiet_if_missing && crate::files::is_not_found(&e)) {
                diag.note(format!("{e:#}; usage unknown"));
            }
            None
        }
    }
}

/// How long `Stop` waits for the turn's reply to reach the transcript when no usage is known at
/// all: measured on the real 2.1.330 TUI, the hook often runs before the client has written the
/// only reply of a text-only turn. Only then is it worth the wait; a known earlier reading is
/// close enough.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(1500);

/// One hook call's shared inputs, each read once: what the step's parts take instead of each
/// opening its own.
struct Call<'a> {
    input: &'a HookInput,
    env: &'a Env,
    paths: Paths,
    config: Config,
    route: Route,
}

impl Call<'_> {
    /// The recovery block of the checkpoint at `cp` as a hook gives it.
    fn recovery_block(&self, (cp, path): Given, diag: &mut Diag) -> String {
        crate::recovering::handed_over(
            &self.paths,
            self.env,
            &self.config,
            &self.input.cwd,
            cp,
            &path,
            Kind::Compact,
            diag,
        )
    }

    /// A receipt for a recovery this hook gives itself, beside its checkpoint (`drop`: the
    /// drop of context it stands for, whose sizes it records).
    fn given_here(
        &self,
        taken: &checkpointing::Taken,
        drop: Option<&PendingDrop>,
        diag: &mut Diag,
    ) {
        let checkpoint = taken.path.display().to_string();
        let mut r = receipt::build(
            Some(&taken.cp),
            &checkpoint,
            &AfterBoundary::default(),
            Arrival::GivenAgain,
            Some(self.route.event()),
            None,
            self.env.now(),
        );
        if let Some(drop) = drop {
            r.pre_tokens = Some(drop.before);
            r.post_tokens = Some(drop.after);
            // No summarizer ran: no facts were handed to one.
            r.facts_chars = 0;
        }
        if let Err(e) = receipt::save(self.paths.root(), &taken.path, &r) {
            diag.note(format!("{e:#}"));
        }
    }

    /// A compaction nobody counted ([`dropped::unseen`]), caught up by this hook, which gives
    /// its recovery itself. The checkpoint whose recovery to give, or `None`.
    fn catch_up(
        &self,
        marker: &Marker,
        before: Option<DateTime<Utc>>,
        diag: &mut Diag,
    ) -> Result<Option<Given>> {
        let (env, config, input) = (self.env, &self.config, self.input);
        let newest = crate::transcript::Newest::of(Path::new(&input.transcript_path));
        let by_this_hook = (before, true);
        let Some(taken) =
            dropped::catch_up(env, config, input, marker, by_this_hook, &newest, diag)?
        else {
            return Ok(None);
        };
        self.given_here(&taken, None, diag);
        Ok(Some((taken.cp, taken.path)))
    }

    /// A drop this hook took: judged on the transcript (a counted compaction or a rewind is no
    /// drop; a compaction nobody counted is caught up), then checkpointed as a compaction, its
    /// receipt written (given by this hook) and logged. The checkpoint whose recovery to give,
    /// or `None`. `marker`: the session's, as this call recorded it.
    fn act_on_drop(
        &self,
        drop: PendingDrop,
        marker: &Marker,
        diag: &mut Diag,
    ) -> Result<Option<Given>> {
        let input = self.input;
        let path = Path::new(&input.transcript_path);
        // A Claude Code transcript is opened once for the judge and the checkpoint: the
        // boundary, the rewind tree (built once) and the checkpoint's read share it.
        let mut opened = (!crate::rollout::is_rollout(path))
            .then(|| checkpoint::Opened::open(path).ok())
            .flatten();
        let (boundary, descends) = match opened.as_mut() {
            Some(o) => (
                o.newest_boundary_time(),
                o.tree(u64::MAX)
                    .ok()
                    .and_then(|t| t.descends(drop.after_at, drop.before_at)),
            ),
            None => (
                crate::transcript::newest_boundary_time_with(
                    path,
                    crate::rollout::classifier(path),
                )
                .ok()
                .flatten(),
                checkpoint::chain::descends(path, drop.after_at, drop.before_at),
            ),
        };
        match dropped::judge(&drop, boundary, descends, marker) {
            Verdict::Lost => {}
            Verdict::Compacted => return Ok(None),
            Verdict::Unseen => return self.catch_up(marker, Some(drop.before_at), diag),
            Verdict::Rewound => {
                diag.note(format!(
                    "context fell from {} to {} tokens after a rewind: no drop",
                    drop.before, drop.after
                ));
                return Ok(None);
            }
        }
        let drop_input = HookInput {
            session_id: input.session_id.clone(),
            transcript_path: input.transcript_path.clone(),
            cwd: input.cwd.clone(),
            trigger: dropped::TRIGGER.to_string(),
            ..HookInput::default()
        };
        let (paths, env, config) = (&self.paths, self.env, &self.config);
        let occasion = Occasion::Drop;
        let until = checkpointing::Until {
            end: u64::MAX,
            opened: opened.as_mut(),
        };
        let Some(taken) =
            checkpointing::take(paths, env, config, &drop_input, until, &occasion, diag)?
        else {
            return Ok(None);
        };
        self.given_here(&taken, Some(&drop), diag);
        let local = env.now().with_timezone(&Local);
        let hook_event = self.route.event();
        daily_log::append(
            paths,
            local.date_naive(),
            &dropped::log_line(&input.session_id, &drop, &taken.cp, hook_event, local),
        )?;
        Ok(Some((taken.cp, taken.path)))
    }

    /// A boundary this `reading` shows that no compaction the marker counted accounts for
    /// (`PreCompact` failed or is not registered): caught up first, on the marker as it was
    /// before it, its recovery given by this hook when its route can give one. The recovery
    /// block, if any (the marker changed then: peek it again). `can_deliver`: this route's
    /// context reaches the model.
    fn caught_up(
        &self,
        reading: Option<&Reading>,
        peeked: &Marker,
        can_deliver: bool,
        diag: &mut Diag,
    ) -> Option<String> {
        let unseen = reading
            .and_then(|r| r.boundary_at)
            .is_some_and(|b| dropped::unseen(peeked, b, None));
        let codex = self.input.client() == crate::input::Client::Codex;
        if !(unseen && can_deliver && self.route.gives_recoveries()) || codex {
            return None;
        }
        let given = self.catch_up(peeked, None, diag).unwrap_or_else(|e| {
            diag.note(format!("a compaction nobody counted: {e:#}"));
            None
        })?;
        Some(self.recovery_block(given, diag))
    }

    /// What the decision gives, in the order the model reads it: the recovery given again, the
    /// drop's recovery, the nudge (or the idle nudge).
    fn give(
        &self,
        decided: Decision,
        after: Option<&AfterBoundary>,
        diag: &mut Diag,
    ) -> Vec<String> {
        let (input, env, config) = (self.input, self.env, &self.config);
        let again = decided.receipt.and_then(|(checkpoint, arrival)| {
            let cp = receipt::record(
                &self.paths,
                &input.session_id,
                &checkpoint,
                after?,
                arrival,
                self.route.event(),
                env.now(),
                diag,
            )?;
            Some(self.recovery_block(cp, diag))
        });
        let dropped = decided.drop.and_then(|drop| {
            self.act_on_drop(drop, &decided.marker, diag)
                .unwrap_or_else(|e| {
                    diag.note(format!("context drop: {e:#}"));
                    None
                })
                .map(|cp| self.recovery_block(cp, diag))
        });
        let nudge = decided.nudge.map(|level| {
            let (place, make_room) =
                memory::save_place_for(env, &input.cwd, &input.transcript_path, config);
            nudge::nudge_text(level, &decided.marker, config, &place, make_room)
        });
        let idle = decided.idle.then(|| {
            let place =
                memory::short_save_place_for(env, &input.cwd, &input.transcript_path, config);
            crate::config::idle_nudge_text(decided.marker.tokens.unwrap_or(0), &place)
        });
        [again, dropped, nudge, idle]
            .into_iter()
            .flatten()
            .collect()
    }
}

/// A checkpoint whose recovery a hook gives, and where it is.
type Given = (checkpoint::Checkpoint, PathBuf);

/// One step of `route` for the session of `input`: the context to give, if any.
pub fn take(input: &HookInput, env: &Env, route: Route, diag: &mut Diag) -> Result<Option<String>> {
    if let Route::SessionStart(kind) = route {
        return start::take(input, env, kind, diag);
    }
    if !input.agent_id.is_empty() {
        // A subagent's call: its context is not the main thread's, and its transcript is not
        // the main thread's usage.
        return Ok(None);
    }
    let paths = env.paths()?;
    let store = Store::new(&paths, &input.session_id);
    let now = env.now();
    let peeked = peek(&store, &input.session_id, diag);
    let reporting = peeked.statusline_fresh(now, facts::LIMITS_FRESH);
    // Stop waits for the turn's reply only when the input names one.
    let replied = route == Route::Stop && !input.last_assistant_message.trim().is_empty();
    let reading = read(&store, input, reporting, replied.then_some(&peeked), diag);
    let config = Config::for_hook(&paths, env, diag);
    let call = Call {
        input,
        env,
        paths,
        config,
        route,
    };
    // A client that drops PreToolUse's context (2.0.x) must not use the nudge up: it is then
    // given with the next prompt (UserPromptSubmit), which such clients do pass on.
    let modern = reading
        .as_ref()
        .is_none_or(Reading::client_reads_pretooluse_context);
    let can_deliver = route != Route::PreToolUse || modern;
    let caught = call.caught_up(reading.as_ref(), &peeked, can_deliver, diag);
    let peeked = if caught.is_some() {
        peek(&store, &input.session_id, diag)
    } else {
        peeked
    };
    let (paths, config) = (&call.paths, &call.config);
    let after_boundary = (route.settles_receipts() && receipt::waiting_at(&peeked, now))
        .then(|| receipt::since_handover(&peeked, &input.transcript_path))
        .flatten()
        .filter(|seen| receipt::is_of(seen, &peeked));
    let mut ctx = Context::for_hook(config, env, paths, input);
    let version = reading.as_ref().and_then(|r| r.client_version.clone());
    ctx.client_version = version.as_deref();
    let seen = Seen {
        route,
        observation: reading
            .filter(|r| nudge::is_news(r, &peeked, now))
            .map(|r| nudge::observe(&r, &peeked, &ctx, now)),
        after_boundary,
        client_pid: env.client_pid,
        can_deliver,
        at_prompt: nudge::withheld_past_the_point(route.event(), modern, ctx.client),
        acts_on_drops: can_deliver && route.gives_recoveries() && !input.transcript_path.is_empty(),
    };
    if decide(&peeked, &seen, config, now).nothing_new(&peeked) {
        return Ok(caught);
    }
    // Decided again under the lock, on the marker as it is now. If the decision cannot be
    // recorded, nothing is given: an unrecorded nudge would repeat on every call.
    let decided = store.update(&input.session_id, diag, |current, _| {
        let decided = decide(current, &seen, config, now);
        Ok((decided.marker.clone(), decided))
    })?;
    let given = call.give(decided, seen.after_boundary.as_ref(), diag);
    Ok(caught
        .into_iter()
        .chain(given)
        .reduce(|a, b| format!("{a}\n\n{b}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marker::{ReceiptPending, Source, State};
    use crate::usage::Limits;
    use chrono::TimeZone;

    fn t(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
    }

    fn obs(tokens: u64, at: i64) -> Observation {
        let mut o = Observation::new(
            Some(tokens),
            Limits::compute(200_000, &Config::default().policy()),
            Source::Transcript,
        );
        o.reply_at = Some(t(at));
        o
    }

    /// An armed marker waiting for a receipt, whose last reply was 190k, now reading 110k: one
    /// decision settles the receipt, takes the drop, and gives the nudge it waits for.
    #[test]
    fn receipt_drop_and_nudge_are_decided_together() {
        let m = Marker {
            compactions: 1,
            compacted_at: Some(t(0)),
            last_checkpoint: Some("cp_001".into()),
            receipt_pending: Some(ReceiptPending {
                compaction: 1,
                checkpoint: "cp_001".into(),
                handed_at: t(1),
                client_pid: Some(7),
            }),
            last_reply: Some((190_000, t(10), 200_000)),
            state: State::Armed,
            armed_at: Some(t(10)),
            armed_tokens: Some(130_000),
            tokens: Some(190_000),
            updated_at: Some(t(10)),
            ..Marker::new("s")
        };
        let seen = Seen {
            route: Route::PreToolUse,
            observation: Some(obs(110_000, 20)),
            after_boundary: Some(AfterBoundary {
                blocks: vec![1],
                ..AfterBoundary::default()
            }),
            client_pid: Some(7),
            can_deliver: true,
            at_prompt: false,
            acts_on_drops: true,
        };
        let config = Config::default();
        let d = decide(&m, &seen, &config, t(21));
        assert_eq!(d.receipt, Some(("cp_001".into(), Arrival::Transcript)));
        assert_eq!(d.nudge, Some(Nudge::Normal));
        let drop = d.drop.expect("the drop taken");
        assert_eq!((drop.before, drop.after), (190_000, 110_000));
        assert_eq!(d.marker.state, State::Nudged);
        assert!(d.marker.receipt_pending.is_none() && d.marker.pending_drop.is_none());
        assert_eq!(d.marker.dropped_at, Some(t(20)));
        assert!(!d.idle);
        // Decided again on what it recorded: nothing more to give.
        let again = decide(&d.marker, &seen, &config, t(22));
        assert_eq!((again.receipt, again.nudge, again.drop), (None, None, None));
        // A route whose context does not reach the model leaves the drop, and the nudge, for
        // one that does.
        let mute = Seen {
            can_deliver: false,
            acts_on_drops: false,
            ..seen
        };
        let d = decide(&m, &mute, &config, t(21));
        assert_eq!((d.nudge, d.drop), (None, None));
        assert!(d.marker.pending_drop.is_some());
    }
}
