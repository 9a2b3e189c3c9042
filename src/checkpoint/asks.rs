//! What an ask looks like once kept: one line, cut head…tail so the instruction at the end of a
//! long paste survives; a pasted plan as its title and step headings, without the client's
//! plan-mode footer; a lead's message to a teammate as who sent it and what it says. And which
//! prompts are not asks worth a slot at all: one-word acknowledgements and menu presses.

use std::borrow::Cow;

use crate::text::sanitize;

/// How a plan accepted in plan mode is handed to the agent.
const PLAN_START: &str = "Implement the following plan:";

/// The client's fixed footer after such a plan: it names the transcript, not the work.
const PLAN_FOOTER: &str = "If you need specific details from before exiting plan mode";

/// How much of a long text is cleaned before it is cut: a paste of megabytes costs no more.
const CLEAN_BYTES: usize = 64 * 1024;

/// A step heading of a plan, at most.
const HEADING_CHARS: usize = 60;

/// Words that acknowledge, agree or press on without saying what to do.
const ACKS: &[&str] = &[
    "ok", "okay", "k", "kk", "yes", "y", "yep", "yeah", "yup", "sure", "no", "n", "nope", "c",
    "continue", "cont", "go", "proceed", "next", "done", "thanks", "thx", "ty", "lgtm", "good",
    "great", "nice", "cool", "perfect", "fine", "agreed", "approved", "correct", "right", "do",
    "it", "again", "retry",
];

/// Is `text` a one-word acknowledgement ("c", "yes", "ok", "continue") or a menu press ("1",
/// "a")? Such a prompt says nothing a resuming engineer needs, and never takes a request slot.
pub(super) fn is_ack(text: &str) -> bool {
    let t = text
        .trim()
        .trim_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace());
    if t.is_empty() {
        return true;
    }
    let words: Vec<&str> = t.split_whitespace().collect();
    // "do it", "go ahead", "yes please": two acknowledging words are one acknowledgement.
    let ack_word = |w: &str| {
        let w = w
            .trim_matches(|c: char| c.is_ascii_punctuation())
            .to_lowercase();
        ACKS.contains(&w.as_str())
            || matches!(w.as_str(), "ahead" | "please" | "pls" | "on")
            || (w.chars().count() <= 2 && w.chars().all(|c| c.is_ascii_alphanumeric()))
    };
    match words.as_slice() {
        [one] => ack_word(one),
        [a, b] => ack_word(a) && ack_word(b),
        _ => false,
    }
}

/// `text` (already free of wrappers) as one line of at most `max` characters: a plan as its
/// title and step headings, else head…tail (the tail two fifths of it, at most 80 characters).
pub(super) fn shorten(text: &str, max: usize) -> Option<String> {
    let text = super::failures::within(text, 0, CLEAN_BYTES);
    let text = teammate_message(text).map_or(Cow::Borrowed(text), Cow::Owned);
    if let Some(plan) = plan(&text, max) {
        return Some(head_tail(&sanitize(&plan, true), max));
    }
    let clean = sanitize(&text, true);
    if clean.is_empty() {
        return None;
    }
    Some(head_tail(&clean, max))
}

/// `clean` cut to `max` characters around `…`, keeping its end (two fifths, at most 80).
pub(super) fn head_tail(clean: &str, max: usize) -> String {
    ends(clean, max, (max * 2 / 5).min(80))
}

/// A plan step cut to `max` characters from its end, at a word boundary when one is near: a
/// step is known by its head (`Stop hook: wingman status notification…`), never cut in the
/// middle of a word in the middle.
pub(super) fn step_head(clean: &str, max: usize) -> String {
    if clean.chars().count() <= max {
        return clean.to_string();
    }
    let head: String = clean.chars().take(max.saturating_sub(1)).collect();
    // At a space, or after a path's `/`, in the second half.
    let at_word = head
        .rfind(|c: char| c.is_whitespace() || c == '/')
        .map(|i| if head[i..].starts_with('/') { i + 1 } else { i })
        .filter(|i| head[..*i].chars().count() * 2 >= max)
        .map_or(head.as_str(), |i| &head[..i]);
    format!("{}…", at_word.trim_end())
}

/// `clean` cut to `max` characters around `…`: its start, and its last `tail_chars`.
pub(super) fn ends(clean: &str, max: usize, tail_chars: usize) -> String {
    let n = clean.chars().count();
    if n <= max {
        return clean.to_string();
    }
    let head: String = clean.chars().take(max - 1 - tail_chars).collect();
    let tail: String = clean.chars().skip(n - tail_chars).collect();
    format!("{}…{}", head.trim_end(), tail.trim_start())
}

/// A plan as the agent wrote it in plan mode (`ExitPlanMode`'s input, a file under
/// `~/.claude/plans/`): its title and as many step headings as fit in `max` characters, a step
/// marked done (`✅`, `[x]`) kept so. `None` when it has no text.
pub(super) fn written_plan(text: &str, max: usize) -> Option<String> {
    let text = super::failures::within(text, 0, CLEAN_BYTES);
    if text.trim().is_empty() {
        return None;
    }
    let summary = plan(&format!("{PLAN_START}\n{text}"), max + PLAN_START.len() + 1)?;
    let summary = summary.strip_prefix(PLAN_START).unwrap_or(&summary).trim();
    // A plan that tracks its steps as a checklist: those steps, each marked as it is.
    let checklist = checklist(text);
    if checklist.len() >= 2 {
        let title = summary.split(". Steps: ").next().unwrap_or(summary);
        let mut out = format!("{title}. Steps: ");
        for (i, step) in checklist.iter().enumerate() {
            let sep = if i == 0 { "" } else { "; " };
            if out.chars().count() + step.chars().count() + 2 > max.saturating_sub(20) {
                out.push_str(&format!("{sep}(+{} more steps)", checklist.len() - i));
                break;
            }
            out.push_str(sep);
            out.push_str(step);
        }
        return Some(head_tail(&sanitize(&out, true), max));
    }
    (!summary.is_empty()).then(|| head_tail(summary, max))
}

/// Marks of a checklist's items: done, or not yet.
const DONE_MARKS: &[&str] = &["✅", "☑", "✔", "[x]", "[X]"];
const OPEN_MARKS: &[&str] = &["⏳", "⬜", "☐", "[ ]", "🔄"];

/// A plan's checklist items (`1. ✅ Session storage`, `- [ ] Resumption testing`), each as
/// `1. [done] Session storage` or `2. Resumption testing`, at most a screenful.
fn checklist(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().take(2_000) {
        let l = line.trim_start();
        let (number, rest) = match l.split_once(". ") {
            Some((n, rest))
                if !n.is_empty() && n.len() <= 3 && n.chars().all(|c| c.is_ascii_digit()) =>
            {
                (format!("{n}. "), rest)
            }
            _ => match l.strip_prefix("- ").or_else(|| l.strip_prefix("* ")) {
                Some(rest) => (String::new(), rest),
                None => continue,
            },
        };
        let rest = rest.trim_start();
        let done = DONE_MARKS.iter().find(|m| rest.starts_with(*m));
        let open = OPEN_MARKS.iter().find(|m| rest.starts_with(*m));
        let (mark, item) = match (done, open) {
            (Some(m), _) => ("[done] ", &rest[m.len()..]),
            (None, Some(m)) => ("", &rest[m.len()..]),
            (None, None) => continue,
        };
        // The step's name, not its note (`Session storage - mapped the whole tree`).
        let item = item.split(" - ").next().unwrap_or(item);
        let item = step_head(&sanitize(item.trim(), true), HEADING_CHARS);
        out.push(format!("{number}{mark}{item}"));
        if out.len() >= 20 {
            break;
        }
    }
    out
}

/// A plan handed over from plan mode, as its title and as many step headings as fit in `max`
/// characters: "Implement the following plan: Cache Rework. Steps: 1. Key format;
/// 2. …; (3 more steps)". The footer naming the transcript is never kept. `None` when
/// `text` is not such a plan.
pub(super) fn plan(text: &str, max: usize) -> Option<String> {
    let body = text.trim_start().strip_prefix(PLAN_START)?;
    let body = body.split(PLAN_FOOTER).next().unwrap_or(body);
    let headings: Vec<(usize, &str)> = body
        .lines()
        .filter_map(|l| {
            let l = l.trim_end();
            let level = l.chars().take_while(|c| *c == '#').count();
            let rest = l[level..].trim();
            (level > 0 && level <= 6 && l[level..].starts_with(' ') && !rest.is_empty())
                .then_some((level, rest))
        })
        .collect();
    let title = headings
        .first()
        .map(|(_, t)| t.trim_start_matches("Plan:").trim());
    // The steps: numbered headings if there are any ("### 1. Type changes", "## Part 2: Fix
    // the merge"), else every heading below the title.
    let numbered = |t: &&str| {
        t.starts_with(|c: char| c.is_ascii_digit())
            || t.starts_with("Step")
            || ["Part ", "Phase "].iter().any(|p| {
                t.strip_prefix(p)
                    .is_some_and(|n| n.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            })
    };
    let rest = headings.iter().skip(1).map(|(_, t)| *t);
    let mut steps: Vec<&str> = rest.clone().filter(numbered).collect();
    if steps.is_empty() {
        steps = rest.collect();
    }
    let steps: Vec<String> = steps
        .iter()
        .map(|s| step_head(&sanitize(s, true), HEADING_CHARS))
        .collect();
    let mut out = PLAN_START.to_string();
    match title {
        Some(title) if !title.is_empty() => out.push_str(&format!(" {title}.")),
        _ => {
            // No headings: the plan's first line.
            let first = body.lines().map(str::trim).find(|l| !l.is_empty());
            out.push_str(&format!(" {}", first.unwrap_or_default()));
        }
    }
    if !steps.is_empty() {
        out.push_str(" Steps: ");
        // Room kept for the note of the steps left out.
        let room = max.saturating_sub(20);
        for (i, step) in steps.iter().enumerate() {
            let sep = if i == 0 { "" } else { "; " };
            if out.chars().count() + sep.len() + step.chars().count() > room {
                out.push_str(&format!("{sep}(+{} more steps)", steps.len() - i));
                break;
            }
            out.push_str(sep);
            out.push_str(step);
        }
    }
    Some(out)
}

/// A message from the team lead to this teammate (agent teams): `<teammate-message
/// teammate_id="team-lead">…</teammate-message>` as "team-lead: …", and a task assignment in it
/// as "team-lead assigned task #24: TST-1: Unit tests…".
/// How the client hands over a message from another agent of the team (2.1.2xx): never the
/// user's ask.
const PEER_MESSAGE: &str = "Another Claude session sent a message:";

/// The lead of an agent team, whose messages are a teammate's asks.
const TEAM_LEAD: &str = "team-lead";

/// Is `text` another agent's message rather than the user's (or, for a teammate, its lead's):
/// a peer's message as the client hands it over, a teammate's status ping
/// (`idle_notification`), any teammate's message but the lead's?
pub(super) fn from_peer(text: &str) -> bool {
    let t = text.trim_start();
    if t.starts_with(PEER_MESSAGE) {
        return true;
    }
    let Some(rest) = t.strip_prefix("<teammate-message") else {
        return false;
    };
    let Some((attrs, body)) = rest.split_once('>') else {
        return false;
    };
    let from = attrs
        .split("teammate_id=\"")
        .nth(1)
        .and_then(|s| s.split('"').next());
    let status = body.trim_start().starts_with("{\"type\":\"")
        && !body
            .trim_start()
            .starts_with("{\"type\":\"task_assignment\"");
    status || from.is_some_and(|f| f != TEAM_LEAD)
}

/// Words with which an agent asks the user to decide: a short reply after one answers it.
const ASKING: &[&str] = &[
    "?",
    "approv",
    "confirm",
    "proceed",
    "go ahead",
    "shall i",
    "should i",
    "want me to",
    "let me know",
    "ok to",
    "승인",
    "확인",
    "진행",
];

/// The question an agent's message ends its turn on (its last line that asks something), cut
/// to `max` characters keeping its end; `None` when it asks nothing.
pub(super) fn question(text: &str, max: usize) -> Option<String> {
    let line = closing_lines(text).take(4).find(|l| {
        let lower = l.to_lowercase();
        ASKING.iter().any(|w| lower.contains(w))
    })?;
    one_line(line, max)
}

/// The non-empty lines of the end of an agent's message (its last 4 KiB), last first.
fn closing_lines(text: &str) -> impl Iterator<Item = &str> {
    super::failures::within(text, text.len().saturating_sub(4096), text.len())
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| !l.is_empty())
}

/// `line` sanitised, at most `max` characters (its head and tail), or `None` when empty.
fn one_line(line: &str, max: usize) -> Option<String> {
    let clean = sanitize(line, true);
    (!clean.is_empty()).then(|| ends(&clean, max, max * 2 / 3))
}

/// Does this acknowledgement ask to go on ("continue", "go on", "keep going", "resume")?
pub(super) fn goes_on(text: &str) -> bool {
    let t = text
        .trim()
        .trim_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace())
        .to_lowercase();
    [
        "continue",
        "cont",
        "c",
        "go on",
        "go ahead",
        "keep going",
        "proceed",
        "resume",
        "next",
        "retry",
        "again",
        "go",
    ]
    .iter()
    .any(|w| t == *w || t.ends_with(&format!(" {w}")))
}

/// Is `text` an acknowledgement as the checkpoint keeps it (`ok continue (after: …)`, or one
/// bare): the user's newest word then, never an earlier request?
pub fn is_acknowledgement(text: &str) -> bool {
    is_ack(text.split(" (after: ").next().unwrap_or(text))
}

/// The last non-empty line of the agent's message, on one line of at most `max` characters.
pub(super) fn last_line(text: &str, max: usize) -> Option<String> {
    one_line(closing_lines(text).next()?, max)
}

pub(super) fn teammate_message(text: &str) -> Option<String> {
    let t = text.trim_start();
    let rest = t.strip_prefix("<teammate-message")?;
    let (attrs, body) = rest.split_once('>')?;
    let from = attrs
        .split("teammate_id=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or("teammate");
    let body = body
        .split("</teammate-message>")
        .next()
        .unwrap_or(body)
        .trim();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        if v["type"] == "task_assignment" {
            let id = match &v["taskId"] {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let subject = v["subject"].as_str().unwrap_or_default();
            return Some(format!("{from} assigned task #{id}: {subject}"));
        }
    }
    Some(format!("{from}: {body}"))
}

/// A user record bundling several teammate messages (`<teammate-message …>` twice or more): each
/// message, in order. `None` for a record of one message or none.
pub(super) fn bundled(text: &str) -> Option<Vec<&str>> {
    const OPEN: &str = "<teammate-message";
    let t = text.trim_start();
    if !t.starts_with(OPEN) || t.matches(OPEN).take(2).count() < 2 {
        return None;
    }
    let starts: Vec<usize> = t.match_indices(OPEN).map(|(i, _)| i).take(64).collect();
    let parts = starts
        .iter()
        .enumerate()
        .map(|(k, &i)| t[i..starts.get(k + 1).copied().unwrap_or(t.len())].trim())
        .collect();
    Some(parts)
}

/// A task assignment in a teammate message: the task's id and subject./// A task assignment in a teammate message: the task's id and subject.
pub(super) fn assignment(text: &str) -> Option<(String, String)> {
    let t = text.trim_start().strip_prefix("<teammate-message")?;
    let (_, body) = t.split_once('>')?;
    let body = body
        .split("</teammate-message>")
        .next()
        .unwrap_or(body)
        .trim();
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    if v["type"] != "task_assignment" {
        return None;
    }
    let id = match &v["taskId"] {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    Some((id, v["subject"].as_str()?.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledgements_and_menu_presses() {
        for ack in [
            "c",
            "C",
            "yes",
            "ok",
            "OK.",
            "continue",
            "1",
            "2",
            "a",
            "yes please",
            "go ahead",
            "do it",
            "lgtm!",
            "  ",
            "y",
        ] {
            assert!(is_ack(ack), "{ack:?}");
        }
        for ask in [
            "commit",
            "fix it",
            "continue the refactor",
            "ok lets open a pr for this",
            "why did you stop there?",
            "create the issues",
            "/deploy staging",
        ] {
            assert!(!is_ack(ask), "{ask:?}");
        }
    }

    /// A plan in the form 2.1.45 hands one over from plan mode (written here): its headings,
    /// not the client's footer.
    #[test]
    fn a_plan_keeps_its_steps_not_the_footer() {
        let text = "Implement the following plan:\n\n# Plan: Cache-First Replication Pipeline\n\n## Context\n\nThe current replication pipeline copies all rows.\n\n## Changes\n\n### 1. Type changes — `src/common/types/replication.ts`\n\nx\n\n### 2. Delta calculator — `src/common/replication/delta-calculator.ts`\n\n### 3. Engine rewrite — `src/common/replication/engine.ts`\n\n## Verification\n\n- Check the sync log shows one batch per table\n\n\nIf you need specific details from before exiting plan mode (like exact code snippets, error messages, or content you generated), read the full transcript at: /Users/x/.claude/projects/p/s.jsonl";
        assert_eq!(
            plan(text, 400).unwrap(),
            "Implement the following plan: Cache-First Replication Pipeline. Steps: 1. Type changes — `src/common/types/replication.ts`; 2. Delta calculator — `src/common/replication/…; 3. Engine rewrite — `src/common/replication/engine.ts`"
        );
        let short = shorten(text, 200).unwrap();
        assert!(
            short.starts_with("Implement the following plan: Cache-First"),
            "{short}"
        );
        assert!(!short.contains("read the full transcript"), "{short}");
        assert!(short.chars().count() <= 200, "{short}");
        // Without numbered steps, every heading below the title.
        assert_eq!(
            plan(
                "Implement the following plan:\n# Fix login\n## Reproduce\n## Patch\n",
                200
            )
            .as_deref(),
            Some("Implement the following plan: Fix login. Steps: Reproduce; Patch")
        );
        assert_eq!(plan("Please implement this", 200), None);
    }

    /// A plan in parts, in the form of a real 2.1.45 one: the first with numbered changes,
    /// the second with one unnumbered change. Each part is a step, so the second is not lost.
    #[test]
    fn a_plan_in_parts_keeps_every_part() {
        let text = "Implement the following plan:\n\n# Plan: Expose All 3 Export Formats\n\n## Context\n\nTwo tasks.\n\n## Part 1: Expose All 3 Formats\n\n### Changes\n\n#### 1. `src/api/db/export-repository.ts`\n\n#### 2. `frontend/src/types/export.ts`\n\n## Part 2: Fix README.md Links in docsBuild\n\n### Change\n\n## Verification\n";
        assert_eq!(
            plan(text, 400).unwrap(),
            "Implement the following plan: Expose All 3 Export Formats. Steps: Part 1: Expose All 3 Formats; 1. `src/api/db/export-repository.ts`; 2. `frontend/src/types/export.ts`; Part 2: Fix README.md Links in docsBuild"
        );
        // "Partners" or "Phase out" are no parts.
        assert_eq!(
            plan(
                "Implement the following plan:\n# Fix login\n## Partners\n## Phase out the old form\n",
                200
            )
            .as_deref(),
            Some("Implement the following plan: Fix login. Steps: Partners; Phase out the old form")
        );
    }

    #[test]
    fn long_text_keeps_its_head_and_tail() {
        let long = format!("start {} the end", "x ".repeat(300));
        let short = head_tail(&long, 100);
        // A plan step keeps its head, cut at a word.
        let step = step_head(
            "Sync hook: courier queues notification (cmd/relays/cli/agent/codexagent_handlers.go)",
            60,
        );
        assert_eq!(
            step,
            "Sync hook: courier queues notification (cmd/relays/cli/…"
        );
        assert_eq!(short.chars().count(), 100);
        assert!(
            short.starts_with("start") && short.ends_with("the end"),
            "{short}"
        );
        assert_eq!(head_tail("short", 100), "short");
    }

    /// The lead's messages to a teammate, in the forms of a real 2.1.42 team session's.
    #[test]
    fn a_lead_message_names_its_sender_and_a_task_assignment_its_task() {
        let assigned = "<teammate-message teammate_id=\"team-lead\">\n{\"type\":\"task_assignment\",\"taskId\":\"31\",\"subject\":\"QA-2: Smoke tests for the billing flow\",\"description\":\"Write them\",\"assignedBy\":\"team-lead\"}\n</teammate-message>";
        assert_eq!(
            shorten(assigned, 200).as_deref(),
            Some("team-lead assigned task #31: QA-2: Smoke tests for the billing flow")
        );
        assert_eq!(
            assignment(assigned),
            Some(("31".into(), "QA-2: Smoke tests for the billing flow".into()))
        );
        let brief = "<teammate-message teammate_id=\"team-lead\">\nYou are qa-eng on the Harbor team.\n</teammate-message>";
        assert_eq!(
            shorten(brief, 200).as_deref(),
            Some("team-lead: You are qa-eng on the Harbor team.")
        );
        assert_eq!(assignment(brief), None);
    }
}
