//! The fixed-size collections a checkpoint is built in, and a JSON array reader that holds one
//! element at a time. A transcript can be gigabytes of anything; with these, what the builder
//! keeps, and the time each line costs it, do not grow with it.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, SeqAccess, Visitor};

/// Tool calls remembered so a result can be paired with its call. A result follows its call
/// within a few lines (parallel calls: a few dozen), so older ids are not worth keeping.
pub(super) const MAX_CALLS: usize = 256;
/// Real tool-use ids are about 30 bytes; a longer one is not stored (a result then pairs with
/// nothing and is reported under the name "tool").
pub(super) const ID_BYTES: usize = 256;
/// Distinct tool names counted. Real sessions use a few dozen; past this, new names are not
/// counted (those already counted keep counting).
pub(super) const MAX_TOOL_NAMES: usize = 256;

/// The newest distinct items, at most `cap`, oldest first; a repeat moves to the end. Each push
/// scans at most `cap` items, so a long transcript costs linear time.
#[derive(Debug)]
pub(super) struct RecentList {
    items: VecDeque<String>,
    cap: usize,
}

impl RecentList {
    pub(super) fn new(cap: usize) -> RecentList {
        RecentList {
            items: VecDeque::with_capacity(cap + 1),
            cap,
        }
    }

    pub(super) fn push(&mut self, item: String) {
        if let Some(i) = self.items.iter().position(|p| *p == item) {
            self.items.remove(i);
        }
        self.items.push_back(item);
        if self.items.len() > self.cap {
            self.items.pop_front();
        }
    }

    pub(super) fn newest_first(self) -> Vec<String> {
        self.items.into_iter().rev().collect()
    }
}

/// What a tool call's result needs from the call.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Call {
    pub(super) tool: String,
    /// What a failure of this call names: a Bash command or a file, cut short.
    pub(super) subject: Option<String>,
    /// The file an edit changes: listed as modified once the result says it succeeded.
    pub(super) file: Option<String>,
    /// The todo change this call makes (a key into [`super::todos::Todos`]), applied once the
    /// result says it succeeded.
    pub(super) todo: Option<u64>,
    /// A Bash command that runs tests, a build, a linter or a type check: its result is the
    /// last verification's verdict.
    pub(super) verify: bool,
    /// A Bash call's command, whole (bounded): a success clears the failures of the same run in
    /// another form ([`super::runs`]).
    pub(super) command: Option<String>,
    /// What another tool acted on (its input's identifiers: a path, a URL, an id): a success of
    /// the same tool on the same target clears its failures.
    pub(super) target: Option<String>,
}

/// The newest [`MAX_CALLS`] tool calls by id; ids over [`ID_BYTES`] are never stored.
#[derive(Debug, Default)]
pub(super) struct Calls {
    by_id: HashMap<String, Call>,
    /// Insertion order, for forgetting the oldest; always the same keys as `by_id`.
    order: VecDeque<String>,
}

impl Calls {
    /// Remembers `call`; returns the call it pushed out (the oldest, or one with the same id),
    /// whose result will now pair with nothing. An id over [`ID_BYTES`] is not stored, and the
    /// call comes straight back.
    pub(super) fn insert(&mut self, id: &str, call: Call) -> Option<Call> {
        if id.len() > ID_BYTES {
            return Some(call);
        }
        if let Some(known) = self.by_id.get_mut(id) {
            return Some(std::mem::replace(known, call));
        }
        let mut gone = None;
        if self.order.len() == MAX_CALLS {
            if let Some(oldest) = self.order.pop_front() {
                gone = self.by_id.remove(&oldest);
            }
        }
        self.order.push_back(id.to_string());
        self.by_id.insert(id.to_string(), call);
        gone
    }

    /// The calls whose results never came, oldest first.
    pub(super) fn into_unanswered(mut self) -> impl Iterator<Item = Call> {
        self.order
            .into_iter()
            .filter_map(move |id| self.by_id.remove(&id))
    }

    pub(super) fn get_mut(&mut self, id: &str) -> Option<&mut Call> {
        self.by_id.get_mut(id)
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_id.len()
    }
}

/// Calls per tool name, for at most [`MAX_TOOL_NAMES`] names.
#[derive(Debug, Default)]
pub(super) struct ToolCounts(HashMap<String, u64>);

impl ToolCounts {
    pub(super) fn count(&mut self, name: &str) {
        if let Some(n) = self.0.get_mut(name) {
            *n += 1;
        } else if self.0.len() < MAX_TOOL_NAMES {
            self.0.insert(name.to_string(), 1);
        }
    }

    /// The `max` most used, most used first, ties by name.
    pub(super) fn most_used(self, max: usize) -> Vec<(String, u64)> {
        let mut counts: Vec<(String, u64)> = self.0.into_iter().collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        counts.truncate(max);
        counts
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

/// Calls `f` with each element of the JSON array `raw` in turn, never holding two, so an array
/// of a million tiny elements costs no more memory than its text. False when `raw` is not an
/// array or an element does not parse as `T` (the elements before it have been seen).
pub(super) fn for_each<'a, T: Deserialize<'a>>(raw: &'a str, f: impl FnMut(T)) -> bool {
    let mut de = serde_json::Deserializer::from_str(raw);
    de.deserialize_seq(Each(f, PhantomData)).is_ok()
}

/// Deserializes the first `max` elements of an array and skips the rest, one element at a time.
pub(super) fn first<'de, T, D>(de: D, max: usize) -> Result<Vec<T>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    let mut kept = Vec::new();
    de.deserialize_seq(Each(
        |item| {
            if kept.len() < max {
                kept.push(item);
            }
        },
        PhantomData,
    ))?;
    Ok(kept)
}

struct Each<T, F>(F, PhantomData<fn(T)>);

impl<'de, T: Deserialize<'de>, F: FnMut(T)> Visitor<'de> for Each<T, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element()? {
            (self.0)(item);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str) -> Call {
        Call {
            tool: tool.into(),
            ..Call::default()
        }
    }

    #[test]
    fn recent_list_keeps_the_newest_distinct_items() {
        let mut list = RecentList::new(3);
        for item in ["a", "b", "c", "a", "d", "e", "c"] {
            list.push(item.into());
        }
        assert_eq!(list.newest_first(), ["c", "e", "d"]);
    }

    #[test]
    fn recent_list_matches_dedup_then_truncate_on_long_input() {
        // What the checkpoint held before the cap: every path, deduplicated by last use,
        // newest first, cut to the cap at the end.
        let items: Vec<String> = (0..2000).map(|i| format!("f{}", (i * 7919) % 97)).collect();
        let mut all: Vec<String> = Vec::new();
        let mut list = RecentList::new(30);
        for item in &items {
            all.retain(|p| p != item);
            all.push(item.clone());
            list.push(item.clone());
        }
        all.reverse();
        all.truncate(30);
        assert_eq!(list.newest_first(), all);
    }

    #[test]
    fn calls_forget_the_oldest_past_the_cap() {
        let mut calls = Calls::default();
        for i in 0..MAX_CALLS + 10 {
            let gone = calls.insert(&format!("id{i}"), call(&format!("T{i}")));
            // The oldest goes back to the caller, to settle without its result.
            let expected = i.checked_sub(MAX_CALLS).map(|j| call(&format!("T{j}")));
            assert_eq!(gone, expected);
        }
        assert_eq!(calls.len(), MAX_CALLS);
        assert_eq!(calls.get_mut("id9"), None);
        assert_eq!(calls.get_mut("id10"), Some(&mut call("T10")));
        let newest = format!("id{}", MAX_CALLS + 9);
        assert!(calls.get_mut(&newest).is_some());
        // A repeated id replaces its call without taking a second place.
        assert_eq!(calls.insert("id10", call("Again")), Some(call("T10")));
        assert_eq!(calls.len(), MAX_CALLS);
        assert_eq!(calls.get_mut("id10").unwrap().tool, "Again");
        let unanswered: Vec<_> = calls.into_unanswered().map(|c| c.tool).collect();
        assert_eq!(unanswered.len(), MAX_CALLS);
        assert_eq!(unanswered[0], "Again");
        assert_eq!(unanswered[MAX_CALLS - 1], format!("T{}", MAX_CALLS + 9));
    }

    #[test]
    fn calls_ignore_overlong_ids() {
        let mut calls = Calls::default();
        let long = "i".repeat(ID_BYTES + 1);
        assert_eq!(calls.insert(&long, call("Bash")), Some(call("Bash")));
        assert_eq!(calls.len(), 0);
        assert_eq!(calls.get_mut(&long), None);
        let longest = "i".repeat(ID_BYTES);
        assert_eq!(calls.insert(&longest, call("Bash")), None);
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn tool_counts_track_a_bounded_number_of_names() {
        let mut counts = ToolCounts::default();
        counts.count("Edit");
        for i in 0..MAX_TOOL_NAMES + 50 {
            counts.count(&format!("T{i}"));
        }
        counts.count("Edit");
        counts.count("Late");
        assert_eq!(counts.len(), MAX_TOOL_NAMES);
        let top = counts.most_used(3);
        assert_eq!(top[0], ("Edit".to_string(), 2));
        assert_eq!(top.len(), 3);
        assert!(top.iter().all(|(name, _)| name != "Late"));
    }

    #[test]
    fn for_each_sees_every_element_then_reports_a_bad_one() {
        let mut seen = Vec::new();
        assert!(for_each("[1, 2, 3]", |n: u32| seen.push(n)));
        assert_eq!(seen, [1, 2, 3]);
        seen.clear();
        assert!(!for_each(r#"[4, "x", 5]"#, |n: u32| seen.push(n)));
        assert_eq!(seen, [4]);
        assert!(!for_each("{}", |_: u32| unreachable!()));
    }

    #[test]
    fn first_keeps_a_prefix_and_still_checks_the_rest() {
        let mut de = serde_json::Deserializer::from_str("[1, 2, 3, 4]");
        assert_eq!(first::<u32, _>(&mut de, 2).unwrap(), [1, 2]);
        let mut de = serde_json::Deserializer::from_str(r#"[1, 2, "x"]"#);
        assert!(first::<u32, _>(&mut de, 2).is_err());
    }
}
