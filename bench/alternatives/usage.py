#!/usr/bin/env python3
"""Transcript usage the usual way: read the whole file, parse every line, keep the newest
main-chain usage (reset by a compact_boundary). Prints the context tokens."""
import json
import sys

tokens = None
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f.read().split("\n"):
        if not line:
            continue
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("type") == "system" and e.get("subtype") == "compact_boundary":
            tokens = None
        m = e.get("message")
        if (e.get("type") == "assistant" and not e.get("isSidechain") and not e.get("isApiErrorMessage")
                and isinstance(m, dict) and m.get("usage") and m.get("model") != "<synthetic>"):
            u = m["usage"]
            t = (u.get("input_tokens") or 0) + (u.get("cache_creation_input_tokens") or 0) + (u.get("cache_read_input_tokens") or 0)
            if t > 0:
                tokens = t
print(tokens)
