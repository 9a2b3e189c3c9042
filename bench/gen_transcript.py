#!/usr/bin/env python3
"""Writes a synthetic Claude Code transcript of about SIZE megabytes.

Realistic shape: user prompts, assistant replies with usage, tool calls (Read, Edit, Bash,
TodoWrite) whose results are long (file contents, build logs), a compact_boundary about a third
of the way in, and the newest usage line several hundred KB from the end (a long tool result
follows it), which is what makes naive tail readers slow.

usage: gen_transcript.py SIZE_MB OUT.jsonl [--no-boundary]
With --no-boundary the file has no compact_boundary, so a checkpoint must read all of it.
"""
import json
import random
import sys


def main():
    size = int(float(sys.argv[1]) * 1024 * 1024)
    out = sys.argv[2]
    rng = random.Random(42)
    words = "the parser lexer token error result value struct impl match fn test build".split()

    def text(n):
        return " ".join(rng.choice(words) for _ in range(n))

    def usage(tokens):
        return {"input_tokens": 8, "cache_creation_input_tokens": 400,
                "cache_read_input_tokens": tokens, "output_tokens": 300}

    written = 0
    turn = 0
    boundary_at = size // 3
    boundary_done = "--no-boundary" in sys.argv[3:]
    with open(out, "w") as f:
        def put(obj):
            nonlocal written
            line = json.dumps(obj, separators=(",", ":")) + "\n"
            f.write(line)
            written += len(line)

        while written < size - 600_000:
            turn += 1
            ts = "2026-11-21T10:%02d:%02d.000Z" % (turn // 60 % 60, turn % 60)
            put({"type": "user", "isSidechain": False, "timestamp": ts, "cwd": "/home/user/proj",
                 "gitBranch": "main", "message": {"role": "user", "content": "please " + text(20)}})
            tid = "toolu_%06d" % turn
            tool = rng.choice(["Read", "Edit", "Bash", "TodoWrite"])
            inp = {"Read": {"file_path": "/home/user/proj/src/f%d.rs" % (turn % 50)},
                   "Edit": {"file_path": "/home/user/proj/src/f%d.rs" % (turn % 50),
                            "old_string": text(30), "new_string": text(30)},
                   "Bash": {"command": "cargo test"},
                   "TodoWrite": {"todos": [{"content": text(6), "status": "pending", "activeForm": "x"}]}}[tool]
            put({"type": "assistant", "isSidechain": False, "timestamp": ts,
                 "message": {"id": "msg_%d" % turn, "model": "claude-opus-5-5", "role": "assistant",
                             "content": [{"type": "text", "text": text(40)},
                                         {"type": "tool_use", "id": tid, "name": tool, "input": inp}],
                             "usage": usage(20_000 + turn)}})
            body = text(rng.randint(2_000, 12_000))  # 10-70 KB tool output
            put({"type": "user", "isSidechain": False, "timestamp": ts,
                 "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                          "content": body, "is_error": tool == "Bash" and turn % 7 == 0}]}})
            if not boundary_done and written > boundary_at:
                boundary_done = True
                put({"type": "system", "subtype": "compact_boundary", "timestamp": ts,
                     "compactMetadata": {"trigger": "auto", "preTokens": 160_000}})
        # The newest usage, then a long tool result and other lines after it.
        put({"type": "assistant", "isSidechain": False, "timestamp": "2026-11-21T11:00:00.000Z",
             "message": {"id": "msg_last", "model": "claude-opus-5-5", "role": "assistant",
                         "content": [{"type": "tool_use", "id": "toolu_last", "name": "Read",
                                      "input": {"file_path": "/home/user/proj/big.log"}}],
                         "usage": usage(150_000)}})
        put({"type": "user", "isSidechain": False, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_last", "content": text(90_000)}]}})
        for i in range(20):
            put({"type": "attachment", "n": i})


if __name__ == "__main__":
    main()
