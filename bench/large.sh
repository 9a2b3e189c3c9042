#!/usr/bin/env bash
# ./bench/large.sh — the hooks that read a whole transcript, on large ones: PreCompact, SessionEnd
# and a drop of context read by PreToolUse, over 100 and 300 MB transcripts of two kinds
# (bench/gen_large.py: turns shaped like a real session's, and small progress records, each with
# the client's uuid chain). Wall time and peak RSS (GNU time, max of RUNS runs, default 3) of
# the release binary, printed as a markdown table (docs/benchmarks.md keeps the last run).
#   SIZES="100 300" RUNS=3 ./bench/large.sh [BIN]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
sizes=${SIZES:-100 300}
[ -x /usr/bin/time ] || { apt-get update -qq >/dev/null && apt-get install -y -qq time >/dev/null; }
command -v jq >/dev/null || { apt-get update -qq >/dev/null && apt-get install -y -qq jq >/dev/null; }
bin=${1:-$(scripts/build-release.sh)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home CTXGUARD_HOME=$work/state CTXGUARD_WINDOW_TOKENS=1000000
mkdir -p "$HOME"
fx=fixtures/claude-code-2.1.330

# One run of `hook` on `payload`, from a fresh state: "seconds peak_kb".
once() { # hook payload [prepare command]
    rm -rf "$CTXGUARD_HOME"
    if [ -n "${3:-}" ]; then sh -c "$3"; fi
    /usr/bin/time -f '%e %M' -o "$work/t.out" "$bin" "$1" <"$2" >/dev/null 2>"$work/err" || true
    tail -1 "$work/t.out"
}
# The slowest and largest of `runs` runs.
measure() { # label hook payload [prepare]
    local s=0 kb=0 line
    for _ in $(seq "$runs"); do
        line=$(once "$2" "$3" "${4:-}")
        s=$(awk -v a="$s" -v b="${line% *}" 'BEGIN {print (b > a ? b : a)}')
        [ "${line#* }" -gt "$kb" ] && kb=${line#* }
    done
    local mb
    mb=$(awk -v s="$5" -v t="$s" 'BEGIN {printf "%.0f", (t > 0 ? s / t : 0)}')
    printf '| %s | %s s | %.1f MB | %s MB/s |\n' "$1" "$s" "$(awk -v k="$kb" 'BEGIN {print k / 1024}')" "$mb"
}

echo "| transcript, hook | wall time (max of $runs) | peak RSS (max of $runs) | read |"
echo "|---|---|---|---|"
for kind in real progress; do
    for mb in $sizes; do
        t=$work/$kind-$mb.jsonl
        python3 bench/gen_large.py "$mb" "$t" "$kind"
        size=$(( $(stat -c %s "$t") / 1048576 ))
        jq -c --arg t "$t" '.session_id="bench-large" | .transcript_path=$t' "$fx/PreCompact-auto.json" >"$work/pc.json"
        jq -c --arg t "$t" '.session_id="bench-large" | .transcript_path=$t' "$fx/SessionEnd.json" >"$work/se.json"
        measure "$kind $size MB, PreCompact" precompact "$work/pc.json" "" "$size"
        measure "$kind $size MB, SessionEnd" sessionend "$work/se.json" "" "$size"
        # A drop: PreToolUse reads the newest reply (900k), the client writes one at 275k with
        # no boundary, and the next PreToolUse acts on it (checkpoint, recovery, log).
        d=$work/drop.jsonl
        jq -c --arg t "$d" '.session_id="bench-large" | .transcript_path=$t' "$fx/PreToolUse.json" >"$work/pre.json"
        reply='{"type":"assistant","isSidechain":false,"uuid":"dddddddd-0000-4000-8000-000000000001","timestamp":"2026-11-22T10:00:00.000Z","message":{"id":"msg_drop","model":"claude-opus-5-5","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":8,"cache_creation_input_tokens":0,"cache_read_input_tokens":275000,"output_tokens":10}}}'
        prep="cp '$t' '$d' && '$bin' pretooluse <'$work/pre.json' >/dev/null 2>&1; echo '$reply' >>'$d'"
        measure "$kind $size MB, a drop on PreToolUse" pretooluse "$work/pre.json" "$prep" "$size"
        rm -f "$t" "$d"
    done
done
