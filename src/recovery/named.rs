//! What the compaction's own summary already states word for word is left out of the block,
//! which then spends its room on what the summary lacks.

use crate::checkpoint::Checkpoint;

/// Leaves out of `cp` what `summary` (the compaction's own summary) already states word for
/// word, and counts it: the goal, the asks, the open todos and the modified files. The block then
/// says so in one line and spends its room on what the summary lacks. Texts are compared with
/// whitespace runs made one space and case ignored; short texts (under 8 characters) are never
/// taken as stated, nor is an ask kept cut (`head … tail`), which no summary states whole.
pub fn leave_out_named(cp: &mut Checkpoint, summary: &str) {
    let summary = normalise(summary);
    let named = |text: &str| text.chars().count() >= 8 && summary.contains(&normalise(text));
    let count = |cp: &Checkpoint| {
        cp.todos.len()
            + cp.files_modified.len()
            + cp.asks.len()
            + cp.earlier_asks.len()
            + usize::from(cp.goal.is_some())
    };
    let before = count(cp);
    cp.todos.retain(|t| !(t.is_open() && named(&t.content)));
    cp.files_modified.retain(|f| !named(f));
    cp.asks.retain(|a| !named(a));
    cp.earlier_asks.retain(|a| !named(a));
    if cp.goal.as_deref().is_some_and(named) {
        cp.goal = None;
    }
    cp.named_in_summary = before - count(cp);
}

/// `text` with every run of whitespace one space, in lower case: how a summary's wording is
/// matched against a checkpoint's.
fn normalise(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}
