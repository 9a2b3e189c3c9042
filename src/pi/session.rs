//! pi's session file, read into the records ctxguard's readers already take: each entry of pi's
//! JSONL tree (`{type, id, parentId, timestamp, …}`, pi 0.73.1 and 1.x, session format version
//! 3) becomes the Claude Code transcript record that says the same thing, with pi's `id` and
//! `parentId` as its `uuid` and `parentUuid`. So the checkpoint builder, the rewind tree (pi's
//! `/tree` branches are a transcript's rewinds: the active path is walked from the newest entry),
//! the usage reading, the receipts and the replay read pi's sessions through the code they read
//! Claude Code's with; only what differs is decided here:
//!
//! - a reply's context tokens are pi's own figure, `usage.totalTokens` (else input + output +
//!   cache reads and writes), what pi compares with `contextWindow − reserveTokens`; a reply
//!   that failed (`stopReason` `error` or `aborted`) says nothing about usage;
//! - pi's tools (`bash`, `read`, `edit`, `write`, `grep`, `find`, `ls`) become the tools of the
//!   same name and arguments (`path` is `file_path`, `oldText` is `old_string`, …), and a failed
//!   command's `Command exited with code N` its exit code;
//! - a `compaction` entry is a compaction (a boundary, then its summary), counted in the file as
//!   pi writes it, never from events (pi's print mode fires two `session_before_compact` for one);
//!   pi records no trigger, so it reads as automatic (`PreCompact` is told the trigger);
//! - ctxguard's own messages (`custom_message` of type `ctxguard`: the recovery and the nudges the
//!   extension gave) are a hook's context as Claude Code records it; other extensions' messages
//!   reached the model as the user's, and are read as such, marked as not typed;
//! - every other entry (`model_change`, `label`, an extension's `custom` state, …) keeps its place
//!   in the tree and says nothing.
//!
//! Anything unexpected is skipped, never an error: the format is pi's, and it changes.

use serde_json::{json, Map, Value};

/// What the reader carries from line to line: the session's header and the model in use.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct State {
    pub session_id: String,
    pub cwd: String,
    /// The git branch of the session's directory when it was read (pi records none).
    #[serde(skip)]
    pub branch: Option<String>,
    /// The model in use, `provider/id`: the newest `model_change`'s or reply's.
    pub model: Option<String>,
    /// A session of format 1 (a header without `version`): its entries have no ids, and pi
    /// gives them ids in order, each the child of the one before (`migrateV1ToV2`).
    pub legacy: bool,
    /// In such a session, the id given to the entry before, and how many were given.
    pub previous: Option<String>,
    pub given: u64,
}

/// The `customType` the extension gives its messages.
const OWN_TYPE: &str = "ctxguard";

/// The Claude Code records for one line of a pi session file (none for a line that says
/// nothing, two for a compaction: its boundary and its summary).
pub fn records(line: &[u8], state: &mut State) -> Vec<String> {
    let Ok(entry) = serde_json::from_slice::<Value>(line) else {
        return Vec::new();
    };
    let Some(kind) = entry.get("type").and_then(Value::as_str) else {
        return Vec::new();
    };
    let text = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or_default();
    if kind == "session" {
        state.session_id = text("id").to_string();
        state.cwd = text("cwd").to_string();
        state.legacy = entry.get("version").and_then(Value::as_u64).unwrap_or(1) < 2;
        // Format 1 names the model in its header.
        let (provider, model) = (text("provider"), text("modelId"));
        if !model.is_empty() {
            state.model = Some(named_model(provider, model));
        }
        return Vec::new();
    }
    let timestamp = text("timestamp");
    let (id, parent) = if state.legacy && entry.get("id").is_none() {
        state.given += 1;
        let id = format!("v1-{:08x}", state.given);
        let parent = state.previous.replace(id.clone());
        (id, parent)
    } else {
        let parent = entry
            .get("parentId")
            .and_then(Value::as_str)
            .map(str::to_string);
        (text("id").to_string(), parent)
    };
    let (id, parent) = (id.as_str(), parent.as_deref());
    if id.is_empty() {
        return Vec::new();
    }
    let mut base = Map::new();
    base.insert("uuid".into(), id.into());
    base.insert("parentUuid".into(), parent.map_or(Value::Null, Value::from));
    base.insert("timestamp".into(), timestamp.into());
    base.insert("sessionId".into(), state.session_id.clone().into());
    base.insert("cwd".into(), state.cwd.clone().into());
    if let Some(branch) = &state.branch {
        base.insert("gitBranch".into(), branch.clone().into());
    }
    base.insert("isSidechain".into(), false.into());
    match kind {
        "message" => {
            let Some(message) = entry.get("message") else {
                return vec![placeholder(base, kind)];
            };
            match message_record(message, state) {
                Some(fields) => vec![with(base, fields)],
                None => vec![placeholder(base, kind)],
            }
        }
        "compaction" => compaction(&entry, base, id, parent),
        "custom_message" => {
            let content = content_text(entry.get("content"));
            if entry.get("customType").and_then(Value::as_str) == Some(OWN_TYPE) {
                vec![with(
                    base,
                    json!({
                        "type": "attachment",
                        "attachment": {"type": "hook_additional_context", "content": [content]},
                    }),
                )]
            } else {
                vec![with(
                    base,
                    json!({"type": "user", "isMeta": true,
                           "message": {"role": "user", "content": content}}),
                )]
            }
        }
        "model_change" => {
            let (provider, model) = (text("provider"), text("modelId"));
            if !model.is_empty() {
                state.model = Some(named_model(provider, model));
            }
            vec![placeholder(base, kind)]
        }
        _ => vec![placeholder(base, kind)],
    }
}

/// A `compaction` entry: Claude Code's boundary (which starts the chain anew and names the
/// entry before it), then the summary.
fn compaction(
    entry: &Value,
    base: Map<String, Value>,
    id: &str,
    parent: Option<&str>,
) -> Vec<String> {
    let pre = entry.get("tokensBefore").and_then(Value::as_u64);
    let summary_text = entry
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut boundary = base.clone();
    boundary.insert("parentUuid".into(), Value::Null);
    boundary.insert(
        "logicalParentUuid".into(),
        parent.map_or(Value::Null, Value::from),
    );
    let boundary = with(
        boundary,
        json!({
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            // pi records no trigger: read as automatic, as a Codex rollout's compaction
            // is (a manual `/compact` is the rarer one; `PreCompact` is told which).
            "compactMetadata": {"trigger": "auto", "preTokens": pre},
        }),
    );
    let mut summary = base;
    summary.insert("uuid".into(), format!("{id}-summary").into());
    summary.insert("parentUuid".into(), id.into());
    let summary = with(
        summary,
        json!({
            "type": "user",
            "isCompactSummary": true,
            "isVisibleInTranscriptOnly": true,
            "message": {"role": "user", "content": summary_text},
        }),
    );
    vec![boundary, summary]
}

/// A model as ctxguard names a pi model: `provider/id` (the id alone without a provider).
fn named_model(provider: &str, model: &str) -> String {
    if provider.is_empty() {
        model.to_string()
    } else {
        format!("{provider}/{model}")
    }
}

/// The record of `base` (its place in the tree, its time) with `fields` (an object) added.
fn with(mut base: Map<String, Value>, fields: Value) -> String {
    if let Value::Object(fields) = fields {
        base.extend(fields);
    }
    Value::Object(base).to_string()
}

/// A record that keeps an entry's place in the tree and says nothing else.
fn placeholder(base: Map<String, Value>, kind: &str) -> String {
    with(
        base,
        json!({"type": "attachment", "attachment": {"type": format!("pi_{kind}")}}),
    )
}

/// The text of a pi `content`: a string, or the `text` of its text parts.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The fields of the record for a `message` entry, by its role.
fn message_record(message: &Value, state: &mut State) -> Option<Value> {
    match message.get("role")?.as_str()? {
        "user" => {
            let content = content_text(message.get("content"));
            Some(json!({"type": "user", "message": {"role": "user", "content": content}}))
        }
        "assistant" => {
            let record = assistant(message, state);
            if let Some(model) = record["message"]["model"].as_str() {
                if model != "<synthetic>" {
                    state.model = Some(model.to_string());
                }
            }
            Some(record)
        }
        "toolResult" => Some(tool_result(message)),
        // `hookMessage` is format 2's name of it (`migrateV2ToV3`).
        "custom" | "hookMessage" => {
            let content = content_text(message.get("content"));
            Some(json!({"type": "user", "isMeta": true,
                        "message": {"role": "user", "content": content}}))
        }
        "bashExecution" => Some(bash_execution(message)),
        _ => None,
    }
}

/// A reply: its text, thinking and tool calls, its model and its usage.
fn assistant(message: &Value, state: &State) -> Value {
    let mut blocks = Vec::new();
    for part in message
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => blocks.push(json!({"type": "text", "text": part.get("text")})),
            Some("thinking") => {
                blocks.push(json!({"type": "thinking", "thinking": part.get("thinking")}));
            }
            Some("toolCall") => {
                let name = part.get("name").and_then(Value::as_str).unwrap_or_default();
                let args = part.get("arguments").cloned().unwrap_or(Value::Null);
                let (name, input) = tool(name, args);
                blocks.push(json!({"type": "tool_use", "id": part.get("id"),
                                   "name": name, "input": input}));
            }
            _ => {}
        }
    }
    let stop = message.get("stopReason").and_then(Value::as_str);
    let failed = matches!(stop, Some("error" | "aborted"));
    if failed {
        if let Some(error) = message.get("errorMessage").and_then(Value::as_str) {
            blocks.push(json!({"type": "text", "text": error}));
        }
    }
    let model = message.get("model").and_then(Value::as_str).map(|m| {
        named_model(
            message
                .get("provider")
                .and_then(Value::as_str)
                .unwrap_or(""),
            m,
        )
    });
    let mut out = json!({
        "type": "assistant",
        "message": {
            "role": "assistant",
            "model": if failed { Some("<synthetic>".to_string()) } else { model.or(state.model.clone()) },
            "content": blocks,
            "stop_reason": stop,
        },
    });
    if failed {
        out["isApiErrorMessage"] = true.into();
    } else if let Some(tokens) = message.get("usage").and_then(context_tokens) {
        // The one figure pi compares, as the input the readers sum.
        out["message"]["usage"] = json!({"input_tokens": tokens, "output_tokens": 0,
                                         "cache_read_input_tokens": 0,
                                         "cache_creation_input_tokens": 0});
    }
    out
}

/// pi's context tokens of a reply: `totalTokens`, else the sum of its parts
/// (`calculateContextTokens`).
fn context_tokens(usage: &Value) -> Option<u64> {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64);
    n("totalTokens").filter(|t| *t > 0).or_else(|| {
        let sum = ["input", "output", "cacheRead", "cacheWrite"]
            .iter()
            .filter_map(|k| n(k))
            .fold(0u64, u64::saturating_add);
        (sum > 0).then_some(sum)
    })
}

/// pi's tool and arguments as the tool of the same meaning the readers know.
fn tool(name: &str, args: Value) -> (String, Value) {
    let Value::Object(mut a) = args else {
        return (name.to_string(), args);
    };
    let mut rename = |from: &str, to: &str| {
        if let Some(v) = a.remove(from) {
            a.insert(to.into(), v);
        }
    };
    let mapped = match name {
        "bash" => "Bash",
        "read" => {
            rename("path", "file_path");
            "Read"
        }
        "write" => {
            rename("path", "file_path");
            "Write"
        }
        "edit" => {
            rename("path", "file_path");
            rename("oldText", "old_string");
            rename("newText", "new_string");
            "Edit"
        }
        "grep" => "Grep",
        "find" => "Glob",
        "ls" => "LS",
        other => other,
    };
    (mapped.to_string(), Value::Object(a))
}

/// A tool's result: its text, and for a failed command its exit code first, as Claude Code
/// writes it (`Exit code N`).
fn tool_result(message: &Value) -> Value {
    let mut text = content_text(message.get("content"));
    let is_error = message.get("isError").and_then(Value::as_bool) == Some(true);
    if is_error && message.get("toolName").and_then(Value::as_str) == Some("bash") {
        if let Some(code) = exit_code(&text) {
            text = format!("Exit code {code}\n{text}");
        }
    }
    json!({
        "type": "user",
        "message": {"role": "user", "content": [{
            "type": "tool_result",
            "tool_use_id": message.get("toolCallId"),
            "content": text,
            "is_error": is_error,
        }]},
    })
}

/// The code in the `Command exited with code N` line a failed command's output ends with.
pub fn exit_code(text: &str) -> Option<i64> {
    let last = text.trim_end().lines().last()?;
    last.trim()
        .strip_prefix("Command exited with code ")?
        .trim()
        .parse()
        .ok()
}

/// A command the user ran with `!` (pi's `bashExecution`): Claude Code's record of the same.
fn bash_execution(message: &Value) -> Value {
    let command = message.get("command").and_then(Value::as_str).unwrap_or("");
    let output = message.get("output").and_then(Value::as_str).unwrap_or("");
    let content = format!(
        "<bash-input>{command}</bash-input><bash-stdout>{output}</bash-stdout><bash-stderr></bash-stderr>"
    );
    json!({"type": "user", "message": {"role": "user", "content": content}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str, state: &mut State) -> Value {
        let out = records(line.as_bytes(), state);
        assert_eq!(out.len(), 1, "{out:?}");
        serde_json::from_str(&out[0]).unwrap()
    }

    #[test]
    fn a_reply_keeps_its_tree_place_model_and_pis_token_figure() {
        let mut s = State::default();
        records(
            br#"{"type":"session","version":3,"id":"01ab","timestamp":"t","cwd":"/p"}"#,
            &mut s,
        );
        let r = one(
            r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-12-01T10:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":"/p/x.rs","oldText":"a","newText":"b"}}],"provider":"mock","model":"m","usage":{"input":1000,"output":20,"cacheRead":5,"cacheWrite":0,"totalTokens":1025},"stopReason":"toolUse"}}"#,
            &mut s,
        );
        assert_eq!(r["type"], "assistant");
        assert_eq!(
            (r["uuid"].as_str(), r["parentUuid"].as_str()),
            (Some("a1"), Some("u1"))
        );
        assert_eq!(
            (r["sessionId"].as_str(), r["cwd"].as_str()),
            (Some("01ab"), Some("/p"))
        );
        assert_eq!(r["message"]["model"], "mock/m");
        assert_eq!(r["message"]["usage"]["input_tokens"], 1025);
        let call = &r["message"]["content"][1];
        assert_eq!(
            (call["name"].as_str(), call["id"].as_str()),
            (Some("Edit"), Some("c1"))
        );
        assert_eq!(call["input"]["file_path"], "/p/x.rs");
        assert_eq!(call["input"]["old_string"], "a");
        // What the usage reader makes of it: pi's figure.
        let verdict = crate::transcript::classify(r.to_string().as_bytes());
        assert!(
            matches!(
                verdict,
                crate::transcript::Verdict::Usage { tokens: 1025, .. }
            ),
            "{verdict:?}"
        );
    }

    #[test]
    fn a_format_1_session_gets_ids_in_order_as_pi_migrates_it() {
        let mut s = State::default();
        records(
            br#"{"type":"session","id":"s1","timestamp":"t","cwd":"/p","provider":"anthropic","modelId":"m"}"#,
            &mut s,
        );
        assert!(s.legacy);
        assert_eq!(s.model.as_deref(), Some("anthropic/m"));
        let u = one(
            r#"{"type":"message","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#,
            &mut s,
        );
        let a = one(
            r#"{"type":"message","timestamp":"t","message":{"role":"hookMessage","content":"x"}}"#,
            &mut s,
        );
        assert_eq!(u["parentUuid"], Value::Null);
        assert_eq!(a["parentUuid"], u["uuid"]);
        assert_eq!(a["isMeta"], true);
        // Format 3 keeps pi's own ids.
        let mut s = State::default();
        records(
            br#"{"type":"session","version":3,"id":"s","cwd":"/p"}"#,
            &mut s,
        );
        assert!(!s.legacy);
        assert!(records(
            br#"{"type":"message","timestamp":"t","message":{"role":"user","content":"x"}}"#,
            &mut s
        )
        .is_empty());
    }

    #[test]
    fn a_failed_reply_says_nothing_about_usage() {
        let mut s = State::default();
        let r = one(
            r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"t","message":{"role":"assistant","content":[],"usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"error","errorMessage":"400 exceeds the context window"}}"#,
            &mut s,
        );
        assert_eq!(r["isApiErrorMessage"], true);
        assert_eq!(
            crate::transcript::classify(r.to_string().as_bytes()),
            crate::transcript::Verdict::Irrelevant
        );
    }

    #[test]
    fn a_failed_command_gets_its_exit_code_first() {
        let mut s = State::default();
        let r = one(
            r#"{"type":"message","id":"r1","parentId":"a1","timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"boom\n\nCommand exited with code 2"}],"isError":true}}"#,
            &mut s,
        );
        let block = &r["message"]["content"][0];
        assert_eq!(block["tool_use_id"], "c1");
        assert_eq!(block["is_error"], true);
        assert!(block["content"]
            .as_str()
            .unwrap()
            .starts_with("Exit code 2\nboom"));
        assert_eq!(exit_code("x\nCommand exited with code 127\n"), Some(127));
        assert_eq!(exit_code("Command exited with code"), None);
    }

    #[test]
    fn a_compaction_is_a_boundary_then_its_summary() {
        let mut s = State::default();
        let out = records(
            br#"{"type":"compaction","id":"k1","parentId":"a9","timestamp":"2026-12-01T10:00:00.000Z","summary":"S","firstKeptEntryId":"u5","tokensBefore":38020}"#,
            &mut s,
        );
        assert_eq!(out.len(), 2);
        let b: Value = serde_json::from_str(&out[0]).unwrap();
        assert_eq!(b["subtype"], "compact_boundary");
        assert_eq!(b["parentUuid"], Value::Null);
        assert_eq!(b["logicalParentUuid"], "a9");
        assert!(matches!(
            crate::transcript::classify(out[0].as_bytes()),
            crate::transcript::Verdict::Boundary { at: Some(_), .. }
        ));
        let summary: Value = serde_json::from_str(&out[1]).unwrap();
        assert_eq!(summary["isCompactSummary"], true);
        assert_eq!(summary["parentUuid"], "k1");
    }

    #[test]
    fn ctxguards_own_messages_are_a_hooks_context_and_others_no_prompt() {
        let mut s = State::default();
        let own = one(
            r###"{"type":"custom_message","customType":"ctxguard","content":"## ctxguard recovery: compaction #1 of this session","display":false,"id":"m1","parentId":"k1","timestamp":"t"}"###,
            &mut s,
        );
        assert_eq!(
            crate::receipt::recorded_block(own.to_string().as_bytes()),
            Some(1)
        );
        let other = one(
            r#"{"type":"custom_message","customType":"x","content":"hi","display":false,"id":"m2","parentId":"m1","timestamp":"t"}"#,
            &mut s,
        );
        assert_eq!(other["isMeta"], true);
        // An entry that says nothing keeps its place in the tree.
        let label = one(
            r#"{"type":"label","id":"l1","parentId":"m2","timestamp":"t","label":"x"}"#,
            &mut s,
        );
        assert_eq!(
            (label["uuid"].as_str(), label["parentUuid"].as_str()),
            (Some("l1"), Some("m2"))
        );
        assert!(records(b"not json", &mut s).is_empty());
        assert!(records(br#"{"type":"message","message":{}}"#, &mut s).is_empty());
    }
}
