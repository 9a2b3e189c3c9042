//! What a checkpoint keeps of failed tool calls: for each, the call's subject (a Bash command, a
//! file) and one line saying what went wrong. For Bash that is the line of the output naming the
//! error, not the `Exit code N` the client puts first. The client's own wrappers and rejection
//! boilerplate are removed, and a failure that said nothing else is dropped. The same failure
//! again is counted, not repeated. Background commands count too: a task notification or a
//! `TaskOutput`/`BashOutput` result with a `failed` status.
//!
//! Never more than one line of a tool's output is kept, cut to [`LINE_CHARS`].

use std::borrow::Cow;
use std::collections::VecDeque;

use super::block::tag_text;
use super::{Failure, FAILURE_CHARS, MAX_FAILURES};
use crate::text::{cut, sanitize};

/// The line of an error kept, at most.
pub(super) const LINE_CHARS: usize = 160;
/// A failure's subject (command or path), at most.
pub(super) const SUBJECT_CHARS: usize = 80;

/// How much of a result is searched for its line. The client cuts a command's output short
/// before it reaches the transcript, so a real one is searched whole; a hostile one of
/// megabytes costs no more than this.
const SCAN_BYTES: usize = 256 * 1024;

/// How much of the chosen line is cleaned up before it is cut to [`LINE_CHARS`].
const LINE_BYTES: usize = 4096;

/// Words that make a line of output the one worth showing (matched in any case). The first line
/// holding one, not preceded by `0 ` or `no ` ("0 failed", "no errors"), wins.
const FAILURE_WORDS: &[&str] = &[
    "error",
    "fail",
    "panic",
    "assert",
    "exception",
    "traceback",
    "not found",
    "denied",
    "fatal",
    "no such file",
    "cannot",
    "can't",
    "could not",
    "unable to",
    "refused",
    "timed out",
    "invalid",
    "segmentation fault",
    "not permitted",
];

/// The client's wrapper around errors it reports itself.
const ERROR_TAGS: &[&str] = &["<tool_use_error>", "</tool_use_error>"];

/// What the client says when the user refuses a call. What follows it, if anything, is the
/// user's own reason.
const REJECTED: &str = "The user doesn't want to proceed with this tool use.";

/// The label of a background command's failure.
pub(super) const BACKGROUND: &str = "Bash (background)";

/// Did the user refuse this call (it never ran)?
pub(super) fn rejected(raw: &str) -> bool {
    crate::text::holds(raw, REJECTED)
}

/// Sentences the client adds to a refused, stopped or skipped call. They say nothing about what
/// failed, so they are removed; a result made of nothing else is not a failure worth keeping.
const BOILERPLATE: &[&str] = &[
    REJECTED,
    "The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file).",
    "The user doesn't want to take this action right now.",
    "STOP what you are doing and wait for the user to tell you how to proceed.",
    "To tell you how to proceed, the user said:",
    "Sibling tool call errored",
    "[Request interrupted by user for tool use]",
];

/// Results that are the client's notes about a call, never about a failure of the tool.
const CLIENT_NOTES: &[&str] = &["[Tool call skipped", "[Request interrupted"];

#[derive(Debug)]
struct Seen {
    tool: String,
    text: String,
    count: u64,
    /// What the tool acted on, for a tool other than Bash and the file tools.
    target: Option<String>,
    /// A failed command whole (its shown subject is cut), to tell when it ran again.
    run: Option<String>,
}

/// The last [`MAX_FAILURES`] distinct failures, oldest first.
#[derive(Debug, Default)]
pub(super) struct Failures {
    items: VecDeque<Seen>,
}

impl Failures {
    /// Records a failure of `tool`; the same tool, subject and line as a recorded one counts it
    /// again and makes it the newest.
    pub(super) fn push(&mut self, tool: &str, subject: Option<&str>, line: &str) {
        self.push_on(tool, subject, line, None, None);
    }

    /// [`Self::push`], for a tool that acted on `target`, or a command `run` whole.
    pub(super) fn push_on(
        &mut self,
        tool: &str,
        subject: Option<&str>,
        line: &str,
        target: Option<&str>,
        run: Option<&str>,
    ) {
        let text = match subject {
            Some(subject) => format!("{subject} → {line}"),
            None => line.to_string(),
        };
        let known = self
            .items
            .iter()
            .position(|f| f.tool == tool && f.text == text);
        let seen = match known.and_then(|i| self.items.remove(i)) {
            Some(seen) => Seen {
                count: seen.count.saturating_add(1),
                ..seen
            },
            None => Seen {
                tool: tool.to_string(),
                text,
                count: 1,
                target: target.map(str::to_string),
                run: run.map(str::to_string),
            },
        };
        self.items.push_back(seen);
        if self.items.len() > MAX_FAILURES {
            self.items.pop_front();
        }
    }

    /// A later call with this subject succeeded (the same command, an edit of the same file):
    /// its earlier failures are no longer current, and go.
    pub(super) fn resolve(&mut self, subject: &str) {
        let prefix = format!("{subject} → ");
        self.items.retain(|f| !f.text.starts_with(&prefix));
    }

    /// A command that succeeded: failed commands it ran again in another form are history
    /// ([`super::runs::covers`]; `verified`: it is a verification read as passing).
    pub(super) fn resolve_runs(&mut self, command: &str, verified: bool) {
        self.items.retain(|f| {
            let shell = f.tool == "Bash" || f.tool == BACKGROUND;
            let failed = f.text.split_once(" → ").map(|(shown, error)| {
                // The command whole when known: the shown one may be cut (`./cmd/…`).
                (f.run.as_deref().unwrap_or(shown), error)
            });
            !(shell
                && failed.is_some_and(|(c, error)| {
                    super::runs::covers_failure(command, c, error, verified)
                }))
        });
    }

    /// A tool that succeeded on `target`: its earlier failures on the same target are history.
    pub(super) fn resolve_target(&mut self, tool: &str, target: &str) {
        self.items
            .retain(|f| !(f.tool == tool && f.target.as_deref() == Some(target)));
    }

    pub(super) fn finish(self) -> Vec<Failure> {
        self.items
            .into_iter()
            .map(|f| Failure {
                tool: f.tool,
                error: if f.count > 1 {
                    cut(&format!("{} ({} times)", f.text, f.count), FAILURE_CHARS)
                } else {
                    cut(&f.text, FAILURE_CHARS)
                },
            })
            .collect()
    }
}

/// The line worth keeping of a failed call's result, or `None` when the result is only the
/// client's boilerplate. For Bash, the [most informative](bash_line) line.
pub(super) fn error_line(text: &str, bash: bool) -> Option<String> {
    let text = within(text, 0, SCAN_BYTES);
    let rejected = text.contains(REJECTED);
    // Copied only when there is something to remove: a result may be megabytes.
    let mut body = Cow::Borrowed(text);
    for noise in ERROR_TAGS.iter().chain(BOILERPLATE) {
        if body.contains(noise) {
            body = Cow::Owned(body.replace(noise, ""));
        }
    }
    let start = body.trim_start();
    if CLIENT_NOTES.iter().any(|note| start.starts_with(note)) {
        return None;
    }
    let line = if bash {
        bash_line(&body)
    } else {
        first_line(body.lines())
    }?;
    Some(if rejected {
        cut(&format!("rejected by the user: {line}"), LINE_CHARS)
    } else {
        line
    })
}

/// A Bash error's most informative line: the first naming a failure, else the first non-empty
/// line after `Exit code N`, else `Exit code N`.
fn bash_line(body: &str) -> Option<String> {
    let body = body.trim_start();
    let (first, rest) = body.split_once('\n').unwrap_or((body, ""));
    let (exit, rest) = match first.trim() {
        line if is_exit_line(line) => (Some(line.to_string()), rest),
        _ => (None, body),
    };
    informative(rest)
        .or_else(|| first_line(rest.lines()))
        .or(exit)
}

/// `Exit code 1`, as the client starts a failed command's result.
fn is_exit_line(line: &str) -> bool {
    line.strip_prefix("Exit code ")
        .is_some_and(|n| n.trim_start_matches('-').parse::<u32>().is_ok())
}

/// The first non-empty line, sanitised and cut.
fn first_line<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<String> {
    lines
        .into_iter()
        .map(|l| sanitize(within(l, 0, LINE_BYTES), true))
        .find(|l| !l.is_empty())
        .map(|l| cut(&l, LINE_CHARS))
}

/// `s[from..to]`, each end moved back to a character boundary (and clamped to `s`).
pub(super) fn within(s: &str, from: usize, to: usize) -> &str {
    let floor = |mut i: usize| {
        i = i.min(s.len());
        while !s.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    &s[floor(from)..floor(to)]
}

/// Prefixes of lines that advise rather than report: a compiler's hint or note, a warning. They
/// may name an error ("hint: … enough to catch typing errors") without being the failure.
const ADVICE: &[&str] = &[
    "hint",
    "note",
    "help",
    "warning",
    "warn",
    "info",
    "tip",
    "suggestion",
];

/// Does `line` advise (`hint: …`, `warning: …`, `[warn] …`, `note[E0308]: …`) rather than report?
fn is_advice(line: &str) -> bool {
    let t = line
        .trim_start()
        .trim_start_matches(['[', '(', '*', '-', '>', ' ']);
    let word: String = t
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect::<String>()
        .to_ascii_lowercase();
    ADVICE.contains(&word.as_str()) && t[word.len()..].starts_with([':', ']', '[', ')', ' '])
}

/// The first line of `text` naming a failure, as an excerpt around the word that names it;
/// hints, warnings and notes only when no other line names one. After a Python `Traceback`
/// line, the exception line it leads to (the first unindented one naming a failure) is the one
/// that says what happened.
fn informative(text: &str) -> Option<String> {
    let naming = |l: &&str| failure_word(l).is_some();
    let at = text
        .lines()
        .position(|l| naming(&l) && !is_advice(l))
        .or_else(|| text.lines().position(|l| naming(&l)))?;
    let mut lines = text.lines().skip(at);
    let mut chosen = lines.next()?;
    if chosen.to_ascii_lowercase().contains("traceback") {
        if let Some(exception) =
            lines.find(|l| !l.starts_with(char::is_whitespace) && failure_word(l).is_some())
        {
            chosen = exception;
        }
    }
    // A long line is cleaned only around its word: the excerpt shows no more.
    let at = failure_word(chosen).unwrap_or(0);
    let from = at.saturating_sub(LINE_BYTES / 2);
    let part = within(chosen, from, from + LINE_BYTES);
    let clean = sanitize(part, true);
    let clean = if from > 0 && !part.is_empty() {
        format!("…{clean}")
    } else {
        clean
    };
    Some(match failure_word(&clean) {
        Some(at) => excerpt(&clean, at),
        None => cut(&clean, LINE_CHARS),
    })
}

/// Where the first word naming a failure starts in `line` (a byte offset), if the line is more
/// than a heading: `FAILURES`, `failures:` or `==== ERRORS ====` name nothing.
fn failure_word(line: &str) -> Option<usize> {
    let words = line
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(2)
        .count();
    if words < 2 {
        return None;
    }
    // Lowercasing ASCII keeps every byte where it was.
    let lower = line.to_ascii_lowercase();
    FAILURE_WORDS
        .iter()
        .filter_map(|word| {
            lower.match_indices(word).map(|(at, _)| at).find(|&at| {
                let before = &lower.as_bytes()[..at];
                !(before.ends_with(b"0 ") || before.ends_with(b"no "))
            })
        })
        .min()
}

/// `line` cut to [`LINE_CHARS`], starting a little before byte `at` when that is far in.
fn excerpt(line: &str, at: usize) -> String {
    const LEAD: usize = 40;
    let chars_before = line[..at].chars().count();
    if chars_before + 20 <= LINE_CHARS {
        return cut(line, LINE_CHARS);
    }
    let rest: String = line.chars().skip(chars_before - LEAD).collect();
    cut(&format!("…{}", rest.trim_start()), LINE_CHARS)
}

/// A `TaskOutput` or `BashOutput` result that reports its background command `failed`: the
/// command's most informative line (stderr first), else its exit code.
pub(super) fn background_output(text: &str) -> Option<String> {
    let text = within(text, 0, SCAN_BYTES);
    if tag_text(text, "status")?.trim() != "failed" {
        return None;
    }
    let code = tag_text(text, "exit_code").map_or("?", str::trim);
    let output: String = ["stderr", "stdout", "output"]
        .iter()
        .filter_map(|t| tag_text(text, t))
        .collect::<Vec<_>>()
        .join("\n");
    bash_line(&format!("Exit code {code}\n{output}")).or_else(|| Some(format!("Exit code {code}")))
}

/// A failed task in a `<task-notification>`: its task id and its summary line.
#[derive(Debug, PartialEq)]
pub(super) struct Notified {
    pub(super) task: String,
    pub(super) line: String,
}

/// The failed tasks `text` notifies (a notification may carry several).
pub(super) fn notifications(text: &str) -> Vec<Notified> {
    let open = "<task-notification>";
    let mut out = Vec::new();
    for part in text.split(open).skip(1) {
        let one = part.split("</task-notification>").next().unwrap_or(part);
        if tag_text(one, "status").map(str::trim) != Some("failed") {
            continue;
        }
        let summary = tag_text(one, "summary").map(|s| sanitize(s, true));
        out.push(Notified {
            task: cut(&sanitize(tag_text(one, "task-id").unwrap_or(""), true), 40),
            line: cut(
                summary
                    .as_deref()
                    .filter(|s| !s.is_empty())
                    .unwrap_or("failed"),
                LINE_CHARS,
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash(text: &str) -> Option<String> {
        error_line(text, true)
    }

    /// Bash results as they reach the transcript, written here in the forms real transcripts
    /// hold them.
    #[test]
    fn bash_keeps_the_line_naming_the_failure() {
        // A line naming the failure after the exit code.
        assert_eq!(
            bash("Exit code 1\n/bin/bash: line 1: ./run.sh: No such file or directory").as_deref(),
            Some("/bin/bash: line 1: ./run.sh: No such file or directory")
        );
        // git's own `fatal:`.
        let push = "Exit code 128\nfatal: The current branch feature-quota has no upstream branch.\nTo push the current branch and set the remote as upstream, use\n\n    git push --set-upstream origin feature-quota";
        assert_eq!(
            bash(push).as_deref(),
            Some("fatal: The current branch feature-quota has no upstream branch.")
        );
        // No line names a failure: the first one after the exit code.
        let ignored = "Exit code 1\nThe following paths are ignored by one of your .gitignore files:\ndist/bundle\nhint: Use -f if you really want to add them.";
        assert_eq!(
            bash(ignored).as_deref(),
            Some("The following paths are ignored by one of your .gitignore files:")
        );
        // 2.1.330 fixture: nothing but the exit code.
        assert_eq!(bash("Exit code 1").as_deref(), Some("Exit code 1"));
        // A hook refused the command (the form of a real 2.1.49 session's; no exit code).
        assert_eq!(
            bash("Exit code 1\n(eval):2: permission denied:").as_deref(),
            Some("(eval):2: permission denied:")
        );
    }

    #[test]
    fn test_runners_give_the_failing_test_not_a_heading_or_a_summary() {
        let cargo = "Exit code 101\n   Compiling calc v0.1.0\n    Finished `test` profile\n     Running unittests src/lib.rs\n\nrunning 3 tests\ntest tests::ok ... ok\ntest result: ok. 1 passed; 0 failed; 0 ignored\ntest parser::precedence ... FAILED\n\nfailures:\n\n---- parser::precedence stdout ----\nthread 'parser::precedence' panicked at src/parser.rs:88:5:\nassertion `left == right` failed";
        assert_eq!(
            bash(cargo).as_deref(),
            Some("test parser::precedence ... FAILED")
        );
        let pytest = "Exit code 1\n============================= FAILURES =============================\n_____ test_add _____\n    def test_add():\n>       assert add(2, 3) == 6\nE       assert 5 == 6\n";
        assert_eq!(bash(pytest).as_deref(), Some("> assert add(2, 3) == 6"));
        let python = "Exit code 1\nTraceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n    raise ValueError(\"bad input\")\nValueError: bad input";
        assert_eq!(bash(python).as_deref(), Some("ValueError: bad input"));
    }

    /// Issue 20 item 7: for a failed `mix test` the compiler's hint came first.
    #[test]
    fn hints_warnings_and_notes_rank_below_a_failure() {
        let mix = "Exit code 2\n    hint: pin the variable with ^ to match on its current value instead of rebinding it\nwarning: variable \"x\" is unused (if the variable is not meant to be used, prefix it with an underscore) error\n  1) test lists the orders (ShopWeb.OrderLiveTest)\n     Assertion with == failed\n";
        assert_eq!(bash(mix).as_deref(), Some("Assertion with == failed"));
        // Only advice names a failure: it is still better than nothing.
        assert_eq!(
            bash("Exit code 1\nhint: fix the errors and try again").as_deref(),
            Some("hint: fix the errors and try again")
        );
        assert!(is_advice("warning: unused"));
        assert!(is_advice("[warn] deprecated"));
        assert!(is_advice("note[E0308]: expected"));
        assert!(!is_advice("error: could not compile"));
        assert!(!is_advice("helper failed"));
    }

    #[test]
    fn a_failure_cleared_later_goes() {
        let mut failures = Failures::default();
        failures.push(
            "Bash",
            Some("dart analyze"),
            "error - a.dart:3 - Undefined name",
        );
        failures.push(
            "Edit",
            Some("src/a.rs"),
            "String to replace not found in file.",
        );
        failures.push("Bash", Some("gh api x"), "HTTP 404");
        failures.resolve("dart analyze");
        failures.resolve("src/a.rs");
        let left: Vec<String> = failures.finish().into_iter().map(|f| f.error).collect();
        assert_eq!(left, ["gh api x → HTTP 404"]);
    }

    #[test]
    fn a_long_line_is_shown_around_the_word_that_names_the_failure() {
        let long = format!("Exit code 2\n{} error: the real problem", "x".repeat(500));
        let line = bash(&long).unwrap();
        assert!(line.starts_with('…'), "{line}");
        assert!(line.contains("error: the real problem"), "{line}");
        assert!(line.chars().count() <= LINE_CHARS);
        // Never more than one line of the output.
        assert!(!bash("Exit code 1\nerror: one\nerror: two")
            .unwrap()
            .contains("two"));
    }

    /// Only the first [`SCAN_BYTES`] of a result are searched, and only [`LINE_BYTES`] of a
    /// line are cleaned: a hostile result of megabytes costs no more.
    #[test]
    fn huge_results_are_searched_within_bounds() {
        let filler = "cc -O2 -c src/file.c -o file.o\n";
        let near = format!(
            "Exit code 2\n{}make: *** [all] Error 2",
            filler.repeat(1000)
        );
        assert_eq!(bash(&near).as_deref(), Some("make: *** [all] Error 2"));
        let far = format!(
            "Exit code 2\n{}make: *** [all] Error 2",
            filler.repeat(SCAN_BYTES / filler.len() + 1)
        );
        assert_eq!(
            bash(&far).as_deref(),
            Some("cc -O2 -c src/file.c -o file.o")
        );
        let wide = format!("Exit code 1\n{}error: at last", "日本 ".repeat(1 << 20));
        let line = bash(&wide).unwrap();
        assert!(line.chars().count() <= LINE_CHARS, "{line}");
        assert_eq!(within("日本", 1, 5), "日");
    }

    #[test]
    fn client_wrappers_and_boilerplate_are_removed() {
        // The client's wrappers, in the forms real sessions have them.
        assert_eq!(
            error_line("<tool_use_error>String to replace not found in file.\nString: ## Open questions</tool_use_error>", false).as_deref(),
            Some("String to replace not found in file.")
        );
        assert_eq!(
            error_line(
                "<tool_use_error>Unknown skill: tidy-imports</tool_use_error>",
                false
            )
            .as_deref(),
            Some("Unknown skill: tidy-imports")
        );
        // Only boilerplate: not a failure.
        for text in [
            "<tool_use_error>Sibling tool call errored</tool_use_error>",
            "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.",
            "The user doesn't want to take this action right now. STOP what you are doing and wait for the user to tell you how to proceed.",
            "[Request interrupted by user for tool use]",
            "[Tool call skipped: the turn ended to deliver the message that follows before this call ran. Nothing refused it; re-run it if still needed.]",
            "",
        ] {
            assert_eq!(error_line(text, true), None, "{text}");
        }
        // A refusal with the user's reason keeps the reason.
        let reason = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\nuse the staging database instead";
        assert_eq!(
            error_line(reason, false).as_deref(),
            Some("rejected by the user: use the staging database instead")
        );
    }

    #[test]
    fn the_same_failure_again_is_counted() {
        let mut failures = Failures::default();
        failures.push("Bash", Some("false"), "Exit code 1");
        failures.push("Read", Some("a.rs"), "File does not exist.");
        failures.push("Bash", Some("false"), "Exit code 1");
        failures.push("Bash", Some("true"), "Exit code 1");
        let list = failures.finish();
        let shown: Vec<_> = list
            .iter()
            .map(|f| format!("{}: {}", f.tool, f.error))
            .collect();
        assert_eq!(
            shown,
            [
                "Read: a.rs → File does not exist.",
                "Bash: false → Exit code 1 (2 times)",
                "Bash: true → Exit code 1",
            ]
        );
    }

    #[test]
    fn only_the_last_distinct_failures() {
        let mut failures = Failures::default();
        for i in 0..MAX_FAILURES + 3 {
            failures.push("Bash", None, &format!("fail {i}"));
        }
        let list = failures.finish();
        assert_eq!(list.len(), MAX_FAILURES);
        assert_eq!(list[0].error, "fail 3");
    }

    /// A background command's output, as `TaskOutput` returns it (the form of a real session's,
    /// with the status a failed command has).
    #[test]
    fn background_output_that_failed() {
        let failed = "<retrieval_status>success</retrieval_status>\n\n<task_id>c41d9a3</task_id>\n\n<task_type>local_bash</task_type>\n\n<status>failed</status>\n\n<exit_code>2</exit_code>\n\n<output>\n==> inventory\nCompiling 4 files (.ex)\n** (CompileError) lib/a.ex:3: undefined function foo/0\n</output>";
        assert_eq!(
            background_output(failed).as_deref(),
            Some("** (CompileError) lib/a.ex:3: undefined function foo/0")
        );
        let quiet = failed.replace(
            "** (CompileError) lib/a.ex:3: undefined function foo/0\n",
            "",
        );
        assert_eq!(background_output(&quiet).as_deref(), Some("==> inventory"));
        let done = failed.replace("<status>failed</status>", "<status>completed</status>");
        assert_eq!(background_output(&done), None);
        // BashOutput (2.0): stdout and stderr apart, stderr first.
        let shell = "<status>failed</status>\n\n<exit_code>1</exit_code>\n\n<stdout>\nstarting\n</stdout>\n\n<stderr>\nError: listen EADDRINUSE: address already in use :::4000\n</stderr>";
        assert_eq!(
            background_output(shell).as_deref(),
            Some("Error: listen EADDRINUSE: address already in use :::4000")
        );
    }

    #[test]
    fn failed_task_notifications() {
        // In the form of a real session's, with the status and summary of a failed command.
        let text = "<task-notification>\n<task-id>c41d9a3</task-id>\n<output-file>/tmp/claude-1000/tasks/c41d9a3.output</output-file>\n<status>failed</status>\n<summary>Background command \"Run CartLive tests\" failed with exit code 2</summary>\n</task-notification>\nRead the output file to retrieve the result: /tmp/claude-1000/tasks/c41d9a3.output";
        assert_eq!(
            notifications(text),
            [Notified {
                task: "c41d9a3".into(),
                line: "Background command \"Run CartLive tests\" failed with exit code 2".into()
            }]
        );
        let done = text.replace("<status>failed</status>", "<status>completed</status>");
        assert_eq!(notifications(&done), []);
    }
}
