//! The replay itself, pure: transcript lines in, the hooks' decisions out. Nothing here reads a
//! file, the environment or the clock: each line's `timestamp` is `now`, the limits come from the
//! config alone, and the marker lives in memory.
//!
//! What the hooks would have seen, line by line:
//! - a main-chain reply (what [`transcript::classify`] calls usage) is a status-line refresh
//!   when a status line is simulated, through [`gauge::decide`];
//! - each `tool_use` block of a main-chain reply is a `PreToolUse`, and each real user prompt a
//!   `UserPromptSubmit`, both through [`nudge::decide_route`] with the reading of the transcript
//!   up to that line ([`Reading::apply`], the hooks' own incremental reading);
//! - a `compact_boundary` is a `PreCompact`: [`marker::Event::Compacted`].
//!
//! A Codex rollout is fed by [`codex`]'s reader instead, into the same decisions.
//!
//! The decisions are the hooks' own code. What the hooks gather by I/O is rebuilt here without
//! it: [`limits_for`] is [`facts::limits_for`] with nothing learned and the client settings given, and
//! [`transcript_observation`] and [`statusline_observation`] build the observations
//! [`nudge::observe`] and [`gauge::observe`] would (a test holds them equal).

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::cost::{Cost, Ledger, Totals};
use super::line::Shape;
use super::report::{
    Compaction, Cycle, Event, FirstNudge, Hook, Level, NudgeSeen, Report, Sample, Trigger, Verdict,
    What,
};
use crate::config::Config;
use crate::event;
use crate::facts::{self, Gathered, LimitsFor, Resolved};
use crate::gauge;
use crate::marker::{self, Marker, Nudge, Observation, Source, State};
use crate::nudge;
use crate::reading::Reading;
use crate::transcript::{self, Verdict as Line};
use crate::usage::Limits;
use crate::window::{self, CodexFacts};

mod codex;

/// How the replay runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Simulate a status line: refreshed on every main-chain reply, reporting `window`, else the
    /// window known for the reply's model.
    pub statusline: bool,
    /// `--window`: forces the window, as `window_tokens` in the config does.
    pub window: Option<u64>,
    /// The client's settings and `--autocompact`, as the hooks would gather them.
    pub gathered: Gathered,
    /// For a Codex rollout: what Codex's `config.toml` sets for compaction
    /// ([`facts::codex_facts`]; the window each reading reports is added to it). `None` for a
    /// Claude Code transcript.
    pub codex: Option<CodexFacts>,
    /// What pi's files tell about its compaction, for a pi session (read through its copy in
    /// a transcript's form); `None` for the other clients.
    pub pi: Option<crate::window::PiFacts>,
}

impl Options {
    /// Which client wrote the transcript these options replay.
    pub fn client(&self) -> crate::input::Client {
        if self.codex.is_some() {
            crate::input::Client::Codex
        } else if self.pi.is_some() {
            crate::input::Client::Pi
        } else {
            crate::input::Client::ClaudeCode
        }
    }
}

/// [`facts::limits_for`] without I/O: the hooks' own cache ([`facts::cached_or`]) and
/// resolution ([`resolve`]), with the client's settings and `--autocompact` as `replay`
/// gathered them once ([`Gathered::for_command`], and Codex's `config.toml`) and no learned
/// windows. The config, the reported window, the model, the usage and where this session was
/// seen auto-compacting all apply.
pub fn limits_for(
    config: &Config,
    options: &Options,
    marker: &Marker,
    model: Option<&str>,
    reported: Option<u64>,
    tokens: Option<u64>,
    now: DateTime<Utc>,
) -> LimitsFor {
    facts::cached_or(config, marker, model, reported, tokens, now, || {
        resolve(config, options, marker, model, reported, tokens)
    })
}

/// [`facts::resolve`] on what `replay` gathered: a Codex session's limits as Codex decides
/// them once a window is known ([`facts::resolve_codex`]), else [`facts::resolve_with`]'s.
fn resolve(
    config: &Config,
    options: &Options,
    marker: &Marker,
    model: Option<&str>,
    reported: Option<u64>,
    tokens: Option<u64>,
) -> Resolved {
    if let Some(pi) = &options.pi {
        return facts::resolve_pi(config, pi);
    }
    if let Some(codex) = &options.codex {
        let facts = CodexFacts {
            reported: reported.or(marker.reported_window),
            ..codex.clone()
        };
        if let Some(resolved) = facts::resolve_codex(config, &facts) {
            return resolved;
        }
    }
    facts::resolve_with(config, marker, model, reported, tokens, &options.gathered)
}

/// The observation [`nudge::observe`] makes of a transcript reading (with the window a
/// Codex rollout reports).
pub fn transcript_observation(
    reading: &Reading,
    marker: &Marker,
    config: &Config,
    options: &Options,
    now: DateTime<Utc>,
) -> Observation {
    let marker = marker.knowing_auto_compaction(reading.auto_compacted_at);
    let limits = limits_for(
        config,
        options,
        &marker,
        reading.model.as_deref(),
        reading.window,
        reading.tokens,
        now,
    );
    nudge::observe_with(reading, limits, config.growth_replies)
}

/// The observation [`gauge::observe`] makes of a frame that carries usage.
pub fn statusline_observation(
    tokens: u64,
    model: Option<&str>,
    reported: Option<u64>,
    marker: &Marker,
    config: &Config,
    options: &Options,
    now: DateTime<Utc>,
) -> Observation {
    let reported = reported.filter(|w| *w > 0);
    let tokens = Some(tokens).filter(|t| *t > 0);
    let limits = limits_for(config, options, marker, model, reported, tokens, now);
    let mut obs = limits.observation(tokens, Source::Statusline);
    obs.reported_window = reported;
    obs.model = model.map(str::to_string);
    obs
}

/// The cycle being replayed (until the next compaction).
#[derive(Debug, Default)]
struct Open {
    first_line: usize,
    start: Option<DateTime<Utc>>,
    replies: usize,
    peak: Option<u64>,
    reached_trigger: bool,
    nudges: usize,
    idle_nudges: usize,
    first_nudge: Option<(NudgeSeen, usize)>,
    refusals: usize,
    refused_at: Option<u64>,
}

/// A replay in progress: feed it lines, oldest first, then [`Simulation::finish`].
pub struct Simulation {
    config: Config,
    options: Options,
    stale: Duration,
    marker: Marker,
    reading: Reading,
    /// The newest line time seen: hooks run on a clock that does not go back, and lines are
    /// not always written in time order.
    now: Option<DateTime<Utc>>,
    line: usize,
    replies: usize,
    reply_id: Option<String>,
    /// Whether the session was interactive, from the lines' `entrypoint` when they say.
    attended: Option<bool>,
    events: Vec<Event>,
    samples: Vec<Sample>,
    recoveries: super::recoveries::Tally,
    /// What each compaction cost.
    costs: Ledger,
    /// What a Codex rollout's lines leave for the next.
    rollout: codex::Rollout,
    cycles: Vec<Cycle>,
    open: Open,
}

impl Simulation {
    pub fn new(config: &Config, mut options: Options) -> Simulation {
        let config = Config {
            window_tokens: options.window.or(config.window_tokens),
            ..config.clone()
        };
        // Codex and pi have no status line.
        options.statusline &= options.codex.is_none() && options.pi.is_none();
        Simulation {
            stale: config.stale(),
            config,
            options,
            marker: Marker::new("replay"),
            reading: Reading::default(),
            now: None,
            line: 0,
            replies: 0,
            reply_id: None,
            attended: None,
            events: Vec::new(),
            samples: Vec::new(),
            recoveries: super::recoveries::Tally::default(),
            costs: Ledger::default(),
            rollout: codex::Rollout::default(),
            cycles: Vec::new(),
            open: Open {
                first_line: 1,
                ..Open::default()
            },
        }
    }

    fn clock(&self) -> DateTime<Utc> {
        self.now.unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
    }

    /// The next line of the transcript (without its newline).
    pub fn feed(&mut self, line: &[u8]) {
        self.line += 1;
        if self.options.codex.is_some() {
            self.feed_rollout(line);
            return;
        }
        self.recoveries.feed(line);
        self.costs.line(line);
        let shape = Shape::parse(line);
        if let Some(at) = shape.as_ref().and_then(Shape::time) {
            self.now = Some(self.now.map_or(at, |now| now.max(at)));
        }
        if self.open.start.is_none() {
            self.open.start = self.now;
        }
        if let Some(attended) = shape.as_ref().and_then(Shape::attended) {
            self.attended = Some(attended);
        }
        match transcript::classify(line) {
            Line::Usage {
                tokens,
                model,
                at,
                version,
                window,
            } => {
                self.reading.apply(Line::Usage {
                    tokens,
                    model: model.clone(),
                    at,
                    version,
                    window,
                });
                // The hooks know the client's version from the transcript too.
                self.options
                    .gathered
                    .client_version
                    .clone_from(&self.reading.client_version);
                let id = shape
                    .as_ref()
                    .and_then(|s| s.message.as_ref()?.id.as_deref().map(str::to_string));
                let new_reply = id.is_none() || id != self.reply_id;
                self.reply_id = id;
                if new_reply {
                    self.costs
                        .reply(tokens, shape.as_ref().and_then(Shape::usage));
                    self.replies += 1;
                    self.open.replies += 1;
                    self.open.peak = self.open.peak.max(Some(tokens));
                    if self.options.statusline {
                        self.refresh_statusline(tokens, model.as_deref());
                    }
                }
                for _ in 0..shape.as_ref().map_or(0, Shape::tool_calls) {
                    self.nudge_hook(Hook::PreToolUse);
                }
                if new_reply {
                    self.sample(tokens);
                }
                if new_reply && shape.as_ref().is_some_and(Shape::ends_turn) {
                    self.stop_hook();
                }
            }
            Line::Boundary {
                at,
                auto_pre_tokens,
            } => {
                let (trigger, pre_tokens) = shape
                    .as_ref()
                    .map_or((Trigger::Manual, None), |s| (s.trigger(), s.pre_tokens()));
                self.compact(trigger, pre_tokens);
                self.reading.apply(Line::Boundary {
                    at,
                    auto_pre_tokens,
                });
            }
            Line::Irrelevant => {
                let Some(shape) = shape else { return };
                if shape.is_refusal() {
                    self.refused();
                }
                // A reply without usage still makes its tool calls.
                for _ in 0..shape.tool_calls() {
                    self.nudge_hook(Hook::PreToolUse);
                }
                if shape.is_prompt() {
                    self.nudge_hook(Hook::UserPromptSubmit);
                }
            }
        }
    }

    /// A status-line frame reporting this reply's usage.
    fn refresh_statusline(&mut self, tokens: u64, model: Option<&str>) {
        let now = self.clock();
        let reported = self
            .options
            .window
            .or_else(|| model.and_then(window::known));
        let obs = statusline_observation(
            tokens,
            model,
            reported,
            &self.marker,
            &self.config,
            &self.options,
            now,
        );
        let (next, _gauge) = gauge::decide(&self.marker, obs, &self.config, now);
        self.record(Hook::Statusline, next, None);
    }

    /// `PreToolUse` or `UserPromptSubmit`: the session step's decision (`nudge::decide_route`) without the I/O.
    fn nudge_hook(&mut self, hook: Hook) {
        let now = self.clock();
        // A reply older than the status line's last fresh report is older news than the
        // marker holds, unless that report was of an earlier reply.
        let newer = nudge::is_news(&self.reading, &self.marker, now);
        let observation = newer.then(|| {
            transcript_observation(
                &self.reading,
                &self.marker,
                &self.config,
                &self.options,
                now,
            )
        });
        // Clients before 2.1 drop PreToolUse's context: the hook keeps the nudge for the next
        // prompt there, and so does the replay.
        let modern = self.reading.client_reads_pretooluse_context();
        let can_deliver = hook != Hook::PreToolUse || modern;
        let client = self.options.client();
        let event = match hook {
            Hook::UserPromptSubmit => event::USER_PROMPT_SUBMIT,
            _ => event::PRE_TOOL_USE,
        };
        let (next, nudge) = nudge::decide_route(
            &self.marker,
            observation.as_ref(),
            &self.config,
            now,
            can_deliver,
            nudge::withheld_past_the_point(event, modern, client),
        );
        self.record(hook, next, nudge);
    }

    /// `Stop` at the end of a turn: the idle nudge, in an attended session (as the transcript
    /// says, else when a status line is simulated: the TUI).
    fn stop_hook(&mut self) {
        let now = self.clock();
        let attended = self.attended.unwrap_or(self.options.statusline);
        let observation = transcript_observation(
            &self.reading,
            &self.marker,
            &self.config,
            &self.options,
            now,
        );
        let (next, nudged) = nudge::decide_idle(
            &self.marker,
            Some(&observation),
            &self.config,
            now,
            attended,
        );
        if nudged {
            self.marker = next;
            let tokens = self.marker.tokens;
            self.push(What::IdleNudge {
                tokens,
                by: Hook::Stop,
            });
            self.open.idle_nudges += 1;
        } else {
            self.record(Hook::Stop, next, None);
        }
    }

    /// The client refused a request as too long: stopped at the newest reply's usage.
    fn refused(&mut self) {
        let tokens = self.reading.tokens;
        let nudged_at = self.open.first_nudge.as_ref().map(|(seen, _)| seen.tokens);
        self.push(What::Refused {
            tokens,
            nudged_at: nudged_at.flatten(),
        });
        self.open.refusals += 1;
        if self.open.refused_at.is_none() {
            self.open.refused_at = tokens;
        }
    }

    /// `PreCompact`: a new cycle. The tokens are what its checkpoint reads from the transcript
    /// (the newest reply since the last compaction), as the hook passes them.
    fn compact(&mut self, trigger: Trigger, pre_tokens: Option<u64>) {
        let now = self.clock();
        let event = marker::Event::Compacted {
            checkpoint: "replay".into(),
            tokens: self.reading.tokens,
            auto: trigger == Trigger::Auto,
            // Each boundary in the transcript is a compaction that finished.
            repeat: false,
            drop: false,
        };
        self.marker = marker::transition(&self.marker, &event, now, self.stale);
        self.costs.boundary(pre_tokens);
        self.push(What::Compaction {
            trigger,
            pre_tokens,
            tokens: self.reading.tokens,
        });
        let compaction = Compaction {
            trigger,
            pre_tokens,
            line: self.line,
            at: self.now,
            cost: Cost::default(),
        };
        self.close(Some(compaction));
        self.open = Open {
            first_line: self.line + 1,
            start: self.now,
            ..Open::default()
        };
    }

    /// Keeps a hook's new marker if the hook would have saved it (the store's rule: a new usage
    /// figure or timestamps alone are written at most every [`marker::REFRESH`]), noting what
    /// changed that matters.
    fn record(&mut self, hook: Hook, next: Marker, nudge: Option<Nudge>) {
        if !marker::worth_saving(&self.marker, &next, marker::REFRESH) {
            return;
        }
        let now = self.clock();
        let prev = std::mem::replace(&mut self.marker, next);
        let was_idle = prev.effective_state(now, self.stale) == State::Idle;
        if prev.state != State::Idle && was_idle {
            self.push(What::Stale { by: hook });
        }
        let m = &self.marker;
        let new_cycle = m.cycle > prev.cycle;
        if new_cycle {
            let tokens = m.tokens;
            self.push(What::NewCycle { tokens, by: hook });
        }
        let m = &self.marker;
        // Armed now: a new arming time, or armed again at the same instant after going idle.
        if m.armed_at.is_some() && (m.armed_at != prev.armed_at || new_cycle || was_idle) {
            let what = What::Armed {
                tokens: m.tokens,
                trigger_at: m.trigger_at.unwrap_or_default(),
                compact_at: m.compact_at.unwrap_or_default(),
                window: m.window.unwrap_or_default(),
                growth: m.tokens.zip(m.trigger_at).is_some_and(|(t, at)| t < at),
                by: hook,
            };
            self.push(what);
        }
        if let Some(level) = nudge {
            let level = match level {
                Nudge::Normal => Level::Normal,
                Nudge::Critical => Level::Critical,
            };
            let m = &self.marker;
            let seen = NudgeSeen {
                level,
                tokens: m.tokens,
                compact_at: m.compact_at,
                at: self.now,
                line: self.line,
                by: hook,
            };
            let repeat = self.open.nudges > 0 && level == Level::Normal;
            self.push(What::Nudge {
                level,
                tokens: m.tokens,
                compact_at: m.compact_at,
                repeat,
                by: hook,
            });
            self.open.nudges += 1;
            if self.open.first_nudge.is_none() {
                self.open.first_nudge = Some((seen, self.replies));
            }
        }
        let m = &self.marker;
        if let (Some(t), Some(at)) = (m.tokens, m.trigger_at) {
            if t >= at {
                self.open.reached_trigger = true;
            }
        }
    }

    /// The limits the hooks hold now, or would resolve for this reply when they hold none.
    fn limits_now(&self, tokens: u64) -> Limits {
        let m = &self.marker;
        if let (Some(window), Some(compact_at), Some(trigger_at)) =
            (m.window, m.compact_at, m.trigger_at)
        {
            Limits {
                window,
                compact_at,
                trigger_at,
                critical_at: m.critical_at,
            }
        } else {
            let reported = if self.options.codex.is_some() {
                self.reading.window
            } else if self.options.statusline {
                self.options
                    .window
                    .or_else(|| self.reading.model.as_deref().and_then(window::known))
            } else {
                None
            };
            resolve(
                &self.config,
                &self.options,
                m,
                self.reading.model.as_deref(),
                reported,
                Some(tokens),
            )
            .limits
        }
    }

    fn sample(&mut self, tokens: u64) {
        let limits = self.limits_now(tokens);
        if tokens >= limits.trigger_at {
            self.open.reached_trigger = true;
        }
        self.samples.push(Sample {
            reply: self.replies,
            cycle: self.cycles.len() + 1,
            tokens,
            limits,
        });
    }

    fn push(&mut self, what: What) {
        self.events.push(Event {
            line: self.line,
            at: self.now,
            reply: self.replies,
            cycle: self.cycles.len() + 1,
            what,
        });
    }

    /// Ends the open cycle, with the compaction that ended it (none at the end of the file).
    fn close(&mut self, compaction: Option<Compaction>) {
        let open = std::mem::take(&mut self.open);
        let nudge = open
            .first_nudge
            .map(|(seen, replies)| (seen, self.replies - replies));
        let verdict = Verdict::of(
            nudge.as_ref().map(|(_, left)| *left),
            compaction.as_ref().map(|c| c.trigger),
            open.reached_trigger,
            open.peak.is_some(),
            open.refusals > 0,
        );
        self.cycles.push(Cycle {
            cycle: self.cycles.len() + 1,
            verdict,
            first_line: open.first_line,
            last_line: self.line,
            start: open.start,
            end: self.now,
            replies: open.replies,
            peak_tokens: open.peak,
            reached_trigger: open.reached_trigger,
            nudges: open.nudges,
            idle_nudges: open.idle_nudges,
            refusals: open.refusals,
            refused_at: open.refused_at,
            nudge: nudge.map(|(seen, replies_left)| FirstNudge { seen, replies_left }),
            compaction,
        });
    }

    /// The whole replay: every cycle closed, with its verdict.
    pub fn finish(mut self) -> Report {
        // A call the rollout ends on still ran its hook.
        self.run_pending_calls();
        // A transcript that ends right after a compaction has no cycle after it.
        if self.open.replies > 0 || self.open.nudges > 0 || self.cycles.is_empty() {
            self.close(None);
        }
        let m = &self.marker;
        let limits = match (m.window, m.compact_at, m.trigger_at) {
            (Some(window), Some(compact_at), Some(trigger_at)) => Some(Limits {
                window,
                compact_at,
                trigger_at,
                critical_at: m.critical_at,
            }),
            _ => self.samples.last().map(|s| s.limits),
        };
        let codex = self.options.codex.is_some();
        // Each compaction's cost, gathered after its cycle closed.
        let costs = std::mem::take(&mut self.costs).finish();
        let compactions = self.cycles.iter_mut().filter_map(|c| c.compaction.as_mut());
        for (compaction, cost) in compactions.zip(costs) {
            compaction.cost = cost;
        }
        let cost = Totals::of(
            self.cycles
                .iter()
                .filter_map(|c| Some(&c.compaction.as_ref()?.cost)),
        );
        Report {
            transcript: String::new(),
            client: self.options.client(),
            statusline: self.options.statusline,
            window: self.options.window,
            lines: self.line,
            replies: self.replies,
            compactions: self
                .cycles
                .iter()
                .filter(|c| c.compaction.is_some())
                .count(),
            model: self
                .reading
                .model
                .clone()
                .or(m.model.clone())
                .or(self.rollout.model.clone()),
            limits,
            window_source: m.window_source,
            compact_source: m.compact_source.clone(),
            recoveries_missing: if codex {
                self.rollout.recoveries_missing()
            } else {
                self.recoveries.total()
            },
            cost,
            events: self.events,
            cycles: self.cycles,
            samples: self.samples,
        }
    }
}
