//! Reading a Claude Code transcript into a checkpoint: the part after its newest
//! `compact_boundary` read forward in bounded memory, in one pass that feeds the builder and the
//! rewind tree together (again without the branches the user rewound away from, only when there
//! are some), and the head for the session's goal.

use std::io;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Builder, Reading};
use crate::transcript::{self, Line, LineReader};

/// Whether the newest record with a `uuid` was on a branch the user rewound away from: a record
/// without one (a prompt queued, a pull request linked while the agent worked there) written
/// then belongs to that branch, and is abandoned with it.
#[derive(Default)]
struct OnGone(bool);

impl OnGone {
    /// Is `line` left out: abandoned itself, or written without a `uuid` on an abandoned branch?
    fn skips(&mut self, gone: &super::super::chain::Gone, line: &[u8]) -> bool {
        #[derive(Deserialize)]
        struct Rec<'a> {
            #[serde(borrow, default)]
            uuid: Option<&'a RawValue>,
        }
        if gone.is_empty() {
            return false;
        }
        let dated = serde_json::from_slice::<Rec>(line).is_ok_and(|r| r.uuid.is_some());
        let abandoned = gone.holds(line);
        if dated {
            self.0 = abandoned;
        }
        abandoned || (!dated && self.0)
    }
}

/// How much of a transcript's head is read for the session's goal when the part after the
/// newest boundary does not start at the beginning: the first request is near the start, and
/// a session whose first lines hold none is not worth reading whole for one.
const GOAL_SCAN_BYTES: u64 = 8 * 1024 * 1024;

/// The session's first substantive request in the first `limit` bytes of `file`.
fn goal_in_head<R: io::Read>(
    file: R,
    limit: u64,
    gone: &super::super::chain::Gone,
) -> io::Result<Option<String>> {
    let mut builder = Builder::default();
    let mut lines = LineReader::new(io::Read::take(file, limit), transcript::MAX_LINE);
    while let Some(line) = lines.next_line()? {
        if let Line::Text(text) = line {
            if gone.holds(text) {
                continue;
            }
            builder.feed(text);
            if builder.asked {
                break;
            }
        }
    }
    Ok(builder.goal)
}

/// A Claude Code transcript's part after its newest `compact_boundary`, read forward in bounded
/// memory as if the file ended at byte `end`; and when that part is not the whole transcript, its
/// head for the session's goal. (Which reader a file takes is [`super::read_transcript_until`]'s
/// choice: this module never imports the other client's reader, which builds on it.)
///
/// Where that part starts is known already, or found in the file's end
/// ([`super::super::Opened::known_start`]); else the file is read from its start once, and the
/// builder and the tree start again at each boundary met, so that what they hold at the end is
/// the part after the newest one.
pub(in crate::checkpoint) fn read_claude_until(
    opened: &mut super::super::Opened,
    end: u64,
) -> Result<Reading> {
    let len = opened.len.min(end);
    if let Some(reading) = opened.take_reading(len) {
        return Ok(reading);
    }
    // The branches the user rewound away from are never fed (`chain`). Most transcripts hold
    // none: one pass feeds the builder and the tree together, and only when the tree then shows
    // an abandoned branch is the part read again without it. A tree built already (a drop's
    // judge) is used as it is.
    let mut builder = Builder::default();
    let known = opened.known_start(len)?;
    let (start, gone) = if let Some(start) = known {
        if let Some(gone) = opened.built(len).map(super::super::chain::Tree::abandoned) {
            (start, Some(gone))
        } else {
            let mut tree = super::super::chain::Tree::default();
            each_line(opened, start, len, |text, _, _| {
                super::progress::feed_both(&mut tree, &mut builder, text);
            })?;
            let gone = tree.abandoned();
            opened.keep(len, tree);
            (start, (!gone.is_empty()).then_some(gone))
        }
    } else {
        // No boundary in the file's end: read from its start, every boundary met starting the
        // builder and the tree again.
        let mut tree = super::super::chain::Tree::default();
        let mut newest = None;
        each_line(opened, 0, len, |text, at, after| {
            if let Some(boundary) = transcript::boundary_line(text, at, after) {
                newest = Some(boundary);
                tree = super::super::chain::Tree::default();
                builder = Builder::default();
            } else {
                super::progress::feed_both(&mut tree, &mut builder, text);
            }
        })?;
        opened.found(len, newest);
        let gone = tree.abandoned();
        opened.keep(len, tree);
        let start = newest.map_or(0, |b| b.after.min(len));
        (start, (!gone.is_empty()).then_some(gone))
    };
    // Fed already, and nothing abandoned.
    let Some(gone) = gone else {
        return finish(opened, builder, start);
    };
    let mut builder = Builder::default();
    let mut on_gone = OnGone::default();
    each_line(opened, start, len, |text, _, _| {
        if !on_gone.skips(&gone, text) {
            builder.feed(text);
        }
    })?;
    finish(opened, builder, start)
}

/// Each line of the transcript between bytes `start` and `len`, read forward in bounded memory
/// (a line over `MAX_LINE` is skipped: the checkpoint is a summary, not a copy), with where it
/// starts and where the line after it does.
fn each_line(
    opened: &mut super::super::Opened,
    start: u64,
    len: u64,
    mut each: impl FnMut(&[u8], u64, u64),
) -> Result<()> {
    let path = &opened.path;
    let context = || format!("reading transcript {}", path.display());
    let file = &mut opened.file;
    io::Seek::seek(file, io::SeekFrom::Start(start)).with_context(context)?;
    let mut lines = LineReader::new(
        io::Read::take(&mut *file, len - start),
        transcript::MAX_LINE,
    );
    let mut at = start;
    while let Some((line, next)) = lines.next_line_and_end().with_context(context)? {
        if let Line::Text(text) = line {
            each(text, at, start + next);
        }
        at = start + next;
    }
    Ok(())
}

/// The reading of a transcript's part after its newest boundary (at `start`), with the
/// session's goal from its head when that part is not the whole transcript.
fn finish(opened: &mut super::super::Opened, builder: Builder, start: u64) -> Result<Reading> {
    let path = &opened.path;
    let context = || format!("reading transcript {}", path.display());
    let file = &mut opened.file;
    let mut reading = builder.finish();
    if start > 0 {
        // The head's own rewinds: a first prompt edited before the compaction is no goal.
        let limit = start.min(GOAL_SCAN_BYTES);
        io::Seek::seek(file, io::SeekFrom::Start(0)).with_context(context)?;
        let head_gone = super::super::chain::tree_of(io::Read::take(&mut *file, limit))
            .with_context(context)?
            .abandoned();
        io::Seek::seek(file, io::SeekFrom::Start(0)).with_context(context)?;
        let goal = goal_in_head(&mut *file, limit, &head_gone).with_context(context)?;
        if goal.is_some() {
            reading.body.goal = goal;
        }
    }
    Ok(reading)
}
