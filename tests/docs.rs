//! The README is a map, not the manual (under 12,000 characters, with the two commands that
//! set up and test the project, the test command the one `.ci/run` runs), and every relative
//! link of README.md and docs/*.md leads to a file that exists, and to a heading of it.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages: README.md and every docs/*.md.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The text outside fenced code blocks.
fn prose(text: &str) -> String {
    let mut fenced = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The anchors GitHub gives a page's headings: lower case, punctuation dropped but `-` and `_`,
/// spaces as `-`, a repeat numbered.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in prose(text).lines() {
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        let title = title.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while seen.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        seen.insert(unique);
    }
    seen
}

/// Every `](target)` of a page's prose.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut out = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        out.push(rest[..end].to_string());
        rest = &rest[end..];
    }
    out
}

#[test]
fn the_readme_is_a_map_with_the_commands_that_set_up_and_test_the_project() {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let chars = readme.chars().count();
    assert!(chars < 12_000, "README.md has {chars} characters");
    let develop = readme
        .split_once("\n## Develop\n")
        .expect("a Develop section")
        .1;
    let develop = develop.split("\n## ").next().unwrap();
    assert!(develop.contains("\n./install.sh "), "{develop}");
    assert!(develop.contains("\ncargo test "), "{develop}");
    let ci = fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(ci.lines().any(|l| l.trim() == "cargo test"), "{ci}");
}

#[test]
fn every_relative_link_leads_to_a_file_and_a_heading() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = fs::read_to_string(&page).unwrap();
        let dir = page.parent().unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                dir.join(file)
            };
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", page.display()));
                continue;
            }
            let is_md = target.extension().is_some_and(|e| e == "md");
            if !anchor.is_empty() && is_md {
                let headings = anchors(&fs::read_to_string(&target).unwrap());
                if !headings.contains(anchor) {
                    broken.push(format!("{}: {link} (no such heading)", page.display()));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: the reader is wrong"
    );
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_anchor_and_link_readers_work_on_literals() {
    let page = "# Using it\n## What each hook does\n```\n## not a heading](x.md)\n```\n\
                ## Remove ctxguard\n## Remove ctxguard\nsee [a](b.md#c) and [d](#e).\n";
    let found = anchors(page);
    let expected: BTreeSet<String> = [
        "using-it",
        "what-each-hook-does",
        "remove-ctxguard",
        "remove-ctxguard-1",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(found, expected);
    assert_eq!(links(page), ["b.md#c", "#e"]);
    assert!(Path::new(&root()).join("README.md").exists());
}

/// The body of `fn name` in `code`: from its signature to the first line that closes it.
fn body_of<'a>(code: &'a str, name: &str) -> &'a str {
    let at = code
        .find(&format!("fn {name}("))
        .unwrap_or_else(|| panic!("no fn {name}"));
    let end = code[at..].find("\n}\n").map_or(code.len(), |e| at + e);
    &code[at..end]
}

/// docs/architecture.md's walk-through of one PreToolUse call: every function it names in bold
/// (`**`file` `function`**`) exists in that file, and the session step calls the ones it makes
/// in the order the walk-through gives (those `step::decide` makes, in its body).
#[test]
fn the_pretooluse_walk_through_names_what_the_code_calls_in_its_order() {
    let map = fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let start = map
        .find("## One PreToolUse call, followed through")
        .unwrap();
    let walk = &map[start..];
    let walk = &walk[..walk.find("\nThe golden files").unwrap_or(walk.len())];
    let mut named = Vec::new();
    let mut rest = walk;
    while let Some(at) = rest.find("**`") {
        rest = &rest[at + 3..];
        let end = rest.find("`**").unwrap();
        let (file, function) = rest[..end].split_once("` `").unwrap();
        named.push((file.to_string(), function.to_string()));
        rest = &rest[end..];
    }
    assert!(named.len() >= 15, "{named:?}");
    let src = root().join("src");
    for (file, function) in &named {
        let code = fs::read_to_string(src.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            code.contains(&format!("fn {function}(")) || code.contains(&format!("fn {function}<")),
            "{file} has no fn {function}"
        );
    }
    // The session step: what `take` calls, then what `decide` calls, each in the order given.
    let step = fs::read_to_string(src.join("step.rs")).unwrap();
    let take = body_of(&step, "take");
    let decide = body_of(&step, "decide");
    let from = named.iter().position(|(_, f)| f == "take").unwrap();
    let mut last_take = 0;
    let mut last_decide = 0;
    for (file, function) in &named[from + 1..] {
        let call = format!("{function}(");
        if let Some(at) = take.find(&call).filter(|_| function != "take") {
            assert!(
                at >= last_take,
                "{file} {function} is called earlier in step::take"
            );
            last_take = at;
        } else if let Some(at) = decide.find(&call) {
            assert!(
                at >= last_decide,
                "{file} {function} is called earlier in step::decide"
            );
            last_decide = at;
        } else {
            panic!("step::take calls no {function} (named in {file})");
        }
    }
}
