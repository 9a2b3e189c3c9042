#!/bin/sh
# Fetches the rollouts bench/codex_rollouts.tsv lists (each a git blob of a public repository)
# into ../codex-rollouts/<split>/<file>, and checks each one's SHA-256. Needs git and network.
# Usage: bench/fetch_codex_rollouts.sh [DEST]   (DEST defaults to ../codex-rollouts)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-"$here/../../codex-rollouts"}
mkdir -p "$dest"
grep -v '^#' "$here/codex_rollouts.tsv" | tail -n +2 | while IFS="$(printf '\t')" read -r split file repo path commit blob sha cli source compacted; do
    out="$dest/$split/$file"
    if [ -f "$out" ] && [ "$(sha256sum "$out" | cut -d' ' -f1)" = "$sha" ]; then
        continue
    fi
    git_dir="$dest/.git-$(echo "$repo" | tr / +)"
    if [ ! -d "$git_dir" ]; then
        git init -q --bare "$git_dir"
    fi
    if ! git --git-dir="$git_dir" cat-file -e "$blob" 2>/dev/null; then
        git --git-dir="$git_dir" fetch -q --depth=1 "https://github.com/$repo" "$commit"
    fi
    mkdir -p "$dest/$split"
    git --git-dir="$git_dir" cat-file -p "$blob" > "$out.tmp"
    got=$(sha256sum "$out.tmp" | cut -d' ' -f1)
    if [ "$got" != "$sha" ]; then
        echo "$repo $path: sha256 $got, expected $sha" >&2
        rm -f "$out.tmp"
        exit 1
    fi
    mv "$out.tmp" "$out"
done
echo "rollouts in $dest"
