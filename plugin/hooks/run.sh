#!/bin/sh
# Runs a ctxguard hook for the Claude Code plugin: the installed binary (CTXGUARD_BIN, PATH,
# ~/.local/bin, /usr/local/bin), else the one this plugin downloaded into
# ${CLAUDE_PLUGIN_DATA}/bin. With neither, it fetches the release that hooks/release.sha256 names
# (written by scripts/release.sh) for this platform, in the background, under a lock so that
# hooks running at once download it once; it checks the archive's SHA-256 against that file and
# installs nothing that differs. Only the hook that started the download waits for it, a few
# seconds at most (CTXGUARD_PLUGIN_WAIT, default 5), then runs it; every other hook returns at
# once and does nothing: exit 0, nothing on stdout, one line on stderr saying why, so a missing
# binary never blocks or breaks a session. The first of those tells the user too, once per
# download ({"systemMessage": ...}, which the client shows). A download takes at most
# CTXGUARD_DOWNLOAD_LIMIT seconds (default 120) whichever of curl and wget fetches it, and a
# lock is taken over only once the download that holds it has died.
#
# Once the binary it downloaded runs, and nothing named ctxguard is on PATH or in ~/.local/bin,
# it links ~/.local/bin/ctxguard to it, so the user's `ctxguard doctor`, `status`, `log` and
# `uninstall --purge` work as the README writes them; it says so to the user once.
# CTXGUARD_DOWNLOAD_URL downloads from another address (a mirror); the SHA-256 is checked all the
# same.
#
# hooks.json runs this in shell form, "${CLAUDE_PLUGIN_ROOT}/hooks/run.sh" quoted: the exec form
# (no shell) would save a shell per call on Linux and macOS, but on Windows the client starts an
# exec-form command directly, and a shell script cannot be started that way; in shell form it
# runs under Git Bash there too. The quotes keep a plugin path with spaces in one piece.
set -eu

data=${CLAUDE_PLUGIN_DATA:-}
local_bin=${HOME:+$HOME/.local/bin}
for candidate in "${CTXGUARD_BIN:-}" "$(command -v ctxguard 2>/dev/null || true)" \
    "${local_bin:+$local_bin/ctxguard}" "${local_bin:+$local_bin/ctxguard.exe}" /usr/local/bin/ctxguard; do
    if [ -n "$candidate" ] && [ -f "$candidate" ] && [ -x "$candidate" ]; then
        exec "$candidate" "$@"
    fi
done
bin="$data/bin/ctxguard"

# Whether this hook's output may carry a message to the user: the events whose output is JSON
# (or nothing). PreCompact's plain output goes to the summarizer, and the others show nothing.
says() {
    case "${1:-}" in
        sessionstart | userpromptsubmit | pretooluse | posttoolbatch | stop) return 0 ;;
    esac
    return 1
}

# A JSON string of $1 (backslashes, quotes; the messages hold no control characters).
json_string() {
    printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"
}

# The downloaded binary runs. The first time, with nothing named ctxguard where a user's shell
# finds it, ~/.local/bin/ctxguard is linked to it (a link this plugin made before and whose
# binary is gone is replaced), and this hook's output carries a message saying so.
run_downloaded() {
    hook=${1:-}
    link="$local_bin/ctxguard"
    if [ -z "$local_bin" ] || ! says "$hook" || [ -e "$data/linked" ]; then
        exec "$bin" "$@"
    fi
    if [ -L "$link" ] && [ ! -e "$link" ]; then
        case "$(readlink "$link" 2>/dev/null || true)" in
            */plugins/data/*) rm -f "$link" ;;
        esac
    fi
    if [ -e "$link" ] || [ -L "$link" ] || ! mkdir -p "$local_bin" 2>/dev/null ||
        ! ln -s "$bin" "$link" 2>/dev/null; then
        : >"$data/linked" 2>/dev/null || true
        exec "$bin" "$@"
    fi
    echo "$link" >"$data/linked" 2>/dev/null || true
    case ":${PATH:-}:" in
        *":$local_bin:"*) how="run \`ctxguard doctor\`, \`ctxguard status\`" ;;
        *) how="$local_bin is not on your PATH: add it, or run \`$link doctor\`" ;;
    esac
    message="ctxguard: linked $link to the binary this plugin downloaded; $how (docs/usage.md). To remove ctxguard and this plugin: ctxguard uninstall --purge"
    # The hook's own output, the message added: `{...}` gets a first key, nothing becomes the
    # message alone.
    out=$("$bin" "$@" && echo .) || {
        code=$?
        exit "$code"
    }
    out=${out%.}
    case "$out" in
        '') printf '{"systemMessage":%s}\n' "$(json_string "$message")" ;;
        '{'*) printf '{"systemMessage":%s,%s' "$(json_string "$message")" "${out#\{}" ;;
        *) printf '%s' "$out" ;;
    esac
    exit 0
}
if [ -n "$data" ] && [ -f "$bin" ] && [ -x "$bin" ]; then
    run_downloaded "$@"
fi

# Not there: exit 0, nothing on stdout (or the one message to the user), one line on stderr (and
# the input read, so the client never writes into a closed pipe).
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
limit=${CTXGUARD_DOWNLOAD_LIMIT:-120}
case "$limit" in '' | *[!0-9]*) limit=120 ;; esac

lock="$data/fetch.lock"
failed="$data/fetch.failed"
# Inside the lock: it goes with the download it was said of, and none is said of a download
# already over.
said="$lock/said"

# Runs "$@", killed after $limit seconds if it has not ended: wget has no bound on a whole
# download (a server that trickles a byte every few seconds never trips its read timeout), and
# curl's own --max-time is kept as well.
bounded() {
    "$@" &
    job=$!
    (
        trap 'kill "$nap" 2>/dev/null; exit 0' TERM
        sleep "$limit" &
        nap=$!
        wait "$nap"
        kill "$job" 2>/dev/null
    ) </dev/null >/dev/null 2>&1 &
    dog=$!
    status=0
    wait "$job" || status=$?
    kill "$dog" 2>/dev/null || true
    return "$status"
}

# The download, in a process of its own: it outlives this hook. Every outcome is one line in
# fetch.failed, or the binary in place.
fetch() {
    tmp="$data/fetch.$$"
    job=
    trap 'rm -rf "$tmp" "$lock"' EXIT
    # Stopped, it stops its download too.
    trap '[ -z "$job" ] || kill "$job" 2>/dev/null; exit 1' HUP INT TERM
    rm -rf "$tmp"
    mkdir -p "$tmp" "$data/bin"
    if command -v curl >/dev/null 2>&1; then
        # Run only through `bounded`, in a process of its own: exec makes it the tool itself,
        # which the watchdog kills.
        # shellcheck disable=SC2317
        get() { exec curl -fsSL --connect-timeout 20 --max-time "$limit" -o "$2" "$1"; }
    elif command -v wget >/dev/null 2>&1; then
        # shellcheck disable=SC2317
        get() { exec wget -q -T 20 -t 1 -O "$2" "$1"; }
    else
        echo "neither curl nor wget is installed to download $name" >"$failed"
        exit 1
    fi
    if command -v sha256sum >/dev/null 2>&1; then
        sha256() { sha256sum "$1" | cut -d' ' -f1; }
    else
        sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
    fi
    started=$(date +%s)
    if ! bounded get "$url/$name" "$tmp/$name"; then
        if [ $(($(date +%s) - started)) -ge "$limit" ]; then
            echo "could not download $url/$name within $limit seconds (CTXGUARD_DOWNLOAD_LIMIT)" >"$failed"
        else
            echo "could not download $url/$name" >"$failed"
        fi
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

# The download that holds the lock is alive: its process id is in the lock (written just after
# it started; a lock without one is young, or was left by a hook killed in between, and is
# given a minute).
alive() {
    pid=$(cat "$lock/pid" 2>/dev/null || true)
    case "$pid" in
        '' | *[!0-9]*) [ -z "$(find "$lock" -prune -mmin +1 2>/dev/null)" ] ;;
        *) kill -0 "$pid" 2>/dev/null ;;
    esac
}

mkdir -p "$data" 2>/dev/null || quit "the ctxguard binary was not found, and the plugin's data folder $data cannot be created"
# A failure is retried after 10 minutes, not on every hook in between.
if [ -f "$failed" ] && [ -n "$(find "$failed" -mmin -10 2>/dev/null)" ]; then
    quit "the ctxguard binary was not found; its download failed, retried in 10 minutes: $(head -n 1 "$failed")"
fi
# A lock whose download died (a killed process group, a reboot) is moved aside, by one hook
# (a rename is atomic), and only if it is still the lock that was judged dead.
if [ -d "$lock" ] && ! alive; then
    dead=$(cat "$lock/pid" 2>/dev/null || true)
    if mv "$lock" "$lock.$$" 2>/dev/null; then
        if [ "$(cat "$lock.$$/pid" 2>/dev/null || true)" = "$dead" ]; then
            rm -rf "$lock.$$"
        else
            mv "$lock.$$" "$lock" 2>/dev/null || rm -rf "$lock.$$"
        fi
    fi
fi
# Quits as `quit` does, but the first hook of a download whose output reaches the client as JSON
# tells the user why ctxguard does nothing yet.
downloading() {
    if says "$hook" && mkdir "$said" 2>/dev/null; then
        printf '{"systemMessage":%s}\n' "$(json_string "ctxguard is being downloaded for its plugin ($name): its hooks do nothing until it is in place, in a few seconds")"
    fi
    quit "$1"
}
hook=${1:-}
if ! mkdir "$lock" 2>/dev/null; then
    # Another hook's download is under way: this one does not wait for it.
    downloading "the ctxguard binary was not found; another hook is downloading $name (this hook did nothing)"
fi
(fetch) </dev/null >/dev/null 2>&1 &
# Into the lock, unless the download has already ended and removed it.
echo "$!" >"$lock/pid" 2>/dev/null || true

# This hook started the download: it waits for it a few seconds, then runs the binary with its
# input, which is still unread.
deadline=$(($(date +%s) + ${CTXGUARD_PLUGIN_WAIT:-5}))
while [ "$(date +%s)" -lt "$deadline" ] && [ ! -x "$bin" ] && [ -d "$lock" ]; do
    sleep 0.2 2>/dev/null || sleep 1
done
[ -x "$bin" ] && run_downloaded "$@"
if [ -f "$failed" ]; then
    quit "the ctxguard binary was not found, and its download failed: $(head -n 1 "$failed")"
fi
downloading "the ctxguard binary was not found; downloading $name in the background (this hook did nothing; the next ones run it once it is in place)"
