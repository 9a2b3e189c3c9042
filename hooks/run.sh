#!/bin/sh
# Runs a ctxguard hook for the Claude Code plugin. The binary is installed separately
# (./install.sh puts it in ~/.local/bin); when it cannot be found, the hook does nothing and says
# why in one line on stderr, exiting 0, so a missing binary never blocks or breaks a session.
#
# hooks.json runs this in shell form, "${CLAUDE_PLUGIN_ROOT}/hooks/run.sh" quoted: the exec form
# (no shell) would save a shell per call on Linux and macOS, but on Windows the client starts an
# exec-form command directly, and a shell script cannot be started that way; in shell form it
# runs under Git Bash there too. The quotes keep a plugin path with spaces in one piece.
for candidate in "${CTXGUARD_BIN:-}" "$(command -v ctxguard 2>/dev/null)" \
    "$HOME/.local/bin/ctxguard" "$HOME/.local/bin/ctxguard.exe" /usr/local/bin/ctxguard; do
    if [ -n "$candidate" ] && [ -f "$candidate" ] && [ -x "$candidate" ]; then
        exec "$candidate" "$@"
    fi
done
cat >/dev/null
echo "ctxguard plugin: the ctxguard binary was not found (PATH, ~/.local/bin, /usr/local/bin, \$CTXGUARD_BIN); run ./install.sh from the ctxguard repository" >&2
exit 0
