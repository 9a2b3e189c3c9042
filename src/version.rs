//! What this binary is: its version, the commit it was built from (recorded by `build.rs`), and
//! the Claude Code versions the end-to-end tests drive it with.

/// `0.1.0 (commit 0123456789ab)`: what `--version` and `doctor` print.
pub const LONG: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("CTXGUARD_COMMIT"),
    ")"
);

/// Claude Code versions the end-to-end tests (`tests/e2e.rs`) install and drive. A client
/// outside this list probably works, but its hook payloads were not checked.
pub const TESTED_CLIENTS: &[&str] = &["2.1.330"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_long_version_names_the_package_and_the_commit() {
        assert!(LONG.starts_with(env!("CARGO_PKG_VERSION")));
        let commit = env!("CTXGUARD_COMMIT");
        assert!(LONG.ends_with(&format!("(commit {commit})")));
        assert!(!commit.is_empty() && !commit.contains(char::is_whitespace));
    }
}
