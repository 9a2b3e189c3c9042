#!/usr/bin/env node
// The same PreToolUse marker logic as ctxguard's fast path, in node: read the payload, read the
// session's marker, and print the nudge when it is armed.
const fs = require("fs");
const path = require("path");
let input;
try {
  input = JSON.parse(fs.readFileSync(0, "utf8"));
} catch (e) {
  process.exit(0);
}
const home = process.env.CTXGUARD_HOME || path.join(require("os").homedir(), ".claude-memory/ctxguard");
const file = path.join(home, "sessions", String(input.session_id || ""), "marker.json");
let marker = null;
try {
  marker = JSON.parse(fs.readFileSync(file, "utf8"));
} catch (e) {}
if (marker && marker.state === "armed") {
  process.stdout.write(JSON.stringify({hookSpecificOutput: {hookEventName: "PreToolUse",
    additionalContext: "Save your memories now."}}) + "\n");
}
