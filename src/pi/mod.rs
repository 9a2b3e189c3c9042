//! pi (the coding agent, `@mariozechner/pi-coding-agent` 0.73 and `@earendil-works/pi-coding-agent`
//! 1.x) as a third client: its settings and models (`config`), its session file read as a
//! transcript (`session`), and the copy in that form the hooks read (`shadow`).

pub mod config;
pub mod session;
pub mod shadow;
