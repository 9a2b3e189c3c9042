#!/usr/bin/env python3
"""A scripted stand-in for an OpenAI-compatible chat-completions API, for driving pi (the coding
agent) offline in the end-to-end tests (tests/e2e_pi.rs); adapted from the probe's
../shared/protocol/pi-0.73.1/harness/mock_openai_pi.py.

    fake_openai_pi.py --log requests.jsonl   (prints the port it listens on, on 127.0.0.1)

Each POST's body goes to the log, one JSON line: {"n", "kind", "body"}. What it answers is
decided by the latest prompt (the newest user message that is not only text an extension or a
hook added: a message starting with "ctxguard" or HOOKCTX is skipped):
  * a summarization request (pi's summarizer prompt) -> a fixed summary, kind "compaction";
  * RUN_TOOLx<N> (RUN_TOOL: N = 1): while fewer than N tool results came back since the prompt,
    one call of the shell tool (`echo tool-ran`), kind "tool";
  * otherwise "MOCK-ANSWER <n>", kind "answer".
Usage: TOKENS=a,b,c in the prompt makes its i-th response report a, b, c prompt tokens (then
the last one again); without it, 1200. OVERFLOW_AT=<i> answers the prompt's i-th request (once)
with HTTP 400 "maximum context length" (pi's overflow path: compact, then retry), kind
"overflow-error".
"""
import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--log", required=True)
ap.add_argument("--idle-exit", type=float, default=300)
args = ap.parse_args()

SUMMARIZER = ("You are a context summarization assistant",)
SUMMARY_MARKS = ("Create a structured context checkpoint summary", "NEW conversation messages to incorporate",
                 "This is the PREFIX of a turn")
SKIP = ("ctxguard", "HOOKCTX")
lock = threading.Lock()
state = {"n": 0, "seen": {}, "overflowed": set(), "last": time.time()}


def text_of(msg):
    c = msg.get("content")
    if isinstance(c, str):
        return c
    return "\n".join(p["text"] for p in c or [] if isinstance(p, dict) and isinstance(p.get("text"), str))


def is_prompt(msg):
    t = text_of(msg).strip()
    return bool(t) and not t.startswith(SKIP) and not t.startswith("The conversation history before this point")


def analyse(body):
    msgs = body.get("messages") or []
    system = "\n".join(text_of(m) for m in msgs if m.get("role") in ("system", "developer"))
    last = text_of(msgs[-1]) if msgs else ""
    if any(s in system for s in SUMMARIZER) or any(s in last for s in SUMMARY_MARKS):
        return "", 0, True
    at = None
    for i, m in enumerate(msgs):
        if m.get("role") == "user" and is_prompt(m):
            at = i
    prompt = text_of(msgs[at]) if at is not None else ""
    tools_back = sum(1 for m in msgs[(at or 0) + 1:] if m.get("role") == "tool")
    return prompt, tools_back, False


def shell_call(tools, n):
    for t in tools or []:
        f = t.get("function") or t
        if f.get("name") == "bash":
            return {"id": "call_%d" % n, "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": "echo tool-ran"})}}
    return None


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send(200, {"object": "list", "data": [{"id": "mock-model", "object": "model"}]})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        prompt, tools_back, summary = analyse(body)
        with lock:
            state["n"] += 1
            state["last"] = time.time()
            n = state["n"]
            i = state["seen"].get(prompt, 0) + 1
            if not summary:
                state["seen"][prompt] = i
            overflow_at = re.search(r"OVERFLOW_AT=(\d+)", prompt)
            overflow = (not summary and overflow_at and int(overflow_at.group(1)) == i
                        and prompt not in state["overflowed"])
            if overflow:
                state["overflowed"].add(prompt)
        rounds = re.search(r"RUN_TOOL(?:x(\d+))?", prompt)
        tool = None
        if summary:
            kind, text = "compaction", "MOCK-SUMMARY: the user asked for a test; a tool ran."
        elif overflow:
            kind, text = "overflow-error", None
        elif rounds and tools_back < int(rounds.group(1) or 1) and shell_call(body.get("tools"), n):
            kind, text, tool = "tool", "", shell_call(body.get("tools"), n)
        else:
            kind, text = "answer", "MOCK-ANSWER %d" % n
        with lock, open(args.log, "a") as f:
            f.write(json.dumps({"n": n, "kind": kind, "body": body}) + "\n")
        if overflow:
            self._send(400, {"error": {"message": "This model's maximum context length is 40000 tokens. However, "
                                                  "your messages resulted in 52000 tokens.",
                                       "type": "invalid_request_error", "code": "context_length_exceeded"}})
            return
        tokens = 1200
        listed = re.search(r"TOKENS=([\d,]+)", prompt)
        if listed and not summary:
            values = [int(v) for v in listed.group(1).split(",") if v]
            tokens = values[min(i, len(values)) - 1]
        usage = {"prompt_tokens": tokens, "completion_tokens": 20, "total_tokens": tokens + 20}
        finish = "tool_calls" if tool else "stop"
        base = {"id": "chatcmpl-%d" % n, "object": "chat.completion.chunk", "created": int(time.time()),
                "model": body.get("model") or "mock-model"}
        if not body.get("stream"):
            msg = {"role": "assistant", "content": text or None}
            if tool:
                msg["tool_calls"] = [tool]
            self._send(200, dict(base, object="chat.completion",
                                 choices=[{"index": 0, "message": msg, "finish_reason": finish}], usage=usage))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

        def chunk(choices, usage=None):
            d = dict(base, choices=choices)
            if usage is not None:
                d["usage"] = usage
            self.wfile.write(("data: " + json.dumps(d) + "\n\n").encode())

        chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        if text:
            chunk([{"index": 0, "delta": {"content": text}, "finish_reason": None}])
        if tool:
            chunk([{"index": 0, "delta": {"tool_calls": [dict(tool, index=0)]}, "finish_reason": None}])
        chunk([{"index": 0, "delta": {}, "finish_reason": finish}])
        chunk([], usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


def idle_exit(server):
    while time.time() - state["last"] < args.idle_exit:
        time.sleep(1)
    server.shutdown()


server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
threading.Thread(target=idle_exit, args=(server,), daemon=True).start()
server.serve_forever()
