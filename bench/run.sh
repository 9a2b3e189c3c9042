#!/usr/bin/env bash
# ./bench/run.sh — measures ctxguard's hooks against the process-start floor and against the
# alternatives people run today, on this machine, in one run; writes docs/benchmarks.md (its last
# section, on the number of sessions, by bench/sessions.sh).
#
# Installs what it needs: hyperfine >= 1.16 (for --input; built with cargo into bench/.tools when
# the system's is older), jq, valgrind, GNU time (Debian packages), bun (npm package
# @oven/bun-linux-x64, skipped if it does not install). Node and python3 are expected.
# Times are medians and p95 over many runs, stdin fed from payload files with no shell in
# between (hyperfine -N --input).
#   RUNS=300 ./bench/run.sh        runs per command (default 200; precompact uses a tenth)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
runs=${RUNS:-200}

# --- tools ------------------------------------------------------------------------------
apt_need() { # command package
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq >/dev/null && apt-get install -y -qq "$2" >/dev/null
    else
        echo "missing $1 (install the Debian package $2)" >&2
        return 1
    fi
}
apt_need jq jq
apt_need valgrind valgrind || true
[ -x /usr/bin/time ] || apt_need /usr/bin/time time || true
hf=hyperfine
if ! command -v hyperfine >/dev/null 2>&1 || ! hyperfine --help | grep -q -- '--input'; then
    if [ ! -x bench/.tools/bin/hyperfine ]; then
        echo "building hyperfine with cargo (the system's has no --input)..." >&2
        cargo install hyperfine --version 1.20.0 --locked --root bench/.tools
    fi
    hf=$root/bench/.tools/bin/hyperfine
fi
bun=$(command -v bun || true)
if [ -z "$bun" ] && command -v npm >/dev/null 2>&1; then
    bun_pkg=bench/.tools/npm/node_modules/@oven/bun-linux-x64/bin/bun
    [ -x "$bun_pkg" ] || npm install --silent --no-save --prefix bench/.tools/npm @oven/bun-linux-x64 >/dev/null 2>&1 || true
    [ -x "$bun_pkg" ] && bun=$root/$bun_pkg
fi
bin=$(scripts/build-release.sh) # the binary install.sh installs

# --- fixtures ---------------------------------------------------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The toolchain stays where it is (bench/sessions.sh builds with cargo) while HOME moves.
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup} CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
export HOME=$work/home CTXGUARD_HOME=$work/state CTXGUARD_BENCH_MARKER=$work/no-marker
unset CTXGUARD_WINDOW_TOKENS NO_COLOR
mkdir -p "$HOME"
fx=$root/fixtures/claude-code-2.1.330
for mb in 1 10 50 100; do
    python3 bench/gen_transcript.py "$mb" "$work/t$mb.jsonl"
done
python3 bench/gen_transcript.py 50 "$work/t50whole.jsonl" --no-boundary
S_FAST=bench-fast S_TRANSCRIPT=bench-transcript S_ARMED=bench-armed
jq -c --arg s "$S_FAST" '.session_id=$s' "$fx/statusline-after-turn.json" >"$work/sl-fast.json"
jq -c --arg s "$S_ARMED" '.session_id=$s | .context_window.current_usage.cache_read_input_tokens=930000' \
    "$fx/statusline-after-turn.json" >"$work/sl-armed.json"
pre() { jq -c --arg s "$1" --arg t "$2" '.session_id=$s | .transcript_path=$t' "$fx/PreToolUse.json"; }
pre "$S_FAST" /nonexistent >"$work/pre-fast.json"
pre "$S_TRANSCRIPT" "$work/t100.jsonl" >"$work/pre-transcript.json"
pre "$S_ARMED" /nonexistent >"$work/pre-armed.json"
# The end of a turn: Stop reads the transcript like PreToolUse (nothing new to read after the
# first run), below idle compaction's 200k, so it says nothing.
jq -c --arg t "$work/t100.jsonl" '.session_id="bench-stop" | .transcript_path=$t' \
    "$fx/Stop.json" >"$work/stop.json"
for t in 10 50 50whole; do
    jq -c --arg t "$work/t$t.jsonl" '.session_id="bench-precompact" | .transcript_path=$t' \
        "$fx/PreCompact-auto.json" >"$work/precompact-$t.json"
done
# A Codex session: a 50 MB rollout (the work fixture's lines, repeated, with no compaction), the
# PreToolUse payload of Codex 0.169.0 pointing at it.
mkdir -p "$work/codex/sessions/2026/11/25"
rollout=$work/codex/sessions/2026/11/25/rollout-2026-11-25T18-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000.jsonl
python3 - "$rollout" <<'PY'
import sys
lines = [l for l in open("fixtures/codex/rollout-work.jsonl") if '"compacted"' not in l]
with open(sys.argv[1], "w") as out:
    n = 0
    while out.tell() < 50 * 1024 * 1024:
        out.writelines(lines)
        n += 1
PY
jq -c --arg t "$rollout" '.stdin | .session_id="bench-codex" | .transcript_path=$t' \
    fixtures/codex/PreToolUse.json >"$work/pre-codex.json"
refresh="sh -c '$bin statusline --quiet < $work/sl-fast.json'"
rearm="sh -c '$bin reset --session $S_ARMED >/dev/null 2>&1; $bin statusline --quiet < $work/sl-armed.json'"

# --- timings ----------------------------------------------------------------------------
out=$work/json
mkdir -p "$out"
measure() { # name input [hyperfine options] command
    local name=$1 input=$2
    shift 2
    echo "== $name" >&2
    "$hf" -N --style none --warmup 5 --runs "${N:-$runs}" --input "$input" \
        --export-json "$out/$name.json" "$@" >/dev/null
}
measure floor /dev/null /bin/true
measure statusline "$work/sl-fast.json" "$bin statusline"
measure pretooluse-fast "$work/pre-fast.json" --prepare "$refresh" "$bin pretooluse"
# A 1M window for this session, so its 150k stays idle: no status line, so every call reads
# the transcript (100 MB): the tail once, then only what was appended since (here nothing).
CTXGUARD_WINDOW_TOKENS=1000000 measure pretooluse-transcript "$work/pre-transcript.json" "$bin pretooluse"
measure pretooluse-armed "$work/pre-armed.json" --prepare "$rearm" "$bin pretooluse"
# Codex: no status line ever, so every call reads the rollout (the tail once, then what was
# appended since).
CODEX_HOME=$work/codex measure pretooluse-codex "$work/pre-codex.json" "$bin pretooluse"
CTXGUARD_WINDOW_TOKENS=1000000 measure stop-transcript "$work/stop.json" "$bin stop"
# What the shell form of a hook costs per call: Claude Code runs a shell-form command with
# `/bin/sh -c`, and an exec-form one (what `ctxguard install` registers) directly. The same
# fast-path call, one right after the other.
measure exec-form "$work/pre-fast.json" --prepare "$refresh" "$bin pretooluse"
measure shell-form "$work/pre-fast.json" --prepare "$refresh" "sh -c '$bin pretooluse'"
# The alternatives, each on the same payload as the ctxguard path it replaces.
measure alt-bash-guard "$work/pre-fast.json" "bash bench/alternatives/guard.sh"
measure alt-bash-jq-statusline "$work/sl-fast.json" "bash bench/alternatives/statusline-jq.sh"
N=$(( runs / 4 > 20 ? runs / 4 : 20 )) measure alt-node-pretooluse "$work/pre-fast.json" \
    --prepare "$refresh" "node bench/alternatives/pretooluse.js"
if [ -n "$bun" ]; then
    measure alt-bun-pretooluse "$work/pre-fast.json" --prepare "$refresh" "$bun bench/alternatives/pretooluse.js"
fi
for mb in 1 10 100; do
    measure "usage-${mb}mb" /dev/null "$bin usage --json $work/t$mb.jsonl"
    N=10 measure "alt-node-usage-${mb}mb" /dev/null "node bench/alternatives/usage.js $work/t$mb.jsonl"
    N=10 measure "alt-python-usage-${mb}mb" /dev/null "python3 bench/alternatives/usage.py $work/t$mb.jsonl"
done
for t in 10:10mb 50:50mb 50whole:50mb-whole; do
    N=$(( runs / 10 > 10 ? runs / 10 : 10 )) measure "precompact-${t#*:}" "$work/precompact-${t%%:*}.json" "$bin precompact"
done

# --- peak memory (max of 5 runs) ---------------------------------------------------------
rss() { # name input command...
    local name=$1 input=$2 max=0 kb
    shift 2
    for _ in 1 2 3 4 5; do
        /usr/bin/time -f '%M' -o "$work/rss.tmp" "$@" <"$input" >/dev/null 2>&1 || true
        kb=$(tail -1 "$work/rss.tmp")
        [ "$kb" -gt "$max" ] && max=$kb
    done
    echo "$name $max" >>"$out/rss.txt"
}
if [ -x /usr/bin/time ]; then
    sh -c "$refresh"
    rss statusline "$work/sl-fast.json" "$bin" statusline
    rss pretooluse-fast "$work/pre-fast.json" "$bin" pretooluse
    CTXGUARD_WINDOW_TOKENS=1000000 rss pretooluse-transcript "$work/pre-transcript.json" "$bin" pretooluse
    sh -c "$rearm"
    rss pretooluse-armed "$work/pre-armed.json" "$bin" pretooluse
    CODEX_HOME=$work/codex rss pretooluse-codex "$work/pre-codex.json" "$bin" pretooluse
    rss usage-100mb /dev/null "$bin" usage "$work/t100.jsonl"
    rss precompact-10mb "$work/precompact-10.json" "$bin" precompact
    rss precompact-50mb-whole "$work/precompact-50whole.json" "$bin" precompact
    sh -c "$refresh"
    rss alt-node-pretooluse "$work/pre-fast.json" node bench/alternatives/pretooluse.js
fi

# --- instruction counts (callgrind: stable on a noisy machine) ---------------------------
instr() { # name input command... (every process it starts counted: the shell and what it runs)
    local name=$1 input=$2
    shift 2
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$work/cg.%p.out" "$@" \
        <"$input" >/dev/null 2>"$work/cg.err" || true
    echo "$name $(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/cg.err" | awk '{s += $1} END {print s}')" >>"$out/instr.txt"
}
if command -v valgrind >/dev/null 2>&1; then
    instr floor /dev/null /bin/true
    instr statusline "$work/sl-fast.json" "$bin" statusline
    sh -c "$refresh"
    instr pretooluse-fast "$work/pre-fast.json" "$bin" pretooluse
    CTXGUARD_WINDOW_TOKENS=1000000 instr pretooluse-transcript "$work/pre-transcript.json" "$bin" pretooluse
    sh -c "$rearm"
    instr pretooluse-armed "$work/pre-armed.json" "$bin" pretooluse
    CODEX_HOME=$work/codex instr pretooluse-codex "$work/pre-codex.json" "$bin" pretooluse
    sh -c "$refresh"
    instr shell-form "$work/pre-fast.json" sh -c "$bin pretooluse"
    instr usage-100mb /dev/null "$bin" usage "$work/t100.jsonl"
fi

python3 bench/report.py "$out" "$work" "$bin" "${bun:+$("$bun" --version)}" >docs/benchmarks.md
# The "Scale in sessions" section (10 against 10,000 sessions), appended to the file just written.
RUNS=$runs bench/sessions.sh
echo "wrote docs/benchmarks.md" >&2
sed -n '/^| budget/,/^$/p' docs/benchmarks.md
