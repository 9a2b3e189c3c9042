//! Records the commit the binary is built from, for `ctxguard --version` and `doctor`:
//! `CTXGUARD_BUILD_COMMIT` when set (a packager building from a tarball), else
//! `git rev-parse --short=12 HEAD` with `-modified` when tracked files differ from it, else
//! "unknown". Never fails the build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}

/// Asks cargo to run this again when HEAD moves: the HEAD file itself, the branch it points at
/// (loose or packed), in a plain checkout or a worktree.
fn watch_head() {
    let (Some(git_dir), Some(common)) = (
        git(&["rev-parse", "--git-dir"]),
        git(&["rev-parse", "--git-common-dir"]),
    ) else {
        return;
    };
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    let git_dir = base.join(git_dir);
    let common: PathBuf = base.join(common);
    let mut watched = vec![git_dir.join("HEAD"), common.join("packed-refs")];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(common.join(branch));
    }
    // The index (a commit, a stage) and the sources: whether the tree is modified.
    watched.push(git_dir.join("index"));
    for dir in ["src", "build.rs", "Cargo.toml", "Cargo.lock"] {
        watched.push(base.join(dir));
    }
    for path in watched.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// Do tracked files differ from HEAD?
fn modified() -> bool {
    git(&["status", "--porcelain", "--untracked-files=no"]).is_some()
}

fn main() {
    println!("cargo:rerun-if-env-changed=CTXGUARD_BUILD_COMMIT");
    println!("cargo:rerun-if-changed=build.rs");
    let commit = match std::env::var("CTXGUARD_BUILD_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => {
            watch_head();
            match git(&["rev-parse", "--short=12", "HEAD"]) {
                Some(head) if modified() => format!("{head}-modified"),
                Some(head) => head,
                None => "unknown".to_string(),
            }
        }
    };
    // Only characters that read well in a version line.
    let commit: String = commit
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '+'))
        .take(64)
        .collect();
    let commit = if commit.is_empty() {
        "unknown".to_string()
    } else {
        commit
    };
    println!("cargo:rustc-env=CTXGUARD_COMMIT={commit}");
}
