#!/bin/sh
# Runs a ctxguard hook for the Claude Code plugin: the installed binary (CTXGUARD_BIN, PATH,
# ~/.local/bin, /usr/local/bin), else the one this plugin downloaded into
# ${CLAUDE_PLUGIN_DATA}/bin. With neither, it fetches the release that hooks/release.sha256 names
# (written by scripts/release.sh) for this platform, in the background, under a lock so that
# hooks running at once download it once; it checks the archive's SHA-256 against that file and
# installs nothing that differs. The hook waits for it a few seconds at most
# (CTXGUARD_PLUGIN_WAIT, default 5), then runs it, or does nothing: exit 0, nothing on stdout,
# one line on stderr saying why, so a missing binary never blocks or breaks a session.
# CTXGUARD_DOWNLOAD_URL downloads from another address (a mirror); the SHA-256 is checked all the
# same.
#
# hooks.json runs this in shell form, "${CLAUDE_PLUGIN_ROOT}/hooks/run.sh" quoted: the exec form
# (no shell) would save a shell per call on Linux and macOS, but on Windows the client starts an
# exec-form command directly, and a shell script cannot be started that way; in shell form it
# runs under Git Bash there too. The quotes keep a plugin path with spaces in one piece.
set -eu

data=${CLAUDE_PLUGIN_DATA:-}
for candidate in "${CTXGUARD_BIN:-}" "$(command -v ctxguard 2>/dev/null || true)" \
    "${HOME:+$HOME/.local/bin/ctxguard}" "${HOME:+$HOME/.local/bin/ctxguard.exe}" /usr/local/bin/ctxguard \
    "${data:+$data/bin/ctxguard}"; do
    if [ -n "$candidate" ] && [ -f "$candidate" ] && [ -x "$candidate" ]; then
        exec "$candidate" "$@"
    fi
done

# Not there: exit 0, nothing on stdout, one line on stderr (and the input read, so the client
# never writes into a closed pipe).
quit() {
    cat >/dev/null 2>&1 || true
    echo "ctxguard plugin: $1" >&2
    exit 0
}
install_hint="install it (curl -fsSL <releases>/install.sh | sh, npm install -g ctxguard, or ./install.sh from the repository; docs/install.md)"

root=$(cd "$(dirname "$0")/.." && pwd)
pins="$root/hooks/release.sha256"
[ -n "$data" ] || quit "the ctxguard binary was not found (PATH, ~/.local/bin, /usr/local/bin, \$CTXGUARD_BIN) and this client gives the plugin no data folder to download it into; $install_hint"
[ -f "$pins" ] || quit "the ctxguard binary was not found (PATH, ~/.local/bin, /usr/local/bin, \$CTXGUARD_BIN) and this copy of the plugin names no release to download; $install_hint"

case "$(uname -m)" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) arch= ;;
esac
case "$(uname -s)" in
    Linux) target="$arch-unknown-linux-gnu" ;;
    Darwin)
        [ "$arch" = x86_64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ] && arch=aarch64
        target="$arch-apple-darwin"
        ;;
    *) target= ;;
esac
url='' sum='' name=''
while read -r kind a b; do
    case "$kind" in
        url) url=$a ;;
        sha256) case "$b" in ctxguard-*-"$target".tar.gz) sum=$a name=$b ;; esac ;;
    esac
done <"$pins"
if [ -z "$arch" ] || [ -z "$target" ] || [ -z "$name" ]; then
    quit "the ctxguard binary was not found, and the plugin downloads none for $(uname -s) $(uname -m); $install_hint"
fi
url=${CTXGUARD_DOWNLOAD_URL:-$url}
url=${url%/}

bin="$data/bin/ctxguard"
lock="$data/fetch.lock"
failed="$data/fetch.failed"

# The download, in a process of its own: it outlives this hook. Every outcome is one line in
# fetch.failed, or the binary in place.
fetch() {
    tmp="$data/fetch.$$"
    trap 'rm -rf "$tmp" "$lock"' EXIT
    trap 'exit 1' HUP INT TERM
    rm -rf "$tmp"
    mkdir -p "$tmp" "$data/bin"
    if command -v curl >/dev/null 2>&1; then
        get() { curl -fsSL --max-time 120 -o "$2" "$1"; }
    elif command -v wget >/dev/null 2>&1; then
        get() { wget -q -T 30 -O "$2" "$1"; }
    else
        echo "neither curl nor wget is installed to download $name" >"$failed"
        exit 1
    fi
    if command -v sha256sum >/dev/null 2>&1; then
        sha256() { sha256sum "$1" | cut -d' ' -f1; }
    else
        sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
    fi
    if ! get "$url/$name" "$tmp/$name"; then
        echo "could not download $url/$name" >"$failed"
        exit 1
    fi
    actual=$(sha256 "$tmp/$name")
    if [ "$actual" != "$sum" ]; then
        echo "$url/$name does not have the SHA-256 this plugin pins (got $actual, expected $sum): not installed" >"$failed"
        exit 1
    fi
    dir=${name%.tar.gz}
    if ! tar -xzf "$tmp/$name" -C "$tmp" "$dir/ctxguard" || ! "$tmp/$dir/ctxguard" --version >/dev/null 2>&1; then
        echo "$name did not unpack into a ctxguard that runs here" >"$failed"
        exit 1
    fi
    chmod 0755 "$tmp/$dir/ctxguard"
    mv -f "$tmp/$dir/ctxguard" "$bin"
    rm -f "$failed"
}

mkdir -p "$data" 2>/dev/null || quit "the ctxguard binary was not found, and the plugin's data folder $data cannot be created"
# A failure is retried after 10 minutes, not on every hook in between.
if [ -f "$failed" ] && [ -n "$(find "$failed" -mmin -10 2>/dev/null)" ]; then
    quit "the ctxguard binary was not found; its download failed, retried in 10 minutes: $(head -n 1 "$failed")"
fi
# A lock left by a download that died (a killed process group) is taken over after 3 minutes.
if [ -d "$lock" ] && [ -n "$(find "$lock" -prune -mmin +3 2>/dev/null)" ]; then
    rm -rf "$lock"
fi
if mkdir "$lock" 2>/dev/null; then
    (fetch) </dev/null >/dev/null 2>&1 &
fi

# Wait for the download (this one's or another hook's) a few seconds, then run the binary with
# this hook's input, which is still unread.
deadline=$(($(date +%s) + ${CTXGUARD_PLUGIN_WAIT:-5}))
while [ "$(date +%s)" -lt "$deadline" ] && [ ! -x "$bin" ] && [ -d "$lock" ]; do
    sleep 0.2 2>/dev/null || sleep 1
done
[ -x "$bin" ] && exec "$bin" "$@"
if [ -f "$failed" ]; then
    quit "the ctxguard binary was not found, and its download failed: $(head -n 1 "$failed")"
fi
quit "the ctxguard binary was not found; downloading $name in the background (this hook did nothing; the next ones run it once it is in place)"
