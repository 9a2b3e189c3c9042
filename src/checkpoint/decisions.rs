//! The user's decisions: their answers to the agent's questions, as Claude Code records them
//! beside an `AskUserQuestion` result (`toolUseResult`: the questions asked, the option chosen
//! or the text typed for each, the user's notes), and a plan approved in plan mode. A question
//! declined (the result is an error) or left unanswered (the client's timeout, `answers` empty)
//! is no decision. Each is one line, `question → answer`, the question cut short and a long
//! answer kept as its head and its tail.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{asks, MAX_DECISIONS};
use crate::text::{cut, sanitize};

/// A decision's question, at most (the answer is what must survive).
const QUESTION_CHARS: usize = 90;
/// Its answer with the user's notes, at most.
const ANSWER_CHARS: usize = 160;
/// Questions read of one result: the client asks at most four at once.
const MAX_PER_RESULT: usize = 8;

/// How `ExitPlanMode`'s result says the user approved (2.0.76: "User has approved your plan.",
/// 2.1.38: "User has approved exiting plan mode.").
const PLAN_APPROVED: &str = "User has approved ";

/// The decision a plan approved in plan mode records.
pub(super) const PLAN_DECISION: &str = "The plan written in plan mode → approved";

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "toolUseResult", borrow, default)]
    result: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Answered {
    questions: Vec<Question>,
    answers: Map<String, Value>,
    annotations: Map<String, Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Question {
    question: String,
}

/// Could this transcript line hold answers? A cheap test before any parsing.
pub(super) fn may_answer(line: &str) -> bool {
    crate::text::holds(line, "\"toolUseResult\"") && crate::text::holds(line, "\"answers\"")
}

/// The decisions a user line's `toolUseResult` records, in the order the questions were asked.
pub(super) fn in_line(line: &str) -> Vec<String> {
    let Some(raw) = serde_json::from_str::<Record>(line)
        .ok()
        .and_then(|r| r.result)
    else {
        return Vec::new();
    };
    let Ok(answered) = serde_json::from_str::<Answered>(raw.get()) else {
        return Vec::new();
    };
    let asked = answered.questions.iter().map(|q| q.question.as_str());
    // Asked first, in their order; an answer to a question not listed after them.
    let mut order: Vec<&str> = asked
        .filter(|q| answered.answers.contains_key(*q))
        .collect();
    for q in answered.answers.keys() {
        if !order.contains(&q.as_str()) {
            order.push(q);
        }
    }
    order
        .into_iter()
        .take(MAX_PER_RESULT)
        .filter_map(|q| {
            let answer = answered.answers.get(q)?.as_str()?.trim();
            let notes = answered
                .annotations
                .get(q)
                .and_then(|a| a.get("notes"))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|n| !n.is_empty() && !answer.starts_with(n) && !n.starts_with(answer));
            decision(q, answer, notes)
        })
        .collect()
}

/// One decision as the checkpoint keeps it, or `None` for an empty answer.
fn decision(question: &str, answer: &str, notes: Option<&str>) -> Option<String> {
    let answer = match notes {
        Some(notes) => format!("{answer} (notes: {notes})"),
        None => answer.to_string(),
    };
    let answer = sanitize(&answer, true);
    if answer.is_empty() {
        return None;
    }
    let answer = asks::head_tail(&answer, ANSWER_CHARS);
    let question = cut(&sanitize(question, true), QUESTION_CHARS);
    Some(if question.is_empty() {
        answer
    } else {
        format!("{question} → {answer}")
    })
}

/// The decisions made before the part read that still stand, oldest first (`previous`: the
/// previous checkpoint's earlier decisions, then its own). A decision still stands unless the
/// user answered the same question again since (the newer answer wins: in `read`, or later in
/// `previous`) or, for a plan's approval, a plan of the part read replaced the approved one
/// (`plan_carried`: the previous plan is still the plan). With the part's own, a checkpoint keeps
/// [`MAX_DECISIONS`]: the newest carried ones fill what the part's own leave.
pub fn carried_decisions(previous: &[String], read: &[String], plan_carried: bool) -> Vec<String> {
    let question = |d: &str| d.split_once(" → ").map_or(d, |(q, _)| q).to_string();
    let mut out: Vec<String> = Vec::new();
    for (n, d) in previous.iter().enumerate() {
        let asked = question(d);
        let again = read
            .iter()
            .chain(&previous[n + 1..])
            .any(|l| question(l) == asked);
        if !again && (plan_carried || d != PLAN_DECISION) {
            out.push(d.clone());
        }
    }
    let room = MAX_DECISIONS.saturating_sub(read.len());
    let skip = out.len().saturating_sub(room);
    out.into_iter().skip(skip).collect()
}

/// Whether an `ExitPlanMode` result's text says the user approved the plan.
pub(super) fn plan_approved(text: &str) -> bool {
    text.trim_start().starts_with(PLAN_APPROVED)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record 2.1.49 wrote for a typed answer with notes (cipherbox-f7594e2b.jsonl, line
    /// 148, shortened) and 2.1.232's for a timeout (entirecontext-d29c2adb.jsonl, line 345).
    #[test]
    fn answers_are_read_with_their_notes_and_a_timeout_is_none() {
        let typed = r#"{"type":"user","toolUseResult":{"questions":[{"question":"What next?","options":[{"label":"Done"}]}],"answers":{"What next?":"commit the review first"},"annotations":{"What next?":{"notes":"then fix H1"}}}}"#;
        assert_eq!(
            in_line(typed),
            ["What next? → commit the review first (notes: then fix H1)"]
        );
        let timeout = r#"{"type":"user","toolUseResult":{"questions":[{"question":"Merge?"}],"answers":{},"annotations":{},"afkTimeoutMs":300000}}"#;
        assert!(in_line(timeout).is_empty());
        let refused =
            r#"{"type":"user","toolUseResult":"Error: The user doesn't want to proceed"}"#;
        assert!(in_line(refused).is_empty());
    }

    #[test]
    fn a_decision_from_before_an_earlier_compaction_stands_until_it_is_made_again() {
        let d = |s: &[&str]| s.iter().map(ToString::to_string).collect::<Vec<_>>();
        let previous = d(&["Which database? → Postgres", PLAN_DECISION, "Squash? → yes"]);
        // The same question answered again since: only the newer answer, not carried.
        assert_eq!(
            carried_decisions(&previous, &d(&["Squash? → no, keep the commits"]), true),
            ["Which database? → Postgres", PLAN_DECISION]
        );
        // A plan of its own in the part read: the earlier approval was of another plan.
        assert_eq!(
            carried_decisions(&previous, &[], false),
            ["Which database? → Postgres", "Squash? → yes"]
        );
        // Answered twice before: the newer. Four in all with the part's own, the newest.
        let previous = d(&["A? → 1", "B? → 2", "A? → 3", "C? → 4", "D? → 5", "E? → 6"]);
        assert_eq!(
            carried_decisions(&previous, &[], true),
            ["A? → 3", "C? → 4", "D? → 5", "E? → 6"]
        );
        assert_eq!(
            carried_decisions(&previous, &d(&["F? → 7"]), true),
            ["C? → 4", "D? → 5", "E? → 6"]
        );
    }
}
