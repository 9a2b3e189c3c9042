//! What a `/compact <focus>` sets aside, read mechanically (no LLM) from the user's words, so the
//! recovery block does not bring back what the user just asked the summary to drop.
//!
//! The focus is read clause by clause (split at `,` `;` `.` `!` `?`, a new line and " but "):
//! - a clause with a word that drops ("drop", "ignore", "forget", "skip", "omit", "exclude",
//!   "remove", "discard", "not", "no", "without", "except", "leave out", "set aside") names what
//!   is set aside: the words after that word;
//! - a clause with a word that makes it exclusive ("only", "just", "solely", "exclusively") names
//!   all that is kept: its words (before a dropping word, if any);
//! - any other clause ("focus on the tests") only says what matters first: nothing is set aside.
//!
//! A negated drop keeps ("don't forget the migration plan", "do not lose the auth work", "without
//! losing the key rotation", "no need to drop the SSH work", "do not let the migration get
//! lost", whatever the verb of losing and however far after the negation), and so does "not
//! just X": such a clause sets nothing aside. An exclusive clause none of whose terms any item names ("just
//! summarize briefly") says how to summarize, not what: it keeps all.
//!
//! Words that say how, not what ("the", "history", "changes", "work", "keep", …) are no terms. An
//! item (the goal, a request, an open todo) is set aside when one of its words
//! is a dropped term, or when the focus is exclusive and none of its words is a kept term. Two
//! words are one term when equal, or when they share their first 5 letters or more and all but the
//! last two letters of the shorter (`validate` and `validation`, `parse` and `parser`, not `read`
//! and `readme`); a final `s` is not counted.

/// A focus, as terms.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Focus {
    dropped: Vec<String>,
    only: Vec<String>,
}

const DROPS: &[&str] = &[
    "drop", "ignore", "forget", "skip", "omit", "exclude", "remove", "discard", "not", "no",
    "without", "except", "don", "dont", "leave", "aside",
];

const ONLY: &[&str] = &["only", "just", "solely", "exclusively"];

/// Words that negate the drop verb after them ("don't forget", "do not lose", "never skip").
const NEGATIONS: &[&str] = &["not", "no", "don", "dont", "never", "without"];

/// Verbs of losing, which a negation turns into keeping.
const LOSING: &[&str] = &[
    "forget",
    "drop",
    "ignore",
    "skip",
    "omit",
    "exclude",
    "remove",
    "discard",
    "leave",
    "lose",
    "losing",
    "lost",
    "loses",
    "miss",
    "missing",
    "summarize",
    "summarise",
    "cut",
    "trim",
    "delete",
    "dropping",
    "forgetting",
];

/// Words that say how or how much, never what: no terms.
const NOT_TERMS: &str =
    "a about after all also an and any anything are as at back be before bits bring by change changes \
compact compaction concentrate context conversation detail details discussion do earlier \
else everything focus for from history i in into is it its keep later me mention more \
mostly my now of old older on or other our out part parts please preserve previous \
related relevant rest retain set so stuff summary that the them then these thing things \
this those to too up us we what which with work you your summarize summarise summary brief \
briefly short shortly concise concisely essential essentials needed need necessary continue \
going important main key minimal lose lost losing miss";

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

fn is_term(word: &str) -> bool {
    word.chars().count() > 1
        && !NOT_TERMS.split_whitespace().any(|w| w == word)
        && !DROPS.contains(&word)
        && !ONLY.contains(&word)
}

/// One term: equal, or sharing at least 5 letters and all but the last two of the shorter.
fn same_term(a: &str, b: &str) -> bool {
    let a = a.strip_suffix('s').filter(|r| r.len() >= 3).unwrap_or(a);
    let b = b.strip_suffix('s').filter(|r| r.len() >= 3).unwrap_or(b);
    if a == b {
        return true;
    }
    let shorter = a.chars().count().min(b.chars().count());
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    common >= 5 && common + 2 >= shorter
}

impl Focus {
    pub(super) fn parse(focus: &str) -> Focus {
        let mut out = Focus::default();
        let clauses = focus
            .split(['.', ',', ';', '!', '?', '\n'])
            .flat_map(|c| c.split(" but "));
        for clause in clauses {
            let all: Vec<String> = words(clause).collect();
            let cut = all.iter().position(|w| DROPS.contains(&w.as_str()));
            // "don't forget X", "do not lose X": X is kept, nothing set aside.
            let is = |w: &String, set: &[&str]| set.contains(&w.as_str());
            // Whatever the verb and the distance: "without losing X", "no need to drop X", "do
            // not let X get lost"; and "not just X" widens, it sets nothing aside.
            let negated_loss = cut.is_some_and(|at| {
                let mut after = all[at + 1..].iter();
                let mut before = all[at.saturating_sub(2)..at].iter();
                let negation = is(&all[at], NEGATIONS);
                (negation
                    && (after.any(|w| is(w, LOSING))
                        || all.get(at + 1).is_some_and(|w| is(w, ONLY))))
                    || (is(&all[at], LOSING) && before.any(|w| is(w, NEGATIONS)))
            });
            if negated_loss {
                continue;
            }
            let (kept, dropped) = all.split_at(cut.unwrap_or(all.len()));
            out.dropped
                .extend(dropped.iter().filter(|w| is_term(w)).cloned());
            if kept.iter().any(|w| ONLY.contains(&w.as_str())) {
                out.only.extend(kept.iter().filter(|w| is_term(w)).cloned());
            }
        }
        out
    }

    /// Forgets an exclusive clause none of whose terms any of `items` names: "just summarize
    /// briefly" says how, not what.
    pub(super) fn about(mut self, items: &[&str]) -> Focus {
        let named = items
            .iter()
            .any(|item| words(item).any(|w| self.only.iter().any(|t| same_term(&w, t))));
        if !named {
            self.only.clear();
        }
        self
    }

    /// Does the focus set `item` aside?
    pub(super) fn sets_aside(&self, item: &str) -> bool {
        let has = |terms: &[String]| words(item).any(|w| terms.iter().any(|t| same_term(&w, t)));
        has(&self.dropped) || (!self.only.is_empty() && !has(&self.only))
    }

    /// Takes out of `items` what the focus sets aside; how many it took.
    pub(super) fn take_aside(&self, items: &mut Vec<String>) -> usize {
        let before = items.len();
        items.retain(|item| !self.sets_aside(item));
        before - items.len()
    }
}

/// The one line that names what the focus set aside, left out of the block: the goal, and how
/// many requests, open todos and requests of earlier cycles. `None` when nothing was.
pub(super) fn aside_line(goal: bool, counts: [usize; 3]) -> Option<String> {
    let names = [
        ("request", "requests"),
        ("open todo", "open todos"),
        (
            "request from before the previous compaction",
            "requests from before the previous compaction",
        ),
    ];
    let mut parts: Vec<String> = goal
        .then(|| "the session's goal".to_string())
        .into_iter()
        .collect();
    for (n, (one, many)) in counts.into_iter().zip(names) {
        match n {
            0 => {}
            1 => parts.push(format!("1 {one}")),
            n => parts.push(format!("{n} {many}")),
        }
    }
    (!parts.is_empty()).then(|| {
        format!(
            "(Set aside by the focus, so left out here: {}. They are in the checkpoint file.)\n\n",
            parts.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_focus_names_what_it_keeps_and_what_it_drops() {
        let f = Focus::parse("focus on the README changes only, drop the parser history");
        assert_eq!(
            f,
            Focus {
                dropped: vec!["parser".into()],
                only: vec!["readme".into()],
            }
        );
        assert!(f.sets_aside("Build the parser for the config format"));
        assert!(f.sets_aside("Write tests for the parser's quotes"));
        assert!(!f.sets_aside("Update the README's install section"));
        // Both: the dropped term wins.
        assert!(f.sets_aside("Document the parser in README.md"));
        let f = Focus::parse("Keep only the validation work; ignore CI");
        assert!(!f.sets_aside("Validate the import pipeline end to end"));
        assert!(!f.sets_aside("Write the validation report for the import"));
        assert!(f.sets_aside("Check the CI config too"));
        assert!(f.sets_aside("Rename the modules"));
        // Not exclusive, nothing dropped: nothing set aside.
        for plain in [
            "keep the open items",
            "focus on the tests",
            "summarize briefly",
        ] {
            let f = Focus::parse(plain);
            assert_eq!(f, Focus::default(), "{plain}");
            assert!(!f.sets_aside("Rename the modules"), "{plain}");
        }
        // A negated drop keeps.
        for keep in [
            "don't forget the migration plan",
            "do not lose the migration plan",
            "don't drop the auth work",
            "never skip the auth tests",
        ] {
            assert_eq!(Focus::parse(keep), Focus::default(), "{keep}");
        }
        // An exclusive clause that names nothing of the session says how, not what.
        let items = ["Build the auth middleware", "fix the CSS of the login page"];
        for how in [
            "just summarize briefly",
            "just the essentials please",
            "only what's needed to continue",
        ] {
            let f = Focus::parse(how).about(&items);
            assert!(!items.iter().any(|i| f.sets_aside(i)), "{how}: {f:?}");
        }
        let f = Focus::parse("only the auth work matters now").about(&items);
        assert!(!f.sets_aside(items[0]));
        assert!(f.sets_aside(items[1]));
        let f = Focus::parse("don't bring back the lexer");
        assert_eq!(f.dropped, ["lexer"]);
        let f = Focus::parse("the migration, but not the old schema notes");
        assert_eq!(f.dropped, ["schema", "notes"]);
        assert!(f.only.is_empty());
    }

    #[test]
    fn terms_match_their_forms_not_their_neighbours() {
        assert!(same_term("parser", "parse"));
        assert!(same_term("tests", "test"));
        assert!(same_term("validate", "validation"));
        assert!(same_term("configuration", "config"));
        assert!(!same_term("read", "readme"));
        assert!(!same_term("parse", "party"));
        assert!(!same_term("ci", "cli"));
    }

    #[test]
    fn the_line_names_each_kind_once() {
        assert_eq!(aside_line(false, [0; 3]), None);
        assert_eq!(
            aside_line(true, [1, 2, 3]).unwrap(),
            "(Set aside by the focus, so left out here: the session's goal, 1 request, 2 open \
             todos, 3 requests from before the previous compaction. They are in the checkpoint \
             file.)\n\n"
        );
    }
}
