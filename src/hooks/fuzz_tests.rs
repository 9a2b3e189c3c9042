//! A seeded generator of hostile hook inputs, run in-process against every hook of the registry:
//! thousands of cases per run, cheap enough for CI. Each case must not panic; any output must be exactly the
//! allowed shape (never a permission decision, never a block with the gate off); every state file
//! must still parse; and nothing may be written outside the state root.

use std::fs;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{Diag, Outcome};
use crate::config::Env;
use crate::registry::HOOKS;

/// Cases per hook and run. The seed is fixed so a failure reproduces; `CTXGUARD_FUZZ_SEED` picks
/// another and `CTXGUARD_FUZZ_CASES` runs more.
const DEFAULT_CASES: u64 = 1_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

const FIXTURES: &[&str] = &[
    include_str!("../../fixtures/claude-code-2.1.330/PreToolUse.json"),
    include_str!("../../fixtures/claude-code-2.1.330/PreCompact-auto.json"),
    include_str!("../../fixtures/claude-code-2.1.330/PreCompact-manual.json"),
    include_str!("../../fixtures/claude-code-2.1.330/SessionStart-compact.json"),
    include_str!("../../fixtures/claude-code-2.1.330/SessionStart-resume.json"),
    include_str!("../../fixtures/claude-code-2.1.330/statusline-after-turn.json"),
    include_str!("../../fixtures/claude-code-2.1.330/statusline-first-render.json"),
];

fn hostile_value(rng: &mut Rng, transcript: &Path) -> Value {
    let strings = [
        "",
        " ",
        "../../escape",
        "/abs/path",
        "a/b",
        "..",
        ".",
        "con",
        "\u{0}nul",
        "\u{1b}[31mred\u{1b}[0m\u{7}",
        "日本語🙂",
        "\u{202e}evil",
        "auto",
        "manual",
        "compact",
        "resume",
        "clear",
        "startup",
        "225d8c26-5cbd-4b52-b720-e8fe94443567",
        "e09e1818-7974-46d3-98ed-eaa268f5d1d0",
        "/dev/zero",
        "/",
    ];
    match rng.below(14) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(rng.next() as i64),
        3 => json!(-1),
        4 => json!(1e308),
        5 => json!(u64::MAX),
        6 => json!(*rng.pick(&strings)),
        7 => json!("x".repeat(rng.below(100_000) as usize)),
        8 => json!([1, "two", null, {"three": 3}]),
        9 => json!({"input_tokens": "many", "cache_read_input_tokens": -5}),
        10 => json!({}),
        11 => {
            let depth = rng.below(300) as usize;
            serde_json::from_str(&format!("{}{}", "[".repeat(depth), "]".repeat(depth)))
                .unwrap_or(Value::Null)
        }
        12 => json!(transcript.to_str().unwrap()),
        _ => json!({"input_tokens": rng.below(2_000_000), "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": rng.below(2_000_000)}),
    }
}

/// Replaces, deletes or adds something at a random place in a JSON tree.
fn mutate_value(v: &mut Value, rng: &mut Rng, transcript: &Path, depth: u32) {
    match v {
        Value::Object(map) if !map.is_empty() && depth < 4 && rng.below(3) != 0 => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = rng.pick(&keys).clone();
            match rng.below(5) {
                0 => {
                    map.remove(&key);
                }
                1 => {
                    map.insert(
                        format!("extra{}", rng.below(100)),
                        hostile_value(rng, transcript),
                    );
                }
                _ => mutate_value(map.get_mut(&key).unwrap(), rng, transcript, depth + 1),
            }
        }
        Value::Array(items) if !items.is_empty() && rng.below(2) == 0 => {
            let i = rng.below(items.len() as u64) as usize;
            mutate_value(&mut items[i], rng, transcript, depth + 1);
        }
        _ => *v = hostile_value(rng, transcript),
    }
}

fn case(rng: &mut Rng, transcript: &Path) -> Vec<u8> {
    let base = *rng.pick(FIXTURES);
    let mut v: Value = serde_json::from_str(base).unwrap();
    for _ in 0..=rng.below(4) {
        mutate_value(&mut v, rng, transcript, 0);
    }
    let mut bytes = serde_json::to_vec(&v).unwrap();
    match rng.below(10) {
        0 => bytes.truncate(rng.below(bytes.len() as u64 + 1) as usize),
        1 => {
            let i = rng.below(bytes.len() as u64) as usize;
            bytes[i] = rng.next() as u8; // may be invalid UTF-8
        }
        2 => bytes = serde_json::to_vec(&json!([v])).unwrap(),
        3 => bytes.splice(0..0, [0xEF, 0xBB, 0xBF]).for_each(drop),
        4 => bytes = b" \n\t".to_vec(),
        _ => {}
    }
    bytes
}

/// The only JSON a hook may print.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Allowed {
    #[allow(dead_code)]
    hook_specific_output: AllowedInner,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AllowedInner {
    hook_event_name: String,
    #[allow(dead_code)]
    additional_context: String,
}

fn check_state(root: &Path) {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(root, &mut files);
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".json") {
            let bytes = fs::read(&f).unwrap();
            assert!(
                serde_json::from_slice::<Value>(&bytes).is_ok(),
                "{} does not parse",
                f.display()
            );
        }
    }
}

#[test]
fn thousands_of_hostile_inputs_never_break_a_hook() {
    let seed = std::env::var("CTXGUARD_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_C7A6_u64);
    let cases = std::env::var("CTXGUARD_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("state");
    let home = outer.path().join("home");
    fs::create_dir_all(&home).unwrap();
    let transcript = outer.path().join("t.jsonl");
    fs::write(
        &transcript,
        include_str!("../../fixtures/claude-code-2.1.330/transcript-with-compaction.jsonl"),
    )
    .unwrap();
    let env = Env::isolated(root.clone(), home);
    let mut rng = Rng(seed | 1);
    let mut printed = 0;
    for n in 0..cases {
        for spec in HOOKS {
            let hook = spec.info.name;
            let input = case(&mut rng, &transcript);
            let mut diag = Diag::default();
            let result =
                panic::catch_unwind(AssertUnwindSafe(|| (spec.handle)(&input, &env, &mut diag)));
            let what = format!(
                "seed {seed:#x} case {n} {hook}: {}",
                String::from_utf8_lossy(&input)
            );
            let outcome = result.unwrap_or_else(|_| panic!("panicked: {what}"));
            match outcome {
                Err(_) | Ok(Outcome::Quiet) => {}
                Ok(Outcome::Block(_)) => panic!("blocked with the gate off: {what}"),
                Ok(Outcome::Print(text)) if hook == "precompact" => {
                    // The facts block for the summarizer: plain text, never JSON, bounded.
                    printed += 1;
                    assert!(text.starts_with("ctxguard (a hook) adds facts"), "{what}");
                    assert!(
                        text.chars().count() <= crate::summary_facts::MAX_CHARS,
                        "{what}"
                    );
                    assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{what}");
                }
                Ok(Outcome::Print(text)) => {
                    printed += 1;
                    assert!(
                        text.ends_with('\n') && text.matches('\n').count() == 1,
                        "{what}"
                    );
                    if spec.info.event.is_none() {
                        assert!(text.starts_with("ctx "), "{what}: {text}");
                        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{what}");
                    } else {
                        let out: Allowed = serde_json::from_str(&text)
                            .unwrap_or_else(|e| panic!("{e}: {what}: {text}"));
                        let event = out.hook_specific_output.hook_event_name;
                        assert_eq!(Some(event.as_str()), spec.info.event, "{what}");
                    }
                }
            }
            // A hook's notes always fit one line.
            assert!(diag.line(hook).is_none_or(|l| !l.contains('\n')), "{what}");
        }
        if n % 50 == 0 {
            check_state(&root);
        }
    }
    check_state(&root);
    // Nothing was written beside the state root, whatever the session ids were.
    let mut top: Vec<String> = fs::read_dir(outer.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(top, ["home", "state", "t.jsonl"]);
    // The generator is not so hostile that nothing valid ever gets through.
    assert!(
        printed > cases / 10,
        "only {printed} outputs in {cases} cases"
    );
}
