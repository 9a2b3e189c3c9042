//! Integration tests: the real `ctxguard` binary, run on fixtures recorded from Claude Code
//! 2.1.330, in a temp HOME and CTXGUARD_HOME so nothing touches the developer's files.

mod util;

mod e2e;
mod faults;
mod gate;
mod golden;
mod hostile;
mod install;
mod lifecycle;
mod manual;
mod plugin;
mod pretooluse;
mod recovery;
mod recovery_build;
mod replay;
mod security;
mod statusline;
mod then;
mod versions;
