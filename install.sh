#!/usr/bin/env bash
# Builds ctxguard in release mode and installs the binary.
#   ./install.sh                  installs to ~/.local/bin/ctxguard
#   PREFIX=/usr/local ./install.sh   installs to /usr/local/bin/ctxguard
set -euo pipefail
cd "$(dirname "$0")"

prefix="${PREFIX:-$HOME/.local}"
bin_dir="$prefix/bin"

built=$(scripts/build-release.sh)
mkdir -p "$bin_dir"
# Copy then rename, so a hook running right now never sees a half-written binary.
install -m 0755 "$built" "$bin_dir/.ctxguard.new"
mv -f "$bin_dir/.ctxguard.new" "$bin_dir/ctxguard"

echo "installed $bin_dir/ctxguard ($("$bin_dir/ctxguard" --version))"
case ":$PATH:" in
    *":$bin_dir:"*) ;;
    *) echo "note: $bin_dir is not on your PATH; use the absolute path in Claude Code's settings" ;;
esac
