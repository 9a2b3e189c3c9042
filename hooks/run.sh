#!/bin/sh
# Runs a ctxguard hook for the Claude Code plugin. The binary is installed separately
# (./install.sh puts it in ~/.local/bin); when it cannot be found, the hook does nothing and says
# why in one line on stderr, exiting 0, so a missing binary never blocks or breaks a session.
for candidate in "${CTXGUARD_BIN:-}" "$(command -v ctxguard 2>/dev/null)" "$HOME/.local/bin/ctxguard" /usr/local/bin/ctxguard; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
        exec "$candidate" "$@"
    fi
done
cat >/dev/null
echo "ctxguard plugin: the ctxguard binary was not found (PATH, ~/.local/bin, /usr/local/bin, \$CTXGUARD_BIN); run ./install.sh from the ctxguard repository" >&2
exit 0
