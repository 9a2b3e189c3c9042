#!/usr/bin/env python3
"""Writes a large Claude Code transcript with the client's uuid chain, for bench/large.sh.

usage: gen_large.py SIZE_MB OUT.jsonl KIND
KIND real:     turns shaped like a real session's (a prompt, a reply with a tool call and its
               usage, a tool result of 2-20 KB, a progress record or two), each record with a
               uuid and the parentUuid the client writes; no compact_boundary.
KIND progress: the same turns every 2,000 records, and between them small progress records
               (hook and bash progress, ~300 bytes: the bulk of long sessions), each with a uuid
               hanging from the one before.
The newest reply is at 900k tokens of a 1M window (a drop read after it is one of 625k).
"""
import json
import random
import sys
import uuid as uuidlib


def main():
    size = int(float(sys.argv[1]) * 1024 * 1024)
    out, kind = sys.argv[2], sys.argv[3]
    rng = random.Random(7)
    words = "the parser lexer token error result value struct impl match fn test build".split()
    counter = [0]

    def uid():
        counter[0] += 1
        return str(uuidlib.UUID(int=rng.getrandbits(128)))

    def text(n):
        return " ".join(rng.choice(words) for _ in range(n))

    written = 0
    parent = None
    turn = 0
    with open(out, "w") as f:
        def put(obj):
            nonlocal written, parent
            obj.setdefault("uuid", uid())
            obj["parentUuid"] = parent
            obj.setdefault("sessionId", "bench-large")
            line = json.dumps(obj, separators=(",", ":")) + "\n"
            f.write(line)
            written += len(line)
            parent = obj["uuid"]

        def turn_of(tokens):
            nonlocal turn
            turn += 1
            ts = "2026-11-21T%02d:%02d:%02d.000Z" % (turn // 3600 % 24, turn // 60 % 60, turn % 60)
            put({"type": "user", "isSidechain": False, "timestamp": ts, "cwd": "/home/user/proj",
                 "message": {"role": "user", "content": "please " + text(20)}})
            tid = "toolu_%07d" % turn
            put({"type": "assistant", "isSidechain": False, "timestamp": ts,
                 "message": {"id": "msg_%d" % turn, "model": "claude-opus-5-5", "role": "assistant",
                             "content": [{"type": "text", "text": text(30)},
                                         {"type": "tool_use", "id": tid, "name": "Bash",
                                          "input": {"command": "cargo test"}}],
                             "usage": {"input_tokens": 8, "cache_creation_input_tokens": 400,
                                       "cache_read_input_tokens": tokens, "output_tokens": 300}}})
            put({"type": "progress", "timestamp": ts, "data": {"type": "bash_progress",
                                                               "output": text(10)}})
            put({"type": "user", "isSidechain": False, "timestamp": ts,
                 "message": {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": tid,
                      "content": text(rng.randint(300, 3000) if kind == "real" else 20)}]}})

        tokens = 20_000
        while written < size - 50_000:
            tokens = min(tokens + 3, 890_000)
            turn_of(tokens)
            if kind == "progress":
                for _ in range(2000):
                    put({"type": "progress", "timestamp": "2026-11-21T10:00:00.000Z",
                         "data": {"type": "hook_progress", "hookEvent": "PreToolUse",
                                  "hookName": "PreToolUse:Bash", "command": "ctxguard pretooluse"}})
                    if written >= size - 50_000:
                        break
        turn_of(900_000)


if __name__ == "__main__":
    main()
