//! Recognising ctxguard's own commands in settings, by what they run rather than by an exact
//! file name: `<program> <subcommand> ...` where the program is ctxguard, written as a shell
//! line (`"command": "<line>"`, which the client runs with `sh -c`) or in exec form
//! (`"command": "<program>", "args": [...]`, run with no shell). A program is ctxguard
//! when its file name starts with `ctxguard` (`ctxguard`, `ctxguard-0.1.0`, `ctxguard-bin`), when
//! it is the path install writes or another path of the same binary (a link to it, another copy
//! under any name; also reached through `~/`, `$HOME/` or a bare name looked up on `PATH`), or
//! when it is the plugin's launcher (`${CLAUDE_PLUGIN_ROOT}/hooks/run.sh`, or a `hooks/run.sh` anywhere
//! under a `ctxguard*` directory: a checkout, a plugin cache). Everything else is the user's and
//! is never touched.

use serde_json::{json, Map, Value};

use crate::shell::{lex, shell_quote, Word};

/// What a hook entry runs, as it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookCommand {
    /// `"command": "<line>"`: a line for the shell.
    Shell(String),
    /// `"command": "<program>", "args": [...]`: the program, run directly with these arguments.
    Exec { program: String, args: Vec<String> },
}

impl HookCommand {
    /// What `entry` runs; `None` without a `command` string, or with an `args` that is not a list
    /// of strings (the client refuses such an entry).
    pub fn of(entry: &Value) -> Option<HookCommand> {
        let command = entry.get("command")?.as_str()?.to_string();
        match entry.get("args") {
            None => Some(HookCommand::Shell(command)),
            Some(Value::Array(args)) => Some(HookCommand::Exec {
                program: command,
                args: args
                    .iter()
                    .map(|a| a.as_str().map(str::to_string))
                    .collect::<Option<_>>()?,
            }),
            Some(_) => None,
        }
    }

    /// The exec form of `program` with `args`.
    pub fn exec(program: &str, args: &[&str]) -> HookCommand {
        HookCommand::Exec {
            program: program.to_string(),
            args: args.iter().map(|a| (*a).to_string()).collect(),
        }
    }

    /// Writes this into `entry` in place of what it ran, every other key kept in its place
    /// (`args` right after `command`).
    pub fn write_to(&self, entry: &mut Map<String, Value>) {
        let (command, args) = match self {
            HookCommand::Shell(line) => (line.as_str(), None),
            HookCommand::Exec { program, args } => (program.as_str(), Some(args)),
        };
        let old = std::mem::take(entry);
        let mut placed = false;
        for (key, value) in old {
            match key.as_str() {
                "args" => {}
                "command" => {
                    entry.insert(key, json!(command));
                    if let Some(args) = args {
                        entry.insert("args".into(), json!(args));
                    }
                    placed = true;
                }
                _ => {
                    entry.insert(key, value);
                }
            }
        }
        if !placed {
            entry.insert("command".into(), json!(command));
            if let Some(args) = args {
                entry.insert("args".into(), json!(args));
            }
        }
    }

    /// A new hook entry running this.
    pub fn entry(&self) -> Value {
        let mut entry = Map::new();
        entry.insert("type".into(), json!("command"));
        self.write_to(&mut entry);
        Value::Object(entry)
    }
}

impl std::fmt::Display for HookCommand {
    /// The shell line: as written, or the exec form's words quoted for `sh`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HookCommand::Shell(line) => f.write_str(line),
            HookCommand::Exec { program, args } => {
                f.write_str(&shell_quote(program))?;
                for arg in args {
                    write!(f, " {}", shell_quote(arg))?;
                }
                Ok(())
            }
        }
    }
}

/// What makes a program ctxguard, beyond the file-name and launcher rules every caller shares.
#[derive(Clone, Copy)]
pub struct Ours<'a> {
    /// The path install writes (the running binary's canonical path).
    pub bin: Option<&'a str>,
    /// Whether a program is this binary under another name (a link to it, another copy),
    /// given as [`program_to_check`] writes it: a path, `~/rest` (under the home directory), or
    /// a bare name (looked up on `PATH`).
    pub same_binary: &'a dyn Fn(&str) -> bool,
}

impl Ours<'static> {
    /// The rules that need no knowledge of the running binary (as `doctor` uses them).
    const BY_NAME: Ours<'static> = Ours {
        bin: None,
        same_binary: &|_| false,
    };
}

impl Ours<'_> {
    /// Is `word`, followed by `args`, a program that is ctxguard? Its name, the installed path or
    /// the plugin launcher say so at once; the program file itself is looked at only when the
    /// arguments start with one of ctxguard's hook subcommands.
    fn is_program(&self, word: &Word, args: &[Word]) -> bool {
        let text = word.text.as_str();
        let name = text.rsplit(['/', '\\']).next().unwrap_or(text);
        let hook_shaped = || {
            args.first()
                .is_some_and(|a| a.literal && crate::hook_list::find(&a.text).is_some())
        };
        // A script of the user's named after it (`ctxguard-notify.sh`) is theirs.
        (name.starts_with("ctxguard") && !is_script(name))
            || self.bin == Some(text)
            || is_launcher(text)
            || (hook_shaped() && program_to_check(word).is_some_and(|p| (self.same_binary)(&p)))
    }
}

/// The program a word runs, in the form [`Ours::same_binary`] is asked about: a literal path as
/// written; `~/rest`, `$HOME/rest` or `${HOME}/rest`, unquoted and with nothing else to expand,
/// as `~/rest`; a literal bare name as it is, for a look-up on `PATH` (which the shell, and in
/// exec form the client, do). `None` for anything else the shell would change, and for a quoted
/// `~` (which the shell leaves alone).
fn program_to_check(word: &Word) -> Option<String> {
    let text = word.text.as_str();
    if text.is_empty() {
        return None;
    }
    if word.literal {
        return (!text.starts_with('~')).then(|| text.to_string());
    }
    let rest = ["~/", "$HOME/", "${HOME}/"]
        .iter()
        .find_map(|prefix| text.strip_prefix(prefix))?;
    let plain =
        !rest.is_empty() && !rest.contains(|c: char| "$`~*?[]{}".contains(c) || c.is_whitespace());
    plain.then(|| format!("~/{rest}"))
}

/// Does a program's file name end like a script's (`.sh`, `.py`, ...)? ctxguard is a binary.
fn is_script(name: &str) -> bool {
    const SCRIPTS: &[&str] = &[
        ".sh", ".bash", ".zsh", ".fish", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".ps1",
        ".bat", ".cmd",
    ];
    let lower = name.to_ascii_lowercase();
    SCRIPTS.iter().any(|ext| lower.ends_with(ext))
}

/// The plugin's `hooks/run.sh`, as its hooks.json names it or as a path into a checkout.
fn is_launcher(program: &str) -> bool {
    let Some(dir) = program.strip_suffix("/hooks/run.sh") else {
        return false;
    };
    dir == "${CLAUDE_PLUGIN_ROOT}"
        || dir == "$CLAUDE_PLUGIN_ROOT"
        || dir.split('/').any(|d| d.starts_with("ctxguard"))
}

/// A command line that runs ctxguard.
#[derive(Debug)]
pub struct Call<'l> {
    line: &'l str,
    program: Word,
    /// The words after the program.
    pub args: Vec<Word>,
    /// The line goes on past `args` with something that cannot be read statically.
    pub rest: bool,
}

/// The call a hook entry makes, if it runs ctxguard, in either form.
pub fn hook_call<'c>(command: &'c HookCommand, ours: Ours) -> Option<Call<'c>> {
    match command {
        HookCommand::Shell(line) => call(line, ours),
        HookCommand::Exec { program, args } => {
            let word = |text: &str| Word {
                text: text.to_string(),
                literal: true,
                span: 0..0,
            };
            let program = word(program);
            let args: Vec<Word> = args.iter().map(|a| word(a)).collect();
            let ours = ours.is_program(&program, &args);
            ours.then_some(Call {
                line: "",
                program,
                args,
                rest: false,
            })
        }
    }
}

/// The call, if `line` runs ctxguard.
pub fn call<'l>(line: &'l str, ours: Ours) -> Option<Call<'l>> {
    let mut lexed = lex(line);
    if lexed.words.is_empty() || !ours.is_program(&lexed.words[0], &lexed.words[1..]) {
        return None;
    }
    let program = lexed.words.remove(0);
    Some(Call {
        line,
        program,
        args: lexed.words,
        rest: lexed.rest,
    })
}

impl Call<'_> {
    /// The subcommand, when it is written literally.
    pub fn subcommand(&self) -> Option<&str> {
        self.args
            .first()
            .filter(|w| w.literal)
            .map(|w| w.text.as_str())
    }

    /// The arguments, when they can be given to the program directly (exec form): every word
    /// literal and nothing after them. `None` for a line that needs its shell (an expansion, a
    /// redirection, another command).
    pub fn exec_args(&self) -> Option<Vec<&str>> {
        if self.rest || self.args.iter().any(|w| !w.literal) {
            return None;
        }
        Some(self.args.iter().map(|w| w.text.as_str()).collect())
    }

    /// The same line running `bin` instead, everything after the program kept byte for byte;
    /// `None` when it already runs `bin`.
    pub fn with_program(&self, bin: &str) -> Option<String> {
        if self.program.literal && self.program.text == bin {
            return None;
        }
        let span = &self.program.span;
        Some(format!(
            "{}{}{}",
            &self.line[..span.start],
            shell_quote(bin),
            &self.line[span.end..]
        ))
    }
}

/// What a ctxguard status-line command wraps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wrapped {
    /// `statusline` with only `--no-color`, `--quiet` and at most one `--then CMD` (or
    /// `--then=CMD`), in any order: `CMD`, exactly as the shell passes it, if there is one.
    Known(Option<String>),
    /// Anything else (another flag, an expansion, an operator): ctxguard's, but it cannot say
    /// exactly what the user's part is.
    Unknown,
}

/// The status-line call, if `line` is ctxguard's status line.
pub fn statusline<'l>(line: &'l str, ours: Ours) -> Option<(Call<'l>, Wrapped)> {
    let call = call(line, ours)?;
    if call.subcommand() != Some(crate::hook_list::STATUSLINE.name) {
        return None;
    }
    let wrapped = wrapped(&call).map_or(Wrapped::Unknown, Wrapped::Known);
    Some((call, wrapped))
}

// Three answers: unknown (`None`), no command wrapped, or this one.
#[allow(clippy::option_option)]
fn wrapped(call: &Call) -> Option<Option<String>> {
    if call.rest {
        return None;
    }
    let mut then = None;
    let mut args = call.args[1..].iter();
    while let Some(arg) = args.next() {
        if !arg.literal {
            return None;
        }
        let value = match arg.text.as_str() {
            "--no-color" | "--quiet" => continue,
            "--then" => args.next().filter(|w| w.literal)?.text.clone(),
            other => other.strip_prefix("--then=")?.to_string(),
        };
        if then.replace(value).is_some() {
            return None;
        }
    }
    Some(then)
}

/// The innermost ctxguard layer of a status line that earlier installs wrapped in itself
/// (`ctxguard statusline --then 'ctxguard statusline --then ...'`): the first layer whose
/// command is not ctxguard's status line. `None` when `line` is not ctxguard's status line.
pub fn innermost(line: &str, ours: Ours) -> Option<String> {
    let (_, mut wrapped) = statusline(line, ours)?;
    let mut layer = line.to_string();
    // Each layer is shorter than the one around it, so this ends.
    while let Wrapped::Known(Some(inner)) = wrapped {
        match statusline(&inner, ours).map(|(_, w)| w) {
            Some(w) => {
                wrapped = w;
                layer = inner;
            }
            None => break,
        }
    }
    Some(layer)
}

/// Does this hook command run `ctxguard SUBCOMMAND` (by the rules every caller shares)?
pub fn runs_ctxguard(command: &str, subcommand: &str) -> bool {
    call(command, Ours::BY_NAME).is_some_and(|c| c.subcommand() == Some(subcommand))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIN: &str = "/opt/tools/cg";

    fn ours() -> Ours<'static> {
        Ours {
            bin: Some(BIN),
            same_binary: &|p| p == "/usr/local/bin/cg-link",
        }
    }

    #[test]
    fn programs_are_recognised_by_what_they_run() {
        for line in [
            "/x/ctxguard pretooluse",
            "'/my dir/ctxguard' precompact",
            "ctxguard sessionstart",
            "/x/ctxguard-0.1.0 pretooluse",
            "/x/ctxguard-bin pretooluse",
            r"\/x/ctxguard pretooluse",
            "~/.local/bin/ctxguard pretooluse",
            "\"$HOME/bin/ctxguard\" pretooluse",
            "${CLAUDE_PLUGIN_ROOT}/hooks/run.sh pretooluse",
            "\"$CLAUDE_PLUGIN_ROOT/hooks/run.sh\" pretooluse",
            "/home/u/src/ctxguard/hooks/run.sh pretooluse",
            "/home/u/.claude/plugins/cache/m/ctxguard/0.1.0/hooks/run.sh pretooluse",
            "/opt/tools/cg pretooluse",
            "/usr/local/bin/cg-link pretooluse",
            "/x/ctxguard pretooluse 2>>/tmp/log",
        ] {
            let c = call(line, ours()).unwrap_or_else(|| panic!("{line}"));
            assert!(
                matches!(
                    c.subcommand(),
                    Some("pretooluse" | "precompact" | "sessionstart")
                ),
                "{line}"
            );
        }
        for line in [
            "echo ctxguard pretooluse",
            "/x/guard pretooluse",
            "/x/ctxguard/guard pretooluse",
            "/opt/tools/cg2 pretooluse",
            "/home/u/src/other/hooks/run.sh pretooluse",
            "$(which ctxguard) pretooluse",
            // A script of the user's named after ctxguard is theirs.
            "/home/u/bin/ctxguard-notify.sh sessionend",
            "ctxguard-log.py pretooluse",
            "",
        ] {
            assert!(call(line, ours()).is_none(), "{line}");
        }
        // Without knowing the binary, only the shared rules apply.
        assert!(call("/opt/tools/cg pretooluse", Ours::BY_NAME).is_none());
        assert!(runs_ctxguard("/x/ctxguard-0.1.0 precompact", "precompact"));
        assert!(!runs_ctxguard("/x/ctxguard status", "statusline"));
        assert!(!runs_ctxguard("/x/ctxguard \"$SUB\"", "pretooluse"));
    }

    #[test]
    fn copies_reached_through_home_or_path_are_asked_about() {
        // `same_binary` knows `~/bin/cg` (the home directory's) and `cg` (on PATH) as this one.
        let ours = Ours {
            bin: Some(BIN),
            same_binary: &|p| p == "~/bin/cg" || p == "cg",
        };
        for line in [
            "~/bin/cg pretooluse",
            "$HOME/bin/cg precompact",
            "\"$HOME/bin/cg\" precompact",
            "\"${HOME}/bin/cg\" sessionstart",
            "cg pretooluse",
            "'cg' statusline --then 'mine'",
        ] {
            assert!(call(line, ours).is_some(), "{line}");
        }
        for line in [
            // Not a hook subcommand: never asked.
            "cg status",
            "~/bin/cg",
            // Other names, other places, or more than the home directory to expand.
            "~/bin/cg2 pretooluse",
            "~other/bin/cg pretooluse",
            "$HOMEX/bin/cg pretooluse",
            "$HOME/$SUB/cg pretooluse",
            "~/bin/*/cg pretooluse",
            // A quoted `~` is a directory named `~`.
            "'~/bin/cg' pretooluse",
        ] {
            assert!(call(line, ours).is_none(), "{line}");
        }
        let exec = HookCommand::exec("cg", &["pretooluse"]);
        assert!(hook_call(&exec, ours).is_some());
        let word = |text: &str, literal: bool| Word {
            text: text.into(),
            literal,
            span: 0..0,
        };
        assert_eq!(
            program_to_check(&word("/x/cg", true)).as_deref(),
            Some("/x/cg")
        );
        assert_eq!(program_to_check(&word("cg", true)).as_deref(), Some("cg"));
        assert_eq!(
            program_to_check(&word("${HOME}/x/cg", false)).as_deref(),
            Some("~/x/cg")
        );
        assert_eq!(program_to_check(&word("~", false)), None);
        assert_eq!(program_to_check(&word("~/", false)), None);
        assert_eq!(program_to_check(&word("", true)), None);
    }

    #[test]
    fn hook_entries_in_both_forms() {
        let shell = json!({"type": "command", "command": "/x/ctxguard pretooluse", "timeout": 5});
        let exec = json!({"type": "command", "command": "/x/ctxguard", "args": ["pretooluse"]});
        let shell = HookCommand::of(&shell).unwrap();
        let exec = HookCommand::of(&exec).unwrap();
        assert_eq!(shell, HookCommand::Shell("/x/ctxguard pretooluse".into()));
        assert_eq!(exec, HookCommand::exec("/x/ctxguard", &["pretooluse"]));
        for c in [&shell, &exec] {
            let call = hook_call(c, ours()).unwrap();
            assert_eq!(call.subcommand(), Some("pretooluse"));
            assert_eq!(call.exec_args(), Some(vec!["pretooluse"]));
        }
        // Exec-form words are what the program gets: nothing is expanded or split.
        let spaced = HookCommand::exec("/my dir/ctxguard", &["$HOME", "it's"]);
        assert_eq!(spaced.to_string(), r"'/my dir/ctxguard' '$HOME' 'it'\''s'");
        assert_eq!(
            hook_call(&spaced, ours()).unwrap().exec_args(),
            Some(vec!["$HOME", "it's"])
        );
        // A shell line that needs its shell has no exec form.
        let piped = HookCommand::Shell("/x/ctxguard pretooluse | tee log".into());
        assert_eq!(hook_call(&piped, ours()).unwrap().exec_args(), None);
        // Not a list of strings: not an entry the client runs.
        assert_eq!(HookCommand::of(&json!({"command": "x", "args": "y"})), None);
        assert_eq!(HookCommand::of(&json!({"command": "x", "args": [1]})), None);
        assert_eq!(HookCommand::of(&json!({"args": []})), None);
    }

    #[test]
    fn written_in_place_with_every_other_key_kept() {
        let mut entry =
            json!({"type": "command", "command": "/x/ctxguard pretooluse", "timeout": 5});
        HookCommand::exec("/y/ctxguard", &["pretooluse"]).write_to(entry.as_object_mut().unwrap());
        assert_eq!(
            serde_json::to_string(&entry).unwrap(),
            r#"{"type":"command","command":"/y/ctxguard","args":["pretooluse"],"timeout":5}"#
        );
        HookCommand::Shell("/z/ctxguard pretooluse 2>/dev/null".into())
            .write_to(entry.as_object_mut().unwrap());
        assert_eq!(
            serde_json::to_string(&entry).unwrap(),
            r#"{"type":"command","command":"/z/ctxguard pretooluse 2>/dev/null","timeout":5}"#
        );
        assert_eq!(
            HookCommand::exec("/y/ctxguard", &["precompact"]).entry(),
            json!({"type": "command", "command": "/y/ctxguard", "args": ["precompact"]})
        );
    }

    #[test]
    fn the_program_is_swapped_and_the_rest_kept_byte_for_byte() {
        let line = "/old/ctxguard statusline --then \"printf '%s\\n' x\"  --no-color";
        let c = call(line, ours()).unwrap();
        assert_eq!(
            c.with_program("/new dir/ctxguard").unwrap(),
            "'/new dir/ctxguard' statusline --then \"printf '%s\\n' x\"  --no-color"
        );
        assert_eq!(c.with_program("/old/ctxguard"), None);
        let quoted = call("'/old/ctxguard' pretooluse", ours()).unwrap();
        assert_eq!(quoted.with_program("/old/ctxguard"), None);
    }

    #[test]
    fn status_line_flags_in_any_order() {
        let known = |line: &str| statusline(line, ours()).map(|(_, w)| w);
        let mine = Wrapped::Known(Some("mine".into()));
        assert_eq!(
            known("ctxguard statusline --then 'mine'"),
            Some(mine.clone())
        );
        assert_eq!(
            known("ctxguard statusline --no-color --then mine"),
            Some(mine.clone())
        );
        assert_eq!(
            known("ctxguard statusline --then mine --no-color --quiet"),
            Some(mine.clone())
        );
        assert_eq!(known("ctxguard statusline --then=mine --quiet"), Some(mine));
        assert_eq!(
            known("ctxguard statusline --no-color"),
            Some(Wrapped::Known(None))
        );
        assert_eq!(
            known("ctxguard statusline --then \"printf '%s\\n' x\""),
            Some(Wrapped::Known(Some("printf '%s\\n' x".into())))
        );
        for unknown in [
            "ctxguard statusline --then a --then b",
            "ctxguard statusline --then",
            "ctxguard statusline --then \"$HOME/x.sh\"",
            "ctxguard statusline --then \"$(cat x)\"",
            "ctxguard statusline --colour",
            "ctxguard statusline --then x; rm y",
        ] {
            assert_eq!(known(unknown), Some(Wrapped::Unknown), "{unknown}");
        }
        assert_eq!(known("ctxguard pretooluse"), None);
        assert_eq!(known("mine --then x"), None);
    }

    #[test]
    fn nested_wraps_are_seen_through() {
        let once = format!(
            "/a/ctxguard statusline --then {}",
            shell_quote("printf 'mine'")
        );
        let twice = format!("/b/ctxguard statusline --then {}", shell_quote(&once));
        let thrice = format!("/c/ctxguard statusline --then {}", shell_quote(&twice));
        assert_eq!(innermost(&thrice, ours()).as_deref(), Some(once.as_str()));
        assert_eq!(innermost(&once, ours()).as_deref(), Some(once.as_str()));
        let bare = "ctxguard statusline --then 'ctxguard statusline'";
        assert_eq!(
            innermost(bare, ours()).as_deref(),
            Some("ctxguard statusline")
        );
        assert_eq!(innermost("printf 'mine'", ours()), None);
    }
}
