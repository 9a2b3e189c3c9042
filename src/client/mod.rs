//! Claude Code's own settings and environment, read the way the client reads them: which settings
//! files there are, in the client's precedence order (user, project, local, managed: for a key
//! set in several, the later file wins), their merged `env` block, and typed accessors for what
//! moves auto-compaction. `doctor` reports on all of it; `config` takes Claude Code's variables
//! from [`ClientEnv`], so a hook and `doctor` read a value the same way.
//!
//! `env` holds the variables and the values they and the settings carry, `files` finds and parses
//! each settings file, `settings` merges them the way the client does, `paths` spells paths as
//! its Node code does (and takes `autoMemoryDirectory` as it does).

mod accepts;
mod env;
mod files;
mod paths;
mod settings;

// Every item keeps its `crate::client::` path, whichever file it lives in.
pub use accepts::*;
pub use env::*;
pub use files::*;
pub use paths::memory_directory;
pub use settings::*;
