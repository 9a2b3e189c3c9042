//! The backward scan and line classification, on literals at every chunk size.

use super::*;
use std::io::Cursor;

fn assistant(tokens: (u64, u64, u64), extra: &str) -> String {
    format!(
        r#"{{"type":"assistant","isSidechain":false,{extra}"timestamp":"2026-11-21T10:00:00.000Z","message":{{"model":"claude-opus-5-5","content":[{{"type":"text","text":"hi"}}],"usage":{{"input_tokens":{},"cache_creation_input_tokens":{},"cache_read_input_tokens":{},"output_tokens":99}}}}}}"#,
        tokens.0, tokens.1, tokens.2
    )
}

const BOUNDARY: &str = r#"{"type":"system","subtype":"compact_boundary","timestamp":"2026-11-21T11:00:00.000Z","compactMetadata":{"trigger":"auto","preTokens":150000}}"#;
const TOOL_RESULT: &str = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"usage: \"usage\" compact_boundary","is_error":true}]}}"#;

fn scan_all_chunk_sizes(text: &str) -> TailUsage {
    let bytes = text.as_bytes();
    let expected =
        tail_usage_from(&mut Cursor::new(bytes), bytes.len() as u64, FIRST_CHUNK).unwrap();
    // Every first-chunk size, so every line straddles a chunk boundary somewhere.
    for chunk in [1, 2, 3, 7, 16, 50, 100, 333] {
        let got = tail_usage_from(&mut Cursor::new(bytes), bytes.len() as u64, chunk).unwrap();
        assert_eq!(
            (got.tokens, got.boundary_at, &got.model),
            (expected.tokens, expected.boundary_at, &expected.model),
            "chunk {chunk}"
        );
    }
    expected
}

#[test]
fn newest_main_chain_usage_wins() {
    let text = [
        assistant((1, 2, 3), ""),
        TOOL_RESULT.to_string(),
        assistant((10, 500, 150_000), ""),
        r#"{"type":"attachment","foo":1}"#.to_string(),
    ]
    .join("\n");
    let u = scan_all_chunk_sizes(&(text + "\n"));
    assert_eq!(u.tokens, Some(150_510));
    assert_eq!(u.model.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(u.boundary_at, None);
}

#[test]
fn sidechains_synthetic_api_errors_and_zero_usage_are_skipped() {
    let synthetic = assistant((0, 0, 0), "").replace("claude-opus-5-5", "<synthetic>");
    let text = [
        assistant((7, 0, 0), ""),
        assistant((99, 0, 0), r#""isSidechain":true,"#).replacen(r#""isSidechain":false,"#, "", 1),
        assistant((98, 0, 0), r#""isApiErrorMessage":true,"#),
        assistant((97, 0, 0), "").replace("claude-opus-5-5", "<synthetic>"),
        synthetic,
        assistant((0, 0, 0), ""),
    ]
    .join("\n");
    assert_eq!(scan_all_chunk_sizes(&text).tokens, Some(7));
}

#[test]
fn a_newer_boundary_means_unknown_usage() {
    let text = [assistant((1, 1, 150_000), ""), BOUNDARY.to_string()].join("\n");
    let u = scan_all_chunk_sizes(&text);
    assert_eq!(u.tokens, None);
    assert_eq!(u.boundary_at, parse_time("2026-11-21T11:00:00Z"));
    // Usage after the boundary counts again.
    let text = [BOUNDARY.to_string(), assistant((1, 1, 2_000), "")].join("\n");
    assert_eq!(scan_all_chunk_sizes(&text).tokens, Some(2_002));
}

#[test]
fn torn_last_line_crlf_bom_and_blank_lines() {
    let full = assistant((5, 5, 5), "");
    let torn = &assistant((9, 9, 9), "")[..60];
    let text = format!("\u{feff}{full}\r\n\r\n\n{torn}");
    assert_eq!(scan_all_chunk_sizes(&text).tokens, Some(15));
    // The BOM on the only line.
    let text = format!("\u{feff}{full}");
    assert_eq!(scan_all_chunk_sizes(&text).tokens, Some(15));
}

#[test]
fn nothing_known_in_empty_or_usage_free_files() {
    assert_eq!(scan_all_chunk_sizes("").tokens, None);
    let u = scan_all_chunk_sizes(&format!("{TOOL_RESULT}\nnot json at all\n{{}}\n"));
    assert_eq!((u.tokens, u.boundary_at), (None, None));
}

#[test]
fn the_scan_reads_only_the_tail() {
    let filler = format!("{TOOL_RESULT}\n").repeat(20_000);
    let text = format!("{filler}{}\n{}", assistant((1, 1, 1), ""), "x\n".repeat(10));
    let u = scan_all_chunk_sizes(&text);
    assert_eq!(u.tokens, Some(3));
    let mut cursor = Cursor::new(text.as_bytes());
    let scan = scan_backwards(
        &mut cursor,
        text.len() as u64,
        FIRST_CHUNK,
        MAX_SCAN,
        MAX_LINE,
        |line, _| matches!(classify(line), Verdict::Usage { .. }),
    )
    .unwrap();
    assert_eq!(scan.bytes_read, FIRST_CHUNK as u64);
    assert!((text.len() as u64) > 10 * scan.bytes_read);
}

#[test]
fn boundary_offset_and_forward_lines() {
    let text = format!(
        "{}\n{BOUNDARY}\n{}\r\nlast",
        assistant((1, 1, 1), ""),
        assistant((2, 2, 2), "")
    );
    let len = text.len() as u64;
    for chunk in [1usize, 5, 64] {
        let after =
            since_newest_boundary_from(&mut Cursor::new(text.as_bytes()), len, chunk).unwrap();
        assert_eq!(
            &text[after as usize..after as usize + 10],
            &assistant((2, 2, 2), "")[..10]
        );
    }
    let after = since_newest_boundary(&mut Cursor::new(text.as_bytes()), len).unwrap();
    let mut lines = LineReader::new(&text.as_bytes()[after as usize..], 1 << 20);
    assert_eq!(
        lines.next_line().unwrap(),
        Some(Line::Text(assistant((2, 2, 2), "").as_bytes()))
    );
    assert_eq!(lines.next_line().unwrap(), Some(Line::Text(b"last")));
    assert_eq!(lines.next_line().unwrap(), None);
    // No boundary at all: everything.
    assert_eq!(
        since_newest_boundary(&mut Cursor::new(b"a\nb"), 3).unwrap(),
        0
    );
}

#[test]
fn the_backward_scan_skips_over_long_lines() {
    let long = format!(r#"{{"type":"user","x":"{}"}}"#, "z".repeat(5_000));
    let text = format!(
        "{}\n{long}\n{}\n{long}",
        assistant((1, 1, 1), ""),
        assistant((2, 2, 2), "")
    );
    for chunk in [1usize, 7, 64, 4096] {
        let mut seen = Vec::new();
        let len = text.len() as u64;
        scan_backwards(
            &mut Cursor::new(text.as_bytes()),
            len,
            chunk,
            u64::MAX,
            1_000,
            |l, _| {
                seen.push(String::from_utf8_lossy(l).into_owned());
                false
            },
        )
        .unwrap();
        assert_eq!(
            seen,
            [assistant((2, 2, 2), ""), assistant((1, 1, 1), "")],
            "chunk {chunk}"
        );
    }
}

#[test]
fn over_long_lines_are_skipped_with_bounded_memory() {
    let text = format!("short\n{}\nafter\n", "x".repeat(10_000));
    let mut lines = LineReader::new(text.as_bytes(), 100);
    assert_eq!(lines.next_line().unwrap(), Some(Line::Text(b"short")));
    assert_eq!(lines.next_line().unwrap(), Some(Line::TooLong));
    assert!(lines.buf.capacity() <= 100);
    assert_eq!(lines.next_line().unwrap(), Some(Line::Text(b"after")));
    assert_eq!(lines.next_line().unwrap(), None);
}

#[test]
fn the_real_transcript() {
    let text = include_str!("../../fixtures/claude-code-2.1.330/transcript-with-compaction.jsonl");
    // Its newest real reply (150,510) follows the last boundary; the synthetic API error
    // after it does not count.
    let u = scan_all_chunk_sizes(text);
    assert_eq!(u.tokens, Some(150_510));
    // Cut right after the last boundary: just compacted, usage unknown.
    let cut = text.find(r#""cumulativeDroppedTokens":561813"#).unwrap();
    let end = cut + text[cut..].find('\n').unwrap() + 1;
    let u = scan_all_chunk_sizes(&text[..end]);
    assert_eq!(u.tokens, None);
    assert_eq!(u.boundary_at, parse_time("2026-11-21T19:21:48.917Z"));
}

/// Lent from the read buffer or copied across its end, every line comes out whole, with where
/// the next starts (past a `\r\n` too).
#[test]
fn lines_and_their_ends_across_the_read_buffer() {
    let mut text = String::new();
    let mut expected = Vec::new();
    for i in 0..3000 {
        let line = format!("{i}:{}", "y".repeat(i % 97));
        text.push_str(&line);
        text.push_str(if i % 3 == 0 { "\r\n" } else { "\n" });
        expected.push((line, text.len() as u64));
    }
    text.push_str("last");
    expected.push(("last".to_string(), text.len() as u64));
    let mut lines = LineReader::new(text.as_bytes(), 1 << 20);
    let mut seen = Vec::new();
    while let Some((line, end)) = lines.next_line_and_end().unwrap() {
        let Line::Text(t) = line else {
            panic!("too long")
        };
        seen.push((String::from_utf8(t.to_vec()).unwrap(), end));
    }
    assert_eq!(seen, expected);
}
