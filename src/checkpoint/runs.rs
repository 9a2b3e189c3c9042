//! The same run in another form: a failed command is history once a later command ran the same
//! program the same way and succeeded, whether piped (`npm run build 2>&1 | tail -30`), with
//! other flags, inside a compound (`git pull --rebase && git push origin x`), or over the whole
//! suite (`cargo test` after `cargo test -p core` failed).
//!
//! A command is split into its parts (lines, `&&`, `||`, `;`, `|`; a here-document's body is
//! text). A part is known by its program and subcommand (`git push`, `npm run build`, `cargo
//! test`), past variable assignments and wrappers (`npx`, `uv run`, `timeout 60`), and by its
//! positional arguments (flags and redirections left out). Helpers that only move around or
//! shape output (`cd`, `echo`, `tail`, `grep`) are no part of a run. A failed command is covered
//! when every part of it is: by a part of the successful one with the same program and
//! subcommand, and the same positional arguments or none (the whole suite). A part whose output
//! went into a pipe succeeded only as far as its verdict says: it counts only for a
//! verification whose output was read as passing.

/// Programs that move around or shape output: no run of their own.
const HELPERS: &[&str] = &[
    "cd", "pushd", "popd", "export", "source", ".", "echo", "printf", "set", "true", "sleep",
    "tail", "head", "grep", "rg", "tee", "wc", "sort", "uniq", "cat", "less", "sed", "awk", "cut",
    "tr", "xargs", "jq", "clear", "wait",
];

/// Flags with which a verifier runs nothing it checks (`cargo test --no-run`, `pytest
/// --collect-only`, `git push --dry-run`, `--help`).
pub(super) const NO_RUN: &[&str] = &[
    "--no-run",
    "--dry-run",
    "--help",
    "-h",
    "--version",
    "-V",
    "--collect-only",
    "--co",
    "--list",
    "--listTests",
    "--list-tests",
];

/// Flags that leave part of the suite out (`--exclude core`, `-k 'not slow'`): such a run is
/// not the same run.
const NARROWING: &[&str] = &[
    "--exclude",
    "--skip",
    "--ignore",
    "--deselect",
    "-k",
    "--filter",
    "-run",
    "--run",
    "--grep",
    "-t",
    "--testNamePattern",
    "--testPathPattern",
    "--only",
    "--lib",
    "--bin",
    "--test",
];

/// Words that run the command after them.
const WRAPPERS: &[&str] = &[
    "npx", "bunx", "pnpx", "exec", "time", "env", "sudo", "nice", "command", "timeout", "rtk",
];

/// Runners whose second word is a verb and whose third names what runs (`npm run build`,
/// `uv run pytest`).
const VERB_RUNNERS: &[&str] = &[
    "npm", "pnpm", "yarn", "bun", "deno", "mise", "uv", "poetry", "pipenv", "bundle", "cargo",
];

/// One part of a command: its program and subcommand, its positional arguments, and whether its
/// output went into a pipe.
#[derive(Debug, PartialEq)]
struct Part {
    key: Vec<String>,
    args: Vec<String>,
    piped: bool,
}

/// Interpreters that, given their program inline (`python3 -c '…'`, `node -e`, `perl -ne`),
/// shape the output piped into them as `awk` and `sed` do.
const INTERPRETERS: &[&str] = &[
    "python", "python2", "python3", "node", "ruby", "perl", "php",
];

/// The parts of `command` that run something. A pipeline is the check its first running stage
/// makes: a later stage that reads it through a program written inline in the command line
/// (`… | python3 -c '…'`) only shapes what that check printed, as `grep` or `awk` would.
fn parts(command: &str) -> Vec<Part> {
    let mut out = Vec::new();
    for (_, plain) in crate::shell::command_lines(command) {
        // Whether the piece reads a pipe, and whether a stage before it in that pipe ran.
        let (mut reads, mut fed_by_run) = (false, false);
        for (text, piped) in split(&plain) {
            let part = part(text, piped).filter(|_| !(reads && fed_by_run && inline(text)));
            fed_by_run = piped && (part.is_some() || (reads && fed_by_run));
            reads = piped;
            if let Some(part) = part {
                out.push(part);
            }
        }
    }
    out
}

/// Does this stage run an interpreter on a program written in the command line?
fn inline(text: &str) -> bool {
    let mut words = text.split_whitespace().skip_while(|w| !is_interpreter(w));
    words.next().is_some()
        && words.next().is_some_and(|flag| {
            matches!(flag, "-c" | "-e" | "--eval" | "-r")
                || (flag.len() <= 4 && flag.starts_with('-') && flag.ends_with('e'))
        })
}

fn is_interpreter(word: &str) -> bool {
    let name = word.rsplit('/').next().unwrap_or(word);
    INTERPRETERS.contains(&name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.'))
        || INTERPRETERS.contains(&name)
}

/// A line split at `&&`, `||`, `;`, `|` and a background `&` (never the `&` of a redirection such
/// as `2>&1` or `&>`), each piece with whether a single `|` follows it.
fn split(line: &str) -> Vec<(&str, bool)> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let redirect =
            b == b'&' && ((i > 0 && bytes[i - 1] == b'>') || bytes.get(i + 1) == Some(&b'>'));
        if (b == b'&' && !redirect) || b == b';' || b == b'|' {
            let double = bytes.get(i + 1) == Some(&b);
            let piped = b == b'|' && !double;
            out.push((&line[start..i], piped));
            i += if double { 2 } else { 1 };
            start = i;
            continue;
        }
        i += 1;
    }
    out.push((&line[start..], false));
    out
}

fn part(text: &str, piped: bool) -> Option<Part> {
    let mut words = text
        .split_whitespace()
        .skip_while(|w| w.contains('=') && !w.starts_with('-'))
        .peekable();
    while let Some(w) = words.peek() {
        if WRAPPERS.contains(w) || w.parse::<f64>().is_ok() || w.starts_with('-') {
            words.next();
        } else {
            break;
        }
    }
    let all: Vec<&str> = words.collect();
    // A run that runs less, or nothing: it clears no failure.
    if all
        .iter()
        .any(|w| NO_RUN.contains(w) || NARROWING.iter().any(|n| w.starts_with(n)))
    {
        return None;
    }
    let words: Vec<&str> = all
        .into_iter()
        .filter(|w| !w.contains(['>', '<']) && !w.starts_with('-'))
        .collect();
    let program = words.first()?.rsplit('/').next()?;
    // A word that names no program: the quote closing a string opened lines above.
    let named = program.starts_with(|c: char| c.is_alphanumeric() || matches!(c, '.' | '_' | '$'));
    if HELPERS.contains(&program) || !named {
        return None;
    }
    let n = if VERB_RUNNERS.contains(&program) && matches!(words.get(1), Some(&("run" | "exec"))) {
        3
    } else {
        2
    };
    let n = n.min(words.len());
    let mut key = vec![program.to_string()];
    key.extend(words[1..n].iter().map(|w| (*w).to_string()));
    Some(Part {
        key,
        // `.` and `./...` name the whole project: the whole suite, as no argument does.
        args: words[n..]
            .iter()
            .filter(|w| !matches!(**w, "." | "./" | "./..." | "..."))
            .map(|w| (*w).to_string())
            .collect(),
        piped,
    })
}

/// Does the successful command `success` cover the failed command `failed` (see the module doc)?
/// `verified`: `success` is a verification whose output was read as passing.
#[cfg(test)]
fn covers(success: &str, failed: &str, verified: bool) -> bool {
    covers_failure(success, failed, "", verified)
}

/// [`covers`], knowing the line the failure printed (`error`): where it names the task of one
/// part of a compound (`[lint:go] ERROR task failed` after `mise run lint && mise run test:ci`),
/// that part failed and the ones after it never ran, so only it must run again.
pub(super) fn covers_failure(success: &str, failed: &str, error: &str, verified: bool) -> bool {
    let done = parts(success);
    let mut wanted = parts(failed);
    if wanted.len() > 1 {
        let named = |p: &Part| {
            p.key.last().is_some_and(|task| {
                task.len() >= 3 && (error.contains(&format!("[{task}")) || error.starts_with(task))
            })
        };
        if let Some(at) = wanted.iter().position(named) {
            wanted.truncate(at + 1);
            wanted.drain(..at);
        }
    }
    !wanted.is_empty()
        && wanted.iter().all(|f| {
            done.iter().any(|s| {
                // Piped, a run's exit status is its reader's: a piped success says as much as
                // a piped failure did, and more only when its output read as passing.
                s.key == f.key
                    && (s.args.is_empty() || s.args == f.args)
                    && (!s.piped || verified || f.piped)
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_run_piped_with_other_flags_in_a_compound_or_whole() {
        // Piped: a verification read as passing.
        assert!(covers(
            "npm run build 2>&1 | tail -30",
            "npm run build",
            true
        ));
        assert!(!covers(
            "npm run build 2>&1 | tail -30",
            "npm run build",
            false
        ));
        // Other flags, a compound, the whole suite.
        assert!(covers("cargo test --release", "cargo test -q", false));
        assert!(covers(
            "git pull --rebase origin main && git push origin feat",
            "git push origin feat",
            false
        ));
        assert!(covers("cd app && pnpm test", "pnpm test src/date", false));
        assert!(covers(
            "mise run test:ci 2>&1 | tail -30",
            "mise run test:ci",
            true
        ));
        assert!(covers(
            "uv run pytest",
            "uv run pytest tests/test_a.py",
            true
        ));
        // Not the same run.
        assert!(!covers("pnpm test src/a", "pnpm test src/b", true));
        assert!(!covers("python x.py", "python y.py", false));
        assert!(!covers("git status", "git push origin feat", false));
        assert!(!covers("cargo build", "cargo test", true));
        // Every part of the failed command must be covered...
        assert!(!covers("git pull", "git pull && git push", false));
        // ...but the part the error names failed, and those after it never ran.
        assert!(covers_failure(
            "mise run lint",
            "mise run lint && mise run test:ci",
            "[lint:go] ERROR task failed",
            true
        ));
        assert!(!covers_failure(
            "mise run lint",
            "mise run lint && mise run test:ci",
            "[test:ci] FAIL",
            true
        ));
        // `./...` is the whole project.
        assert!(covers(
            "golangci-lint run ./...",
            "golangci-lint run ./cmd/cli",
            true
        ));
        // Runs that run less, or nothing, clear nothing.
        assert!(!covers("cargo test --no-run", "cargo test", true));
        assert!(!covers(
            "git push --dry-run origin feat",
            "git push origin feat",
            false
        ));
        assert!(!covers(
            "cargo test --workspace --exclude core",
            "cargo test -p core",
            true
        ));
        assert!(!covers("npm run build -- --help", "npm run build", true));
        // A quoted commit message runs nothing.
        assert!(!covers(
            "git commit -m \"wip; cargo test --all\"",
            "cargo test",
            false
        ));
        // A stage reading the pipe through an inline program shapes its output: the same
        // check again with another reader redoes it (its reader's failure was the one seen).
        let count = "lint run --out-format=json ./... 2>/dev/null | python3 -c \"\nimport json\n\"";
        assert!(covers(
            "lint run ./... 2>&1 | grep -E x | sort",
            count,
            false
        ));
        assert!(covers(
            "gh pr view 7 --json checks --jq '.a' | head",
            "sleep 30; gh pr view 7 --json checks --jq '.a' | head",
            false
        ));
        // A piped success alone says nothing of a run that failed unpiped...
        assert!(!covers("gh pr view 7 | head", "gh pr view 7", false));
        // ...an interpreter running a script, or fed by a helper, is a run of its own.
        assert!(!covers(
            "lint run | sort",
            "lint run | python3 sum.py",
            false
        ));
        assert!(!covers(
            "true",
            "cat x.json | python3 -c 'import json'",
            false
        ));
        assert_eq!(parts("cat x | node -e 'x'").len(), 1);
        // A redirection's `&` splits nothing; a here-document's body is text.
        assert_eq!(parts("make test 2>&1").len(), 1);
        assert!(parts("cat <<EOF\ncargo test\nEOF").is_empty());
    }
}
