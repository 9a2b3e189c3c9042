#!/usr/bin/env python3
"""pi_rpc_drive.py OUT.jsonl STEPS.json -- PI_COMMAND...   (copied from the probe's
../shared/protocol/pi-0.73.1/harness/rpc_drive.py for tests/e2e_pi.rs; each step waits at most
$PI_STEP_TIMEOUT seconds, default 30)

Drives `pi --mode rpc` (pi's headless JSON-lines protocol on stdin/stdout, docs/rpc.md) one step
at a time, and waits for the agent to settle after each: after a prompt, until `agent_end`, then
until any `compaction_start` has its `compaction_end` (and, when that says willRetry, until the
retried run's `agent_end`), then 0.7 s with no event. Every line pi prints goes to OUT.jsonl as
{"t": seconds since start, "step": i, "ev": <pi's JSON>}.

STEPS.json: a list of RPC commands, e.g.
  [{"type": "prompt", "message": "RUN_TOOL ..."}, {"type": "compact", "customInstructions": "..."}]
The pseudo-step {"type": "sleep", "s": 2} waits.
"""
import json
import subprocess
import sys
import threading
import time

out_path, steps_path = sys.argv[1], sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
steps = json.load(open(steps_path))
t0 = time.time()
proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(out_path + ".stderr", "w"))
events = []
cond = threading.Condition()
step_no = [0]


def reader():
    buf = b""
    out = open(out_path, "w")
    while True:
        chunk = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else proc.stdout.read(1)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            line = line.rstrip(b"\r")
            if not line.strip():
                continue
            try:
                ev = json.loads(line)
            except Exception:
                ev = {"_raw": line.decode("utf-8", "replace")}
            rec = {"t": round(time.time() - t0, 3), "step": step_no[0], "ev": ev}
            out.write(json.dumps(rec) + "\n")
            out.flush()
            with cond:
                events.append(ev)
                cond.notify_all()
    with cond:
        events.append({"type": "_eof"})
        cond.notify_all()


threading.Thread(target=reader, daemon=True).start()


def wait_settled(start_idx, need_agent_end, timeout=float(__import__('os').environ.get('PI_STEP_TIMEOUT', '30'))):
    deadline = time.time() + timeout
    idx = start_idx
    seen_agent_end = not need_agent_end
    pending_compaction = 0
    pending_retry = False
    last_t = time.time()
    with cond:
        while time.time() < deadline:
            while idx < len(events):
                ev = events[idx]
                idx += 1
                last_t = time.time()
                ty = ev.get("type")
                if ty == "_eof":
                    return idx
                if ty == "agent_end":
                    seen_agent_end = True
                    pending_retry = False
                if ty == "compaction_start":
                    pending_compaction += 1
                if ty == "compaction_end":
                    pending_compaction -= 1
                    if ev.get("willRetry"):
                        pending_retry = True
            if seen_agent_end and pending_compaction <= 0 and not pending_retry and time.time() - last_t > 0.7:
                return idx
            cond.wait(0.2)
    return idx


for i, st in enumerate(steps):
    step_no[0] = i + 1
    if st.get("type") == "sleep":
        time.sleep(st.get("s", 1))
        continue
    with cond:
        start = len(events)
    proc.stdin.write((json.dumps(st) + "\n").encode())
    proc.stdin.flush()
    wait_settled(start, need_agent_end=(st.get("type") == "prompt"))

step_no[0] = len(steps) + 1
proc.stdin.close()
try:
    proc.wait(timeout=15)
except subprocess.TimeoutExpired:
    proc.terminate()
    proc.wait(timeout=5)
time.sleep(0.3)
print("rc", proc.returncode, "events", len(events), "t", round(time.time() - t0, 2))
