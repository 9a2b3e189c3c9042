//! pi (the coding agent, `@mariozechner/pi-coding-agent` 0.73 and `@earendil-works/pi-coding-agent`
//! 1.x) as a third client: its settings and models (`config`).

#[allow(dead_code)] // used by the reader and doctor as they land
pub mod config;
