//! Serde structs for the JSON Claude Code pipes into hooks and the status line. Lenient where
//! the protocol is loose (missing fields and `null` mean "default", unknown fields are skipped
//! without being materialised) and strict where a wrong type means the payload is not what we
//! think it is (a number where a string belongs is reported, not guessed at).

use std::io::Read;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Deserializer};

use crate::usage::TokenCounts;

/// Payloads larger than this are refused rather than buffered (a `PreToolUse` payload carries the
/// tool input, e.g. a whole file being written, so the bound is generous).
const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// Reads all of stdin, bounded.
pub fn read_stdin() -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut buf)
        .context("reading stdin")?;
    if buf.len() as u64 > MAX_INPUT_BYTES {
        bail!("input on stdin is larger than {MAX_INPUT_BYTES} bytes");
    }
    Ok(buf)
}

/// Parses a payload, with an error that says what was expected. Only a JSON object is a payload
/// (serde would otherwise also read a struct from an array, field by field).
pub fn parse<'a, T: Deserialize<'a>>(bytes: &'a [u8], what: &str) -> Result<T> {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        None => bail!("empty input: expected the {what} JSON on stdin"),
        Some(b'{') => {}
        Some(_) => bail!("the {what} input on stdin is not a JSON object"),
    }
    serde_json::from_slice(bytes).with_context(|| format!("parsing the {what} JSON on stdin"))
}

/// `null` is the default, any other wrong type is an error.
fn null_default<'de, D, T>(d: D) -> std::result::Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A nested object: `null` or missing is `None`; anything but an object is an error (not a struct
/// read field by field from an array).
pub fn object_or_null<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    use serde::de::Error;
    match Option::<serde_json::Value>::deserialize(d)? {
        None => Ok(None),
        Some(v @ serde_json::Value::Object(_)) => {
            T::deserialize(v).map(Some).map_err(D::Error::custom)
        }
        Some(other) => Err(D::Error::custom(format!(
            "expected an object, found {other}"
        ))),
    }
}

/// A string; any other JSON value is ignored (empty), never an error: an optional field of an
/// unexpected shape must not make the whole event unreadable.
fn lenient_text<'de, D>(d: D) -> std::result::Result<String, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => s,
        _ => String::new(),
    })
}

/// An id whose presence matters: a string as it is; a number, a boolean, an object or an array
/// as its JSON text (present, never mistaken for absent); null as empty.
fn present_id<'de, D>(d: D) -> std::result::Result<String, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => s,
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    })
}

/// A number; anything else (null, a string, missing) is `None`, never an error.
fn lenient_number<'de, D>(d: D) -> std::result::Result<Option<f64>, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(serde_json::Value::deserialize(d)?.as_f64())
}

/// A positive whole number of tokens; anything else (0, negative, fractional, a string, null,
/// missing) is `None`, never an error.
fn positive_tokens<'de, D>(d: D) -> std::result::Result<Option<u64>, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(serde_json::Value::deserialize(d)?
        .as_u64()
        .filter(|t| *t > 0))
}

/// A model id: a string, or an object's `id`; anything else is empty.
fn model_id<'de, D>(d: D) -> std::result::Result<String, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => s,
        serde_json::Value::Object(o) => o
            .get("id")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    }
    .chars()
    .take(200)
    .collect())
}

fn object_or_default<'de, D, T>(d: D) -> std::result::Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned + Default,
{
    Ok(object_or_null(d)?.unwrap_or_default())
}

/// The name of ctxguard's copy of a pi session in Claude Code's transcript form
/// (`crate::pi::shadow`).
pub const PI_COPY_NAME: &str = "pi-transcript.jsonl";

/// Is `name` a pi session file's name: `<ISO time with : and . as ->_<id>.jsonl`
/// (`2026-12-01T21-55-55-409Z_01a2339b-7390-72d2-9bf7-8ed8a20a51ce.jsonl`)?
pub fn is_pi_session_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".jsonl") else {
        return false;
    };
    let Some((time, id)) = stem.split_once('_') else {
        return false;
    };
    let b = time.as_bytes();
    b.len() == 24
        && b[10] == b'T'
        && b[23] == b'Z'
        && b[..23].iter().enumerate().all(|(i, c)| match i {
            4 | 7 | 13 | 16 | 19 => *c == b'-',
            10 => true,
            _ => c.is_ascii_digit(),
        })
        && !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|c| c.is_ascii_hexdigit() || c == b'-')
}

/// The coding agent a hook runs for. One binary serves all three: a payload tells them apart by
/// its transcript, which Codex names `rollout-<time>-<id>.jsonl`, pi `<time>_<id>.jsonl` (and
/// ctxguard's copy of a pi session in Claude Code's form is `pi-transcript.jsonl`; Claude Code
/// names it after the session id), so nothing in the registration has to say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Client {
    #[default]
    ClaudeCode,
    Codex,
    Pi,
}

impl Client {
    /// The client whose transcript is at `path`: Codex for a rollout file, pi for its session
    /// file or ctxguard's copy of one.
    pub fn of_transcript(path: &str) -> Client {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        if name.starts_with("rollout-") && name.ends_with(".jsonl") {
            Client::Codex
        } else if name == PI_COPY_NAME || is_pi_session_name(name) {
            Client::Pi
        } else {
            Client::ClaudeCode
        }
    }
}

/// The fields every hook event shares (`PreToolUse`, `PreCompact`, `SessionStart`, ...).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct HookInput {
    #[serde(deserialize_with = "null_default")]
    pub session_id: String,
    #[serde(deserialize_with = "null_default")]
    pub transcript_path: String,
    #[serde(deserialize_with = "null_default")]
    pub cwd: String,
    /// Set on events from a subagent: its tool calls never take or receive the main thread's
    /// nudge. Any value but null or an empty string counts (a number too).
    #[serde(deserialize_with = "present_id")]
    pub agent_id: String,
    /// `SessionStart` (`compact`, `resume`): the model id.
    #[serde(deserialize_with = "model_id")]
    pub model: String,
    /// `PreCompact`: `auto` or `manual`.
    #[serde(deserialize_with = "null_default")]
    pub trigger: String,
    /// `PreCompact`: the arguments of `/compact`; empty or null when none.
    #[serde(deserialize_with = "null_default")]
    pub custom_instructions: String,
    /// `SessionEnd`: `clear`, `logout`, `prompt_input_exit`, `other`, ...
    #[serde(deserialize_with = "lenient_text")]
    pub reason: String,
    /// `PostCompact`: the summary the compaction produced.
    #[serde(deserialize_with = "lenient_text")]
    pub compact_summary: String,
    /// `SessionStart`: `startup`, `resume`, `clear`, `compact` or `fork`.
    #[serde(deserialize_with = "null_default")]
    pub source: String,
    /// `Stop`: the reply that ends the turn (its text), which the client may not have written
    /// to the transcript yet.
    #[serde(deserialize_with = "lenient_text")]
    pub last_assistant_message: String,
    /// pi (its extension's payload): the model's context window, which only pi knows for a
    /// model it ships.
    #[serde(deserialize_with = "positive_tokens")]
    pub context_window: Option<u64>,
    /// `Stop`: the turn already goes on because a Stop hook blocked it once.
    #[serde(deserialize_with = "null_default")]
    pub stop_hook_active: bool,
}

impl HookInput {
    /// The client that sent this event (see [`Client::of_transcript`]).
    pub fn client(&self) -> Client {
        Client::of_transcript(&self.transcript_path)
    }
}

/// The status-line payload, reduced to what ctxguard reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct StatusLineInput {
    #[serde(deserialize_with = "null_default")]
    pub session_id: String,
    /// The client's version.
    #[serde(deserialize_with = "lenient_text")]
    pub version: String,
    #[serde(deserialize_with = "null_default")]
    pub transcript_path: String,
    #[serde(deserialize_with = "null_default")]
    pub cwd: String,
    /// `model.id` (an object with `id` and `display_name`; a plain string is taken as the id).
    #[serde(deserialize_with = "model_id")]
    pub model: String,
    #[serde(deserialize_with = "object_or_default")]
    pub context_window: ContextWindow,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ContextWindow {
    /// May be absent in older clients; `None` then.
    pub context_window_size: Option<u64>,
    /// `null` before the first reply and right after compaction: usage unknown.
    #[serde(deserialize_with = "object_or_null")]
    pub current_usage: Option<UsageBlock>,
    /// The client's own percent of the window (newer clients), when a number.
    #[serde(deserialize_with = "lenient_number")]
    pub used_percentage: Option<f64>,
}

/// An API `usage` object (status line `current_usage`, transcript `message.usage`).
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(default)]
pub struct UsageBlock {
    #[serde(deserialize_with = "null_default")]
    pub input_tokens: u64,
    #[serde(deserialize_with = "null_default")]
    pub cache_creation_input_tokens: u64,
    #[serde(deserialize_with = "null_default")]
    pub cache_read_input_tokens: u64,
}

impl UsageBlock {
    pub fn counts(&self) -> TokenCounts {
        TokenCounts {
            input: self.input_tokens,
            cache_creation: self.cache_creation_input_tokens,
            cache_read: self.cache_read_input_tokens,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUSLINE: &str =
        include_str!("../fixtures/claude-code-2.1.330/statusline-after-turn.json");
    const FIRST_RENDER: &str =
        include_str!("../fixtures/claude-code-2.1.330/statusline-first-render.json");
    const PRE_TOOL_USE: &str = include_str!("../fixtures/claude-code-2.1.330/PreToolUse.json");

    #[test]
    fn a_subagents_id_of_any_shape_is_present() {
        for (raw, present) in [
            (r#""a1""#, true),
            ("42", true),
            ("true", true),
            ("{}", true),
            ("null", false),
            (r#""""#, false),
        ] {
            let input: HookInput = parse(
                format!(r#"{{"session_id": "s", "agent_id": {raw}}}"#).as_bytes(),
                "x",
            )
            .unwrap();
            assert_eq!(!input.agent_id.is_empty(), present, "{raw}");
        }
    }

    #[test]
    fn real_statusline_payloads() {
        let s: StatusLineInput = parse(STATUSLINE.as_bytes(), "status line").unwrap();
        assert_eq!(s.session_id, "e09e1818-7974-46d3-98ed-eaa268f5d1d0");
        assert_eq!(s.context_window.context_window_size, Some(1_000_000));
        assert_eq!(s.model, "claude-opus-5-5");
        let usage = s.context_window.current_usage.unwrap();
        assert_eq!(usage.counts().context_tokens(), 150_510);

        let s: StatusLineInput = parse(FIRST_RENDER.as_bytes(), "status line").unwrap();
        assert!(s.context_window.current_usage.is_none());
    }

    #[test]
    fn real_pretooluse_payload() {
        let h: HookInput = parse(PRE_TOOL_USE.as_bytes(), "PreToolUse").unwrap();
        assert_eq!(h.session_id, "225d8c26-5cbd-4b52-b720-e8fe94443567");
        assert!(h.transcript_path.ends_with(".jsonl"));
        assert_eq!(h.agent_id, "", "the main thread");
        let sub: HookInput = parse(
            br#"{"session_id":"s","agent_id":"a1b2","model":7}"#,
            "PreToolUse",
        )
        .unwrap();
        assert_eq!((sub.agent_id.as_str(), sub.model.as_str()), ("a1b2", ""));
    }

    #[test]
    fn real_precompact_and_sessionstart_payloads() {
        let manual: HookInput = parse(
            include_bytes!("../fixtures/claude-code-2.1.330/PreCompact-manual.json"),
            "PreCompact",
        )
        .unwrap();
        assert_eq!(
            (manual.trigger.as_str(), manual.custom_instructions.as_str()),
            ("manual", "keep the open items")
        );
        let auto: HookInput = parse(
            include_bytes!("../fixtures/claude-code-2.1.330/PreCompact-auto.json"),
            "PreCompact",
        )
        .unwrap();
        assert_eq!(
            (auto.trigger.as_str(), auto.custom_instructions.as_str()),
            ("auto", "")
        );
        let start: HookInput = parse(
            include_bytes!("../fixtures/claude-code-2.1.330/SessionStart-compact.json"),
            "SessionStart",
        )
        .unwrap();
        assert_eq!(
            (
                start.source.as_str(),
                start.cwd.as_str(),
                start.model.as_str()
            ),
            ("compact", "/home/user/proj", "claude-opus-5-5")
        );
    }

    #[test]
    fn nulls_and_missing_fields_are_defaults() {
        let h: HookInput = parse(br#"{"session_id":null,"extra":{"deep":[1,2]}}"#, "x").unwrap();
        assert_eq!(h.session_id, "");
        let s: StatusLineInput =
            parse(br#"{"context_window":{"current_usage":{"input_tokens":null,"cache_read_input_tokens":5}}}"#, "x")
                .unwrap();
        assert_eq!(
            s.context_window
                .current_usage
                .unwrap()
                .counts()
                .context_tokens(),
            5
        );
    }

    #[test]
    fn wrong_types_are_reported() {
        let err = parse::<HookInput>(br#"{"session_id": 42}"#, "PreToolUse").unwrap_err();
        assert!(format!("{err:#}").contains("invalid type"), "{err:#}");
        assert!(parse::<StatusLineInput>(
            br#"{"context_window":{"context_window_size":"big"}}"#,
            "x"
        )
        .is_err());
        assert!(parse::<HookInput>(b"[1,2]", "x").is_err());
        // serde reads a struct from an array field by field; a payload never is one.
        let err = parse::<HookInput>(br#"["s", "/t"]"#, "x").unwrap_err();
        assert!(format!("{err:#}").contains("not a JSON object"), "{err:#}");
        let err = parse::<StatusLineInput>(br#"{"context_window": [42]}"#, "x").unwrap_err();
        assert!(format!("{err:#}").contains("expected an object"), "{err:#}");
        assert!(parse::<StatusLineInput>(
            br#"{"context_window": {"current_usage": [1, 2, 3]}}"#,
            "x"
        )
        .is_err());
        assert!(parse::<StatusLineInput>(br#"{"context_window": null}"#, "x").is_ok());
        let err = parse::<HookInput>(b"  \n", "PreToolUse").unwrap_err();
        assert!(format!("{err}").contains("empty input"));
    }
}
