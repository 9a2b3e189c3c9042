#!/usr/bin/env bash
# ./bench/pi_copy.sh — what a pi session's copy in transcript form costs a hook (src/pi/shadow.rs):
# a PreToolUse on a session of SIZE MB met for the first time (ctxguard installed midway: the copy
# is made, 32 MB of pi's file per call, so the first calls each read 32 MB), then the calls that
# read only what pi appended (one line). Wall time and peak RSS (GNU time, the slowest of RUNS
# runs, default 3) of the release binary, printed as a markdown table.
#   SIZE=100 RUNS=3 ./bench/pi_copy.sh [BIN]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
size=${SIZE:-100}
[ -x /usr/bin/time ] || { apt-get update -qq >/dev/null && apt-get install -y -qq time >/dev/null; }
bin=${1:-$(scripts/build-release.sh)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home CTXGUARD_HOME=$work/state
mkdir -p "$HOME"
sid=01a2339b-7390-72d2-9bf7-8ed8a20a51ce
file=$work/2026-12-01T21-55-55-409Z_$sid.jsonl
python3 - "$file" "$size" "$sid" <<'PY'
import json, random, sys
path, size, sid = sys.argv[1], int(sys.argv[2]) * 1024 * 1024, sys.argv[3]
random.seed(7)
with open(path, "w") as f:
    f.write(json.dumps({"type": "session", "version": 3, "id": sid,
                        "timestamp": "2026-12-01T21:55:55.409Z", "cwd": "/tmp/p"}) + "\n")
    parent, written, i = None, 0, 0
    while written < size:
        i += 1
        u, a, r = ("%08x" % (3 * i + k) for k in range(3))
        for e in (
            {"type": "message", "id": u, "parentId": parent, "timestamp": "2026-12-01T21:56:00.000Z",
             "message": {"role": "user", "content": [{"type": "text", "text": "run the tests %d" % i}]}},
            {"type": "message", "id": a, "parentId": u, "timestamp": "2026-12-01T21:56:01.000Z",
             "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "c%d" % i,
                         "name": "bash", "arguments": {"command": "cargo test"}}],
                         "provider": "mock", "model": "m", "stopReason": "toolUse",
                         "usage": {"input": 1000, "output": 20, "totalTokens": 1020}}},
            {"type": "message", "id": r, "parentId": a, "timestamp": "2026-12-01T21:56:02.000Z",
             "message": {"role": "toolResult", "toolCallId": "c%d" % i, "toolName": "bash",
                         "content": [{"type": "text", "text": "x" * random.randint(200, 4000)}],
                         "isError": False}},
        ):
            line = json.dumps(e) + "\n"
            f.write(line)
            written += len(line)
        parent = r
PY
payload=$work/payload.json
printf '{"session_id":"%s","transcript_path":"%s","cwd":"/tmp/p","hook_event_name":"PreToolUse","tool_name":"bash","tool_input":{"command":"ls"},"context_window":200000,"model":"mock/m"}' "$sid" "$file" >"$payload"
calls=$(( (size + 31) / 32 ))
first_s=0 first_kb=0 next_s=0 next_kb=0
for _ in $(seq "$runs"); do
    rm -rf "$CTXGUARD_HOME"
    for _ in $(seq "$calls"); do
        /usr/bin/time -f '%e %M' -o "$work/t" "$bin" pretooluse <"$payload" >/dev/null 2>&1 || true
        read -r s kb <"$work/t"
        first_s=$(python3 -c "print('%.2f' % max($first_s, $s))"); first_kb=$(( kb > first_kb ? kb : first_kb ))
    done
    printf '{"type":"label","id":"zz%06d","parentId":null,"timestamp":"2026-12-01T22:00:00.000Z","label":"x"}\n' "$RANDOM" >>"$file"
    /usr/bin/time -f '%e %M' -o "$work/t" "$bin" pretooluse <"$payload" >/dev/null 2>&1 || true
    read -r s kb <"$work/t"
    next_s=$(python3 -c "print('%.2f' % max($next_s, $s))"); next_kb=$(( kb > next_kb ? kb : next_kb ))
done
echo "| pi session | call | slowest wall time | peak RSS |"
echo "|---|---|---|---|"
echo "| $size MB, met midway | each of the first $calls (32 MB of pi's file each) | $first_s s | $((first_kb / 1024)) MB |"
echo "| $size MB, copy up to date | a line appended | $next_s s | $((next_kb / 1024)) MB |"
