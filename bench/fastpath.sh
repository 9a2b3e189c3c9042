#!/usr/bin/env bash
# ./bench/fastpath.sh [BASELINE_BINARY] — the PreToolUse fast path alone, quick enough to run
# before and after a change: an unarmed session (idle, fresh status line) and one armed and
# already nudged this cycle (nothing to give), plus the process-start floor. With a baseline
# binary (say, one built from main), each case runs both binaries in the same hyperfine call
# (one after the other: on a shared machine, compare the instruction counts too, from callgrind,
# which noise does not move).
#
#   bench/fastpath.sh /tmp/ctxguard-main      this tree's release binary against that one
#   RUNS=500 bench/fastpath.sh                more runs (default 300)
#
# Needs hyperfine >= 1.16 (for --input; bench/run.sh builds one into bench/.tools), jq, and
# valgrind for the instruction counts (skipped without it).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
runs=${RUNS:-300}
hf=hyperfine
if ! command -v hyperfine >/dev/null 2>&1 || ! hyperfine --help | grep -q -- '--input'; then
    hf=$root/bench/.tools/bin/hyperfine
fi
bin=$(scripts/build-release.sh)
base=${1:-}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home CTXGUARD_HOME=$work/state
unset CTXGUARD_WINDOW_TOKENS NO_COLOR
mkdir -p "$HOME"
fx=$root/fixtures/claude-code-2.1.330
jq -c '.session_id="bench-idle"' "$fx/statusline-after-turn.json" >"$work/sl-idle.json"
jq -c '.session_id="bench-nudged" | .context_window.current_usage.cache_read_input_tokens=930000' \
    "$fx/statusline-after-turn.json" >"$work/sl-nudged.json"
jq -c '.session_id="bench-idle" | .transcript_path="/nonexistent"' "$fx/PreToolUse.json" >"$work/pre-idle.json"
jq -c '.session_id="bench-nudged" | .transcript_path="/nonexistent"' "$fx/PreToolUse.json" >"$work/pre-nudged.json"

# Each case's state, made by the binary under test: a fresh status-line report (the fast path
# trusts it for a minute), and for the nudged case the one nudge given before the timing.
idle="sh -c '$bin statusline --quiet < $work/sl-idle.json'"
nudged="sh -c '$bin statusline --quiet < $work/sl-nudged.json'"
sh -c "$nudged"
"$bin" pretooluse <"$work/pre-nudged.json" | grep -q additionalContext
state=$(jq -r .state "$CTXGUARD_HOME/sessions/bench-nudged/marker.json")
[ "$state" = nudged ] || { echo "bench-nudged is $state, not nudged" >&2; exit 1; }

measure() { # name input prepare
    local name=$1 input=$2 prepare=$3
    local cmds=(-n "this tree" "$bin pretooluse")
    [ -n "$base" ] && cmds+=(-n baseline "$base pretooluse")
    echo "== $name" >&2
    "$hf" -N --style none --warmup 10 --runs "$runs" --input "$input" --prepare "$prepare" \
        --export-json "$work/$name.json" "${cmds[@]}" >/dev/null
    # The nudged case must stay quiet: a nudge given during the timing would be another path.
    [ -z "$("$bin" pretooluse <"$input")" ] || { echo "$name printed something" >&2; exit 1; }
}
"$hf" -N --style none --warmup 10 --runs "$runs" --export-json "$work/floor.json" /bin/true >/dev/null
measure unarmed "$work/pre-idle.json" "$idle"
measure nudged "$work/pre-nudged.json" "$nudged"

instr() { # input binary
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$2" pretooluse <"$1" 2>&1 >/dev/null |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

python3 - "$work" "$base" <<'PY'
import json, statistics, sys
work, base = sys.argv[1], sys.argv[2]
def med(name):
    out = {}
    for r in json.load(open(f"{work}/{name}.json"))["results"]:
        t = sorted(r["times"])
        out[r["command"]] = (statistics.median(t), t[int(len(t) * 0.95)])
    return out
floor = med("floor")["/bin/true"][0]
print(f"floor (/bin/true): {floor * 1000:.2f} ms")
for case, what in [("unarmed", "unarmed, fresh status line"), ("nudged", "armed, already nudged")]:
    for cmd, (m, p95) in med(case).items():
        print(f"pretooluse {what} [{cmd}]: median {m * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms, {m / floor:.2f}x floor")
PY
if command -v valgrind >/dev/null 2>&1; then
    sh -c "$idle"
    echo "instructions, unarmed [this tree]: $(instr "$work/pre-idle.json" "$bin")"
    [ -n "$base" ] && sh -c "$idle" && echo "instructions, unarmed [baseline]: $(instr "$work/pre-idle.json" "$base")"
    sh -c "$nudged"
    echo "instructions, nudged [this tree]: $(instr "$work/pre-nudged.json" "$bin")"
    [ -n "$base" ] && sh -c "$nudged" && echo "instructions, nudged [baseline]: $(instr "$work/pre-nudged.json" "$base")"
fi
