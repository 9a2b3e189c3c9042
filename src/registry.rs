//! The functions that run each hook of the list ([`crate::hook_list`]: subcommand, event,
//! matcher, help), in the same order. The CLI, the argument-error handling and the fuzz harness
//! read it; what needs only the list (`settings`, `doctor`) reads the list, below the hooks.
//! The tests here hold the code map and the import structure.
//!
//! Adding a hook takes these places (a test holds each one marked so):
//! 1. `event.rs`: the client's event name, written once;
//! 2. `hook_list.rs`: its entry in `HOOKS` (subcommand, event, matcher, help), and in
//!    `CODEX_HOOKS` when Codex runs it too;
//! 3. this file: its entry in [`HOOKS`], in the list's order (held);
//! 4. `src/hooks/<subcommand>.rs` with its `handle`, and its `pub mod` in `hooks/mod.rs` (held);
//! 5. `client/accepts.rs`, when only some client versions accept the event;
//! 6. `plugin/hooks/hooks.json`, the plugin's registration (held);
//! 7. docs: its line in docs/usage.md's "What each hook does" (held) and its file in the code
//!    map, docs/architecture.md (held).

use anyhow::Result;
use clap::{ArgMatches, Args, FromArgMatches};

use crate::config::Env;
use crate::diag::Diag;
use crate::hook_list::{self, HookInfo};
use crate::hooks::{
    self, postcompact, posttoolbatch, precompact, pretooluse, sessionend, sessionstart, statusline,
    stop, userpromptsubmit, Outcome,
};

/// One hook command: its entry in the list ([`hook_list::HOOKS`], the same order) and the
/// functions that run it.
pub struct Hook {
    /// Its subcommand, event, matcher and help.
    pub info: &'static HookInfo,
    /// Adds the hook's own flags to its subcommand.
    args: fn(clap::Command) -> clap::Command,
    /// Runs the hook from its flags, when it has any; otherwise [`Hook::handle`] runs on stdin
    /// and the process environment.
    with_flags: Option<fn(&ArgMatches, &mut Diag) -> Result<Outcome>>,
    /// The hook on a given input and environment, with default flags.
    pub handle: fn(&[u8], &Env, &mut Diag) -> Result<Outcome>,
}

/// Every hook, in the list's order.
pub const HOOKS: &[Hook] = &[
    Hook {
        info: &hook_list::HOOKS[0],
        args: StatuslineArgs::augment_args,
        with_flags: Some(run_statusline),
        handle: |bytes, env, diag| statusline::handle(bytes, env, true, false, diag),
    },
    Hook {
        info: &hook_list::HOOKS[1],
        args: no_args,
        with_flags: None,
        handle: pretooluse::handle,
    },
    Hook {
        info: &hook_list::HOOKS[2],
        args: no_args,
        with_flags: None,
        handle: userpromptsubmit::handle,
    },
    Hook {
        info: &hook_list::HOOKS[3],
        args: no_args,
        with_flags: None,
        handle: precompact::handle,
    },
    Hook {
        info: &hook_list::HOOKS[4],
        args: no_args,
        with_flags: None,
        handle: postcompact::handle,
    },
    Hook {
        info: &hook_list::HOOKS[5],
        args: no_args,
        with_flags: None,
        handle: sessionstart::handle,
    },
    Hook {
        info: &hook_list::HOOKS[6],
        args: no_args,
        with_flags: None,
        handle: sessionend::handle,
    },
    Hook {
        info: &hook_list::HOOKS[7],
        args: no_args,
        with_flags: None,
        handle: posttoolbatch::handle,
    },
    Hook {
        info: &hook_list::HOOKS[8],
        args: no_args,
        with_flags: None,
        handle: stop::handle,
    },
];

/// The hook a subcommand names.
pub fn find(name: &str) -> Option<&'static Hook> {
    HOOKS.iter().find(|h| h.info.name == name)
}

impl Hook {
    /// The hook's subcommand, for the CLI.
    pub fn command(&self) -> clap::Command {
        (self.args)(
            clap::Command::new(self.info.name)
                .about(self.info.about)
                .after_help(self.info.after_help),
        )
    }

    /// Runs the hook behind the guard: exit 0 and one stderr line whatever happens, unless the
    /// hook itself decides to block.
    pub fn run(&self, matches: &ArgMatches) -> crate::exit::Exit {
        hooks::guard(self.info.name, |diag| match self.with_flags {
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
        // One handler per entry of the list, in its order.
        assert_eq!(HOOKS.len(), hook_list::HOOKS.len());
        for (hook, info) in HOOKS.iter().zip(hook_list::HOOKS) {
            assert!(std::ptr::eq(hook.info, info), "{}", info.name);
        }
        let mut names: Vec<&str> = HOOKS.iter().map(|h| h.info.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), HOOKS.len());
        for hook in HOOKS {
            hook.command().debug_assert();
            assert_eq!(
                find(hook.info.name).map(|h| h.info.name),
                Some(hook.info.name)
            );
        }
        assert!(find("install").is_none());
        // Each subcommand's help is the list's line, whatever its flags' derive adds.
        for hook in HOOKS {
            let about = hook.command().get_about().map(ToString::to_string);
            assert_eq!(
                about.as_deref(),
                Some(hook.info.about),
                "{}",
                hook.info.name
            );
        }
        assert_eq!(hook_list::events().count(), HOOKS.len() - 1);
        let status = hook_list::STATUSLINE;
        assert_eq!((status.name, status.event), ("statusline", None));
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
        let hooks: Vec<&str> = HOOKS.iter().map(|h| h.info.name).collect();
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

    /// The layers of docs/architecture.md, from the bottom: a module imports only from layers
    /// below its own (or within itself, its own files). Every module is in one.
    const LAYERS: &[(&str, &[&str])] = &[
        ("text", &["text"]),
        (
            "the base",
            &[
                "diag", "event", "exit", "files", "paths", "process", "shell", "usage",
            ],
        ),
        (
            "formats and the client's own files",
            &[
                "client",
                "codex",
                "hook_list",
                "input",
                "program",
                "version",
            ],
        ),
        ("the window's rules", &["window"]),
        ("readers and rules", &["config", "transcript"]),
        ("the other client's reader", &["rollout"]),
        ("the state's records", &["checkpoint", "reading"]),
        (
            "the state and its texts",
            &["daily_log", "marker", "recovery", "settings", "tasks"],
        ),
        ("the third client's files", &["pi"]),
        ("what the state tells", &["facts", "index", "summary_facts"]),
        ("the state kept", &["memory", "retention"]),
        (
            "the capabilities",
            &["checkpointing", "gauge", "nudge", "recovering"],
        ),
        ("its receipt", &["receipt"]),
        ("what was lost", &["dropped", "precomputed"]),
        ("the session step", &["step"]),
        ("the hooks and the manual commands", &["commands", "hooks"]),
        ("the registry", &["registry"]),
        ("the command line", &["cli"]),
        ("main", &["main"]),
    ];

    /// The module a source file belongs to: its first path component, without `.rs`.
    fn module_of(file: &str) -> &str {
        let first = file.split('/').next().unwrap_or(file);
        first.strip_suffix(".rs").unwrap_or(first)
    }

    fn layer_of(module: &str) -> Option<usize> {
        LAYERS.iter().position(|(_, mods)| mods.contains(&module))
    }

    /// The modules a file's code (tests aside) names through `crate::`.
    fn imports(code: &str) -> Vec<String> {
        let code = code
            .find("#[cfg(test)]\nmod tests")
            .map_or(code, |at| &code[..at]);
        let mut out = named_after(code, "crate::");
        out.sort();
        out.dedup();
        out
    }

    /// Within a module's directory, no two files import each other, nor through others: the
    /// checkpoint builder and the rollout reader that builds on it were such a pair.
    #[test]
    #[allow(clippy::items_after_statements)] // the walk, beside the graph it walks
    fn no_import_cycle_between_the_files_of_a_module() {
        use std::collections::{BTreeMap, BTreeSet};
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (file, code) in sources() {
            let Some((dir, name)) = file.rsplit_once('/') else {
                continue;
            };
            if name.ends_with("tests.rs") || name == "mod.rs" {
                continue;
            }
            let own = format!("{dir}/{}", name.trim_end_matches(".rs"));
            let code = code
                .find("#[cfg(test)]\nmod tests")
                .map_or(code.as_str(), |at| &code[..at]);
            for sibling in named_after(code, "super::") {
                if !sibling.is_empty() && sibling != "super" {
                    edges
                        .entry(own.clone())
                        .or_default()
                        .insert(format!("{dir}/{sibling}"));
                }
            }
        }
        // Depth-first: a node met again on the current path closes a cycle.
        fn visit(
            n: &str,
            edges: &BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(at) = path.iter().position(|p| p == n) {
                return Some(path[at..].to_vec());
            }
            if !done.insert(n.to_string()) {
                return None;
            }
            path.push(n.to_string());
            for next in edges.get(n).into_iter().flatten() {
                if let Some(cycle) = visit(next, edges, path, done) {
                    return Some(cycle);
                }
            }
            path.pop();
            None
        }
        let mut done = BTreeSet::new();
        for n in edges.keys() {
            let cycle = visit(n, &edges, &mut Vec::new(), &mut done);
            assert!(cycle.is_none(), "an import cycle: {cycle:?}");
        }
    }

    /// No import runs back up, and none sideways between the modules of one layer: hooks and
    /// manual commands are siblings (no command names a hook, nor a hook a command), and what
    /// only needs the list of hooks (`settings`, `replay`) reads it below them all.
    #[test]
    fn no_lower_module_imports_a_higher_one() {
        let mut wrong = Vec::new();
        for (file, code) in sources() {
            if file.ends_with("tests.rs") {
                continue;
            }
            let own = module_of(&file);
            let Some(layer) = layer_of(own) else {
                wrong.push(format!("{file}: its module {own} is in no layer"));
                continue;
            };
            for named in imports(&code) {
                if named == own || named.is_empty() {
                    continue;
                }
                match layer_of(&named) {
                    Some(l) if l < layer => {}
                    Some(l) => wrong.push(format!(
                        "{file} ({}) imports {named} ({})",
                        LAYERS[layer].0, LAYERS[l].0
                    )),
                    None => wrong.push(format!("{file} imports {named}, in no layer")),
                }
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
        // The module list in main.rs is the layers' list.
        let main = include_str!("main.rs");
        let declared: Vec<&str> = main
            .lines()
            .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
            .collect();
        let mut listed: Vec<&str> = LAYERS
            .iter()
            .flat_map(|(_, mods)| mods.iter().copied())
            .filter(|m| *m != "main")
            .collect();
        listed.sort_unstable();
        let mut declared_sorted = declared.clone();
        declared_sorted.sort_unstable();
        assert_eq!(declared_sorted, listed);
    }

    /// The registry's data (the list of hooks) sits below `settings` and `replay`, which read
    /// it, and below the hooks: neither names the registry, whose handlers run the hooks.
    #[test]
    fn the_list_of_hooks_sits_below_settings_and_replay() {
        let list = layer_of("hook_list").unwrap();
        assert!(list < layer_of("settings").unwrap());
        assert!(list < layer_of("commands").unwrap());
        assert!(layer_of("registry").unwrap() > layer_of("hooks").unwrap());
        for (file, code) in sources() {
            if file.starts_with("settings/") || file.starts_with("commands/replay/") {
                assert!(
                    !imports(&code)
                        .iter()
                        .any(|m| m == "registry" || m == "hooks"),
                    "{file} names the registry or a hook"
                );
            }
        }
    }

    /// The plugin's hooks.json registers exactly the registry's events, matchers and
    /// subcommands, through the launcher.
    #[test]
    fn the_plugin_hooks_file_matches_the_registry() {
        let file: Value = serde_json::from_str(include_str!("../plugin/hooks/hooks.json"))
            .expect("hooks.json parses");
        let hooks = file["hooks"].as_object().expect("a hooks object");
        let listed: Vec<&str> = hooks.keys().map(String::as_str).collect();
        let expected: Vec<&str> = hook_list::events().filter_map(|h| h.event).collect();
        assert_eq!(listed, expected);
        for hook in hook_list::events() {
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
