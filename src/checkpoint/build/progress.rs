//! A `progress` record read once for both readers of a transcript's lines. A long session is
//! mostly these small records (hook and tool progress), and the rewind tree
//! ([`crate::checkpoint::chain::Tree::feed`]) and the checkpoint's builder ([`Builder::feed`])
//! each parsing every one of them was most of a checkpoint's time. From a progress record the
//! tree takes only its `uuid` and `parentUuid`, the builder only where the session runs (`cwd`,
//! `gitBranch`) and the client's `version`, unless it is a subagent's (`isSidechain`).
//!
//! One parse stands for both only when both would have read the line, and read it so: the two
//! parsers fail on different malformed lines (the builder reads only UTF-8 and strips a byte-order
//! mark, the tree reads bytes and does not; each fails on a duplicate or a wrongly typed field of
//! its own). So [`read`] parses the union of their fields with the same types, and answers only
//! for a line both accept: an object that is UTF-8 from its first byte, with no field of either
//! twice or of the wrong type, and no `message` or `compactMetadata` (which the two read
//! differently). Any other line is `None`, and each parser reads it as before.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::Builder;
use crate::checkpoint::chain::Tree;

/// The fields either reader takes from a line, typed as each of them types them (a field both
/// read has the same type in both).
#[derive(Deserialize)]
struct Union<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    #[serde(rename = "parentUuid", borrow, default)]
    parent: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    sidechain: Option<bool>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(rename = "gitBranch", borrow, default)]
    git_branch: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    version: Option<Cow<'a, str>>,
    // Read by one or both, and checked here only for their types.
    #[serde(borrow, default)]
    #[allow(dead_code)]
    subtype: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    #[allow(dead_code)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "isMeta", default)]
    #[allow(dead_code)]
    meta: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    #[allow(dead_code)]
    summary: Option<bool>,
    #[serde(rename = "isVisibleInTranscriptOnly", default)]
    #[allow(dead_code)]
    transcript_only: Option<bool>,
    #[serde(rename = "isApiErrorMessage", default)]
    #[allow(dead_code)]
    api_error: Option<bool>,
    // Typed differently by the two: a line that has one is left to them.
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    #[serde(rename = "compactMetadata", borrow, default)]
    compact: Option<&'a RawValue>,
}

/// What the two readers take from a progress record.
pub(super) struct Progress<'a> {
    uuid: Option<Cow<'a, str>>,
    parent: Option<Cow<'a, str>>,
    sidechain: Option<bool>,
    cwd: Option<Cow<'a, str>>,
    git_branch: Option<Cow<'a, str>>,
    version: Option<Cow<'a, str>>,
}

/// How far into a line its kind is looked for: a progress record names it before its data.
const KIND_WITHIN: usize = 1024;

/// `line` as a progress record both readers accept, or `None` (see the module doc).
pub(super) fn read(line: &[u8]) -> Option<Progress<'_>> {
    static NEEDLE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"type\":\"progress\""));
    // Bytes first: most lines of other kinds are passed without a parse.
    if line.first() != Some(&b'{') {
        return None;
    }
    NEEDLE.find(&line[..line.len().min(KIND_WITHIN)])?;
    let text = std::str::from_utf8(line).ok()?;
    let u = serde_json::from_str::<Union>(text).ok()?;
    if u.kind.as_deref() != Some("progress") || u.message.is_some() || u.compact.is_some() {
        return None;
    }
    Some(Progress {
        uuid: u.uuid,
        parent: u.parent,
        sidechain: u.sidechain,
        cwd: u.cwd,
        git_branch: u.git_branch,
        version: u.version,
    })
}

/// Feeds one transcript line to the tree and the builder: a progress record parsed once for
/// both, any other line to each.
pub(super) fn feed_both(tree: &mut Tree, builder: &mut Builder, line: &[u8]) {
    if let Some(p) = read(line) {
        tree.progress(p.uuid.as_deref(), p.parent.as_deref());
        builder.progress(
            p.sidechain,
            p.cwd.as_deref(),
            p.git_branch.as_deref(),
            p.version.as_deref(),
        );
    } else {
        tree.feed(line);
        builder.feed(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree and the builder after `lines`, fed as [`feed_both`] feeds them and each on its
    /// own, as their debug output.
    fn both_ways(lines: &[&[u8]]) -> (String, String) {
        let (mut tree, mut builder) = (Tree::default(), Builder::default());
        let (mut tree_alone, mut builder_alone) = (Tree::default(), Builder::default());
        for line in lines {
            feed_both(&mut tree, &mut builder, line);
            tree_alone.feed(line);
            builder_alone.feed(line);
        }
        (
            format!("{tree:?}\n{builder:?}"),
            format!("{tree_alone:?}\n{builder_alone:?}"),
        )
    }

    const PROMPT: &[u8] = br#"{"type":"user","uuid":"u1","parentUuid":null,"cwd":"/a","message":{"role":"user","content":"fix the parser"}}"#;
    const REPLY: &[u8] = br#"{"type":"assistant","uuid":"a9","parentUuid":"p9","timestamp":"2026-11-21T10:00:00.000Z","message":{"id":"m","model":"claude-opus-5-5","role":"assistant","content":[{"type":"text","text":"done"}]}}"#;

    #[test]
    fn a_well_formed_progress_record_is_read_once_for_both() {
        let line: &[u8] = br#"{"parentUuid":"u1","isSidechain":false,"cwd":"/home/user/proj","version":"2.1.14","gitBranch":"main","type":"progress","data":{"type":"hook_progress","hookEvent":"PreToolUse"},"timestamp":"2026-11-22T04:14:08.859Z","uuid":"p1"}"#;
        let p = read(line).expect("read once");
        assert_eq!(p.uuid.as_deref(), Some("p1"));
        assert_eq!(p.parent.as_deref(), Some("u1"));
        assert_eq!(p.cwd.as_deref(), Some("/home/user/proj"));
        assert_eq!(p.git_branch.as_deref(), Some("main"));
        assert_eq!(p.version.as_deref(), Some("2.1.14"));
        // Escaped strings are read as each reader reads them.
        let escaped: &[u8] =
            br#"{"type":"progress","uuid":"p\u0031","parentUuid":"u1","cwd":"C:\\proj"}"#;
        assert_eq!(read(escaped).and_then(|p| p.uuid).as_deref(), Some("p1"));
        let (once, apart) = both_ways(&[PROMPT, line, escaped, REPLY]);
        assert_eq!(once, apart);
    }

    #[test]
    fn malformed_lines_keep_each_readers_verdict() {
        // Each line is one that one reader takes and the other does not, or neither does.
        let cases: &[&[u8]] = &[
            // A byte-order mark: the builder strips it, the tree fails.
            b"\xEF\xBB\xBF{\"type\":\"progress\",\"uuid\":\"p2\",\"parentUuid\":\"u1\",\"cwd\":\"/bom\"}",
            // Not UTF-8 in data the tree skips: the builder reads no such line.
            b"{\"type\":\"progress\",\"uuid\":\"p3\",\"parentUuid\":\"u1\",\"data\":\"\xFF\xFE\",\"cwd\":\"/utf\"}",
            // A uuid that is no string: the tree fails, the builder reads `cwd`.
            br#"{"type":"progress","uuid":5,"parentUuid":"u1","cwd":"/num"}"#,
            // A cwd that is no string: the builder fails, the tree reads the ids.
            br#"{"type":"progress","uuid":"p4","parentUuid":"u1","cwd":7}"#,
            // A version that is no string: the builder fails.
            br#"{"type":"progress","uuid":"p5","parentUuid":"u1","version":[1]}"#,
            // A uuid twice: the tree fails, the builder does not.
            br#"{"type":"progress","uuid":"p6","uuid":"p7","parentUuid":"u1","cwd":"/dup"}"#,
            // A cwd twice: the builder fails, the tree does not.
            br#"{"type":"progress","uuid":"p8","parentUuid":"u1","cwd":"/x","cwd":"/y"}"#,
            // A message whose id is a number: the tree fails, the builder does not.
            br#"{"type":"progress","uuid":"p9","parentUuid":"u1","cwd":"/msg","message":{"id":1}}"#,
            // A message whose usage is odd: read leniently by the builder only.
            br#"{"type":"progress","uuid":"pa","parentUuid":"u1","cwd":"/use","message":{"usage":3}}"#,
            // isSidechain as text: both fail.
            br#"{"type":"progress","uuid":"pb","parentUuid":"u1","isSidechain":"yes"}"#,
            // A subagent's: the tree takes it, the builder does not.
            br#"{"type":"progress","uuid":"pc","parentUuid":"u1","isSidechain":true,"cwd":"/side"}"#,
            // Trailing bytes after the record: both fail.
            br#"{"type":"progress","uuid":"pd","parentUuid":"u1","cwd":"/tail"} x"#,
            // An array, read by position by a derived struct: left to each.
            br#"["progress","pe","u1"]"#,
            // The kind in the data only: another record.
            br#"{"type":"user","uuid":"pf","parentUuid":"u1","data":{"type":"progress"},"message":{"content":"hi there"}}"#,
            // A record with an escaped key naming a field twice.
            br#"{"type":"progress","uuid":"pg","\u0075uid":"ph","parentUuid":"u1"}"#,
            // Truncated.
            br#"{"type":"progress","uuid":"pi","parentUuid":"u1","cwd":"/cut"#,
        ];
        for case in cases {
            let (once, apart) = both_ways(&[PROMPT, case, REPLY]);
            assert_eq!(once, apart, "{}", String::from_utf8_lossy(case));
        }
        // The ones either reader fails on are left to them.
        for case in &cases[..10] {
            assert!(read(case).is_none(), "{}", String::from_utf8_lossy(case));
        }
        // A subagent's record is read once; the builder then skips it.
        assert!(read(cases[10]).is_some());
    }
}
