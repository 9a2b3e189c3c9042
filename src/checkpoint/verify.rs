//! The last verification: which Bash commands run a test suite, a build, a linter or a type
//! check, and what their output says about how it went ("3 passed, 1 failed", "All tests
//! passed!", the first failing test). The verdict is read from the output whatever the exit
//! code: a run piped through `| tail` exits 0 even when tests failed.

use crate::text::{cut, sanitize};

/// A verdict line, at most.
pub(super) const VERDICT_CHARS: usize = 200;

/// How much of a result is searched for its verdict (the client cuts long output before that).
const SCAN_BYTES: usize = 256 * 1024;

/// A line longer than this is never a verdict line.
const LINE_BYTES: usize = 1024;

/// Package runners whose script names say what they run (`npm run test`, `pnpm --filter api
/// test`, `bun run lint`).
const RUNNERS: &[&str] = &[
    "npm", "pnpm", "yarn", "bun", "deno", "just", "make", "turbo", "nx", "mise", "task", "moon",
];

/// Script or target names that verify.
const SCRIPTS: &[&str] = &[
    "test",
    "tests",
    "build",
    "lint",
    "typecheck",
    "type-check",
    "check",
    "tsc",
    "verify",
    "ci",
    "analyze",
];

/// Tools that verify whatever their arguments.
const VERIFIERS: &[&str] = &[
    "tsc",
    "jest",
    "vitest",
    "mocha",
    "eslint",
    "pytest",
    "mypy",
    "pyright",
    "tox",
    "nox",
    "rspec",
    "phpunit",
    "golangci-lint",
    "ctest",
    "xcodebuild",
    "shellcheck",
    "webpack",
    "clippy-driver",
    "stylelint",
    "flake8",
    "pylint",
];

/// Tools whose first argument says whether they verify (`cargo test`, `go vet`, `mix credo`).
const SUBCOMMANDS: &[(&str, &[&str])] = &[
    (
        "cargo",
        &[
            "test", "nextest", "build", "check", "clippy", "fmt", "b", "t", "c",
        ],
    ),
    ("go", &["test", "build", "vet"]),
    (
        "mix",
        &["test", "compile", "credo", "dialyzer", "format", "check"],
    ),
    ("dart", &["analyze", "test"]),
    ("flutter", &["analyze", "test", "build"]),
    ("gradle", &["test", "build", "check"]),
    ("./gradlew", &["test", "build", "check"]),
    ("mvn", &["test", "verify", "package", "compile", "install"]),
    (
        "./mvnw",
        &["test", "verify", "package", "compile", "install"],
    ),
    ("vite", &["build"]),
    ("next", &["build", "lint"]),
    ("astro", &["build", "check"]),
    ("dotnet", &["test", "build"]),
    ("swift", &["test", "build"]),
    ("ruff", &["check", "format"]),
    ("biome", &["check", "lint", "ci"]),
    ("prettier", &["--check"]),
    ("playwright", &["test"]),
    ("rake", &["test", "spec"]),
    ("python", &["-m"]),
    ("python3", &["-m"]),
];

/// Subcommands that rewrite files unless told to check them.
const FORMATTERS: &[&str] = &["fmt", "format"];

/// Wrappers that run the command after them.
const WRAPPERS: &[&str] = &[
    "npx", "bunx", "pnpx", "uv", "poetry", "pipenv", "bundle", "exec", "run", "rtk", "time", "env",
    "sudo", "nice", "command",
];

/// Does this command (the start of a Bash call's command) run a verification? Any part of a
/// pipeline or a `&&` chain counts (`cd app && npm test 2>&1 | tail -5`), on any of its lines
/// (`cd /work/app` then `npx vitest run` on the next), but not inside a here-document (a commit
/// message that mentions `cargo test`).
pub(super) fn is_verification(command: &str) -> bool {
    runner_at(command).is_some()
}

/// Where the first part of `command` that verifies starts (quoted text and here-documents are
/// no commands: [`crate::shell::command_lines`]).
fn runner_at(command: &str) -> Option<usize> {
    for (start, plain) in crate::shell::command_lines(command) {
        let mut offset = start;
        for part in plain.split(['&', ';', '|']) {
            if verifies(part.split_whitespace().collect()) {
                return Some(offset + settings_len(part));
            }
            offset += part.len() + 1;
        }
    }
    None
}

/// How much of `part` comes before its command: spaces, and the variables it sets (`env
/// GOCACHE=/tmp/c`, `MIX_ENV=test`), which would take the room of the run's own words.
fn settings_len(part: &str) -> usize {
    let mut at = part.len() - part.trim_start().len();
    loop {
        let rest = &part[at..];
        let word = rest.split_whitespace().next().unwrap_or_default();
        let setting = word == "env" || (word.contains('=') && !word.starts_with('-'));
        let next = rest.len() - rest[word.len()..].trim_start().len();
        if !setting || word.is_empty() || at + next >= part.len() {
            return at;
        }
        at += next;
    }
}

/// A verification's command from its runner on: `cd /long/path && npx jest -t parser 2>&1`
/// is shown as `npx jest -t parser 2>&1`, so its cut keeps the arguments that tell one run
/// from another.
pub(super) fn from_runner(command: &str) -> &str {
    runner_at(command).map_or(command, |at| &command[at..])
}

fn verifies(words: Vec<&str>) -> bool {
    let mut words = words
        .into_iter()
        // Variable assignments (`MIX_ENV=test`) and redirections say nothing.
        .skip_while(|w| w.contains('=') && !w.starts_with('-'))
        .peekable();
    // Wrappers, their flags and the variables they set (`uv run`, `timeout 60`, `env X=1`).
    while let Some(w) = words.peek() {
        let assignment = w.contains('=') && !w.starts_with('-');
        if WRAPPERS.contains(w) || w.parse::<u32>().is_ok() || *w == "timeout" || assignment {
            words.next();
        } else {
            break;
        }
    }
    let words: Vec<&str> = words.collect();
    let Some(tool) = words.first() else {
        return false;
    };
    // Runs nothing it checks: it compiles only, lists, rehearses or explains.
    if words.iter().any(|w| super::runs::NO_RUN.contains(w)) {
        return false;
    }
    let tool = tool.rsplit('/').next().unwrap_or(tool);
    if VERIFIERS.contains(&tool) {
        return true;
    }
    if tool == "make"
        && words
            .iter()
            .skip(1)
            .all(|w| w.starts_with('-') || w.contains('='))
    {
        return true;
    }
    if RUNNERS.contains(&tool) {
        // The first few words that are not flags, past a `--filter x` and the like: a script
        // that verifies, or a verifier the runner starts (`yarn vitest`, `pnpm exec jest`).
        // Not a package named for installing or asking about it (`yarn add vitest`).
        // `mise task info test:e2e`, `mise tasks ls`: about a task, not running it.
        let about_task =
            matches!(words.get(1), Some(&"task" | &"tasks")) && words.get(2) != Some(&"run");
        if about_task {
            return false;
        }
        let managing = words.get(1).is_some_and(|w| {
            matches!(
                *w,
                "add"
                    | "install"
                    | "i"
                    | "remove"
                    | "rm"
                    | "uninstall"
                    | "view"
                    | "info"
                    | "why"
                    | "upgrade"
                    | "update"
                    | "outdated"
                    | "ls"
                    | "list"
            )
        });
        return words
            .iter()
            .skip(1)
            .take(6)
            .any(|w| script_verifies(w) || (!managing && VERIFIERS.contains(w)));
    }
    if let Some((_, subs)) = SUBCOMMANDS
        .iter()
        .find(|(t, _)| *t == tool || t.rsplit('/').next() == Some(tool))
    {
        if tool.starts_with("python") {
            return words
                .iter()
                .skip_while(|w| **w != "-m")
                .nth(1)
                .is_some_and(|m| {
                    matches!(
                        *m,
                        "pytest" | "mypy" | "unittest" | "pyright" | "flake8" | "pylint" | "tox"
                    ) || (*m == "ruff" && words.contains(&"check"))
                });
        }
        // Past the flags and a toolchain (`cargo +nightly test`).
        let first = words
            .iter()
            .skip(1)
            .find(|w| !w.starts_with(['-', '+']) || subs.contains(w));
        // A formatter verifies only when it checks (`cargo fmt --check`, `mix format
        // --check-formatted`); bare, it rewrites the files and says nothing of them.
        if first.is_some_and(|w| FORMATTERS.contains(w)) {
            return words.iter().any(|w| w.starts_with("--check"));
        }
        return first.is_some_and(|w| subs.contains(w));
    }
    false
}

/// `test`, `test:unit`, `lint`, `build:web`: a script that verifies (`lint:fix` fixes).
fn script_verifies(word: &str) -> bool {
    let (name, variant) = word.split_once(':').unwrap_or((word, ""));
    SCRIPTS.contains(&name) && !variant.contains("fix") && !variant.contains("watch")
}

/// The lines of `output`, split at `\n` and at `\r` alike (found as bytes: both are ASCII, so
/// every piece is whole UTF-8).
fn lines_of(output: &str) -> impl Iterator<Item = &str> {
    let mut from = 0;
    memchr::memchr2_iter(b'\n', b'\r', output.as_bytes())
        .chain(std::iter::once(output.len()))
        .map(move |at| {
            let line = &output[from..at];
            from = at + 1;
            line
        })
}

/// How a verification went: its verdict line, and whether it passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Verdict {
    pub(super) line: String,
    pub(super) passed: bool,
}

/// The verdict of a verification's output. `errored` is the result's own flag (a non-zero exit);
/// the output decides when it says more. `None` when it says nothing either way and the exit
/// code is all there is.
pub(super) fn verdict(output: &str, errored: bool) -> Verdict {
    let mut end = output.len().min(SCAN_BYTES);
    while !output.is_char_boundary(end) {
        end -= 1;
    }
    let output = &output[..end];
    let mut failing: Option<&str> = None;
    let mut passing: Option<&str> = None;
    let mut weak: Option<&str> = None;
    let mut first_failed_test: Option<&str> = None;
    // A runner's own summary line ("Tests: 49 passed, 49 total") outweighs any other line that
    // happens to hold a count: a test named "returns 3 errors" says nothing of the run.
    let mut summary_fail: Option<&str> = None;
    let mut summary_pass: Option<&str> = None;
    // The last passing summary with a count (`675 passed in 9.42s`): a lint's `All checks
    // passed!` after it, in one command, does not make the test count disappear.
    let mut counted_pass: Option<&str> = None;
    // Progress lines may be separated by carriage returns only (`flutter test`).
    // vitest and jest colour their summary (`ESC[31m1 failedESC[39m`).
    let plain;
    // (Searched as bytes: a set of chars is matched one decoded char at a time.)
    let escaped = memchr::memchr(0x1b, output.as_bytes()).is_some()
        || memchr::memmem::find(output.as_bytes(), "\u{9b}".as_bytes()).is_some();
    let output = if escaped {
        plain = crate::text::strip_escapes(output);
        plain.as_str()
    } else {
        output
    };
    for line in lines_of(output) {
        let l = line.trim();
        // A verdict is a short line: a longer one is output (a minified bundle, a dump).
        if l.is_empty() || l.starts_with("Exit code ") || l.len() > LINE_BYTES {
            continue;
        }
        let class = class(l);
        // A compiler's source excerpt (`11 |     #[error("Invalid hex")]`) is code, not a count.
        if class.is_some() && is_source_excerpt(l) {
            continue;
        }
        if first_failed_test.is_none() && is_failed_test(l) && !matches!(class, Some(Class::Fail)) {
            first_failed_test = Some(l);
        }
        let summary = class.is_some() && is_summary(l);
        match class {
            Some(Class::Fail) if summary => summary_fail = Some(l),
            Some(Class::Pass) if summary => {
                let lower = l.to_lowercase();
                if counts(&lower).any(|(_, w)| TEST_COUNTS.contains(&w)) {
                    counted_pass = Some(l);
                }
                summary_pass = Some(l);
            }
            // cargo's "warning: build failed, waiting for other jobs to finish..." follows the
            // line that says why ("error: could not compile `x` due to 30 previous errors").
            Some(Class::Fail) if l.starts_with("warning:") => {
                failing = failing.or(Some(l));
            }
            Some(Class::Fail) => failing = Some(l),
            Some(Class::Pass) => passing = Some(l),
            Some(Class::Weak) => weak = Some(l),
            None => {}
        }
    }
    if summary_fail.is_some() || summary_pass.is_some() {
        failing = summary_fail;
        passing = summary_pass.or(passing);
    }
    let clean = |l: &str| sanitize(l, true);
    if let Some(fail) = failing.or(first_failed_test) {
        let mut line = clean(fail);
        if let Some(test) = first_failed_test.filter(|t| *t != fail) {
            line = format!("{line}; first failure: {}", clean(test));
        }
        return Verdict {
            line: cut(&line, VERDICT_CHARS),
            passed: false,
        };
    }
    if errored {
        let line = super::failures::error_line(output, true)
            .unwrap_or_else(|| "failed (non-zero exit)".to_string());
        return Verdict {
            line: cut(&line, VERDICT_CHARS),
            passed: false,
        };
    }
    let line = match (passing, weak) {
        // bun: " 0 fail" then "Ran 1274 tests across 56 files.": both say something.
        (Some(pass), Some(weak)) if pass.chars().count() < 24 && weak.starts_with("Ran ") => {
            format!("{}; {}", clean(pass), clean(weak))
        }
        (Some(pass), _)
            if counted_pass.is_some_and(|c| c != pass && summary_pass == Some(pass)) =>
        {
            format!(
                "{}; {}",
                clean(counted_pass.unwrap_or_default()),
                clean(pass)
            )
        }
        (Some(line), _) | (None, Some(line)) => clean(line),
        (None, None) => "exit 0, no summary line in its output".to_string(),
    };
    Verdict {
        line: cut(&line, VERDICT_CHARS),
        passed: true,
    }
}

enum Class {
    Fail,
    Pass,
    /// Says the run happened, not how it went ("Ran 1309 tests across 58 files").
    Weak,
}

/// What a passing run counts (`675 passed`, `Ran 12 tests`).
const TEST_COUNTS: &[&str] = &["passed", "pass", "passing", "tests", "examples", "specs"];

/// Phrases of a run that failed, in lower case.
const FAIL_PHRASES: &[&str] = &[
    "some tests failed",
    "tests failed",
    "test failed",
    "build failed",
    "test result: failed",
    "errors were emitted",
    "warnings were emitted",
    "could not compile",
    "compilation failed",
    "found errors",
    "task failed",
];

/// Phrases of a run that passed, in lower case.
const PASS_PHRASES: &[&str] = &[
    "all tests passed",
    "all clean",
    "all checks passed",
    "no issues found",
    "found no issues",
    "passed successfully",
    "no errors",
    "no fixes applied",
    "test result: ok",
    "build succeeded",
    "compiled successfully",
    "built in ",
    "build successful",
    "build success",
    "0 errors",
    "no problems",
    "success: no issues",
    "finished `",
    "0 problems",
];

fn class(line: &str) -> Option<Class> {
    let lower = line.to_lowercase();
    // cargo's progress ("Compiling serde v1.0.2", "Checking testing_table v0.3.0"): a crate's
    // name and version, never a verdict, whatever words and numbers they hold.
    let progress = [
        "compiling ",
        "checking ",
        "documenting ",
        "downloaded ",
        "fresh ",
    ]
    .iter()
    .any(|p| lower.starts_with(p));
    if progress && lower.contains(" v") && !lower.contains(':') {
        return None;
    }
    // "exited with code 1", mise's "exited with status code 1", go's "exit status 2".
    let nonzero_exit = [
        "exited with code ",
        "exited with status code ",
        "exit status ",
    ]
    .iter()
    .filter_map(|p| lower.split_once(p))
    .any(|(_, code)| code.starts_with(|c: char| c.is_ascii_digit() && c != '0'));
    if nonzero_exit || FAIL_PHRASES.iter().any(|p| lower.contains(p)) {
        return Some(Class::Fail);
    }
    // go test: a package's "ok  \tpkg\t0.5s" or "FAIL\tpkg\t0.5s".
    if line.starts_with("FAIL\t") || line == "FAIL" {
        return Some(Class::Fail);
    }
    if line.starts_with("ok  \t") || line.starts_with("ok \t") {
        return Some(Class::Pass);
    }
    let mut saw_count = false;
    let mut saw_pass = false;
    for (n, word) in counts(&lower) {
        saw_count = true;
        let bad = [
            "fail", "failed", "failures", "failure", "failing", "errors", "error",
        ];
        if bad.contains(&word) {
            if n > 0 {
                return Some(Class::Fail);
            }
            saw_pass = true;
        }
        if ["passed", "pass", "passing", "ok", "succeeded"].contains(&word) {
            saw_pass = true;
        }
    }
    if lower.contains("total errors: 0") || PASS_PHRASES.iter().any(|p| lower.contains(p)) {
        return Some(Class::Pass);
    }
    // A lint's own count of warnings (`Found 10 warnings`): it ran, and passed, with warnings.
    if saw_pass || counts(&lower).any(|(_, w)| w == "warnings" || w == "warning") {
        return Some(Class::Pass);
    }
    // A runner's closing time ("Finished in 6.59s", yarn's "✨  Done in 3.21s."): the run got
    // to its end, which says nothing of how it went.
    let words = lower.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    let closing = ["finished in ", "done in "]
        .iter()
        .find_map(|p| words.strip_prefix(p));
    if closing.is_some_and(|t| t.starts_with(|c: char| c.is_ascii_digit())) {
        return Some(Class::Weak);
    }
    // `flutter test`'s "+54 -2:" progress lines end in one of the phrases above.
    (saw_count && (lower.contains("test") || lower.contains("spec"))).then_some(Class::Weak)
}

/// How the common runners begin the line that sums a run up: jest's `Tests:`, vitest's
/// `Tests  241 passed`, cargo's `test result:`, bun's `Ran N tests`, pytest's `=== 3 passed in
/// 0.16s ===`, go's `ok  \tpkg`, vite's `✓ built in`, gradle's `BUILD SUCCESSFUL`.
fn is_summary(line: &str) -> bool {
    if is_count_summary(line) {
        return true;
    }
    // A workspace runner's prefix (turbo's `apps/desktop build: ✓ built in 2.57s`).
    if let Some((prefix, rest)) = line.split_once(": ") {
        if prefix.split_whitespace().count() <= 2 && is_summary_start(rest) {
            return true;
        }
    }
    is_summary_start(line)
}

/// pytest's short summary (`-q`, or its last line): counts, then the time: `2 failed, 1074
/// passed in 3.21s`, `12 passed, 1 skipped in 0.5s`.
fn is_count_summary(line: &str) -> bool {
    let l = line.trim().trim_matches('=').trim();
    let Some((counts_part, time)) = l.rsplit_once(" in ") else {
        return false;
    };
    let time = time.trim_end_matches(|c: char| c == ')' || c.is_whitespace());
    let timed = time
        .strip_suffix('s')
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.'))
        || time.contains(':');
    timed
        && counts_part.starts_with(|c: char| c.is_ascii_digit())
        && counts_part.split(", ").all(|c| {
            c.split_once(' ').is_some_and(|(n, w)| {
                n.parse::<u64>().is_ok() && w.chars().all(char::is_alphabetic)
            })
        })
}

/// A line of a compiler's source excerpt: a line number, then `|` (after any workspace
/// prefix).
fn is_source_excerpt(line: &str) -> bool {
    let body = line
        .split_once(": ")
        .filter(|(prefix, _)| prefix.split_whitespace().count() <= 2)
        .map_or(line, |(_, rest)| rest)
        .trim_start();
    let digits = body.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && body[digits..].trim_start().starts_with('|')
}

fn is_summary_start(line: &str) -> bool {
    const STARTS: &[&str] = &[
        "Tests:",
        "Tests ",
        "Test Files ",
        "Test Suites:",
        "test result:",
        "Ran ",
        "===",
        "✓ built in",
        "BUILD ",
        "Build ",
        "FAIL\t",
        "ok  ",
        "Found ",
        "Finished ",
        "Success:",
        "All checks passed",
        "All tests passed",
    ];
    let l = line.trim_start_matches(|c: char| !c.is_alphanumeric() && c != '=' && c != '✓');
    STARTS.iter().any(|s| l.starts_with(s)) || line.contains(" tests, ")
}

/// Every "N word" in `lower`: `14 doctests, 297 tests, 11 failures` gives (14, doctests), (297,
/// tests), (11, failures).
fn counts(lower: &str) -> impl Iterator<Item = (u64, &str)> {
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let pairs: Vec<(u64, &str)> = words
        .windows(2)
        .filter_map(|w| Some((w[0].parse::<u64>().ok()?, w[1])))
        .collect();
    pairs.into_iter()
}

/// A line naming one failing test, as the common runners print it.
fn is_failed_test(line: &str) -> bool {
    (line.starts_with("test ") && line.ends_with("FAILED")) // cargo
        || line.starts_with("FAILED ") // pytest's short summary
        || line.starts_with("FAIL ") // jest, vitest
        || line.starts_with("--- FAIL:") // go
        || line.starts_with("✕ ")
        || line.starts_with("× ")
        || line.ends_with("[E]") // flutter
        || (line.starts_with(|c: char| c.is_ascii_digit()) && line.contains(") test "))
    // mix
}

#[cfg(test)]
mod tests;
