#!/usr/bin/env bash
# Builds ctxguard in release mode and installs the binary (Linux, macOS, and Windows in Git Bash).
#   ./install.sh                     installs to ~/.local/bin/ctxguard (ctxguard.exe on Windows)
#   PREFIX=/usr/local ./install.sh   installs to /usr/local/bin/ctxguard
# Then `ctxguard install` registers the hooks. Prebuilt binaries: scripts/release.sh.
set -euo pipefail
cd "$(dirname "$0")"

prefix="${PREFIX:-$HOME/.local}"
bin_dir="$prefix/bin"

# Without a usable toolchain, say what is missing and the fix in one line, rather than the
# backtrace rustup prints when it has no default toolchain.
if ! command -v cargo >/dev/null 2>&1 || ! command -v rustc >/dev/null 2>&1; then
    echo "install.sh: no Rust toolchain found (cargo and rustc are not on PATH); install one from https://rustup.rs" >&2
    exit 1
fi
if ! rustc -vV >/dev/null 2>&1 || ! cargo -V >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
        echo "install.sh: rustup has no default Rust toolchain; run: rustup default stable" >&2
    else
        echo "install.sh: rustc -vV failed: the Rust toolchain on PATH does not run; reinstall it from https://rustup.rs" >&2
    fi
    exit 1
fi

built=$(scripts/build-release.sh)
name=ctxguard
case "$built" in *.exe) name=ctxguard.exe ;; esac
mkdir -p "$bin_dir"
# Copy then rename, so a hook running right now never sees a half-written binary.
install -m 0755 "$built" "$bin_dir/.$name.new"
mv -f "$bin_dir/.$name.new" "$bin_dir/$name"

echo "installed $bin_dir/$name ($("$bin_dir/$name" --version))"
case ":$PATH:" in
    *":$bin_dir:"*) ;;
    *) echo "note: $bin_dir is not on your PATH: run ctxguard as $bin_dir/$name, or add $bin_dir to PATH (ctxguard install writes the absolute path into the settings either way)" ;;
esac
echo "next: $bin_dir/$name install   (registers the hooks; --dry-run shows the change first)"
