#!/bin/sh
# Installs the ctxguard binary from a release, with no Rust toolchain:
#   curl -fsSL https://<releases>/install.sh | sh
#   PREFIX=/usr/local sh install.sh         installs to /usr/local/bin instead of ~/.local/bin
#   CTXGUARD_DOWNLOAD_URL=URL sh install.sh downloads from URL (a mirror, a folder served locally)
# It picks the archive for this machine (Linux x86_64 or arm64, static; macOS Apple silicon or
# Intel), downloads it with curl or wget, refuses an archive whose SHA-256 is not the one this
# script carries for it (installing nothing), checks that the binary runs here, and puts it in
# $PREFIX/bin (default ~/.local/bin) and nowhere else. Then `ctxguard install` registers the
# hooks.
#
# The checksums are the release's own, written into this script when the release was made: no
# SHA256SUMS is downloaded, so a mirror (CTXGUARD_DOWNLOAD_URL) that serves another archive
# cannot make it match, whatever else it serves. What is trusted is this script, from wherever
# it was fetched.
#
# This file is the template: scripts/release.sh writes it into each release as install.sh, with
# the download address (the release's own, from `repository` in Cargo.toml) and the release's
# SHA256SUMS filled in below.
set -eu

url=${CTXGUARD_DOWNLOAD_URL:-@DOWNLOAD_URL@}
prefix=${PREFIX:-${HOME:?HOME is not set}/.local}
bin_dir="$prefix/bin"

fail() {
    echo "ctxguard installer: $*" >&2
    exit 1
}

# "<sha256>  ctxguard-<version>-<target>.tar.gz", one line per archive of the release.
sums=$(
    cat <<'SUMS'
@SHA256SUMS@
SUMS
)
case "$sums" in
    @*) fail "this is the installer's template (scripts/installer.sh), which carries no checksums; use the install.sh of a release" ;;
esac
case "$url" in
    @*) fail "this is the installer's template (scripts/installer.sh); use the install.sh of a release, or set CTXGUARD_DOWNLOAD_URL" ;;
esac
url=${url%/}

# --- which build -------------------------------------------------------------------------------
os=$(uname -s)
arch=$(uname -m)
case "$arch" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) fail "no ctxguard build for the processor $arch (there are x86_64 and arm64 ones); build it from source: cargo install ctxguard" ;;
esac
case "$os" in
    Linux) target="$arch-unknown-linux-gnu" ;;
    Darwin)
        # An x86_64 shell under Rosetta on Apple silicon: the native build is the one to run.
        if [ "$arch" = x86_64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ]; then
            arch=aarch64
        fi
        target="$arch-apple-darwin"
        ;;
    MINGW* | MSYS* | CYGWIN* | Windows_NT)
        fail "on Windows, install with npm (npm install -g ctxguard) or unpack ctxguard-*-x86_64-pc-windows-msvc.zip from $url yourself"
        ;;
    *) fail "no ctxguard build for $os; build it from source: cargo install ctxguard" ;;
esac

# --- download ----------------------------------------------------------------------------------
if command -v curl >/dev/null 2>&1; then
    fetch() { curl -fsSL --proto '=https,http' --retry 2 -o "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
    fetch() { wget -q -O "$2" "$1"; }
else
    fail "neither curl nor wget is installed"
fi
if command -v sha256sum >/dev/null 2>&1; then
    sha256() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
    sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
elif command -v openssl >/dev/null 2>&1; then
    sha256() { openssl dgst -sha256 "$1" | sed 's/.*= *//'; }
else
    fail "no sha256sum, shasum or openssl to check the download with"
fi

tmp=$(mktemp -d 2>/dev/null || mktemp -d -t ctxguard)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# sha256sum's binary-mode "*" tolerated.
line=$(printf '%s\n' "$sums" | grep -E "^[0-9a-f]{64} [ *]ctxguard-[^ ]+-$target\.tar\.gz\$" | head -1 || true)
[ -n "$line" ] || fail "this release has no build for $target"
expected=${line%% *}
name=${line##* }
name=${name#\*}
fetch "$url/$name" "$tmp/$name" || fail "could not download $url/$name"
actual=$(sha256 "$tmp/$name")
[ "$actual" = "$expected" ] ||
    fail "$url/$name is not the release's archive (SHA-256 $actual, expected $expected, from the checksums this installer carries): not installed, nothing changed"

# --- unpack, check, install --------------------------------------------------------------------
mkdir "$tmp/x"
tar -xzf "$tmp/$name" -C "$tmp/x" || fail "could not unpack $name"
bin="$tmp/x/${name%.tar.gz}/ctxguard"
[ -f "$bin" ] || fail "$name holds no ${name%.tar.gz}/ctxguard"
chmod 0755 "$bin"
version=$("$bin" --version 2>/dev/null) || fail "the ctxguard in $name does not run on this machine ($os $arch): not installed"

mkdir -p "$bin_dir" || fail "could not create $bin_dir"
# Copy, then rename over: a hook running right now never sees a half-written binary.
cp "$bin" "$bin_dir/.ctxguard.new.$$" || fail "could not write to $bin_dir"
chmod 0755 "$bin_dir/.ctxguard.new.$$"
mv -f "$bin_dir/.ctxguard.new.$$" "$bin_dir/ctxguard" || {
    rm -f "$bin_dir/.ctxguard.new.$$"
    fail "could not replace $bin_dir/ctxguard"
}

echo "installed $bin_dir/ctxguard ($version, $target, SHA-256 checked)"
case ":${PATH:-}:" in
    *":$bin_dir:"*) cmd=ctxguard ;;
    *)
        cmd="$bin_dir/ctxguard"
        echo "note: $bin_dir is not on your PATH; add it, or run ctxguard by its full path"
        ;;
esac
echo "next: $cmd install                  registers the hooks with Claude Code (--dry-run shows the change first)"
echo "      $cmd install --client codex   registers them with the Codex CLI"
