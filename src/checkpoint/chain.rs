//! The live conversation of a transcript that holds a rewind. When the user edits an earlier
//! prompt (Esc Esc, `/rewind`), Claude Code keeps both branches in the same file: the new prompt
//! is written with the `parentUuid` of the prompt it replaces, and the conversation goes on from
//! it. What the user took back (a prompt, with whatever it carried, and the work that followed
//! it) is no longer part of the session, and nothing of it may come back in a recovery.
//!
//! A fork counts as a rewind only where two typed prompts share a parent (or are both roots):
//! other forks are the client's own shape (a tool result's `parentUuid` is the assistant record
//! that made the call, `sourceToolAssistantUUID`, so parallel calls fork the chain; progress and
//! attachment records hang off the record they belong to), and their lines are the live
//! conversation's. Of two prompts so forked, the one whose subtree holds the newest record is
//! live; the other's subtree is abandoned. Records without a `uuid` (queue operations, titles)
//! cannot be placed and are kept.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::files;
use crate::transcript::{self, parse_time, Line, LineReader};

/// What a line tells about its place in the conversation.
#[derive(Deserialize)]
struct Ids<'a> {
    #[serde(borrow, default)]
    uuid: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "parentUuid", borrow, default)]
    parent: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    sidechain: Option<bool>,
    #[serde(rename = "isMeta", default)]
    meta: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    summary: Option<bool>,
    #[serde(borrow, default)]
    timestamp: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<Msg<'a>>,
}

#[derive(Deserialize)]
struct Msg<'a> {
    #[serde(borrow, default)]
    id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

/// A uuid as the tree keeps it: a 64-bit hash (`0` for none), so a node costs a few words
/// whatever the record's size (a collision among a session's records is a 1 in 10^7 chance at a
/// million of them).
fn id_of(uuid: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    if uuid.is_empty() {
        return 0;
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    uuid.hash(&mut h);
    h.finish().max(1)
}

/// The tree's ids are hashes already (a uuid's, [`id_of`]): a map keyed by them hashes them no
/// further (a long session's progress records each pass through the map twice).
#[derive(Default)]
struct Unhashed(u64);

impl std::hash::Hasher for Unhashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id;
    }
}

/// A map keyed by ids.
type ById<V> = HashMap<u64, V, std::hash::BuildHasherDefault<Unhashed>>;

/// One record of the tree: a user or assistant message, an attachment, a boundary (a progress
/// record is no node: [`Tree::alias`]).
#[derive(Debug, Clone)]
struct Node {
    uuid: u64,
    /// Its parent's id, through any progress records between (`0`: a root).
    parent: u64,
    /// A prompt the user typed (not a tool result, not the client's own text).
    prompt: bool,
    /// Its text's start, for a prompt (records without a `uuid` repeat it: the queue, the
    /// client's `last-prompt`): an index into the tree's texts.
    text: Option<u32>,
    /// An assistant reply: its time and its message id (the records of one reply share it).
    reply: Option<(Option<DateTime<Utc>>, u64)>,
    sidechain: bool,
    /// A user or assistant record (not a boundary, an attachment, a progress line).
    message: bool,
}

/// The records of a transcript (or its part after the newest boundary), as a tree, in memory
/// bounded whatever the file: a few words per message (at most [`MAX_NODES`]), the prompts'
/// texts, and the newest [`MAX_ALIASES`] progress records (long sessions are full of them), each
/// mapped to the node it hangs from: the client hangs a record from one written just before it.
#[derive(Debug, Default)]
pub struct Tree {
    nodes: Vec<Node>,
    index: ById<u32>,
    /// A progress record's id → the id of the nearest record above it that is a node.
    alias: ById<u64>,
    /// The progress records in `alias`, oldest first (the oldest are forgotten first).
    aliased: std::collections::VecDeque<u64>,
    texts: Vec<String>,
    /// Records past [`MAX_NODES`]: the tree can no longer tell a rewind.
    overflowed: bool,
}

/// The most messages a tree holds (about 40 MB with their index): past it, a transcript's
/// rewinds are not read (nothing is taken for abandoned, a drop is judged as one).
const MAX_NODES: usize = 400_000;

/// The most progress records a tree remembers, the newest.
const MAX_ALIASES: usize = 65_536;

/// Is this content a typed prompt's: text, and no tool result?
fn typed(content: Option<&RawValue>) -> bool {
    let Some(raw) = content else {
        return false;
    };
    let s = raw.get().trim_start();
    if s.starts_with('"') {
        return true;
    }
    // An array of blocks: a prompt has a text block and no tool result.
    s.starts_with('[') && s.contains("\"type\":\"text\"") && !s.contains("\"type\":\"tool_result\"")
}

impl Tree {
    /// Adds one transcript line (lines that are not records are ignored).
    pub fn feed(&mut self, line: &[u8]) {
        let Ok(ids) = serde_json::from_slice::<Ids>(line) else {
            return;
        };
        let kind = ids.kind.as_deref().unwrap_or_default();
        if kind == "progress" {
            return self.progress(ids.uuid.as_deref(), ids.parent.as_deref());
        }
        let uuid = ids.uuid.as_deref().map_or(0, id_of);
        if uuid == 0 {
            return;
        }
        let parent = ids.parent.as_deref().map_or(0, id_of);
        // Through the progress records between: the node they hang from.
        let parent = self.alias.get(&parent).copied().unwrap_or(parent);
        if self.nodes.len() >= MAX_NODES {
            self.overflowed = true;
            return;
        }
        let prompt = kind == "user"
            && ids.meta != Some(true)
            && ids.summary != Some(true)
            && typed(ids.message.as_ref().and_then(|m| m.content));
        let reply = (kind == "assistant").then(|| {
            (
                ids.timestamp.as_deref().and_then(parse_time),
                ids.message
                    .as_ref()
                    .and_then(|m| m.id.as_deref())
                    .map_or(0, id_of),
            )
        });
        let text = prompt
            .then(|| ids.message.as_ref().and_then(|m| m.content))
            .flatten()
            .and_then(prompt_text)
            .map(|t| {
                self.texts.push(t);
                u32::try_from(self.texts.len() - 1).unwrap_or(u32::MAX)
            });
        let node = Node {
            uuid,
            parent,
            prompt,
            text,
            reply,
            sidechain: ids.sidechain == Some(true),
            message: matches!(kind, "user" | "assistant"),
        };
        let Ok(at) = u32::try_from(self.nodes.len()) else {
            return;
        };
        self.index.insert(uuid, at);
        self.nodes.push(node);
    }

    /// Adds a progress record, by its ids: no node, an alias of the node it hangs from (what
    /// [`Tree::feed`] does with one, for a caller that parsed the line already).
    pub fn progress(&mut self, uuid: Option<&str>, parent: Option<&str>) {
        let uuid = uuid.map_or(0, id_of);
        if uuid == 0 {
            return;
        }
        let parent = parent.map_or(0, id_of);
        let parent = self.alias.get(&parent).copied().unwrap_or(parent);
        if self.aliased.len() >= MAX_ALIASES {
            if let Some(old) = self.aliased.pop_front() {
                self.alias.remove(&old);
            }
        }
        self.alias.insert(uuid, parent);
        self.aliased.push_back(uuid);
    }

    fn text(&self, i: usize) -> Option<&String> {
        self.nodes[i].text.and_then(|t| self.texts.get(t as usize))
    }

    fn parent_of(&self, i: usize) -> Option<usize> {
        let p = self.nodes[i].parent;
        (p != 0)
            .then(|| self.index.get(&p).map(|&at| at as usize))
            .flatten()
    }

    /// The records from `leaf` up to its root (bounded: a cycle ends the walk).
    fn path_up(&self, leaf: usize) -> Vec<usize> {
        let mut path = vec![leaf];
        let mut seen = HashSet::from([leaf]);
        let mut at = leaf;
        // A record met again closes a cycle: the walk ends there.
        while let Some(p) = self.parent_of(at).filter(|p| seen.insert(*p)) {
            path.push(p);
            at = p;
        }
        path
    }

    /// The newest message of the main conversation: the leaf the client resumes from (a
    /// boundary, an attachment or a progress line hangs off it, or starts nothing).
    fn newest(&self) -> Option<usize> {
        self.nodes.iter().rposition(|n| !n.sidechain && n.message)
    }

    /// The records on branches the user rewound away from, as seen from `leaf` (see the module
    /// doc): every record below a typed prompt that shares its parent with a typed prompt on the
    /// way up from `leaf`.
    fn abandoned_from(&self, leaf: usize) -> HashSet<usize> {
        let live: Vec<usize> = self.path_up(leaf);
        let live_set: HashSet<usize> = live.iter().copied().collect();
        let mut children: ById<Vec<u32>> = ById::default();
        for (i, n) in self.nodes.iter().enumerate() {
            if let Ok(i) = u32::try_from(i) {
                children.entry(n.parent).or_default().push(i);
            }
        }
        let kids = |p: u64| children.get(&p).map_or(&[][..], Vec::as_slice);
        let mut roots = Vec::new();
        let mut forks = HashSet::new();
        for &c in &live {
            if !self.nodes[c].prompt {
                continue;
            }
            let parent = self.nodes[c].parent;
            // Each fork once, however many live prompts hang from it.
            if !forks.insert(parent) {
                continue;
            }
            for &s in kids(parent) {
                let s = s as usize;
                if s != c && self.nodes[s].prompt && !live_set.contains(&s) {
                    roots.push(s);
                }
            }
        }
        let mut out = HashSet::new();
        while let Some(i) = roots.pop() {
            if live_set.contains(&i) || !out.insert(i) {
                continue;
            }
            roots.extend(kids(self.nodes[i].uuid).iter().map(|&k| k as usize));
        }
        out
    }

    /// What lies on the branches the user rewound away from, seen from the newest record.
    pub fn abandoned(&self) -> Gone {
        let Some(leaf) = self.newest().filter(|_| !self.overflowed) else {
            return Gone::default();
        };
        let gone = self.abandoned_from(leaf);
        let live: HashSet<&String> = (0..self.nodes.len())
            .filter(|i| !gone.contains(i))
            .filter_map(|i| self.text(i))
            .collect();
        Gone {
            texts: gone
                .iter()
                .filter_map(|i| self.text(*i))
                .filter(|t| !live.contains(t))
                .cloned()
                .collect(),
            uuids: gone.iter().map(|i| self.nodes[*i].uuid).collect(),
        }
    }

    /// Does the reply written at `after` descend from the one written at `before`? `Some(false)`
    /// only when the older reply is on a branch the user rewound away from; `None` when the tree
    /// cannot tell (a reply not found, a chain broken off).
    pub fn descends(&self, after: DateTime<Utc>, before: DateTime<Utc>) -> Option<bool> {
        let reply_at = |n: &Node, t: DateTime<Utc>| {
            !n.sidechain && n.reply.as_ref().is_some_and(|(at, _)| *at == Some(t))
        };
        if self.overflowed {
            return None;
        }
        let leaf = self.nodes.iter().rposition(|n| reply_at(n, after))?;
        // The records of the older reply: those written then, and their reply's other records.
        let ids: HashSet<u64> = self
            .nodes
            .iter()
            .filter(|n| reply_at(n, before))
            .filter_map(|n| n.reply.map(|(_, id)| id).filter(|id| *id != 0))
            .collect();
        let older: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| {
                let n = &self.nodes[i];
                reply_at(n, before)
                    || (!n.sidechain && n.reply.is_some_and(|(_, id)| ids.contains(&id)))
            })
            .collect();
        if older.is_empty() {
            return None;
        }
        let up: HashSet<usize> = self.path_up(leaf).into_iter().collect();
        if older.iter().any(|i| up.contains(i)) {
            return Some(true);
        }
        let gone = self.abandoned_from(leaf);
        older.iter().all(|i| gone.contains(i)).then_some(false)
    }
}

/// The records of abandoned branches, and the prompts typed there (repeated by records that
/// have no `uuid`: the queue's `enqueue`, the client's `last-prompt`), that no live prompt
/// repeats.
#[derive(Debug, Default)]
pub struct Gone {
    uuids: HashSet<u64>,
    texts: HashSet<String>,
}

impl Gone {
    pub fn is_empty(&self) -> bool {
        self.uuids.is_empty()
    }

    /// Is this transcript line part of an abandoned branch (see [`Gone`])?
    pub fn holds(&self, line: &[u8]) -> bool {
        #[derive(Deserialize)]
        struct Rec<'a> {
            #[serde(borrow, default)]
            uuid: Option<std::borrow::Cow<'a, str>>,
            #[serde(rename = "type", borrow, default)]
            kind: Option<std::borrow::Cow<'a, str>>,
            #[serde(rename = "leafUuid", borrow, default)]
            leaf: Option<std::borrow::Cow<'a, str>>,
            #[serde(rename = "lastPrompt", borrow, default)]
            last_prompt: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            content: Option<&'a RawValue>,
        }
        if self.is_empty() {
            return false;
        }
        let Ok(rec) = serde_json::from_slice::<Rec>(line) else {
            return false;
        };
        if let Some(uuid) = rec.uuid {
            return self.uuids.contains(&id_of(&uuid));
        }
        let repeats = |t: Option<String>| t.is_some_and(|t| self.texts.contains(&t));
        match rec.kind.as_deref() {
            Some("last-prompt") => {
                rec.leaf.is_some_and(|l| self.uuids.contains(&id_of(&l)))
                    || repeats(rec.last_prompt.as_deref().map(key))
            }
            Some("queue-operation") => repeats(rec.content.and_then(prompt_text)),
            _ => false,
        }
    }
}

/// A prompt's text as the records that repeat it can be matched with it: its start, trimmed.
fn key(text: &str) -> String {
    text.trim().chars().take(200).collect()
}

/// The text of a prompt's content: a string, or its first text block.
fn prompt_text(content: &RawValue) -> Option<String> {
    match serde_json::from_str::<serde_json::Value>(content.get()).ok()? {
        serde_json::Value::String(s) => Some(key(&s)),
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .find_map(|b| b.get("text").and_then(serde_json::Value::as_str))
            .map(key),
        _ => None,
    }
}

/// The transcript's part after its newest boundary, as a tree (bounded like the checkpoint's
/// read: lines over the line limit are skipped). `None` for a file that cannot be read, or a
/// Codex rollout (which has no `parentUuid`).
pub fn read(path: &Path, end: u64) -> Option<Tree> {
    if crate::rollout::is_rollout(path) {
        return None;
    }
    let (mut file, len) = files::open_regular(path, "transcript").ok()?;
    let len = len.min(end);
    let start = transcript::since_newest_boundary(&mut file, len).ok()?;
    file.seek(SeekFrom::Start(start)).ok()?;
    tree_of(io::Read::take(file, len - start)).ok()
}

/// The tree of every line `reader` gives.
pub fn tree_of<R: Read>(reader: R) -> io::Result<Tree> {
    let mut tree = Tree::default();
    let mut lines = LineReader::new(reader, transcript::MAX_LINE);
    while let Some(line) = lines.next_line()? {
        if let Line::Text(text) = line {
            tree.feed(text);
        }
    }
    Ok(tree)
}

/// [`Tree::descends`] on the transcript at `path` (see [`crate::dropped`]).
pub fn descends(path: &Path, after: DateTime<Utc>, before: DateTime<Utc>) -> Option<bool> {
    read(path, u64::MAX)?.descends(after, before)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(uuid: &str, parent: Option<&str>, kind: &str, content: &str, at: &str) -> String {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        format!(
            r#"{{"uuid":"{uuid}","parentUuid":{parent},"type":"{kind}","timestamp":"{at}","message":{{"id":"m-{uuid}","content":{content}}}}}"#
        )
    }

    fn ids(uuids: &[&str]) -> HashSet<u64> {
        uuids.iter().map(|u| id_of(u)).collect()
    }

    fn tree(lines: &[String]) -> Tree {
        tree_of((lines.join("\n") + "\n").as_bytes()).unwrap()
    }

    fn t(s: u32) -> String {
        format!("2026-11-27T10:00:{s:02}Z")
    }

    fn at(s: u32) -> DateTime<Utc> {
        t(s).parse().unwrap()
    }

    /// p1 → a1 → p2(secret) → a2, then the user edits p2: p2' with p2's parent, → a3.
    fn rewound() -> Vec<String> {
        vec![
            line("p1", None, "user", r#""build the parser""#, &t(0)),
            line("a1", Some("p1"), "assistant", "[]", &t(1)),
            line("p2", Some("a1"), "user", r#""use key sk-SECRET""#, &t(2)),
            line("a2", Some("p2"), "assistant", "[]", &t(3)),
            line(
                "r2",
                Some("a2"),
                "user",
                r#"[{"type":"tool_result","content":"ok"}]"#,
                &t(4),
            ),
            line(
                "p3",
                Some("a1"),
                "user",
                r#"[{"type":"text","text":"no key, read it from env"}]"#,
                &t(5),
            ),
            line("a3", Some("p3"), "assistant", "[]", &t(6)),
        ]
    }

    #[test]
    fn a_rewound_prompt_and_what_followed_it_are_abandoned() {
        let tr = tree(&rewound());
        assert_eq!(tr.abandoned().uuids, ids(&["a2", "p2", "r2"]));
        // What repeats the abandoned prompt without a uuid goes with it.
        let g = tr.abandoned();
        assert!(g.holds(
            br#"{"type":"queue-operation","operation":"enqueue","content":"use key sk-SECRET"}"#
        ));
        assert!(g.holds(br#"{"type":"last-prompt","lastPrompt":"other","leafUuid":"a2"}"#));
        assert!(!g.holds(
            br#"{"type":"queue-operation","operation":"enqueue","content":"build the parser"}"#
        ));
        assert_eq!(tr.descends(at(6), at(3)), Some(false));
        assert_eq!(tr.descends(at(6), at(1)), Some(true));
        assert_eq!(tr.descends(at(6), at(59)), None, "no such reply");
    }

    #[test]
    fn parallel_tool_results_are_no_rewind() {
        // One reply in two records (a1, a1b: same message id), each call's result parented on
        // the record that made it, the next reply on the last result.
        let mut lines = vec![
            line("p1", None, "user", r#""go""#, &t(0)),
            line("a1", Some("p1"), "assistant", "[]", &t(1)),
            line("a1b", Some("a1"), "assistant", "[]", &t(2)),
            line(
                "r1",
                Some("a1"),
                "user",
                r#"[{"type":"tool_result","content":"x"}]"#,
                &t(3),
            ),
            line(
                "r2",
                Some("a1b"),
                "user",
                r#"[{"type":"tool_result","content":"y"}]"#,
                &t(4),
            ),
            line("a2", Some("r1"), "assistant", "[]", &t(5)),
        ];
        lines[2] = lines[2].replace("m-a1b", "m-a1");
        let tr = tree(&lines);
        assert!(tr.abandoned().is_empty());
        // A parentUuid cycle ends the walk; it never runs on.
        let cycle = vec![
            line("x", Some("y"), "user", r#""one""#, &t(0)),
            line("y", Some("x"), "user", r#""two""#, &t(1)),
        ];
        assert!(tree(&cycle).path_up(1).len() <= 2);
        // The newer reply hangs off the first result: the older reply's other record counts.
        assert_eq!(tr.descends(at(5), at(2)), Some(true));
    }

    /// Progress records are no nodes (long sessions hold hundreds of thousands): a record that
    /// hangs from one hangs from the node above it, and a rewind is still seen through them.
    #[test]
    fn progress_records_are_passed_through() {
        let progress = |uuid: &str, parent: &str| {
            format!(r#"{{"uuid":"{uuid}","parentUuid":"{parent}","type":"progress","data":{{}}}}"#)
        };
        let mut lines = rewound();
        // a1 → x1 → x2 → p3 (the edited prompt hangs from progress below a1).
        lines.insert(5, progress("x1", "a1"));
        lines.insert(6, progress("x2", "x1"));
        lines[7] = lines[7].replace(r#""parentUuid":"a1""#, r#""parentUuid":"x2""#);
        let tr = tree(&lines);
        assert_eq!(tr.nodes.len(), 7);
        assert_eq!(tr.abandoned().uuids, ids(&["a2", "p2", "r2"]));
        assert_eq!(tr.descends(at(6), at(1)), Some(true));
        assert_eq!(tr.descends(at(6), at(3)), Some(false));
    }

    /// However many progress records a transcript holds, the tree remembers the newest
    /// [`MAX_ALIASES`]: a record hanging from a recent one still finds its node.
    #[test]
    fn the_progress_records_remembered_are_bounded() {
        let mut tr = tree(&rewound()[..2]);
        let mut parent = "a1".to_string();
        for i in 0..MAX_ALIASES + 5_000 {
            let uuid = format!("x{i}");
            tr.feed(
                format!(r#"{{"uuid":"{uuid}","parentUuid":"{parent}","type":"progress"}}"#)
                    .as_bytes(),
            );
            parent = uuid;
        }
        assert_eq!(
            (tr.alias.len(), tr.aliased.len()),
            (MAX_ALIASES, MAX_ALIASES)
        );
        tr.feed(line("p2", Some(&parent), "user", r#""go on""#, &t(9)).as_bytes());
        assert_eq!(tr.nodes.last().unwrap().parent, id_of("a1"));
        assert_eq!(tr.path_up(tr.nodes.len() - 1).len(), 3);
    }

    #[test]
    fn an_edited_first_prompt_abandons_the_first_root() {
        let lines = vec![
            line("p1", None, "user", r#""first try""#, &t(0)),
            line("a1", Some("p1"), "assistant", "[]", &t(1)),
            line("p1b", None, "user", r#""second try""#, &t(2)),
            line("a2", Some("p1b"), "assistant", "[]", &t(3)),
        ];
        assert_eq!(tree(&lines).abandoned().uuids, ids(&["a1", "p1"]));
    }
}
