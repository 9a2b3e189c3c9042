//! What a Claude Code version accepts in its settings files. A client rejects a whole settings
//! file that names a hook event it does not know (2.1.14 and `PostCompact`: its permissions, env
//! and the user's own hooks go with it), and one without the exec form runs a hook entry's bare
//! `command`, dropping its `args`. `install` registers what the client accepts, and `doctor`
//! checks it. Both forms were verified on the real clients: 2.1.330 takes them, 2.1.14 neither;
//! versions between were not tested, so they get what works everywhere.

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
}

impl Accepts {
    /// Everything (a current client, or one not known).
    pub const ALL: Accepts = Accepts {
        exec_form: true,
        late_events: true,
    };

    /// What `version` (`2.1.14`, `2.1.330 (Claude Code)`) accepts; an unreadable version is taken
    /// to be current.
    pub fn version(version: &str) -> Accepts {
        match parse(version) {
            Some(v) if v < FULL_SINCE => Accepts {
                exec_form: false,
                late_events: false,
            },
            _ => Accepts::ALL,
        }
    }

    /// Does the client know this hook event?
    pub fn event(self, name: &str) -> bool {
        self.late_events || (name != event::POST_COMPACT && name != event::POST_TOOL_BATCH)
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
        _ => 20_000,
    }
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
        for v in ["2.0.76", "1.0.88", "2.1.329"] {
            assert_eq!(Accepts::version(v), old, "{v}");
        }
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
