//! ctxguard on real pi sessions from public repositories (bench/pi_sessions.tsv; fetched into
//! the git-ignored bench/pi-sessions/ by bench/fetch_pi_sessions.py, never committed): `replay`
//! counts the compactions and the replies pi itself reads in each file, as an independent
//! reading of the file finds them (each line parsed as pi parses it, the active path walked from
//! the newest entry; a format-1 session's entries in order). Skipped, saying so, when the folder
//! is absent.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::util::*;

/// What pi reads in a session file: its compactions and its replies that did not fail, on the
/// active path.
fn as_pi_reads_it(text: &str) -> (usize, usize) {
    let entries: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let legacy = entries
        .first()
        .is_some_and(|h| h["type"] == "session" && h["version"].as_u64().unwrap_or(1) < 2);
    let body: Vec<&Value> = entries.iter().filter(|e| e["type"] != "session").collect();
    let path: Vec<&Value> = if legacy {
        body
    } else {
        let by_id: HashMap<&str, &Value> = body
            .iter()
            .filter_map(|e| Some((e["id"].as_str()?, *e)))
            .collect();
        let mut path = Vec::new();
        let mut at = body.last().copied();
        while let Some(e) = at {
            path.push(e);
            at = e["parentId"].as_str().and_then(|p| by_id.get(p).copied());
        }
        path.reverse();
        path
    };
    let compactions = path.iter().filter(|e| e["type"] == "compaction").count();
    let replies = path
        .iter()
        .filter(|e| e["type"] == "message" && e["message"]["role"] == "assistant")
        .filter(|e| {
            !matches!(
                e["message"]["stopReason"].as_str(),
                Some("error" | "aborted")
            )
        })
        .filter(|e| {
            let u = &e["message"]["usage"];
            let n = |k: &str| u[k].as_u64().unwrap_or(0);
            n("totalTokens") + n("input") + n("output") + n("cacheRead") + n("cacheWrite") > 0
        })
        .count();
    (compactions, replies)
}

#[test]
fn replay_reads_real_pi_sessions_as_pi_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cache = root.join("bench/pi-sessions");
    if !cache.is_dir() {
        println!("skipped: bench/pi-sessions is absent (bench/fetch_pi_sessions.py fetches it)");
        return;
    }
    let manifest = fs::read_to_string(root.join("bench/pi_sessions.tsv")).unwrap();
    let env = TestEnv::new();
    let mut seen = 0;
    for row in manifest
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let name = row.split('\t').next().unwrap();
        let Ok(text) = fs::read_to_string(cache.join(name)) else {
            println!("skipped: {name} is not in bench/pi-sessions");
            continue;
        };
        let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let id = header["id"].as_str().unwrap();
        // The name pi gives a session file, by which ctxguard knows it.
        let file = env
            .dir
            .path()
            .join(format!("2026-01-01T00-00-00-000Z_{id}.jsonl"));
        fs::write(&file, &text).unwrap();
        let run = env.run(&["replay", file.to_str().unwrap(), "--json"], "");
        assert_eq!(run.code, 0, "{name}: {run:?}");
        let r: Value = serde_json::from_str(&run.stdout).unwrap();
        let (compactions, replies) = as_pi_reads_it(&text);
        assert_eq!(r["compactions"], compactions, "{name}");
        assert_eq!(r["replies"], replies, "{name}");
        assert_eq!(r["client"], "pi", "{name}");
        seen += 1;
    }
    assert!(
        seen > 0,
        "bench/pi-sessions holds none of the manifest's sessions"
    );
}
