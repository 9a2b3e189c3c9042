//! The one list of ctxguard's hooks, as data: each entry names its subcommand, the Claude Code
//! event it is registered for (and the matcher), and its help. Registering the hooks
//! (`settings`), the plugin's `plugin/hooks/hooks.json` (checked by a test), `doctor` and the CLI read
//! it; the functions that run each hook are the registry's ([`crate::registry`]), above the
//! hooks, so that what only needs the list sits below them all.

use crate::event;

/// One hook command.
pub struct HookInfo {
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
}

/// Every hook, in the order they are registered and listed.
pub const HOOKS: &[HookInfo] = &[
    HookInfo {
        name: "statusline",
        event: None,
        matcher: None,
        about: "Status-line hook: reads Claude Code's status-line JSON, arms the marker, prints a \
                gauge",
        after_help: "Example, in ~/.claude/settings.json:\n  \
\"statusLine\": {\"type\": \"command\", \"command\": \"ctxguard statusline\"}\n\n\
From your own status-line script (same stdin, no output):\n  \
input=$(cat); printf '%s' \"$input\" | ctxguard statusline --quiet",
    },
    HookInfo {
        name: "pretooluse",
        event: Some(event::PRE_TOOL_USE),
        matcher: Some("*"),
        about: "PreToolUse hook: nudges the agent to save memories, at most once per level \
                (normal, critical) per compaction cycle",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"PreToolUse\": [{\"matcher\": \"*\", \"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard pretooluse\"}]}]\n\n\
It never approves, denies or changes a tool call, and exits 0 on any input.",
    },
    HookInfo {
        name: "userpromptsubmit",
        event: Some(event::USER_PROMPT_SUBMIT),
        matcher: None,
        about: "UserPromptSubmit hook: delivers a due nudge with the next prompt when no tool \
                call did (text-only turns)",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"UserPromptSubmit\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard userpromptsubmit\"}]}]\n\n\
It never blocks or changes the prompt, and exits 0 on any input.",
    },
    HookInfo {
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
    },
    HookInfo {
        name: "postcompact",
        event: Some(event::POST_COMPACT),
        matcher: Some("auto|manual"),
        about: "PostCompact hook: keeps the compaction's summary with its checkpoint",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"PostCompact\": [{\"matcher\": \"auto|manual\", \"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard postcompact\"}]}]\n\n\
Prints nothing and exits 0 on any input.",
    },
    HookInfo {
        name: "sessionstart",
        event: Some(event::SESSION_START),
        matcher: None,
        about: "SessionStart hook: after a compaction, injects the recovery block once",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"SessionStart\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard sessionstart\"}]}]",
    },
    HookInfo {
        name: "sessionend",
        event: Some(event::SESSION_END),
        matcher: None,
        about: "SessionEnd hook: writes a final checkpoint, for a digest in the next session",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"SessionEnd\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard sessionend\"}]}]\n\n\
After /clear (or exit), the next session in the same directory gets a short digest of this one, \
once. Prints nothing and exits 0 on any input.",
    },
    HookInfo {
        name: "posttoolbatch",
        event: Some(event::POST_TOOL_BATCH),
        matcher: None,
        about: "PostToolBatch hook: the same nudge after a batch of tool calls, read once the reply \
                that made them is on disk",
        after_help: "Example, in ~/.claude/settings.json under \"hooks\":\n  \
\"PostToolBatch\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"ctxguard posttoolbatch\"}]}]\n\n\
Runs before the next model request; with PreToolUse and UserPromptSubmit it gives each nudge at \
most once per level per cycle. Never approves, denies or changes anything; exits 0 on any input.",
    },
    HookInfo {
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
    },
];

/// One hook as Codex CLI registers it: its event (Codex's name) and the subcommand it runs.
pub struct CodexHook {
    pub event: &'static str,
    pub command: &'static str,
}

/// The hooks ctxguard registers for Codex, in `hooks.json`'s order. Codex has no status line,
/// so the nudge reads usage from the rollout in `PreToolUse` (whose `additionalContext` reaches
/// the model before its next request) and `UserPromptSubmit`; Codex never compacts an idle
/// session (no `Stop` nudge) and its `PostCompact` carries no summary (nothing to keep).
pub const CODEX_HOOKS: &[CodexHook] = &[
    CodexHook {
        event: event::SESSION_START,
        command: "sessionstart",
    },
    CodexHook {
        event: event::USER_PROMPT_SUBMIT,
        command: "userpromptsubmit",
    },
    CodexHook {
        event: event::PRE_TOOL_USE,
        command: "pretooluse",
    },
    CodexHook {
        event: event::PRE_COMPACT,
        command: "precompact",
    },
    CodexHook {
        event: event::SESSION_END,
        command: "sessionend",
    },
];

/// The status line, which settings register under `statusLine` rather than `hooks`.
pub const STATUSLINE: &HookInfo = &HOOKS[0];

/// The hook a subcommand names.
pub fn find(name: &str) -> Option<&'static HookInfo> {
    HOOKS.iter().find(|h| h.name == name)
}

/// The hooks registered under `hooks` in settings (every one but the status line).
pub fn events() -> impl Iterator<Item = &'static HookInfo> {
    HOOKS.iter().filter(|h| h.event.is_some())
}
