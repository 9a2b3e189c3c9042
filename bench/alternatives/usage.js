#!/usr/bin/env node
// Transcript usage the usual way: read the whole file, parse every line, keep the newest
// main-chain usage (reset by a compact_boundary). Prints the context tokens.
const fs = require("fs");
let tokens = null;
for (const line of fs.readFileSync(process.argv[2], "utf8").split("\n")) {
  if (!line) continue;
  let e;
  try { e = JSON.parse(line); } catch (_) { continue; }
  if (e.type === "system" && e.subtype === "compact_boundary") tokens = null;
  const m = e.message;
  if (e.type === "assistant" && !e.isSidechain && !e.isApiErrorMessage && m && m.usage && m.model !== "<synthetic>") {
    const u = m.usage;
    const t = (u.input_tokens || 0) + (u.cache_creation_input_tokens || 0) + (u.cache_read_input_tokens || 0);
    if (t > 0) tokens = t;
  }
}
console.log(tokens);
