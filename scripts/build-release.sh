#!/usr/bin/env bash
# Builds the release binary the way it is installed and benchmarked, and prints its path.
#   scripts/build-release.sh            for this machine
#   scripts/build-release.sh TARGET     for another target (its toolchain installed; see
#                                       scripts/release.sh, which builds every one it can)
#
# On Linux with glibc the binary is linked statically (crt-static): a hook is a fresh process on
# every tool call, and skipping the dynamic loader halves the instructions of the PreToolUse fast
# path (docs/benchmarks.md). macOS has no static linking of its system libraries: there the
# binary is the ordinary one, which links only libSystem. The target is always named explicitly
# so that the flag applies to the binary only, not to the proc-macro crates cargo builds for the
# host.
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
target=${1:-$host}
flags=
case "$target" in
    *-linux-gnu*) flags="-C target-feature=+crt-static" ;;
esac
exe=
case "$target" in
    *-windows-*) exe=.exe ;;
esac
RUSTFLAGS="${RUSTFLAGS:-} $flags" cargo build --release --locked --target "$target" >&2
# Where cargo put it: CARGO_TARGET_DIR (relative to here, as cargo reads it) or ./target.
target_dir=${CARGO_TARGET_DIR:-target}
case "$target_dir" in /* | [A-Za-z]:*) ;; *) target_dir="$(pwd)/$target_dir" ;; esac
echo "$target_dir/$target/release/ctxguard$exe"
