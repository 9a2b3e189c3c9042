//! What this binary is: its version, the commit it was built from (recorded by `build.rs`), and
//! the Claude Code, Codex CLI and pi versions the end-to-end tests drive it with.

/// `0.1.0 (commit 0123456789ab)`: what `--version` and `doctor` print.
pub const LONG: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("CTXGUARD_COMMIT"),
    ")"
);

/// Claude Code versions the end-to-end tests (`tests/e2e.rs`, `tests/e2e_newest.rs`,
/// `tests/e2e_older.rs`) install and drive. A client
/// outside this list probably works, but its hook payloads were not checked.
pub const TESTED_CLIENTS: &[&str] = &["2.1.332", "2.1.330", "2.1.14"];

/// Codex CLI versions the end-to-end tests (`tests/e2e_codex.rs`, and the trust checks of
/// `tests/doctor_codex.rs`) install and drive. The recorded payloads of `fixtures/codex/` are
/// 0.169.0's; 0.170.0 was never published.
pub const TESTED_CODEX: &[&str] = &["0.171.0"];

/// pi versions the end-to-end tests (`tests/e2e_pi.rs`) install and drive with the extension:
/// the last of `@mariozechner/pi-coding-agent` and the newest of its renamed successor
/// `@earendil-works/pi-coding-agent`.
pub const TESTED_PI: &[&str] = &["0.73.1", "1.6.0"];

/// Bytes every ctxguard binary holds (this very constant, which [`is_ctxguard_binary`] searches
/// for): how `install` and `uninstall` recognise another copy of ctxguard under any name.
const SIGNATURE: &[u8] = b"ctxguard-binary-signature:5d1c9a";

/// No ctxguard binary is larger; a bigger file is not read through.
const MAX_BINARY: u64 = 128 * 1024 * 1024;

/// Is the regular file at `path` a ctxguard binary (any version with this signature, any name)?
/// Reads it in bounded chunks, never through a FIFO or a device.
pub fn is_ctxguard_binary(path: &std::path::Path) -> bool {
    use std::io::Read;
    let Ok((file, len)) = crate::files::open_regular(path, "program") else {
        return false;
    };
    if len > MAX_BINARY {
        return false;
    }
    // An executable: ELF, Mach-O (either byte order, or universal) or PE. A script or any text
    // that merely quotes the signature is not ctxguard.
    let mut magic = [0u8; 4];
    let mut head = &file;
    if head.read_exact(&mut magic).is_err() {
        return false;
    }
    let executable = magic == *b"\x7fELF"
        || matches!(
            u32::from_be_bytes(magic),
            0xfeed_face | 0xfeed_facf | 0xcefa_edfe | 0xcffa_edfe | 0xcafe_babe
        )
        || magic.starts_with(b"MZ");
    if !executable {
        return false;
    }
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file.take(MAX_BINARY));
    let mut window: Vec<u8> = Vec::with_capacity((1 << 20) + SIGNATURE.len());
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        window.extend_from_slice(&chunk[..n]);
        if window.windows(SIGNATURE.len()).any(|w| w == SIGNATURE) {
            return true;
        }
        // Keep the tail a signature could straddle.
        let keep = window.len().min(SIGNATURE.len() - 1);
        window.drain(..window.len() - keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ctxguard_binary_is_known_by_its_signature_under_any_name() {
        let dir = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        assert!(
            is_ctxguard_binary(&exe),
            "this test binary holds the constant too"
        );
        let copy = dir.path().join("cg");
        std::fs::copy(&exe, &copy).unwrap();
        assert!(is_ctxguard_binary(&copy));
        // Straddling a chunk boundary (in a file that starts like an executable).
        let mut bytes = b"\x7fELF".to_vec();
        bytes.resize((1 << 20) - 5, b'x');
        bytes.extend_from_slice(SIGNATURE);
        std::fs::write(dir.path().join("edge"), &bytes).unwrap();
        assert!(is_ctxguard_binary(&dir.path().join("edge")));
        std::fs::write(dir.path().join("other"), b"#!/bin/sh\necho ctxguard\n").unwrap();
        assert!(!is_ctxguard_binary(&dir.path().join("other")));
        // A script quoting the signature is not a binary holding it.
        let mut script = b"#!/bin/sh\n# ".to_vec();
        script.extend_from_slice(SIGNATURE);
        std::fs::write(dir.path().join("quoting"), &script).unwrap();
        assert!(!is_ctxguard_binary(&dir.path().join("quoting")));
        assert!(!is_ctxguard_binary(dir.path()));
        assert!(!is_ctxguard_binary(&dir.path().join("missing")));
    }

    #[test]
    fn the_long_version_names_the_package_and_the_commit() {
        assert!(LONG.starts_with(env!("CARGO_PKG_VERSION")));
        let commit = env!("CTXGUARD_COMMIT");
        assert!(LONG.ends_with(&format!("(commit {commit})")));
        assert!(!commit.is_empty() && !commit.contains(char::is_whitespace));
    }
}
