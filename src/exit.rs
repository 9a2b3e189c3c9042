//! Exit codes, in one place. A hook exits 0 whatever happens: Claude Code reads exit 2 from a
//! `PreToolUse` hook as "block this tool call", so an accidental 2 would stop every session the hook
//! is registered in. For the same reason even a command-line usage error exits 1, never 2. The
//! one exception is the opt-in compaction gate ([`Exit::Block`]), which only `PreCompact` returns.

use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Success, and every outcome of a hook command.
    Ok,
    /// A manual command failed, or its arguments were wrong.
    Failure,
    /// `PreCompact` holds an auto-compaction once (`gate_auto_compaction`).
    Block,
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Failure => 1,
            Exit::Block => 2,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_gate_exits_with_the_blocking_code() {
        for e in [Exit::Ok, Exit::Failure] {
            assert_ne!(e.code(), 2, "{e:?}");
        }
        assert_eq!(Exit::Ok.code(), 0);
        assert_eq!(Exit::Block.code(), 2);
    }
}
