//! A Codex rollout fed to the replay: the same decisions as a Claude Code transcript's, on the
//! events Codex's hooks see. Its usage is [`rollout::classify`]'s (a `token_usage_record` or a
//! `token_count`, with the window Codex reports), its limits Codex's own
//! ([`facts::resolve_codex`](crate::facts::resolve_codex) with what `config.toml` sets), and:
//! - each tool call (`function_call`, `custom_tool_call`, `local_shell_call`) is a
//!   `PreToolUse`, once the response that made it is complete: Codex writes the response's
//!   `token_usage_record` before the call runs, so the hook reads the reply that made the call
//!   (an older rollout without one: at the call's output);
//! - each user message that is not Codex's own text is a `UserPromptSubmit`;
//! - the compaction's summary (`metadata.compaction_output`) starts a compaction: `PreCompact`
//!   runs before Codex's compaction request, so the usage written for that request, up to the
//!   `compacted` line, is not the conversation's; the `compacted` line is the boundary;
//! - a reply is a new running total of the thread's tokens (each response's usage is written
//!   twice, and a `token_count` repeats on rate-limit updates).
//!
//! No status line and no `Stop` nudge: Codex has no status line and never compacts an idle
//! session. Codex does not say what started a compaction, so the replay tells it as Codex
//! decides: a compaction in the middle of a turn (after a tool's output, before the turn's
//! `task_complete`) is automatic (`/compact` waits for the turn to end), and so is one after
//! usage reached the compaction point (Codex compacts there, mid-turn or before the next turn);
//! any other is a `/compact`.

use super::super::report::{Hook, Trigger};
use super::super::rollout::{is_prompt, Shape};
use super::Simulation;
use crate::receipt::BLOCK_MARK;
use crate::rollout::{self, Item};
use crate::transcript::Verdict as Line;

/// What the replay keeps of a rollout between lines.
#[derive(Debug, Default)]
pub(super) struct Rollout {
    /// Tool calls of the response being written, whose `PreToolUse` waits for its usage.
    pending_calls: usize,
    /// Between the compaction's summary and its `compacted` line.
    compacting: bool,
    /// A tool's output came in the turn still running: a compaction now is mid-turn.
    mid_turn: bool,
    /// The thread's running total at the last reply.
    total: Option<u64>,
    /// The model of the newest turn.
    pub(super) model: Option<String>,
    /// Since the newest compaction: (a reply came, the recovery block came).
    recovery: Option<(bool, bool)>,
    /// Compactions whose recovery never arrived before the newest.
    missing: usize,
}

impl Rollout {
    /// [`super::super::recoveries::Tally::total`] for a rollout: compactions followed by a reply but by
    /// no recovery block.
    pub(super) fn recoveries_missing(&self) -> usize {
        self.missing + usize::from(self.recovery == Some((true, false)))
    }
}

impl Simulation {
    /// The next line of a rollout (without its newline).
    pub(super) fn feed_rollout(&mut self, line: &[u8]) {
        let shape = Shape::parse(line);
        if let Some(at) = shape.time {
            self.now = Some(self.now.map_or(at, |now| now.max(at)));
        }
        if self.open.start.is_none() {
            self.open.start = self.now;
        }
        if shape.model.is_some() {
            self.rollout.model = shape.model;
        }
        match rollout::classify(line) {
            // The compaction's own request: not a reply of the conversation (the estimate of the
            // new context Codex writes after the `compacted` line repeats its total).
            Line::Usage { .. } if self.rollout.compacting => {
                if shape.total.is_some() {
                    self.rollout.total = shape.total;
                }
            }
            usage @ Line::Usage { tokens, .. } => {
                self.reading.apply(usage);
                let new_reply = shape.total.is_none() || shape.total != self.rollout.total;
                if new_reply {
                    self.costs.reply(tokens, None);
                    self.rollout.total = shape.total;
                    self.replies += 1;
                    self.open.replies += 1;
                    self.open.peak = self.open.peak.max(Some(tokens));
                    if let Some(recovery) = &mut self.rollout.recovery {
                        recovery.0 = true;
                    }
                }
                self.run_pending_calls();
                if new_reply {
                    self.sample(tokens);
                }
            }
            boundary @ Line::Boundary { .. } => {
                self.run_pending_calls();
                let trigger = self.codex_trigger();
                self.compact(trigger, None);
                self.reading.apply(boundary);
                self.rollout.compacting = false;
                self.rollout.mid_turn = false;
                if self.rollout.recovery == Some((true, false)) {
                    self.rollout.missing += 1;
                }
                self.rollout.recovery = Some((false, false));
                // The `compacted` line repeats history, an earlier recovery block included.
                return;
            }
            Line::Irrelevant => match rollout::item(line) {
                Item::Call { .. } => self.rollout.pending_calls += 1,
                Item::Output { .. } => {
                    self.run_pending_calls();
                    self.rollout.mid_turn = true;
                }
                Item::User(text) if is_prompt(&text) => {
                    self.run_pending_calls();
                    self.rollout.compacting = false;
                    self.rollout.mid_turn = false;
                    self.nudge_hook(Hook::UserPromptSubmit);
                }
                _ if shape.summary => {
                    self.run_pending_calls();
                    self.rollout.compacting = true;
                }
                _ if shape.ends_turn => self.rollout.mid_turn = false,
                _ => {}
            },
        }
        self.costs.line(line);
        if let Some(recovery) = &mut self.rollout.recovery {
            if memchr::memmem::find(line, BLOCK_MARK).is_some() {
                recovery.1 = true;
            }
        }
    }

    /// `PreToolUse` for each call of the response just completed.
    pub(super) fn run_pending_calls(&mut self) {
        for _ in 0..std::mem::take(&mut self.rollout.pending_calls) {
            self.nudge_hook(Hook::PreToolUse);
        }
    }

    /// Automatic in the middle of a turn, or when this cycle's usage reached the compaction
    /// point the hooks held (or would resolve); else by hand.
    fn codex_trigger(&self) -> Trigger {
        let reached = self
            .open
            .peak
            .is_some_and(|peak| peak >= self.limits_now(peak).compact_at);
        if self.rollout.mid_turn || reached {
            Trigger::Auto
        } else {
            Trigger::Manual
        }
    }
}

#[cfg(test)]
mod tests;
