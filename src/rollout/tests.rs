use std::io::Cursor;

use super::*;

const MID_TURN: &str =
    include_str!("../../fixtures/codex/rollout-excerpt-mid-turn-compaction.jsonl");
const PRE_TURN: &str =
    include_str!("../../fixtures/codex/rollout-excerpt-pre-turn-compaction.jsonl");

#[test]
fn a_rollout_is_told_apart_by_its_name() {
    assert!(is_rollout(Path::new(
        "/h/.codex/sessions/2026/11/25/rollout-2026-11-25T17-26-48-01a213be.jsonl"
    )));
    assert!(is_rollout(Path::new(
        "C:\\Users\\me\\.codex\\sessions\\2026\\11\\25\\rollout-x.jsonl"
    )));
    assert!(!is_rollout(Path::new(
        "/h/.claude/projects/-p/3f0c2d1e-aaaa-bbbb-cccc-123456789012.jsonl"
    )));
    assert!(!is_rollout(Path::new("/h/rollout-notes.txt")));
}

#[test]
fn a_token_count_is_a_reading_with_the_reported_window() {
    let line = br#"{"timestamp":"2026-11-25T17:26:57.151Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"total_tokens":90000},"last_token_usage":{"input_tokens":50000,"output_tokens":50,"total_tokens":50050},"model_context_window":95000}}}"#;
    match classify(line) {
        Verdict::Usage {
            tokens,
            window,
            at,
            model,
            version,
        } => {
            assert_eq!(
                tokens, 50_050,
                "the last request's total, not the session's"
            );
            assert_eq!(window, Some(95_000));
            assert!(at.is_some());
            assert_eq!((model, version), (None, None));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_usage_record_is_a_reading_written_before_the_tool_runs() {
    let line = br#"{"timestamp":"2026-11-25T17:26:56.860Z","ordinal":12,"type":"token_usage_record","payload":{"response_id":"resp_1","usage":{"input_tokens":50000,"output_tokens":50,"total_tokens":50050},"turn_token_usage":{"total_tokens":99999}}}"#;
    assert!(matches!(
        classify(line),
        Verdict::Usage {
            tokens: 50_050,
            window: None,
            ..
        }
    ));
    // In the recorded rollout it comes right after the call, before the command's output.
    let lines: Vec<&str> = MID_TURN.lines().collect();
    let call = lines
        .iter()
        .position(|l| l.contains("\"function_call\""))
        .unwrap();
    assert!(matches!(
        classify(lines[call + 1].as_bytes()),
        Verdict::Usage { tokens: 50_050, .. }
    ));
}

#[test]
fn a_compacted_line_is_a_boundary_and_other_lines_say_nothing() {
    let compacted =
        br#"{"timestamp":"2026-11-25T17:26:57.290Z","type":"compacted","payload":{"message":"x"}}"#;
    assert!(matches!(
        classify(compacted),
        Verdict::Boundary { at: Some(_), .. }
    ));
    for line in [
        &br#"{"type":"event_msg","payload":{"type":"token_count","info":null}}"#[..],
        br#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"mentions \"compacted\" and \"token_count\""}]}}"#,
        b"not json",
        br#"{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"total_tokens":0}}}}"#,
    ] {
        assert_eq!(classify(line), Verdict::Irrelevant, "{}", String::from_utf8_lossy(line));
    }
}

#[test]
fn the_tail_scan_reads_the_newest_count_after_the_compaction() {
    // Mid-turn: the compaction's estimate, then the follow-up request's count.
    let len = MID_TURN.len() as u64;
    let usage =
        transcript::tail_usage_with(&mut Cursor::new(MID_TURN), len, 512, classify).unwrap();
    assert_eq!(usage.tokens, Some(1_250));
    assert_eq!(usage.window, Some(95_000));
    assert_eq!(usage.boundary_at, None);
    // Cut right after the `compacted` line: the compaction is newer than every count.
    let cut = MID_TURN.find("\"type\": \"compacted\"").unwrap();
    let end = MID_TURN[cut..].find('\n').unwrap() + cut + 1;
    let usage = transcript::tail_usage_with(
        &mut Cursor::new(&MID_TURN[..end]),
        end as u64,
        512,
        classify,
    )
    .unwrap();
    assert_eq!(usage.tokens, None);
    assert!(usage.boundary_at.is_some());
}

#[test]
fn the_newest_compaction_is_found_and_its_retained_asks_read() {
    let len = PRE_TURN.len() as u64;
    let (start, end) = newest_compaction(&mut Cursor::new(PRE_TURN), len)
        .unwrap()
        .unwrap();
    let line = &PRE_TURN[start as usize..end as usize];
    assert!(line.contains("\"compacted\""));
    match item(line.trim_end().as_bytes()) {
        Item::Compacted { retained } => {
            assert_eq!(retained, vec!["BIG answer only please".to_string()]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        newest_compaction(&mut Cursor::new("{}\n"), 3).unwrap(),
        None
    );
}

#[test]
fn items_are_read_from_every_kind_of_line() {
    let items: Vec<Item> = MID_TURN.lines().map(|l| item(l.as_bytes())).collect();
    assert!(items
        .iter()
        .any(|i| matches!(i, Item::Meta { version: Some(v), .. } if v == "0.169.0")));
    assert!(items.contains(&Item::User("RUN_TOOL BIG first prompt".into())));
    assert!(items.contains(&Item::Call {
        id: "call_1".into(),
        name: "exec_command".into(),
        arguments: "{\"cmd\": \"echo tool-ran\"}".into(),
    }));
    assert!(items.iter().any(|i| matches!(i, Item::Output { id, text, .. } if id == "call_1" && text.contains("Process exited with code 0"))));
    // The compaction's summary is not a reply; the answer after it is.
    assert!(!items
        .iter()
        .any(|i| matches!(i, Item::Assistant(t) if t.starts_with("MOCK-SUMMARY"))));
    assert!(items.contains(&Item::Assistant("MOCK-ANSWER 3".into())));
    assert!(items.contains(&Item::Tokens(50_050)));
    assert!(items
        .iter()
        .any(|i| matches!(i, Item::Cwd(c) if c == "/home/user/proj")));
    assert_eq!(
        item(b"{\"type\":\"world_state\",\"payload\":{}}"),
        Item::Other
    );
    assert_eq!(item(b"\xff\xfe"), Item::Other);
}
