#!/bin/sh
# Runs a ctxguard hook for the end-to-end tests and logs what it did, so the tests can assert on
# every hook output the real client received: `hook.sh LOG ctxguard SUBCOMMAND`. Each log line is
# SUBCOMMAND, exit code, `sub` for a subagent's event (its input has an agent_id) or `main`, and
# the hook's stdout (its newlines as RS, \036).
log=$1
shift
input=$(cat)
out=$(printf '%s' "$input" | "$@")
code=$?
case $input in
*'"agent_id"'*) who=sub ;;
*) who=main ;;
esac
# One log line per run: newlines of a multi-line output (PreCompact's facts) become RS (\036).
logged=$(printf '%s' "$out" | tr '\n' '\036')
printf '%s\t%s\t%s\t%s\n' "$2" "$code" "$who" "$logged" >>"$log"
printf '%s' "$out"
exit "$code"
