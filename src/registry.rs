//! The one list of ctxguard's hooks. Each entry names its subcommand, the Claude Code event it
//! is registered for (and the matcher), its help, and the functions that run it. The CLI, the
//! argument-error handling, `install`/`uninstall`, `doctor`, the fuzz harness and the plugin's
//! `hooks/hooks.json` (checked by a test) all read it: adding a hook is one entry here plus its
//! file under `src/hooks/`.

use anyhow::Result;
use clap::{ArgMatches, Args, FromArgMatches};

use crate::config::Env;
use crate::diag::Diag;
use crate::event;
use crate::hooks::{
    self, postcompact, posttoolbatch, precompact, pretooluse, sessionend, sessionstart, statusline,
    stop, userpromptsubmit, Outcome,
};

/// One hook command.
pub struct Hook {
    /// The subcommand: `ctxguard <name>`.
    pub name: &'static str,
    /// Claude Code's event, or `None` for the status line (registered under `statusLine`).
    pub event: Option<&'static str>,
    /// The matcher `install` writes for the event, if it takes one.
    pub matcher: Option<&'static str>,
    /// One line for `--help`.
    pub about: &'static str,
    /// The example and guarantees shown after `ctxguard <name> --help`.
    pub after_help: &'static str,
    /// Adds the hook's own flags to its subcommand.
    args: fn(clap::Command) -> clap::Command,
    /// Runs the hook from its flags, when it has any; otherwise [`Hook::handle`] runs on stdin
    /// and the process environment.
    with_flags: Option<fn(&ArgMatches, &mut Diag) -> Result<Outcome>>,
    /// The hook on a given input and environment, with default flags.
    pub handle: fn(&[u8], &Env, &mut Diag) -> Result<Outcome>,
}

/// Every hook, in the order they are registered and listed.
pub const HOOKS: &[Hook] = &[
    Hook {
        name: "statusline",
        event: None,
        matcher: None,
        about: "Status-line hook: reads Claude Code's status-line JSON, arms the marker, prints a \
                gauge",
        after_help: "Example, in ~/.claude/settings.json:\n  \
\"statusLine\": {\"type\": \"command\", \"command\": \"ctxguard statusline\"}\n\n\
From your own status-line script (same stdin, no output):\n  \
input=$(cat); printf '%s' \"$input\" | ctxguard statusline --quiet",
        args: StatuslineArgs::augment_args,
        with_flags: Some(run_statusline),
        handle: |bytes, env, diag| statusline::handle(bytes, env, true, false, diag),
    },
    Hook {
        name: "pretooluse",
        event: Some(event::PRE_TOOL_USE),
        matcher: Some("*"),
        about: "PreToolUse hook: nudges the agent to save memories, at most once per level \
                (normal, critical) per compaction cycle",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"PreToolUse\": [{\"matcher\": \"*\", \"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard pretooluse\"}]}]\n\n\
It never approves, denies or changes a tool call, and exits 0 on any input.",
        args: no_args,
        with_flags: None,
        handle: pretooluse::handle,
    },
    Hook {
        name: "userpromptsubmit",
        event: Some(event::USER_PROMPT_SUBMIT),
        matcher: None,
        about: "UserPromptSubmit hook: delivers a due nudge with the next prompt when no tool \
                call did (text-only turns)",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"UserPromptSubmit\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard userpromptsubmit\"}]}]\n\n\
It never blocks or changes the prompt, and exits 0 on any input.",
        args: no_args,
        with_flags: None,
        handle: userpromptsubmit::handle,
    },
    Hook {
        name: "precompact",
        event: Some(event::PRE_COMPACT),
        matcher: Some("auto|manual"),
        about: "PreCompact hook: writes a mechanical checkpoint and starts a new cycle",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"PreCompact\": [{\"matcher\": \"auto|manual\", \"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard precompact\"}]}]\n\n\
Once the checkpoint is saved, prints its facts for the client's summarizer (Claude Code 2.1.14 \
and later add them to the compaction's instructions; summary_facts: false turns it off). Prints \
nothing on bad input and exits 0 on any input. Only with gate_auto_compaction on does it hold an \
auto-compaction (exit 2), once per cycle, while the nudge has not been delivered.",
        args: no_args,
        with_flags: None,
        handle: precompact::handle,
    },
    Hook {
        name: "postcompact",
        event: Some(event::POST_COMPACT),
        matcher: Some("auto|manual"),
        about: "PostCompact hook: keeps the compaction's summary with its checkpoint",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"PostCompact\": [{\"matcher\": \"auto|manual\", \"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard postcompact\"}]}]\n\n\
Prints nothing and exits 0 on any input.",
        args: no_args,
        with_flags: None,
        handle: postcompact::handle,
    },
    Hook {
        name: "sessionstart",
        event: Some(event::SESSION_START),
        matcher: None,
        about: "SessionStart hook: after a compaction, injects the recovery block once",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"SessionStart\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard sessionstart\"}]}]",
        args: no_args,
        with_flags: None,
        handle: sessionstart::handle,
    },
    Hook {
        name: "sessionend",
        event: Some(event::SESSION_END),
        matcher: None,
        about: "SessionEnd hook: writes a final checkpoint, for a digest in the next session",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"SessionEnd\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard sessionend\"}]}]\n\n\
After /clear (or exit), the next session in the same directory gets a short digest of this one, \
once. Prints nothing and exits 0 on any input.",
        args: no_args,
        with_flags: None,
        handle: sessionend::handle,
    },
    Hook {
        name: "posttoolbatch",
        event: Some(event::POST_TOOL_BATCH),
        matcher: None,
        about: "PostToolBatch hook: the same nudge after a batch of tool calls, read once the reply \
                that made them is on disk",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"PostToolBatch\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard posttoolbatch\"}]}]\n\n\
Runs before the next model request; with PreToolUse and UserPromptSubmit it gives each nudge at \
most once per level per cycle. Never approves, denies or changes anything; exits 0 on any input.",
        args: no_args,
        with_flags: None,
        handle: posttoolbatch::handle,
    },
    Hook {
        name: "stop",
        event: Some(event::STOP),
        matcher: None,
        about: "Stop hook: before an idle compaction can take the session, asks the agent once \
                per cycle to save memories as it ends its turn",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard stop\"}]}]\n\n\
Only in an attended session at or past the client's idle-compaction threshold (200k tokens), \
once per cycle and with 100k tokens of new work since this cycle's nudge, does it answer with \
additionalContext, which makes the agent save and then end its turn; never twice in a row \
(stop_hook_active), never under -p. idle_nudge: false turns it off. Exits 0 on any input.",
        args: no_args,
        with_flags: None,
        handle: stop::handle,
    },
];

/// The status line, which settings register under `statusLine` rather than `hooks`.
pub const STATUSLINE: &Hook = &HOOKS[0];

/// The hook a subcommand names.
pub fn find(name: &str) -> Option<&'static Hook> {
    HOOKS.iter().find(|h| h.name == name)
}

/// The hooks registered under `hooks` in settings (every one but the status line).
pub fn events() -> impl Iterator<Item = &'static Hook> {
    HOOKS.iter().filter(|h| h.event.is_some())
}

impl Hook {
    /// The hook's subcommand, for the CLI.
    pub fn command(&self) -> clap::Command {
        (self.args)(
            clap::Command::new(self.name)
                .about(self.about)
                .after_help(self.after_help),
        )
    }

    /// Runs the hook behind the guard: exit 0 and one stderr line whatever happens, unless the
    /// hook itself decides to block.
    pub fn run(&self, matches: &ArgMatches) -> crate::exit::Exit {
        hooks::guard(self.name, |diag| match self.with_flags {
            Some(run) => run(matches, diag),
            None => (self.handle)(&crate::input::read_stdin()?, &Env::from_process(), diag),
        })
    }
}

fn no_args(cmd: clap::Command) -> clap::Command {
    cmd
}

// The status line's flags. (A doc comment here would replace the subcommand's `about`.)
#[derive(Debug, clap::Args)]
struct StatuslineArgs {
    /// Print the gauge without colours (also when `NO_COLOR` is set)
    #[arg(long)]
    no_color: bool,
    /// Update the marker but print nothing
    #[arg(long)]
    quiet: bool,
    /// Also run this status-line command (with the same stdin) and print its output with the
    /// gauge appended
    #[arg(long, value_name = "COMMAND")]
    then: Option<String>,
}

fn run_statusline(matches: &ArgMatches, diag: &mut Diag) -> Result<Outcome> {
    let args = StatuslineArgs::from_arg_matches(matches)?;
    statusline::run(args.no_color, args.quiet, args.then.as_deref(), diag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn names_are_unique_and_every_hook_parses_its_flags() {
        let mut names: Vec<&str> = HOOKS.iter().map(|h| h.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), HOOKS.len());
        for hook in HOOKS {
            hook.command().debug_assert();
            assert_eq!(find(hook.name).map(|h| h.name), Some(hook.name));
        }
        assert!(find("install").is_none());
        // Each subcommand's help is the registry's line, whatever its flags' derive adds.
        for hook in HOOKS {
            let about = hook.command().get_about().map(ToString::to_string);
            assert_eq!(about.as_deref(), Some(hook.about), "{}", hook.name);
        }
        assert_eq!(events().count(), HOOKS.len() - 1);
        assert_eq!((STATUSLINE.name, STATUSLINE.event), ("statusline", None));
    }

    /// The code map (docs/architecture.md) names every file in src/.
    #[test]
    fn the_code_map_lists_every_source_file() {
        fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p.display().to_string());
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let map = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
        let mut files = Vec::new();
        walk(&root.join("src"), &mut files);
        let missing: Vec<String> = files
            .iter()
            .map(|f| {
                f.trim_start_matches(&root.display().to_string())
                    .trim_start_matches(['/', '\\'])
                    .replace('\\', "/")
            })
            .filter(|f| !map.contains(&format!("`{f}`")))
            .collect();
        assert!(
            missing.is_empty(),
            "not in docs/architecture.md: {missing:?}"
        );
    }

    /// Every source file under `src/` (relative, with `/`) and its text without comments.
    fn sources() -> Vec<(String, String)> {
        fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        walk(&src, &mut files);
        files
            .into_iter()
            .map(|p| {
                let name = p.strip_prefix(&src).unwrap().display().to_string();
                let code: String = std::fs::read_to_string(&p)
                    .unwrap()
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .map(|l| format!("{l}\n"))
                    .collect();
                (name.replace('\\', "/"), code)
            })
            .collect()
    }

    /// The modules a file names after `prefix` (`crate::hooks::`, `super::`): one, or each of a
    /// `{…}` group.
    fn named_after(code: &str, prefix: &str) -> Vec<String> {
        let word = |s: &str| {
            s.trim()
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or_default()
                .to_string()
        };
        let mut out = Vec::new();
        for (at, _) in code.match_indices(prefix) {
            let rest = &code[at + prefix.len()..];
            match rest.strip_prefix('{') {
                Some(group) => {
                    let group = &group[..group.find('}').unwrap_or(group.len())];
                    out.extend(group.split(',').map(word));
                }
                None => out.push(word(rest)),
            }
        }
        out
    }

    /// What two hooks share lives in a module of its own (`nudge`, `checkpointing`,
    /// `checkpoint::summary`) or in `hooks/mod.rs`, never in another hook: no hook file names
    /// another hook, and none names the registry (their event names are in `event`).
    #[test]
    fn no_hook_imports_another_hook_or_the_registry() {
        let hooks: Vec<&str> = HOOKS.iter().map(|h| h.name).collect();
        for (file, code) in sources() {
            let Some(own) = file
                .strip_prefix("hooks/")
                .and_then(|f| f.strip_suffix(".rs"))
            else {
                continue;
            };
            if own == "mod" || own == "fuzz_tests" {
                continue;
            }
            for prefix in ["crate::hooks::", "super::"] {
                for named in named_after(&code, prefix) {
                    assert!(
                        named == own || !hooks.contains(&named.as_str()),
                        "{file} names the hook {named} ({prefix}{named})"
                    );
                }
            }
            assert!(
                !code.contains("crate::registry"),
                "{file} names the registry"
            );
        }
    }

    /// No import runs back up: only the top (`main`, `cli`, the registry and the commands) names
    /// the commands; the hooks are named by the registry, and by `replay`'s simulation (the
    /// status line's own pure `decide`) alone; below the registry, only `settings` names it
    /// (registering the hooks reads their list).
    #[test]
    fn no_lower_module_imports_a_higher_one() {
        let top = |f: &str| {
            ["main.rs", "cli.rs", "registry.rs"].contains(&f) || f.starts_with("commands/")
        };
        for (file, code) in sources() {
            if file.ends_with("tests.rs") {
                continue;
            }
            if !top(&file) {
                assert!(
                    !code.contains("crate::commands"),
                    "{file} names the commands"
                );
            }
            if !top(&file) && !file.starts_with("settings/") {
                assert!(
                    !code.contains("crate::registry"),
                    "{file} names the registry"
                );
            }
            if !file.starts_with("hooks/") && file != "registry.rs" && file != "main.rs" {
                let hooks = named_after(&code, "crate::hooks::");
                let allowed = file == "commands/replay/simulate.rs" && hooks == ["statusline"];
                assert!(hooks.is_empty() || allowed, "{file} names hooks: {hooks:?}");
            }
        }
    }

    /// The plugin's hooks.json registers exactly the registry's events, matchers and
    /// subcommands, through the launcher.
    #[test]
    fn the_plugin_hooks_file_matches_the_registry() {
        let file: Value =
            serde_json::from_str(include_str!("../hooks/hooks.json")).expect("hooks.json parses");
        let hooks = file["hooks"].as_object().expect("a hooks object");
        let listed: Vec<&str> = hooks.keys().map(String::as_str).collect();
        let expected: Vec<&str> = events().filter_map(|h| h.event).collect();
        assert_eq!(listed, expected);
        for hook in events() {
            let group = &hooks[hook.event.unwrap()][0];
            assert_eq!(
                group.get("matcher").and_then(Value::as_str),
                hook.matcher,
                "{}",
                hook.name
            );
            assert_eq!(
                group["hooks"][0]["command"],
                format!("\"${{CLAUDE_PLUGIN_ROOT}}/hooks/run.sh\" {}", hook.name)
            );
        }
    }
}
