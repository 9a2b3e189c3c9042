//! What a Claude Code version accepts in its settings files. A client rejects a whole settings
//! file that names a hook event it does not know (2.1.14 and `PostCompact`: its permissions, env
//! and the user's own hooks go with it), and one without the exec form runs a hook entry's bare
//! `command`, dropping its `args`. `install` registers what the client accepts, and `doctor`
//! checks it. Both forms were verified on the real clients: 2.1.330 takes them, 2.1.14 neither;
//! versions between were not tested, so they get what works everywhere.
//!
//! `onFailure` on a command hook: 2.1.330 and 2.1.332 have it in their settings schema
//! (`onFailure: … 'continue' (default): the failure is reported and the action goes ahead.
//! 'block': the failure counts as exit code 2`); 2.1.14's command hook has no such key (its
//! schema strips what it does not know). 2.1.332 refuses to start a hook command or argument
//! "too long to pass on Windows", and a `PreToolUse` hook it could not run counts as a block there
//! unless it says `onFailure: "continue"`: `install` writes it on every ctxguard hook for a client
//! that has the field, so that no client-side refusal blocks a tool call.

use crate::event;

/// The first version ctxguard verified exec-form hooks and `PostCompact` on.
pub const FULL_SINCE: (u64, u64, u64) = (2, 1, 330);

/// What a client's settings may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepts {
    /// `{"command": …, "args": […]}` entries.
    pub exec_form: bool,
    /// Hook events added late (`PostCompact`).
    pub late_events: bool,
    /// `onFailure` on a command hook (`"continue"` or `"block"`).
    pub on_failure: bool,
}

impl Accepts {
    /// Everything (a current client, or one not known).
    pub const ALL: Accepts = Accepts {
        exec_form: true,
        late_events: true,
        on_failure: true,
    };

    /// What `version` (`2.1.14`, `2.1.330 (Claude Code)`) accepts; an unreadable version is taken
    /// to be current.
    pub fn version(version: &str) -> Accepts {
        match parse(version) {
            Some(v) if v < FULL_SINCE => Accepts {
                exec_form: false,
                late_events: false,
                on_failure: false,
            },
            _ => Accepts::ALL,
        }
    }

    /// Does the client know this hook event (of ctxguard's own)?
    pub fn event(self, name: &str) -> bool {
        self.late_events || (name != event::POST_COMPACT && name != event::POST_TOOL_BATCH)
    }

    /// Does naming `name` in a settings file make this client ignore the whole file? (Only the
    /// clients before 2.1.330 do that; 2.1.330 drops an unknown event's entry alone.)
    pub fn ignores_file_for(self, name: &str) -> bool {
        !self.late_events && !EVENTS_2_1_14.contains(&name)
    }
}

/// The hook events 2.1.14 knows (its settings schema's list, read from its `cli.js`): a settings
/// file naming any other makes it ignore the whole file.
const EVENTS_2_1_14: &[&str] = &[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "UserPromptSubmit",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PermissionRequest",
    "Setup",
];

/// Hook events 2.1.330 does not have and 2.1.332 does (its 34th: a skill's shell command).
const EVENTS_SINCE_2_1_332: &[&str] = &[event::PRE_SKILL_SHELL_COMMAND];

/// What a client of `version` does with a settings file whose `hooks` names `name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventUse {
    /// It runs the event's hooks.
    Known,
    /// It drops that event's entry and reads the rest of the file (2.1.330: "hooks.<name>:
    /// unknown hook event; entry ignored").
    EntryIgnored,
    /// It ignores the whole file (2.1.14 and the versions before 2.1.330).
    FileIgnored,
}

/// [`EventUse`] of `name` on `version` (an unreadable version is taken to be current, which
/// knows every event ctxguard has heard of; an event nobody named is an entry the client drops).
pub fn event_use(version: Option<&str>, name: &str) -> EventUse {
    let v = version.and_then(parse);
    match v {
        Some(v) if v < FULL_SINCE => {
            if EVENTS_2_1_14.contains(&name) {
                EventUse::Known
            } else {
                EventUse::FileIgnored
            }
        }
        Some(v) if v < (2, 1, 332) && EVENTS_SINCE_2_1_332.contains(&name) => {
            EventUse::EntryIgnored
        }
        _ => EventUse::Known,
    }
}

/// The versions read reserving the reply's whole output for auto-compaction (32k by default,
/// `CLAUDE_CODE_MAX_OUTPUT_TOKENS`, at most 64k) rather than at most 20k: 2.1.14 compacts a 200k
/// session at 155k, where 2.1.330 does at 167k (read from both clients' code).
const FULL_OUTPUT_RESERVE: std::ops::RangeInclusive<(u64, u64, u64)> = (2, 1, 0)..=(2, 1, 14);

/// The output reservation a client of `version` makes before auto-compaction: the whole output
/// limit on 2.1.0 to 2.1.14; at most 20k otherwise. Versions after 2.1.14 and before 2.1.330
/// were not read, nor 2.0 and older (a recorded 2.0.76 session passed 167k without compacting):
/// they get the current rule, and a seen compaction calibrates them.
pub fn output_reserve(version: Option<&str>, max_output_var: Option<u64>) -> u64 {
    match version.and_then(parse) {
        Some(v) if FULL_OUTPUT_RESERVE.contains(&v) => max_output_var.unwrap_or(32_000).min(64_000),
        _ => capped_output(max_output_var),
    }
}

/// The output reservation a client of `version` keeps below its blocking limit, where it stops
/// accepting requests when auto-compaction is off: none on 2.1.0 to 2.1.14 (2.1.14's `pu`
/// blocks at `kE(model) − dC0`, the window less 3000); at most 20k otherwise (2.1.330's and
/// 2.1.332's `sTt`: `cT(model) − Math.min(maxOutputTokens, 20000)`, then `− wfo`), as the
/// compaction threshold reserves it. Read in both clients' code (docs/client-code.md).
pub fn stop_reserve(version: Option<&str>, max_output_var: Option<u64>) -> u64 {
    match version.and_then(parse) {
        Some(v) if FULL_OUTPUT_RESERVE.contains(&v) => 0,
        _ => capped_output(max_output_var),
    }
}

/// `Math.min(maxOutputTokens, 20000)`: the model's output maximum is 32k or more for every
/// current model, so 20k unless `CLAUDE_CODE_MAX_OUTPUT_TOKENS` sets less.
fn capped_output(max_output_var: Option<u64>) -> u64 {
    max_output_var
        .filter(|v| *v > 0)
        .map_or(20_000, |v| v.min(20_000))
}

/// Does a client of `version` compact idle sessions? 2.1.14 has no idle compaction (nothing of
/// it in its code) and 2.1.330 has; versions between were not read, and get it, as does an
/// unknown version.
pub fn idle_compaction(version: Option<&str>) -> bool {
    version.and_then(parse).is_none_or(|v| v > (2, 1, 14))
}

/// The first version number in `text` (`2.1.14` in `2.1.14 (Claude Code)`, `v2.1.14`,
/// `2.1.14-beta`, or after a line a wrapper printed first), as (major, minor, patch).
pub fn parse(text: &str) -> Option<(u64, u64, u64)> {
    text.split_whitespace().find_map(|word| {
        let word = word.trim_start_matches(['v', 'V']);
        let core = word.split(['-', '+']).next()?;
        let mut parts = core.split('.').map(|p| {
            if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) {
                p.parse::<u64>().ok()
            } else {
                None
            }
        });
        let v = (parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(v)
    })
}

/// [`parse`], written back as `2.1.14`.
pub fn version_in(text: &str) -> Option<String> {
    parse(text).map(|(a, b, c)| format!("{a}.{b}.{c}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_clients_get_shell_lines_and_no_late_events() {
        let old = Accepts::version("2.1.14");
        assert_eq!(
            (
                old.exec_form,
                old.event("PostCompact"),
                old.event("SessionEnd")
            ),
            (false, false, true)
        );
        assert!(!old.on_failure);
        for v in ["2.0.76", "1.0.88", "2.1.329"] {
            assert_eq!(Accepts::version(v), old, "{v}");
        }
        assert!(Accepts::version("2.1.330").on_failure);
        assert!(Accepts::version("2.1.332").on_failure);
        for v in [
            "2.1.330",
            "2.1.330 (Claude Code)",
            "2.2.0",
            "3.0.1",
            "garbage",
            "",
        ] {
            assert_eq!(Accepts::version(v), Accepts::ALL, "{v}");
        }
    }

    #[test]
    fn the_skill_shell_event_is_known_from_2_1_332_dropped_alone_by_2_1_330() {
        let e = event::PRE_SKILL_SHELL_COMMAND;
        assert_eq!(event_use(Some("2.1.332"), e), EventUse::Known);
        assert_eq!(event_use(None, e), EventUse::Known);
        assert_eq!(event_use(Some("2.1.330"), e), EventUse::EntryIgnored);
        assert_eq!(event_use(Some("2.1.14"), e), EventUse::FileIgnored);
        assert_eq!(
            event_use(Some("2.1.14"), "PostCompact"),
            EventUse::FileIgnored
        );
        assert_eq!(event_use(Some("2.1.14"), "PreCompact"), EventUse::Known);
        assert_eq!(event_use(Some("2.1.330"), "PostCompact"), EventUse::Known);
    }

    #[test]
    fn versions_are_found_as_clients_and_wrappers_print_them() {
        for text in [
            "2.1.14",
            "2.1.14 (Claude Code)",
            "v2.1.14",
            "2.1.14-beta",
            "Loading nvm...\n2.1.14 (Claude Code)",
        ] {
            assert_eq!(version_in(text).as_deref(), Some("2.1.14"), "{text:?}");
            assert_eq!(
                Accepts::version(text),
                Accepts::version("2.1.14"),
                "{text:?}"
            );
        }
        for text in ["garbage", "", "2.1", "1", "2.1.14.7", "v", "2..14"] {
            assert_eq!(version_in(text), None, "{text:?}");
        }
    }
}
