//! Claude Code's hook event names, each written here once: the registry's entries, the hooks'
//! own code (parsing their input, naming their output), what a client version accepts and the
//! replay's report all use these.

pub const PRE_TOOL_USE: &str = "PreToolUse";
pub const USER_PROMPT_SUBMIT: &str = "UserPromptSubmit";
pub const PRE_COMPACT: &str = "PreCompact";
pub const POST_COMPACT: &str = "PostCompact";
pub const SESSION_START: &str = "SessionStart";
pub const SESSION_END: &str = "SessionEnd";
pub const STOP: &str = "Stop";
pub const POST_TOOL_BATCH: &str = "PostToolBatch";

/// An event ctxguard does not register, named here because settings files may hold it: 2.1.332
/// added it (a skill's shell command), and 2.1.330 drops its entry as unknown.
pub const PRE_SKILL_SHELL_COMMAND: &str = "PreSkillShellCommand";
