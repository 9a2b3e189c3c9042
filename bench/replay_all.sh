#!/usr/bin/env bash
# ./bench/replay_all.sh — runs `ctxguard replay` over every transcript in ../shared/transcripts/
# (or $TRANSCRIPTS), without and with --statusline, and prints a markdown table of the cycles by
# verdict (see docs/replay.md). The config is the default one: HOME and CTXGUARD_HOME point at an
# empty temp dir, and no CTXGUARD_* or CLAUDE_* variable is passed on.
#   BIN=path/to/ctxguard ./bench/replay_all.sh     another binary (default: target/release, else
#                                                   target/debug, else a fresh debug build)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${TRANSCRIPTS:-../shared/transcripts}
if [ ! -d "$dir" ]; then
    echo "no transcripts directory $dir: nothing to replay"
    exit 0
fi
shopt -s nullglob
files=("$dir"/*.jsonl)
if [ ${#files[@]} -eq 0 ]; then
    echo "no .jsonl transcript in $dir: nothing to replay"
    exit 0
fi
bin=${BIN:-}
if [ -z "$bin" ]; then
    if [ -x target/release/ctxguard ]; then
        bin=target/release/ctxguard
    else
        [ -x target/debug/ctxguard ] || cargo build --quiet
        bin=target/debug/ctxguard
    fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # transcript [flags...] -> JSON on stdout
    env -i PATH="$PATH" HOME="$tmp/home" CTXGUARD_HOME="$tmp/state" "$bin" replay "$@" --json
}
for f in "${files[@]}"; do
    name=$(basename "$f")
    run "$f" >"$tmp/$name.plain.json"
    run "$f" --statusline >"$tmp/$name.statusline.json"
done
echo "Replayed with \`$bin\` ($("$bin" --version)), default config."
echo
python3 - "$tmp" "${files[@]}" <<'EOF'
import json, os, sys

tmp, files = sys.argv[1], sys.argv[2:]
verdicts = ["in_time", "late", "missed", "false_alarm", "open", "manual", "quiet"]
print("| transcript | replies | compactions | nudges | "
      + " | ".join(v.replace("_", " ") for v in verdicts) + " |")
print("|---|---:|---:|---:|" + "---:|" * len(verdicts))
for path in files:
    name = os.path.basename(path)
    plain, status = (json.load(open(f"{tmp}/{name}.{mode}.json"))
                     for mode in ("plain", "statusline"))
    def count(report, verdict):
        return sum(1 for c in report["cycles"] if c["verdict"] == verdict)
    cells = []
    for v in verdicts:
        a, b = count(plain, v), count(status, v)
        cells.append("" if a == b == 0 else str(a) if a == b else f"{a} / {b}")
    nudges = [sum(1 for e in r["events"] if e["kind"] == "nudge") for r in (plain, status)]
    print(f"| {name} | {plain['replies']} | {plain['compactions']} | {nudges[0]} / {nudges[1]} | "
          + " | ".join(cells) + " |")
EOF
echo
echo "Nudges (normal and critical) are counted without a status line / with --statusline. A verdict"
echo "cell is the number of cycles with that verdict, \"a / b\" when the two replays differ."
