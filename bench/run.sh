#!/usr/bin/env bash
# ./bench/run.sh — measures ctxguard's hooks on this machine and writes docs/benchmarks.md.
#
# Installs what it needs: hyperfine (>= 1.16, for --input; built with cargo into bench/.tools when
# the system's is older) and jq. Times are medians and p95 over many runs, with stdin fed from
# fixture payloads and no shell in between (hyperfine -N --input).
#   RUNS=300 ./bench/run.sh        more runs per command (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
runs=${RUNS:-200}

# --- tools ------------------------------------------------------------------------------
if ! command -v jq >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq jq
fi
hf=hyperfine
if ! command -v hyperfine >/dev/null 2>&1 || ! hyperfine --help | grep -q -- '--input'; then
    if [ ! -x bench/.tools/bin/hyperfine ]; then
        echo "building hyperfine with cargo (the system's has no --input)..."
        cargo install hyperfine --version 1.20.0 --locked --root bench/.tools
    fi
    hf=$root/bench/.tools/bin/hyperfine
fi
cargo build --release --locked
bin=$root/target/release/ctxguard

# --- fixtures ---------------------------------------------------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home CTXGUARD_HOME=$work/state
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
pre "$S_TRANSCRIPT" "$work/t1.jsonl" >"$work/pre-transcript.json"
pre "$S_ARMED" /nonexistent >"$work/pre-armed.json"
for mb in 10 50 50whole; do
    jq -c --arg t "$work/t$mb.jsonl" '.session_id="bench-precompact" | .transcript_path=$t' \
        "$fx/PreCompact-auto.json" >"$work/precompact-$mb.json"
done
unset CTXGUARD_WINDOW_TOKENS
"$bin" statusline --quiet <"$work/sl-fast.json"

# --- timings ----------------------------------------------------------------------------
out=$work/json
mkdir -p "$out"
measure() { # name input command...
    local name=$1 input=$2
    shift 2
    echo "== $name"
    "$hf" -N --style basic --warmup 5 --runs "${N:-$runs}" --input "$input" \
        --export-json "$out/$name.json" "$@" 2>&1 | grep -E 'Time|Range' || true
}
measure floor /dev/null "/bin/true"
measure statusline "$work/sl-fast.json" "$bin statusline"
measure pretooluse-fast "$work/pre-fast.json" \
    --prepare "sh -c '$bin statusline --quiet < $work/sl-fast.json'" "$bin pretooluse"
# A 1M window for this session, so its 150k stays idle: the transcript is read on every call.
CTXGUARD_WINDOW_TOKENS=1000000 measure pretooluse-transcript "$work/pre-transcript.json" "$bin pretooluse"
measure pretooluse-armed "$work/pre-armed.json" \
    --prepare "sh -c '$bin reset --session $S_ARMED >/dev/null 2>&1; $bin statusline --quiet < $work/sl-armed.json'" \
    "$bin pretooluse"
for mb in 1 10 100; do
    measure "usage-${mb}mb" /dev/null "$bin usage --json $work/t$mb.jsonl"
done
for t in 10:10mb 50:50mb 50whole:50mb-whole; do
    N=$(( runs / 10 > 10 ? runs / 10 : 10 )) measure "precompact-${t#*:}" "$work/precompact-${t%%:*}.json" "$bin precompact"
done

# --- peak memory ------------------------------------------------------------------------
rss() { # name input command... -> max RSS in KB over 5 runs
    local name=$1 input=$2 max=0 kb
    shift 2
    for _ in 1 2 3 4 5; do
        /usr/bin/time -f '%M' -o "$work/rss.tmp" "$@" <"$input" >/dev/null 2>&1 || true
        kb=$(tail -1 "$work/rss.tmp")
        [ "$kb" -gt "$max" ] && max=$kb
    done
    echo "$name $max" >>"$out/rss.txt"
}
if [ -x /usr/bin/time ] || { apt-get install -y -qq time >/dev/null 2>&1 && [ -x /usr/bin/time ]; }; then
    "$bin" statusline --quiet <"$work/sl-fast.json"
    rss pretooluse-fast "$work/pre-fast.json" "$bin" pretooluse
    rss statusline "$work/sl-fast.json" "$bin" statusline
    CTXGUARD_WINDOW_TOKENS=1000000 rss pretooluse-transcript "$work/pre-transcript.json" "$bin" pretooluse
    rss usage-100mb /dev/null "$bin" usage "$work/t100.jsonl"
    rss precompact-50mb-whole "$work/precompact-50whole.json" "$bin" precompact
fi

python3 bench/report.py "$out" "$work" >docs/benchmarks.md
echo
echo "wrote docs/benchmarks.md"
grep -E '^\| (budget|✅|❌)|^- ' docs/benchmarks.md | head -40 || true
