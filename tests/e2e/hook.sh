#!/bin/sh
# Runs a ctxguard hook for the end-to-end tests and logs what it did, so the tests can assert on
# every hook output the real client received: `hook.sh LOG ctxguard SUBCOMMAND`.
log=$1
shift
out=$("$@")
code=$?
printf '%s\t%s\t%s\n' "$2" "$code" "$out" >>"$log"
printf '%s' "$out"
exit "$code"
