#!/usr/bin/env bash
# Builds the release binary the way it is installed and benchmarked, and prints its path.
#
# On Linux with glibc the binary is linked statically (crt-static): a hook is a fresh process on
# every tool call, and skipping the dynamic loader halves the instructions of the PreToolUse fast
# path (docs/benchmarks.md). The target is named explicitly so that the flag applies to the
# binary only, not to the proc-macro crates cargo builds for the host.
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
case "$host" in
    *-unknown-linux-gnu)
        RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
            cargo build --release --locked --target "$host" >&2
        echo "$(pwd)/target/$host/release/ctxguard"
        ;;
    *)
        cargo build --release --locked >&2
        echo "$(pwd)/target/release/ctxguard"
        ;;
esac
