//! What an agent team's teammates tell their lead of its tasks. A teammate closes a task in its
//! own transcript; the lead's only sees the messages the client hands over: its frames
//! (`{"type":"task_completed","taskId":"3",…}`, an `idle_notification` with `completedTaskId`
//! and `completedStatus: "resolved"`) and the teammate's own words ("Task #3 done", "Completed
//! task #3", in the message or its `summary`). Each names a task the lead's list marks completed,
//! as its `TaskList` results would.

use crate::text::sanitize;

/// Teammate messages read in one record, at most (a bundle holds a few).
const MAX_MESSAGES: usize = 64;

/// The start of a teammate's message as the client writes it.
const OPEN: &str = "<teammate-message";
const CLOSE: &str = "</teammate-message>";

/// Words saying a task is finished.
const DONE: &[&str] = &["done", "complete", "completed", "finished", "resolved"];

/// Words between a task's number and the word saying it is done ("Task #3 is now complete").
const FILLER: &[&str] = &[
    "is", "now", "has", "been", "was", "-", "—", "–", ":", "fully",
];

/// The ids of the tasks the teammate messages in `text` say are done, in order.
pub(super) fn completed(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in text.split(OPEN).skip(1).take(MAX_MESSAGES) {
        let Some((attrs, body)) = part.split_once('>') else {
            continue;
        };
        let body = body.split(CLOSE).next().unwrap_or(body).trim();
        if let Ok(frame) = serde_json::from_str::<serde_json::Value>(body) {
            out.extend(from_frame(&frame));
            continue;
        }
        let summary = attrs
            .split("summary=\"")
            .nth(1)
            .and_then(|s| s.split('"').next());
        let said = summary
            .into_iter()
            .chain(body.lines().find(|l| !l.trim().is_empty()))
            .find_map(said_done);
        out.extend(said);
    }
    out
}

/// The task a client frame reports finished: `task_completed`, or an idle teammate's
/// `completedTaskId` resolved (blocked or failed leaves the task as it was).
fn from_frame(frame: &serde_json::Value) -> Option<String> {
    let id = match frame["type"].as_str()? {
        "task_completed" => &frame["taskId"],
        "idle_notification"
            if matches!(frame["completedStatus"].as_str(), None | Some("resolved")) =>
        {
            &frame["completedTaskId"]
        }
        _ => return None,
    };
    let id = match id {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    task_id(&id)
}

/// The task a teammate's line opens by saying is done: "Task #3 done", "#3: completed", "Task #3
/// is now complete", "Completed task #3", "Done with #3". Anything else ("Task #3 depends on
/// #1", "Task #3 is not done") names none.
fn said_done(line: &str) -> Option<String> {
    let lower = sanitize(line, true).to_lowercase();
    let words: Vec<&str> = lower
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, '*' | '_' | '`' | '!' | '.' | ',')))
        .filter(|w| !w.is_empty() && w.chars().any(|c| c.is_alphanumeric() || c == '#'))
        .take(8)
        .collect();
    let number = |w: &str| {
        w.strip_prefix('#')
            .and_then(|n| task_id(n.trim_end_matches(':')))
    };
    let mut at = usize::from(words.first() == Some(&"task"));
    // "Task #3 done": the number, then the word that says so.
    if let Some(id) = words.get(at).and_then(|w| number(w)) {
        let next = words[at + 1..].iter().find(|w| !FILLER.contains(w))?;
        return DONE.contains(next).then_some(id);
    }
    // "Completed task #3", "Done with #3".
    let first = words.first()?;
    if !DONE.contains(first) {
        return None;
    }
    at = 1 + usize::from(words.get(1) == Some(&"with"));
    at += usize::from(words.get(at) == Some(&"task"));
    words.get(at).and_then(|w| number(w))
}

/// A task id as the lead's list holds it: a small number.
fn task_id(id: &str) -> Option<String> {
    let id = id.trim();
    (!id.is_empty() && id.len() <= 12 && id.chars().all(|c| c.is_ascii_digit()))
        .then(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(body: &str) -> Vec<String> {
        completed(&format!(
            "<teammate-message teammate_id=\"dev-a\" color=\"blue\">\n{body}\n</teammate-message>"
        ))
    }

    #[test]
    fn a_teammate_saying_a_task_is_done_closes_it() {
        for body in [
            "Task #3 done",
            "Task #3: completed. Tests pass.",
            "**Task #3 is now complete** — the schema is in",
            "#3 done",
            "Completed task #3 (the importer)",
            "Done with #3",
            "✅ Task #3 finished",
        ] {
            assert_eq!(said(body), ["3"], "{body}");
        }
        for body in [
            "Task #3 depends on Task #1",
            "Task #3 is not done yet",
            "Story 4.1 (task #13) is blocked",
            "Done. Next I look at task #4",
            "I completed the review",
        ] {
            assert!(said(body).is_empty(), "{body}");
        }
    }

    #[test]
    fn the_clients_frames_and_a_summary() {
        assert_eq!(
            said("{\"type\":\"task_completed\",\"from\":\"dev-a\",\"taskId\":\"7\",\"taskSubject\":\"API-2\"}"),
            ["7"]
        );
        assert_eq!(
            said("{\"type\":\"idle_notification\",\"from\":\"dev-a\",\"completedTaskId\":\"8\",\"completedStatus\":\"resolved\"}"),
            ["8"]
        );
        assert!(said("{\"type\":\"idle_notification\",\"from\":\"dev-a\",\"completedTaskId\":\"8\",\"completedStatus\":\"blocked\"}").is_empty());
        assert!(said(
            "{\"type\":\"idle_notification\",\"from\":\"dev-a\",\"idleReason\":\"available\"}"
        )
        .is_empty());
        let bundle = "<teammate-message teammate_id=\"dev-a\" summary=\"Task #4 done, PR opened\">\nThe export endpoint is in.\n</teammate-message>\n<teammate-message teammate_id=\"dev-b\">\nTask #5 complete\n</teammate-message>";
        assert_eq!(completed(bundle), ["4", "5"]);
    }
}
