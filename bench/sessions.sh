#!/usr/bin/env bash
# ./bench/sessions.sh — how SessionStart(clear) and `status --limit 20` cost with 10 and with
# 10,000 sessions in the state directory (the budget: at most 1.5× at 10,000). Builds the
# release binary as install.sh does, makes both state directories through the binary itself
# (bench/sessions.py; about a minute for 10,000 sessions), times each command as fresh
# processes, and writes the "Scale in sessions" section of docs/benchmarks.md (replacing it, or
# appending it). ./bench/run.sh runs this too, after rewriting the rest of that file.
#   RUNS=300 ./bench/sessions.sh   runs per command (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(scripts/build-release.sh)
section=$(mktemp)
trap 'rm -f "$section"' EXIT
python3 bench/sessions.py "$bin" fixtures/claude-code-2.1.330 "$section" "${RUNS:-200}" >&2
python3 - docs/benchmarks.md "$section" <<'PY'
import sys
doc_path, section_path = sys.argv[1], sys.argv[2]
begin, end = "<!-- sessions.sh: begin -->", "<!-- sessions.sh: end -->"
doc = open(doc_path).read()
section = f"{begin}\n{open(section_path).read().rstrip()}\n{end}\n"
if begin in doc and end in doc:
    head, rest = doc.split(begin, 1)
    doc = head + section + rest.split(end, 1)[1].lstrip("\n")
else:
    doc = doc.rstrip("\n") + "\n\n" + section
open(doc_path, "w").write(doc)
PY
echo "wrote the \"Scale in sessions\" section of docs/benchmarks.md" >&2
