#!/bin/bash
# The common bash PreToolUse guard: nudge when a marker file exists, then remove it.
# (A published pattern; not atomic: two parallel calls can both see the file.)
marker="${CTXGUARD_BENCH_MARKER:-/tmp/ctxguard-bench-marker}"
if test -f "$marker"; then
    rm -f "$marker"
    echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"Save your memories now."}}'
fi
exit 0
