//! The builder's asks: a user message sorted into a notification, an ask (the goal if it is
//! the first) or an acknowledgement, and the asks kept within their caps.

use super::{
    ask_text, asks, prompt_body, short_reply, Ask, Builder, ASK_CHARS, GOAL_CHARS, MAX_ASKS,
    MAX_QUEUED, NOTIFICATION, QUEUED_CHARS,
};
use crate::checkpoint::teammates;

impl Builder {
    /// A user message's text: notifications of background tasks (whoever the client says sent
    /// them), or an ask.
    pub(super) fn typed(&mut self, text: &str, is_prompt: bool) {
        if text.trim_start().starts_with(NOTIFICATION) {
            self.tools.notification(text);
        } else if is_prompt {
            self.forced_turn = false;
            if let Some((id, subject)) = asks::assignment(text) {
                self.tools.task_named(&id, &subject);
            }
            for id in teammates::completed(text) {
                self.tools.task_done(&id);
            }
            if let Some(body) = prompt_body(text) {
                self.ask(&body, false);
            } else if let Some(reply) = short_reply(text) {
                match (self.question.take(), self.reply_end.take()) {
                    // "approved", answering the agent's question: an ask, with its question.
                    (Some(question), _) => {
                        self.ask(&format!("{reply} (answering: {question})"), false);
                    }
                    // "ok continue" after the agent's report: the user's newest word, kept
                    // (with what it follows) until the user asks something else.
                    (None, Some(end)) => self.acknowledged(&format!("{reply} (after: {end})")),
                    // "Continue" after an interrupted turn, or with no reply read: only a word
                    // that asks to go on says something ("y" alone does not).
                    (None, None) if asks::goes_on(&reply) => self.acknowledged(&reply),
                    (None, None) => self.asks.retain(|a| !a.ack),
                }
            }
            self.question = None;
            self.reply_end = None;
        }
    }

    /// An ask (its text before cutting): the goal if it is the first, then the newest of its
    /// kind. A queued prompt that later reaches the transcript as a prompt of its own (the
    /// client sent it as the next turn, as 2.1.330 does with every prompt) is the same ask, kept
    /// once, where it was typed, and not counted as typed mid-turn.
    pub(super) fn ask(&mut self, body: &str, queued: bool) {
        let max = if queued { QUEUED_CHARS } else { ASK_CHARS };
        let Some(text) = ask_text(body, max) else {
            return;
        };
        if !self.asked {
            self.asked = true;
            self.goal = ask_text(body, GOAL_CHARS);
        }
        if !queued {
            // Queued, then sent as a turn of its own (`dequeue`): not typed mid-turn after all.
            let short = ask_text(body, QUEUED_CHARS).unwrap_or_default();
            if let Some(ask) = self.asks.iter_mut().find(|a| a.queued && a.text == short) {
                ask.text = text;
                ask.queued = false;
                self.cap_asks(false);
                return;
            }
        }
        if !queued && self.last_assistant.is_some() {
            self.gist_before_ask = true;
        }
        // An acknowledgement is the newest ask only until another comes.
        self.asks.retain(|a| !a.ack);
        self.asks.push_back(Ask {
            text,
            queued,
            ack: false,
        });
        self.cap_asks(queued);
    }

    /// A bare acknowledgement of the agent's last message: the newest ask until another comes,
    /// never the goal.
    fn acknowledged(&mut self, text: &str) {
        let Some(text) = ask_text(text, ASK_CHARS) else {
            return;
        };
        self.asks.retain(|a| !a.ack);
        self.asks.push_back(Ask {
            text,
            queued: false,
            ack: true,
        });
        self.cap_asks(false);
    }

    /// Forgets the oldest ask of a kind past its cap.
    fn cap_asks(&mut self, queued: bool) {
        // An acknowledgement takes no request's slot.
        let cap = if queued { MAX_QUEUED } else { MAX_ASKS };
        let counted = |a: &Ask| a.queued == queued && !a.ack;
        if self.asks.iter().filter(|a| counted(a)).count() > cap {
            if let Some(oldest) = self.asks.iter().position(counted) {
                self.asks.remove(oldest);
            }
        }
    }
}
