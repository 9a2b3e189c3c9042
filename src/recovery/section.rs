//! A section of the recovery block: a title, its items, what it is worth keeping when the
//! block is over budget (its rank), and what was left out of it.

use crate::text::{cut, fence, sanitize};

pub(super) struct Section {
    pub(super) title: String,
    pub(super) items: Vec<String>,
    pub(super) dropped: usize,
    /// How much this section is worth keeping: over budget, the lowest rank loses items first.
    pub(super) rank: u8,
    /// A short name for it, when it is left out entirely.
    pub(super) short: &'static str,
}

/// How the one line for an empty checkpoint starts.
pub(super) const NOTHING: &str = "ctxguard: nothing to recover from the transcript";

/// A section never shows more items than this (the rest are counted): trimming to the budget
/// then takes a bounded number of steps whatever the checkpoint holds.
const MAX_SECTION_ITEMS: usize = 40;

/// Nor an item longer than this.
const MAX_ITEM_CHARS: usize = 2_000;

impl Section {
    /// Items are sanitised again here, whatever wrote the checkpoint (an older version, a hand
    /// edit): outside text is data wherever it comes from.
    pub(super) fn new(
        title: &str,
        short: &'static str,
        rank: u8,
        mut items: Vec<String>,
    ) -> Section {
        let dropped = items.len().saturating_sub(MAX_SECTION_ITEMS);
        items.truncate(MAX_SECTION_ITEMS);
        let items = items
            .iter()
            .map(|i| cut(&sanitize(i, false), MAX_ITEM_CHARS))
            .collect();
        Section {
            title: title.to_string(),
            items,
            dropped,
            rank,
            short,
        }
    }

    /// The section, unless it has nothing left to show (what was left out is named once, in
    /// [`left_out`], so trimming a section never makes the block longer).
    pub(super) fn render(&self, out: &mut String) {
        if self.items.is_empty() {
            return;
        }
        out.push_str(&self.title);
        out.push('\n');
        out.push_str(&fence(&self.items.join("\n"), "text"));
        if self.dropped > 0 {
            out.push_str(&format!("({} more in the checkpoint file)\n", self.dropped));
        }
        out.push('\n');
    }
}

/// One line naming the sections left out entirely for space, if any.
pub(super) fn left_out(sections: &[Section]) -> String {
    let gone: Vec<String> = sections
        .iter()
        .filter(|s| s.items.is_empty() && s.dropped > 0)
        .map(|s| format!("{} ({})", s.short, s.dropped))
        .collect();
    if gone.is_empty() {
        String::new()
    } else {
        format!(
            "(Left out for space, in the checkpoint file: {}.)\n\n",
            gone.join(", ")
        )
    }
}
