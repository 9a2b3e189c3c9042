//! The house rules the code itself can be held to: every manual command returns its exit the
//! same way, every change to a marker goes through `marker::transition`, items are visible
//! outside their file only where another file uses them, and no source file grows past 700
//! lines.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::util::*;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every file under `src/` (relative, with `/`) and its text without comment lines.
fn sources() -> BTreeMap<String, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&src(), &mut files);
    files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(src()).unwrap().display().to_string();
            let code: String = fs::read_to_string(&p)
                .unwrap()
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .map(|l| format!("{l}\n"))
                .collect();
            (name.replace('\\', "/"), code)
        })
        .collect()
}

/// The code of a file before its `#[cfg(test)] mod tests`, if it has one inline.
fn non_test(code: &str) -> &str {
    code.find("#[cfg(test)]\nmod tests {")
        .map_or(code, |at| &code[..at])
}

fn is_test_file(name: &str) -> bool {
    name.ends_with("tests.rs") || name.contains("/tests/")
}

/// Does `word` occur in `text` as a whole identifier?
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The manual commands return their exit as `Result<Exit>` and `main` turns every one into the
/// process's exit code in one place: `doctor`'s notes of refused files are said after its report
/// as every other command's are (it returned early before).
#[test]
fn every_command_returns_its_exit_the_same_way() {
    let env = TestEnv::new();
    let claude = env.home().join(".claude");
    fs::create_dir_all(&claude).unwrap();
    #[cfg(unix)]
    {
        let fifo = claude.join("settings.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        if made {
            let run = env.run(&["doctor"], "");
            assert!(
                run.stderr.contains("ctxguard: note: settings ")
                    && run.stderr.contains("not a regular file (a FIFO)"),
                "{run:?}"
            );
        }
    }
    let sources = sources();
    let main = &sources["main.rs"];
    assert!(
        !main.contains("return match commands::"),
        "a command's result handled apart in main.rs"
    );
    // Each command's entry point, as main.rs calls it.
    for (file, entry) in [
        ("commands/checkpoint.rs", "pub fn show("),
        ("commands/install.rs", "pub fn install("),
        ("commands/install.rs", "pub fn uninstall("),
        ("commands/log.rs", "pub fn run("),
        ("commands/prune.rs", "pub fn run("),
        ("commands/reset.rs", "pub fn run("),
        ("commands/status.rs", "pub fn run("),
        ("commands/usage.rs", "pub fn run("),
        ("commands/replay/mod.rs", "pub fn run_either("),
        ("commands/doctor/mod.rs", "pub fn run("),
    ] {
        let code = &sources[file];
        let at = code
            .find(entry)
            .unwrap_or_else(|| panic!("{file}: {entry}"));
        let signature = &code[at..at + code[at..].find('{').unwrap()];
        assert!(signature.contains("-> Result<Exit>"), "{file}: {signature}");
    }
}

/// `marker/mod.rs` says every change goes through `transition`: outside `src/marker/` no code
/// assigns a field of a marker (`next`, `m`, `current`, `marker`) directly.
#[test]
fn every_marker_change_goes_through_transition() {
    let sources = sources();
    let marker = &sources["marker/mod.rs"];
    let start = marker.find("pub struct Marker {").unwrap();
    let end = start + marker[start..].find("\n}\n").unwrap();
    let fields: Vec<&str> = marker[start..end]
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub "))
        .filter_map(|l| l.split(':').next())
        .collect();
    assert!(fields.len() > 30, "{fields:?}");
    let mut writes = Vec::new();
    for (name, code) in &sources {
        if name.starts_with("marker/") || is_test_file(name) {
            continue;
        }
        for line in non_test(code).lines() {
            for receiver in ["next", "m", "current", "marker"] {
                for field in &fields {
                    let write = [" = ", ".take()", ".as_mut()", ".push(", ".clear()"]
                        .iter()
                        .any(|op| {
                            let lhs = format!("{receiver}.{field}{op}");
                            line.contains(&lhs)
                                && has_word(line, receiver)
                                && !line.contains(&format!("=={receiver}"))
                        });
                    if write && !line.trim_start().starts_with("let ") {
                        writes.push(format!("{name}: {}", line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        writes.is_empty(),
        "marker fields written directly: {writes:#?}"
    );
}

/// Items declared `pub` or `pub(crate)` whose name no other file of `src/` names: visible
/// outside their file, used only in it. At most ten (they were 19 in round 5).
#[test]
fn few_items_are_visible_outside_a_file_that_alone_uses_them() {
    let sources = sources();
    let kinds = ["fn", "struct", "enum", "const", "static", "type", "trait"];
    let mut lonely = Vec::new();
    for (name, code) in &sources {
        for line in code.lines() {
            let l = line.trim_start();
            let Some(rest) = l
                .strip_prefix("pub(crate) ")
                .or_else(|| l.strip_prefix("pub "))
            else {
                continue;
            };
            let rest = rest.strip_prefix("const fn ").map_or(rest, |r| r);
            let Some((kind, item)) = kinds
                .iter()
                .find_map(|k| rest.strip_prefix(&format!("{k} ")).map(|r| (*k, r)))
            else {
                continue;
            };
            let item: String = item
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let elsewhere = sources
                .iter()
                .any(|(other, code)| other != name && has_word(code, &item));
            if !elsewhere {
                lonely.push(format!("{name}: {kind} {item}"));
            }
        }
    }
    assert!(lonely.len() <= 10, "{} items: {lonely:#?}", lonely.len());
}

/// No file in `src/` over 700 lines: a file that long holds more than one idea.
#[test]
fn no_source_file_is_over_700_lines() {
    let long: Vec<String> = sources()
        .keys()
        .filter_map(|name| {
            let lines = fs::read_to_string(src().join(name))
                .unwrap()
                .lines()
                .count();
            (lines > 700).then(|| format!("{name}: {lines}"))
        })
        .collect();
    assert!(long.is_empty(), "{long:?}");
}

/// `registry.rs`'s checklist for a new hook, where a test can hold it: each hook of the list
/// has its file under `src/hooks/`, with a `handle`, declared in `hooks/mod.rs`, and its line in
/// docs/usage.md.
#[test]
fn every_hook_has_the_places_the_registrys_checklist_names() {
    let sources = sources();
    let list = &sources["hook_list.rs"];
    let usage =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/usage.md")).unwrap();
    let mut names = Vec::new();
    let mut rest = list.as_str();
    while let Some(at) = rest.find("name: \"") {
        rest = &rest[at + 7..];
        names.push(rest[..rest.find('"').unwrap()].to_string());
    }
    assert!(names.len() >= 9, "{names:?}");
    for name in &names {
        let file = format!("hooks/{name}.rs");
        let code = sources
            .get(&file)
            .unwrap_or_else(|| panic!("no src/{file}"));
        assert!(code.contains("pub fn handle("), "{file} has no handle");
        assert!(
            sources["hooks/mod.rs"].contains(&format!("pub mod {name};")),
            "hooks/mod.rs does not declare {name}"
        );
        assert!(
            usage.contains(&format!("`ctxguard {name}`")),
            "docs/usage.md does not describe {name}"
        );
    }
}

/// Sessions and rollouts gathered from public repositories, and anything cut from or rendered
/// from them, live in `../shared`, never in the tree: no file under `fixtures/` names a
/// repository that the manifests (or `../shared`'s SOURCES.txt, when it is there) list as a
/// source, and none is a SOURCES.txt of its own.
#[test]
fn no_fixture_names_a_public_repository_as_its_source() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let is_repo = |s: &str| {
        let s = s.trim();
        s.split_once('/').is_some_and(|(owner, name)| {
            let word = |w: &str| {
                !w.is_empty()
                    && w.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            };
            word(owner) && word(name) && !s.contains("//")
        })
    };
    let mut repos = std::collections::BTreeSet::new();
    for manifest in [
        "bench/sessions/MANIFEST.tsv",
        "bench/codex_rollouts.tsv",
        "bench/pi_sessions.tsv",
    ] {
        let text = fs::read_to_string(root.join(manifest)).unwrap();
        // The column headed `repo` (a header row, or a comment row of column names).
        let column = text
            .lines()
            .map(|l| l.trim_start_matches("# "))
            .find_map(|l| l.split('\t').position(|c| c == "repo"))
            .unwrap_or_else(|| panic!("{manifest}: no repo column"));
        for row in text.lines().filter(|l| !l.starts_with('#')) {
            if let Some(repo) = row.split('\t').nth(column).filter(|c| is_repo(c)) {
                repos.insert(repo.trim().to_string());
            }
        }
    }
    assert!(repos.len() >= 5, "{repos:?}");
    let shared = shared_root();
    for folder in ["transcripts", "rollouts", "from-project"] {
        let mut files = Vec::new();
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for e in fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.file_name().is_some_and(|n| n == "SOURCES.txt") {
                    out.push(p);
                }
            }
        }
        walk(&shared.join(folder), &mut files);
        for file in files {
            let text = fs::read_to_string(&file).unwrap_or_default();
            for row in text.lines().filter(|l| !l.starts_with('#')) {
                if let Some(repo) = row.split('|').nth(1).filter(|c| is_repo(c)) {
                    repos.insert(repo.trim().to_string());
                }
            }
        }
    }
    let mut files = Vec::new();
    fn all(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                all(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    all(&root.join("fixtures"), &mut files);
    let mut found = Vec::new();
    for file in &files {
        let name = file.strip_prefix(root).unwrap().display().to_string();
        if file.file_name().is_some_and(|n| n == "SOURCES.txt") {
            found.push(format!("{name}: a list of sources"));
        }
        let text = String::from_utf8_lossy(&fs::read(file).unwrap()).into_owned();
        for repo in &repos {
            if text.contains(repo.as_str()) {
                found.push(format!("{name} names {repo}"));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
