//! A message content block as a transcript line holds it (text, a tool call, a tool result), and
//! the text in one: what the build, the tool log and the failures all read.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::bounded;

/// A message content block. Read one at a time (see [`bounded::for_each`]): a line of a
/// million tiny blocks would otherwise cost a hundred times its size.
#[derive(Deserialize)]
pub(super) struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) tool_use_id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) is_error: Option<bool>,
    #[serde(borrow, default)]
    pub(super) content: Option<&'a RawValue>,
}

/// The text between `<name>` and `</name>` in `text` (the first such pair).
pub(super) fn tag_text<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let start = text.find(&open)? + open.len();
    let len = text[start..].find(&format!("</{name}>"))?;
    Some(&text[start..start + len])
}

/// The text of a tool result's `content`: a string, or an array of text blocks.
pub(super) fn result_text(raw: &RawValue) -> Option<String> {
    let s = raw.get();
    if s.starts_with('"') {
        return serde_json::from_str::<String>(s).ok();
    }
    let mut joined = None;
    let whole = bounded::for_each(s, |block: Block| {
        if let Some(text) = block.text.as_deref() {
            push_line(&mut joined, text);
        }
    });
    joined.filter(|_| whole)
}

/// Appends `text` to `all` as a new line.
pub(super) fn push_line(all: &mut Option<String>, text: &str) {
    match all {
        Some(all) => {
            all.push('\n');
            all.push_str(text);
        }
        None => *all = Some(text.to_string()),
    }
}
