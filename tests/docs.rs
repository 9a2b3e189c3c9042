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

/// The functions a walk-through of docs/architecture.md names in bold (`**`file` `function`**`),
/// in its order; each exists in that file.
fn walk_through(title: &str) -> Vec<(String, String)> {
    let map = fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let start = map
        .find(title)
        .unwrap_or_else(|| panic!("no {title:?} in docs/architecture.md"));
    let walk = &map[start + title.len()..];
    let walk = &walk[..walk
        .find("\n## ")
        .or_else(|| walk.find("\nThe golden files"))
        .unwrap_or(walk.len())];
    let mut named = Vec::new();
    let mut rest = walk;
    while let Some(at) = rest.find("**`") {
        rest = &rest[at + 3..];
        let end = rest.find("`**").unwrap();
        let (file, function) = rest[..end].split_once("` `").unwrap();
        named.push((file.to_string(), function.to_string()));
        rest = &rest[end..];
    }
    let src = root().join("src");
    for (file, function) in &named {
        let code = fs::read_to_string(src.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            code.contains(&format!("fn {function}(")) || code.contains(&format!("fn {function}<")),
            "{title}: {file} has no fn {function}"
        );
    }
    named
}

/// docs/architecture.md's walk-through of one PreToolUse call: every function it names in bold
/// exists in that file, and the session step calls the ones it makes in the order the
/// walk-through gives: in `step::take`, or in what it calls (`decide`, `caught_up`, `give` and
/// the drop's `act_on_drop`), each body in its own order.
#[test]
fn the_pretooluse_walk_through_names_what_the_code_calls_in_its_order() {
    let named = walk_through("## One PreToolUse call, followed through");
    assert!(named.len() >= 15, "{named:?}");
    let step = fs::read_to_string(root().join("src/step.rs")).unwrap();
    let bodies = ["take", "decide", "caught_up", "give", "act_on_drop"]
        .map(|name| (name, body_of(&step, name)));
    let mut last = [0usize; 5];
    let from = named.iter().position(|(_, f)| f == "take").unwrap();
    for (file, function) in &named[from + 1..] {
        let call = format!("{function}(");
        let found = bodies.iter().enumerate().find_map(|(i, (name, body))| {
            // A body's own signature is no call.
            let body = body.split_once('{').map_or(*body, |(_, b)| b);
            body.find(&call)
                .filter(|_| *name != function)
                .map(|at| (i, *name, at))
        });
        let Some((i, name, at)) = found else {
            panic!("step::take calls no {function} (named in {file}), nor what it calls");
        };
        assert!(
            at >= last[i],
            "{file} {function} is called earlier in step::{name}"
        );
        last[i] = at;
    }
}

/// The walk-throughs of `PreCompact` and `SessionStart(compact)` name functions that exist,
/// and each hook's `handle` leads to the capability they say it takes: `SessionStart`'s, the
/// session step on its route, which calls what the walk-through names in its order.
#[test]
fn the_precompact_and_sessionstart_walk_throughs_name_what_exists() {
    let pre = walk_through("## One PreCompact call, followed through");
    assert!(
        pre.iter()
            .any(|(f, n)| f == "checkpointing.rs" && n == "take"),
        "{pre:?}"
    );
    let start = walk_through("## One SessionStart(compact) call, followed through");
    for (file, function) in [
        ("dropped.rs", "catch_up"),
        ("precomputed.rs", "rebuild"),
        ("checkpointing.rs", "hand_over"),
        ("step/start.rs", "decide"),
    ] {
        assert!(
            start.iter().any(|(f, n)| f == file && n == function),
            "{file} {function}: {start:?}"
        );
    }
    let src = root().join("src");
    let precompact = fs::read_to_string(src.join("hooks/precompact.rs")).unwrap();
    assert!(body_of(&precompact, "handle").contains("checkpointing::take("));
    let sessionstart = fs::read_to_string(src.join("hooks/sessionstart.rs")).unwrap();
    assert!(body_of(&sessionstart, "handle").contains("Route::SessionStart("));
    let route = fs::read_to_string(src.join("step/start.rs")).unwrap();
    let bodies = ["take", "start", "decide", "block"].map(|name| (name, body_of(&route, name)));
    let mut last = [0usize; 4];
    let from = start.iter().position(|(_, f)| f == "start").unwrap();
    for (file, function) in &start[from + 1..] {
        let call = format!("{function}(");
        let found = bodies.iter().enumerate().find_map(|(i, (name, body))| {
            let body = body.split_once('{').map_or(*body, |(_, b)| b);
            body.find(&call)
                .filter(|_| *name != function)
                .map(|at| (i, *name, at))
        });
        let Some((i, name, at)) = found else {
            panic!("step/start.rs makes no {function} call (named in {file})");
        };
        assert!(
            at >= last[i],
            "{file} {function} is called earlier in step::start::{name}"
        );
        last[i] = at;
    }
}

/// No doc or source comment names, as `module::function`, a function that no longer exists in
/// that module (`nudge::give` outlived the session step by a round).
#[test]
fn no_doc_names_a_function_that_is_gone() {
    let src = root().join("src");
    let mut texts: Vec<(String, String)> = Vec::new();
    for dir in [root().join("docs"), src.clone()] {
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "md" || x == "rs") {
                    texts.push((p.display().to_string(), fs::read_to_string(&p).unwrap()));
                }
            }
        }
    }
    texts.push((
        "README.md".into(),
        fs::read_to_string(root().join("README.md")).unwrap(),
    ));
    let mut gone = Vec::new();
    for (name, text) in &texts {
        let doc = text.lines().filter(|l| {
            let t = l.trim_start();
            !name.ends_with(".rs") || t.starts_with("//")
        });
        for line in doc {
            for (at, _) in line.match_indices("::") {
                // The whole path before `::` (`commands::install`), and the name after it.
                let module: Vec<&str> = line[..at]
                    .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                    .next()
                    .unwrap_or_default()
                    .split("::")
                    .filter(|m| !m.is_empty() && *m != "crate")
                    .collect();
                let function: String = line[at + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let is_fn = function
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_lowercase());
                let Some(first) = module.first().copied() else {
                    continue;
                };
                // Module paths are snake_case (`Client::of` is a type's function, and a
                // case-blind file system would find `client/` for it).
                if module
                    .iter()
                    .any(|m| m.chars().any(|c| c.is_ascii_uppercase()))
                {
                    continue;
                }
                if !is_fn || line[at + 2 + function.len()..].starts_with("::") {
                    continue;
                }
                // The module's files (a folder's, all of them: `client` re-exports its own),
                // or, for a test file of that name, the test (a doc may name one by the start
                // of its name).
                let path = module.join("/");
                let mut files: Vec<PathBuf> = [src.join(format!("{path}.rs"))]
                    .into_iter()
                    .filter(|p| p.is_file())
                    .collect();
                if let Ok(dir) = fs::read_dir(src.join(&path)) {
                    files.extend(dir.flatten().map(|e| e.path()).filter(|p| p.is_file()));
                }
                let test = root().join("tests").join(format!("{first}.rs"));
                if files.is_empty() && !(module.len() == 1 && test.is_file()) {
                    continue;
                }
                let code: String = files
                    .iter()
                    .map(|f| fs::read_to_string(f).unwrap())
                    .collect();
                let defined = [format!("fn {function}("), format!("fn {function}<")]
                    .iter()
                    .any(|d| code.contains(d.as_str()))
                    || code.contains(&format!("mod {function}"))
                    || code.contains(&format!("use {function}"))
                    || code.contains(&format!(" {function},"))
                    || code.contains(&format!("{function}}}"))
                    || code.contains(&format!("const {}", function.to_uppercase()));
                let a_test = (module.len() == 1
                    && fs::read_to_string(&test)
                        .is_ok_and(|t| t.contains(&format!("fn {function}"))))
                    || (module.last() == Some(&"tests")
                        && code.contains(&format!("fn {function}")))
                    || fs::read_to_string(&test)
                        .is_ok_and(|t| t.contains(&format!("mod {function}")));
                if !defined && !a_test {
                    gone.push(format!("{name}: {}::{function}", module.join("::")));
                }
            }
        }
    }
    gone.sort();
    gone.dedup();
    assert!(gone.is_empty(), "{}", gone.join("\n"));
}
