#!/usr/bin/env bash
# Builds ctxguard's release into dist/ (or $DIST): what reaches a user without a Rust toolchain.
#   scripts/release.sh                  every target below that can be built here, then assembles
#   scripts/release.sh TARGET...        just these targets, then assembles
#   scripts/release.sh --archive-only TARGET...
#                                       builds and archives these targets, no more (a runner of
#                                       the release workflow, .github/workflows/release.yml)
#   scripts/release.sh --assemble       no build: assembles from the archives already in $DIST
#                                       (the workflow's last job, after each runner built its own)
#   CTXGUARD_RELEASE_BIN=PATH scripts/release.sh TARGET
#                                       packages the binary at PATH as TARGET's instead of
#                                       building it (the tests package the debug binary)
#
# $DIST then holds:
#   ctxguard-VERSION-TARGET.tar.gz      a folder ctxguard-VERSION-TARGET/ with the binary and the
#                                       README (.zip for Windows, with ctxguard.exe)
#   SHA256SUMS                          the archives' SHA-256 (sha256sum -c SHA256SUMS, in $DIST)
#   install.sh                          the installer (curl -fsSL URL/install.sh | sh), its
#                                       download address (this version's) and SHA256SUMS written
#                                       in: it checks an archive against those, never against a
#                                       file downloaded beside it
#   npm/                                the npm package `ctxguard` and one package per platform
#                                       (`@ctxguard/linux-x64`, ...) holding its native binary
# and it writes plugin/hooks/release.sha256 (or $CTXGUARD_PINS): the address of this release and the
# SHA-256 of its archives, which the plugin's hooks/run.sh checks a download against. Committed,
# it is what the plugin trusts (docs/install.md).
#
# The download address comes from one place: `repository` in Cargo.toml (the GitHub releases of
# that repository; cargo binstall reads the same field). Change it there.
#
# A target can be built when its Rust standard library is installed (`rustup target add`) and a
# linker for it is at hand: the host's own; mingw-w64 (x86_64-w64-mingw32-gcc) for Windows on
# Linux; aarch64-linux-gnu-gcc for ARM Linux; Apple's toolchain (a macOS host) for both macOS
# targets. CARGO_TARGET_<TRIPLE>_LINKER names any other linker. Linux binaries are static
# (scripts/build-release.sh), so one archive serves glibc and musl systems alike.
set -euo pipefail
cd "$(dirname "$0")/.."
dist=${DIST:-dist}
mkdir -p "$dist"
dist=$(cd "$dist" && pwd)
pins=${CTXGUARD_PINS:-plugin/hooks/release.sha256}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
repository=$(sed -n 's/^repository = "\(.*\)"/\1/p' Cargo.toml | head -1)
[ -n "$repository" ] || { echo "release.sh: no repository = \"...\" in Cargo.toml" >&2; exit 1; }
version_url="$repository/releases/download/v$version"
all=(
    x86_64-unknown-linux-gnu
    aarch64-unknown-linux-gnu
    x86_64-apple-darwin
    aarch64-apple-darwin
    x86_64-pc-windows-gnu
    x86_64-pc-windows-msvc
    aarch64-pc-windows-msvc
)

# The npm platform (process.platform-process.arch) each target's binary serves. Of the two
# Windows x64 builds, npm takes the MSVC one when both are there.
npm_platform() { # target -> platform, or nothing
    case "$1" in
        x86_64-unknown-linux-gnu) echo linux-x64 ;;
        aarch64-unknown-linux-gnu) echo linux-arm64 ;;
        x86_64-apple-darwin) echo darwin-x64 ;;
        aarch64-apple-darwin) echo darwin-arm64 ;;
        x86_64-pc-windows-msvc | x86_64-pc-windows-gnu) echo win32-x64 ;;
        aarch64-pc-windows-msvc) echo win32-arm64 ;;
    esac
}

sha256() { # file -> its SHA-256
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    else
        shasum -a 256 "$1" | cut -d' ' -f1
    fi
}

# --- build and archive ---------------------------------------------------------------------------

installed() { # target: its standard library is installed
    [ "$1" = "$host" ] && return 0
    command -v rustup >/dev/null 2>&1 && rustup target list --installed | grep -qx "$1"
}

linker_var() { # target -> CARGO_TARGET_..._LINKER
    echo "CARGO_TARGET_$(echo "$1" | tr 'a-z-' 'A-Z_')_LINKER"
}

why=
linker() { # target: 0 when a linker for it is at hand; else `why` says what is missing
    local var
    var=$(linker_var "$1")
    [ "$1" = "$host" ] && return 0
    [ -n "${!var:-}" ] && return 0
    case "$1" in
        *-apple-darwin)
            case "$host" in *-apple-darwin) return 0 ;; esac
            why="needs Apple's linker (a macOS host, or $var)"
            ;;
        x86_64-pc-windows-gnu)
            command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 && return 0
            why="needs mingw-w64 (x86_64-w64-mingw32-gcc; Debian: gcc-mingw-w64-x86-64)"
            ;;
        *-pc-windows-msvc)
            case "$host" in *-pc-windows-msvc) return 0 ;; esac
            why="needs the MSVC linker (a Windows host)"
            ;;
        aarch64-unknown-linux-gnu)
            if command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
                export "$var=aarch64-linux-gnu-gcc"
                return 0
            fi
            why="needs aarch64-linux-gnu-gcc (Debian: gcc-aarch64-linux-gnu)"
            ;;
        *) why="needs a linker for it ($var)" ;;
    esac
    return 1
}

archive() { # target binary -> the archive, in $dist
    local target=$1 bin=$2 name="ctxguard-$version-$1" exe='' stage
    case "$target" in *-windows-*) exe=.exe ;; esac
    stage=$(mktemp -d)
    mkdir "$stage/$name"
    cp "$bin" "$stage/$name/ctxguard$exe"
    chmod 0755 "$stage/$name/ctxguard$exe"
    cp README.md "$stage/$name/"
    rm -f "$dist/$name.tar.gz" "$dist/$name.zip"
    if [ -n "$exe" ]; then
        if command -v zip >/dev/null 2>&1; then
            (cd "$stage" && zip -qr "$dist/$name.zip" "$name")
        elif command -v 7z >/dev/null 2>&1; then
            (cd "$stage" && 7z a -tzip -bd "$dist/$name.zip" "$name" >/dev/null)
        else
            echo "release.sh: $target: neither zip nor 7z is installed to make $name.zip" >&2
            exit 1
        fi
        echo "$dist/$name.zip"
    else
        (cd "$stage" && tar -czf "$dist/$name.tar.gz" "$name")
        echo "$dist/$name.tar.gz"
    fi
    rm -rf "$stage"
}

build() { # targets...
    local targets=("$@") built=() skipped=() target bin
    if [ -n "${CTXGUARD_RELEASE_BIN:-}" ]; then
        [ ${#targets[@]} -eq 1 ] || { echo "release.sh: CTXGUARD_RELEASE_BIN packages one TARGET" >&2; exit 1; }
        echo "== ${targets[0]}: packaging $CTXGUARD_RELEASE_BIN (not built)" >&2
        built+=("$(archive "${targets[0]}" "$CTXGUARD_RELEASE_BIN")")
    else
        host=$(rustc -vV | sed -n 's/^host: //p')
        for target in "${targets[@]}"; do
            if ! installed "$target"; then
                skipped+=("$target: its standard library is not installed (rustup target add $target)")
                continue
            fi
            if ! linker "$target"; then
                skipped+=("$target: $why")
                continue
            fi
            echo "== $target" >&2
            bin=$(scripts/build-release.sh "$target")
            built+=("$(archive "$target" "$bin")")
        done
    fi
    [ ${#built[@]} -gt 0 ] || { printf 'nothing built:\n' >&2; printf '  %s\n' "${skipped[@]}" >&2; exit 1; }
    echo "built:"
    printf '  %s\n' "${built[@]}"
    if [ ${#skipped[@]} -gt 0 ]; then
        echo "skipped:"
        printf '  %s\n' "${skipped[@]}"
    fi
}

# --- assemble: checksums, installer, plugin pins, npm ---------------------------------------------

archives=()
find_archives() {
    archives=()
    local a
    for a in "$dist"/ctxguard-"$version"-*.tar.gz "$dist"/ctxguard-"$version"-*.zip; do
        [ -f "$a" ] && archives+=("$(basename "$a")")
    done
    [ ${#archives[@]} -gt 0 ] || { echo "release.sh: no archives of $version in $dist" >&2; exit 1; }
}

target_of() { # archive name -> target
    local t=${1#ctxguard-"$version"-}
    t=${t%.tar.gz}
    echo "${t%.zip}"
}

checksums() {
    local a
    : >"$dist/SHA256SUMS.new"
    for a in "${archives[@]}"; do
        echo "$(sha256 "$dist/$a")  $a" >>"$dist/SHA256SUMS.new"
    done
    mv "$dist/SHA256SUMS.new" "$dist/SHA256SUMS"
}

installer() {
    # The checksums go in where the template has the line @SHA256SUMS@.
    awk -v url="$version_url" -v sums="$dist/SHA256SUMS" '
        $0 == "@SHA256SUMS@" { while ((getline line < sums) > 0) print line; next }
        { gsub("@DOWNLOAD_URL@", url); print }
    ' scripts/installer.sh >"$dist/install.sh.new"
    chmod 0755 "$dist/install.sh.new"
    mv "$dist/install.sh.new" "$dist/install.sh"
}

plugin_pins() {
    mkdir -p "$(dirname "$pins")"
    {
        echo "# The release hooks/run.sh downloads when no ctxguard binary is installed, and the"
        echo "# SHA-256 each archive must have. Written by scripts/release.sh; do not edit."
        echo "url $version_url"
        for a in "${archives[@]}"; do
            echo "sha256 $(sha256 "$dist/$a") $a"
        done
    } >"$pins.new"
    mv "$pins.new" "$pins"
}

npm_packages() {
    if ! command -v npm >/dev/null 2>&1; then
        echo "npm: skipped (npm is not installed)"
        return
    fi
    local stage a target platform os cpu exe tmp optional=() seen=" "
    stage=$(mktemp -d)
    rm -rf "$dist/npm"
    mkdir -p "$dist/npm"
    # The MSVC build first, so that it is the one win32-x64 takes.
    for a in $(printf '%s\n' "${archives[@]}" | sort -r); do
        target=$(target_of "$a")
        platform=$(npm_platform "$target")
        [ -n "$platform" ] || continue
        case "$seen" in *" $platform "*) continue ;; esac
        seen="$seen$platform "
        os=${platform%-*} cpu=${platform#*-} exe=
        [ "$os" = win32 ] && exe=.exe
        tmp="$stage/$platform"
        mkdir -p "$tmp"
        case "$a" in
            *.zip) (cd "$tmp" && unzip -q "$dist/$a") ;;
            *) tar -xzf "$dist/$a" -C "$tmp" ;;
        esac
        mv "$tmp/ctxguard-$version-$target/ctxguard$exe" "$tmp/ctxguard$exe"
        rm -rf "$tmp/ctxguard-$version-$target"
        # No `bin` here: the package `ctxguard` puts this binary on PATH (npm/install.js).
        cat >"$tmp/package.json" <<EOF
{
  "name": "@ctxguard/$platform",
  "version": "$version",
  "description": "The ctxguard binary for $platform ($target); installed by the npm package ctxguard",
  "repository": "$repository",
  "license": "MIT OR Apache-2.0",
  "os": ["$os"],
  "cpu": ["$cpu"],
  "files": ["ctxguard$exe"],
  "preferUnplugged": true
}
EOF
        (cd "$tmp" && npm pack --silent --pack-destination "$dist/npm" >/dev/null)
        optional+=("@ctxguard/$platform")
    done
    tmp="$stage/ctxguard"
    mkdir -p "$tmp/bin" "$tmp/pi"
    cp npm/install.js npm/README.md "$tmp/"
    cp npm/stub "$tmp/bin/ctxguard.exe"
    # pi's extension, for `pi install npm:ctxguard` (the "pi" manifest below); it runs the binary
    # beside it, bin/ctxguard.exe.
    cp pi/ctxguard.ts "$tmp/pi/"
    cat >"$tmp/package.json" <<EOF
{
  "name": "ctxguard",
  "version": "$version",
  "description": "$(sed -n 's/^description = "\(.*\)"/\1/p' Cargo.toml | head -1)",
  "repository": "$repository",
  "license": "MIT OR Apache-2.0",
  "keywords": ["claude-code", "codex", "pi-package", "hooks", "compaction", "context"],
  "bin": { "ctxguard": "bin/ctxguard.exe" },
  "scripts": { "postinstall": "node install.js" },
  "files": ["bin/ctxguard.exe", "install.js", "README.md", "pi/ctxguard.ts"],
  "pi": { "extensions": ["./pi/ctxguard.ts"] },
  "optionalDependencies": {
$(for p in "${optional[@]}"; do printf '    "%s": "%s"\n' "$p" "$version"; done | sed '$!s/$/,/')
  }
}
EOF
    (cd "$tmp" && npm pack --silent --pack-destination "$dist/npm" >/dev/null)
    rm -rf "$stage"
    echo "npm:"
    for a in "$dist"/npm/*.tgz; do echo "  $a"; done
}

assemble() {
    find_archives
    checksums
    installer
    plugin_pins
    echo "release $version in $dist:"
    printf '  %s\n' "${archives[@]}" SHA256SUMS install.sh
    npm_packages
    echo "plugin pins: $pins (commit it: the plugin downloads what it names)"
}

if [ "${1:-}" = --assemble ]; then
    [ $# -eq 1 ] || { echo "release.sh: --assemble takes no targets" >&2; exit 1; }
    assemble
    exit 0
fi
archive_only=
if [ "${1:-}" = --archive-only ]; then
    archive_only=1
    shift
    [ $# -gt 0 ] || { echo "release.sh: --archive-only needs the targets" >&2; exit 1; }
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
build "${targets[@]}"
[ -n "$archive_only" ] || assemble
