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
