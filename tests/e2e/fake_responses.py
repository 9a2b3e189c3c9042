#!/usr/bin/env python3
"""A stand-in for the OpenAI Responses API on 127.0.0.1, for driving the real Codex CLI (0.169.0)
offline in ctxguard's end-to-end tests. Standard library only; no network beyond loopback.

Point Codex at it with a custom provider in $CODEX_HOME/config.toml:
    model = "mock-model"
    model_provider = "mock"
    model_context_window = 100000
    model_auto_compact_token_limit = 20000
    [model_providers.mock]
    name = "mock"
    base_url = "http://127.0.0.1:PORT/v1"
    wire_api = "responses"

POST .../responses is answered as server-sent events (response.created, response.output_item.done,
response.completed with usage). The reply is scripted by the turn's prompt, the last user
message that is not Codex's own (environment context, compaction summary, tags):
  - `RUN_TOOL <cmd>` (to the end of the line; may appear several times): while fewer tool outputs
    than RUN_TOOL lines follow the prompt, the reply is a function call to `exec_command`
    ({"cmd": <cmd>}, call_id call_<n>; Codex shows it to hooks as tool_name "Bash"); then a text
    answer "MOCK-ANSWER <n>". Once the turn was compacted (the summary follows the prompt), the
    `AFTER_TOOL <cmd>` lines are played instead, counted from the summary.
  - `USAGE=<N>`: every reply of that turn reports input_tokens N (default --input-tokens, 1000),
    unless the conversation was already compacted (the summary is in the input): then
    `AFTER_USAGE=<N>` or the default. `USAGES=<a>,<b>,...`: the turn's first reply reports a,
    the next (after one tool output) b, and so on, the last value repeating (until compacted). `OUTPUT=<N>` sets output_tokens (default 10).
    total_tokens = input + output.
  - A compaction request (header or client_metadata x-codex-turn-metadata with
    "request_kind":"compaction", or Codex's "CONTEXT CHECKPOINT COMPACTION" prompt) gets
    "MOCK-SUMMARY <n>: ..." and usage --input-tokens.
Anything else (other paths, bodies that are not JSON) gets 200 with a text reply; GET gets
{"object":"list","data":[]}. It never raises out of a handler.

Every request is appended to the log as one JSON line:
    {"n", "method", "path", "kind": "turn"|"compaction"|"other", "headers": {x-codex-*...},
     "body": <parsed JSON or raw text>}
usage: fake_responses.py [--log FILE] [--port-file FILE] [--input-tokens N] [--idle-exit SECS]
       (or env FAKE_RESPONSES_LOG, FAKE_RESPONSES_PORT_FILE). Listens on port 0; prints the port
       and writes it to the port file, then serves until killed.
"""
import argparse
import http.server
import json
import os
import re
import socketserver
import sys
import threading
import time

ARGS = None
LOCK = threading.Lock()
COUNTER = [0]
LAST = [time.time()]
SUMMARY_PREFIX = "Another language model started to solve this problem"
COMPACT_PROMPT = "CONTEXT CHECKPOINT COMPACTION"


def texts(item):
    """The text parts of one input item (message content may be a string or a list)."""
    content = item.get("content") if isinstance(item, dict) else None
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [c.get("text", "") for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)]
    return []


def is_prompt(item):
    if not isinstance(item, dict) or item.get("role") != "user":
        return False
    text = "\n".join(texts(item)).lstrip()
    return bool(text) and not text.startswith("<") and not text.startswith(SUMMARY_PREFIX)


def turn_kind(headers, body):
    meta = headers.get("x-codex-turn-metadata") or ""
    if not meta and isinstance(body.get("client_metadata"), dict):
        meta = str(body["client_metadata"].get("x-codex-turn-metadata") or "")
    if '"request_kind":"compaction"' in meta.replace(" ", ""):
        return "compaction"
    items = body.get("input") if isinstance(body.get("input"), list) else []
    last_user = [i for i in items if isinstance(i, dict) and i.get("role") == "user"][-1:]
    if last_user and COMPACT_PROMPT in "\n".join(texts(last_user[0])):
        return "compaction"
    return "turn"


def number(pattern, text, default):
    m = re.search(pattern + r"=(\d+)", text)
    return int(m.group(1)) if m else default


def reply_events(n, kind, body):
    """The list of SSE events (dicts) for request number n."""
    items = body.get("input") if isinstance(body.get("input"), list) else []
    items = [i for i in items if isinstance(i, dict)]
    usage_in, usage_out = ARGS.input_tokens, 10
    out = []
    if kind == "compaction":
        out.append({"type": "message", "role": "assistant", "id": "msg_%d" % n,
                    "content": [{"type": "output_text", "text": "MOCK-SUMMARY %d: the user asked for tool runs; they ran." % n}]})
    else:
        idx = max([k for k, i in enumerate(items) if is_prompt(i)], default=-1)
        prompt = "\n".join(texts(items[idx])) if idx >= 0 else ""
        compacted = any(SUMMARY_PREFIX in t for i in items for t in texts(i))
        usage_in = number("AFTER_USAGE", prompt, ARGS.input_tokens) if compacted else number(r"(?<!_)USAGE", prompt, ARGS.input_tokens)
        usage_out = number("OUTPUT", prompt, 10)
        summary = max([k for k, i in enumerate(items) if any(SUMMARY_PREFIX in t for t in texts(i))], default=-1)
        if summary > idx:  # compacted within this turn: the RUN_TOOL calls are behind the summary
            cmds, since = re.findall(r"AFTER_TOOL[ \t]+([^\n]+)", prompt), summary
        else:
            cmds, since = re.findall(r"RUN_TOOL[ \t]+([^\n]+)", prompt), idx
        done = sum(1 for i in items[since + 1:] if i.get("type") == "function_call_output")
        # USAGES=a,b,c: the turn's replies report a, then b, then c (the last one after that).
        series = re.search(r"USAGES=([\d,]+)", prompt)
        if series and not compacted:
            values = [int(v) for v in series.group(1).split(",") if v]
            if values:
                usage_in = values[min(done, len(values) - 1)]
        if done < len(cmds):
            out.append({"type": "function_call", "id": "fc_%d" % n, "call_id": "call_%d" % n,
                        "name": "exec_command", "arguments": json.dumps({"cmd": cmds[done].strip()})})
        else:
            out.append({"type": "message", "role": "assistant", "id": "msg_%d" % n,
                        "content": [{"type": "output_text", "text": "MOCK-ANSWER %d" % n}]})
    rid = "resp_%d" % n
    events = [{"type": "response.created", "response": {"id": rid}}]
    for k, item in enumerate(out):
        events.append({"type": "response.output_item.added", "output_index": k, "item": item})
        events.append({"type": "response.output_item.done", "output_index": k, "item": item})
    events.append({"type": "response.completed", "response": {"id": rid, "usage": {
        "input_tokens": usage_in, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage_out, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage_in + usage_out}}})
    return events


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, ctype, data):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        try:
            self.record("other", None)
            self.send("application/json", b'{"object":"list","data":[]}')
        except Exception as e:  # never let a handler die
            sys.stderr.write("fake_responses: GET failed: %r\n" % (e,))

    def do_POST(self):
        try:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            try:
                body = json.loads(raw.decode("utf-8"))
            except Exception:
                body = None
            with LOCK:
                COUNTER[0] += 1
                n = COUNTER[0]
            headers = {k.lower(): v for k, v in self.headers.items()}
            if isinstance(body, dict) and self.path.rstrip("/").endswith("/responses"):
                kind = turn_kind(headers, body)
                try:
                    events = reply_events(n, kind, body)
                except Exception as e:
                    sys.stderr.write("fake_responses: script failed: %r\n" % (e,))
                    events = None
            else:
                kind, events = "other", None
            self.record(kind, body if body is not None else raw.decode("utf-8", "replace"), n, headers)
            if events is None:
                if self.path.rstrip("/").endswith("/responses"):
                    events = reply_events(n, "other", {})
                else:
                    self.send("text/plain", b"MOCK-OK\n")
                    return
            data = "".join("event: %s\ndata: %s\n\n" % (e["type"], json.dumps(e)) for e in events)
            self.send("text/event-stream", data.encode("utf-8"))
        except Exception as e:
            sys.stderr.write("fake_responses: POST failed: %r\n" % (e,))
            try:
                self.send("text/plain", b"MOCK-OK\n")
            except Exception:
                pass

    def record(self, kind, body, n=None, headers=None):
        LAST[0] = time.time()
        if not ARGS.log:
            return
        headers = headers or {k.lower(): v for k, v in self.headers.items()}
        line = json.dumps({"n": n, "method": self.command, "path": self.path, "kind": kind,
                           "headers": {k: v for k, v in headers.items() if k.startswith("x-") or k == "session_id"},
                           "body": body})
        with LOCK, open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(line + "\n")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global ARGS
    p = argparse.ArgumentParser(description="Responses API stand-in for Codex tests")
    p.add_argument("--log", default=os.environ.get("FAKE_RESPONSES_LOG"))
    p.add_argument("--port-file", default=os.environ.get("FAKE_RESPONSES_PORT_FILE"))
    p.add_argument("--input-tokens", type=int, default=1000)
    p.add_argument("--idle-exit", type=float, default=0)
    ARGS = p.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    if ARGS.port_file:
        tmp = ARGS.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, ARGS.port_file)
    print(port, flush=True)
    if ARGS.idle_exit > 0:
        def watchdog():
            while time.time() - LAST[0] < ARGS.idle_exit:
                time.sleep(0.5)
            os._exit(0)
        threading.Thread(target=watchdog, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
