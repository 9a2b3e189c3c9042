#!/usr/bin/env bash
# Builds the release binaries for every target whose toolchain is installed here, into dist/
# (or $DIST), each with its SHA-256 checksum beside it (`<file>.sha256`) and all of them in
# SHA256SUMS; prints what it built and what it skipped, and why.
#   scripts/release.sh                  every target below that can be built here
#   scripts/release.sh TARGET...        just these
#
# A target can be built when its Rust standard library is installed (`rustup target add`) and a
# linker for it is at hand: the host's own; mingw-w64 (x86_64-w64-mingw32-gcc) for Windows on
# Linux; aarch64-linux-gnu-gcc for ARM Linux; Apple's toolchain (a macOS host) for both macOS
# targets. CARGO_TARGET_<TRIPLE>_LINKER names any other linker. Linux binaries are static
# (scripts/build-release.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
dist=${DIST:-dist}
host=$(rustc -vV | sed -n 's/^host: //p')
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
all=(
    x86_64-unknown-linux-gnu
    aarch64-unknown-linux-gnu
    x86_64-apple-darwin
    aarch64-apple-darwin
    x86_64-pc-windows-gnu
    x86_64-pc-windows-msvc
    aarch64-pc-windows-msvc
)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

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

sha256() { # file -> "<hash>  <name>"
    if command -v sha256sum >/dev/null 2>&1; then
        (cd "$(dirname "$1")" && sha256sum "$(basename "$1")")
    else
        (cd "$(dirname "$1")" && shasum -a 256 "$(basename "$1")")
    fi
}

mkdir -p "$dist"
rm -f "$dist"/ctxguard-* "$dist/SHA256SUMS"
built=() skipped=()
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
    name="ctxguard-$version-$target"
    case "$bin" in *.exe) name="$name.exe" ;; esac
    cp "$bin" "$dist/$name"
    sha256 "$dist/$name" >"$dist/$name.sha256"
    built+=("$dist/$name")
done
[ ${#built[@]} -gt 0 ] || { printf 'nothing built:\n' >&2; printf '  %s\n' "${skipped[@]}" >&2; exit 1; }
(cd "$dist" && cat ./*.sha256 >SHA256SUMS)
echo "built:"
for b in "${built[@]}"; do
    echo "  $b ($(cut -d' ' -f1 <"$b.sha256"))"
done
if [ ${#skipped[@]} -gt 0 ]; then
    echo "skipped:"
    printf '  %s\n' "${skipped[@]}"
fi
echo "checksums: $dist/SHA256SUMS (sha256sum -c SHA256SUMS, in $dist)"
