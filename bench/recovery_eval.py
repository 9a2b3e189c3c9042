#!/usr/bin/env python3
"""How much of a real session the recovery block brings back.

For every transcript in ../shared/transcripts/ (or the directory given with --transcripts), runs
the real binary's PreCompact then SessionStart(compact) in a temporary CTXGUARD_HOME and HOME, at
three kinds of moment:

  boundary  the transcript cut just before each of its compact_boundary lines (what PreCompact
            saw when the client compacted there); for a transcript without one, before its
            middle prompt (marked *);
  end       the whole transcript, as if it compacted now;
  second    two compactions in the same state directory: cut before the first boundary, then
            the whole transcript. A transcript without a boundary gets one inserted before its
            middle prompt (marked *), so the second run reads only what came after it.

For each it checks the block against what the transcript says at that moment:

  last ask    the newest real user request (a typed prompt, or a slash command with arguments
              as "/name args"; not a client command, a shell command or a notification) is in
              the block (its start, and for a long one its end too);
  open tasks  tasks open then, per the TodoWrite / TaskCreate / TaskUpdate history (changes
              whose result failed left out), found in the block;
  files       files modified by the session so far (edits whose result did not fail) named in
              the block;
  failure     the block's newest failure line says more than "Exit code N";
  chars       the size of the checkpoint part of the block.

Usage: bench/recovery_eval.py [BINARY] [--transcripts DIR]
BINARY defaults to $CTXGUARD_BIN, then target/release/ctxguard, then target/debug/ctxguard.
Prints markdown tables. Python 3 standard library only.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TRANSCRIPTS = ROOT.parent / "shared" / "transcripts"

# Slash commands the client runs itself; their arguments set something up (the client's own
# last-prompt record skips them too). /compact's are the compaction's instructions.
CLIENT_COMMANDS = {
    "compact", "clear", "model", "config", "add-dir", "resume", "rename", "export", "mcp",
    "plugin", "permissions", "login", "logout", "theme", "output-style", "effort", "color",
}
EDIT_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit"}
EXIT_ONLY = re.compile(r"^Exit code -?\d+$")


def find_binary(arg):
    for candidate in [arg, os.environ.get("CTXGUARD_BIN"),
                      ROOT / "target/release/ctxguard", ROOT / "target/debug/ctxguard"]:
        if candidate and Path(candidate).is_file():
            return str(candidate)
    sys.exit("no ctxguard binary: build it (cargo build) or pass its path")


def parse(lines):
    """Each line decoded (None when it is not JSON)."""
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append(None)
    return out


def main_chain(entry):
    return isinstance(entry, dict) and not entry.get("isSidechain")


def contents(entry):
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content, []
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content
                 if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(texts), [b for b in content if isinstance(b, dict)]
    return "", []


def tag(text, name):
    m = re.search(r"<%s>(.*?)</%s>" % (re.escape(name), re.escape(name)), text, re.S)
    return m.group(1) if m else None


def ask_of(entry):
    """The request a user line makes, or None."""
    if entry.get("type") != "user" or not main_chain(entry):
        return None
    if entry.get("isMeta") or entry.get("isCompactSummary") or entry.get("isVisibleInTranscriptOnly"):
        return None
    text, _ = contents(entry)
    text = re.sub(r"<system-reminder>.*?</system-reminder>", "", text, flags=re.S).strip()
    if not text:
        return None
    if text.startswith("<command-"):
        name = (tag(text, "command-name") or "").strip().lstrip("/")
        args = (tag(text, "command-args") or "").strip()
        if not name or not args or name in CLIENT_COMMANDS:
            return None
        return "/%s %s" % (name, args)
    if text.startswith("<") or text.startswith("[Request interrupted"):
        return None
    return text


def normal(text):
    return " ".join(text.split())


def results(entries):
    """tool_use_id -> (is_error, text) for main-chain results."""
    out = {}
    for e in entries:
        if not main_chain(e) or e.get("type") != "user":
            continue
        for b in contents(e)[1]:
            if b.get("type") != "tool_result":
                continue
            c = b.get("content")
            if isinstance(c, list):
                c = "\n".join(x.get("text", "") for x in c if isinstance(x, dict))
            out[b.get("tool_use_id")] = (b.get("is_error") is True, c if isinstance(c, str) else "")
    return out


def calls(entries):
    for e in entries:
        if main_chain(e) and e.get("type") == "assistant":
            for b in contents(e)[1]:
                if b.get("type") == "tool_use":
                    yield b


def succeeded(call, done):
    """A call counts unless its result failed (one without a result yet counts)."""
    failed, text = done.get(call.get("id"), (False, ""))
    if call.get("name") == "TaskUpdate" and text.startswith("Task") and "not found" in text:
        return False
    return not failed


def open_tasks(entries):
    done = results(entries)
    listed, tasks, tasks_newer = [], {}, False
    for c in calls(entries):
        name, inp = c.get("name"), c.get("input") or {}
        if name not in ("TodoWrite", "TaskCreate", "TaskUpdate") or not succeeded(c, done):
            continue
        if name == "TodoWrite":
            listed = [(t.get("content", ""), t.get("status", "")) for t in inp.get("todos") or []
                      if isinstance(t, dict)]
            tasks_newer = False
            continue
        tasks_newer = True
        if name == "TaskCreate":
            m = re.search(r"#(\d+)", done.get(c.get("id"), (False, ""))[1])
            tasks[m.group(1) if m else "?%s" % c.get("id")] = [inp.get("subject", ""), "pending"]
        else:
            tid = str(inp.get("taskId"))
            if inp.get("status") == "deleted":
                tasks.pop(tid, None)
                continue
            task = tasks.setdefault(tid, ["task #%s" % tid, "pending"])
            if inp.get("subject"):
                task[0] = inp["subject"]
            if inp.get("status"):
                task[1] = inp["status"]
    items = [tuple(t) for t in tasks.values()] if tasks_newer else listed
    return [content for content, status in items if status != "completed" and content]


def modified_files(entries):
    done = results(entries)
    files = []
    for c in calls(entries):
        inp = c.get("input") or {}
        path = inp.get("file_path") or inp.get("notebook_path")
        if c.get("name") in EDIT_TOOLS and path and succeeded(c, done) and path not in files:
            files.append(path)
    return files


def boundaries(entries):
    return [i for i, e in enumerate(entries)
            if isinstance(e, dict) and e.get("type") == "system"
            and e.get("subtype") == "compact_boundary"]


def compaction_of(entries, cut):
    """The trigger and instructions of a compaction at `cut`: the boundary's own, and the args
    of the /compact just before it."""
    boundary = entries[cut] if cut < len(entries) else None
    trigger = "manual"
    if isinstance(boundary, dict):
        trigger = (boundary.get("compactMetadata") or {}).get("trigger") or "manual"
    instructions = ""
    for e in reversed(entries[:cut]):
        if isinstance(e, dict) and e.get("type") == "user":
            text, _ = contents(e)
            if "<command-name>/compact</command-name>" in text:
                instructions = (tag(text, "command-args") or "").strip()
            break
    return trigger, instructions


def session_of(entries):
    sid, cwd = "eval-session", ""
    for e in entries:
        if isinstance(e, dict):
            sid = e.get("sessionId") or sid
            cwd = e.get("cwd") or cwd
            if e.get("sessionId") and e.get("cwd"):
                break
    return sid, cwd


class Run:
    """One state directory: compactions of one session, each followed by SessionStart."""

    def __init__(self, binary, workdir, session, cwd):
        self.binary, self.session, self.cwd = binary, session, cwd
        self.dir = Path(tempfile.mkdtemp(dir=workdir))
        (self.dir / "home").mkdir()
        self.clock = datetime.datetime(2026, 5, 1, 12, 0, tzinfo=datetime.timezone.utc)

    def hook(self, name, payload):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("CTXGUARD_", "CLAUDE_"))}
        env.update(HOME=str(self.dir / "home"), CTXGUARD_HOME=str(self.dir / "state"),
                   CTXGUARD_NOW=self.clock.isoformat())
        out = subprocess.run([self.binary, name], input=json.dumps(payload), env=env,
                             capture_output=True, text=True, timeout=60)
        return out.stdout

    def compact(self, lines, trigger, instructions):
        """PreCompact on `lines`, then SessionStart(compact); the checkpoint part of the block."""
        self.clock += datetime.timedelta(minutes=10)
        path = self.dir / ("t%d.jsonl" % int(self.clock.timestamp()))
        path.write_text("".join(lines))
        common = {"session_id": self.session, "transcript_path": str(path), "cwd": self.cwd}
        self.hook("precompact", dict(common, hook_event_name="PreCompact", trigger=trigger,
                                     custom_instructions=instructions))
        out = self.hook("sessionstart", dict(common, hook_event_name="SessionStart",
                                             source="compact"))
        if not out.strip():
            return ""
        block = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        return block.split("\n### ")[0]


def newest_failure(block):
    m = re.search(r"Recent tool failures \(newest first\):\n(`{3,})text\n(.*?)\n", block)
    return m.group(2) if m else None


def measure(block, entries, cwd):
    upto = [e for e in entries if isinstance(e, dict)]
    flat = normal(block)
    asks = [a for a in (ask_of(e) for e in upto) if a]
    if asks:
        ask = normal(asks[-1])
        found = ask[:60] in flat and (len(ask) <= 200 or ask[-60:] in flat)
        ask_cell = "yes" if found else "no"
    else:
        ask_cell = "–"
    tasks = open_tasks(upto)
    task_cell = ("%d/%d" % (sum(normal(t)[:40] in flat for t in tasks), len(tasks))
                 if tasks else "–")
    files = modified_files(upto)

    def named(path):
        rel = os.path.relpath(path, cwd) if cwd and path.startswith(cwd.rstrip("/") + "/") else path
        return rel in block or path in block
    file_cell = "%d/%d" % (sum(map(named, files)), len(files)) if files else "–"
    failure = newest_failure(block)
    if failure is None:
        failure_cell = "–"
    else:
        line = re.sub(r" \(\d+ times\)$", "", failure.split(": ", 1)[-1])
        line = line.split(" → ", 1)[-1]
        failure_cell = "no" if EXIT_ONLY.match(line.strip()) else "yes"
    return [ask_cell, task_cell, file_cell, failure_cell, str(len(block)) if block else "0"]


def middle_prompt(entries):
    prompts = [i for i, e in enumerate(entries) if isinstance(e, dict) and ask_of(e)]
    return prompts[len(prompts) // 2] if len(prompts) > 1 else len(entries) // 2


def evaluate(binary, path, workdir):
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    entries = parse(lines)
    session, cwd = session_of(entries)
    rows = {"boundary": [], "end": [], "second": []}
    for b in boundaries(entries):
        trigger, instructions = compaction_of(entries, b)
        block = Run(binary, workdir, session, cwd).compact(lines[:b], trigger, instructions)
        rows["boundary"].append(["%s @ line %d" % (path.name, b + 1)]
                                + measure(block, entries[:b], cwd))
    block = Run(binary, workdir, session, cwd).compact(lines, "manual", "")
    rows["end"].append([path.name] + measure(block, entries, cwd))
    run = Run(binary, workdir, session, cwd)
    found = boundaries(entries)
    if found:
        first, name, later = found[0], path.name, lines
    else:
        # No compaction in this session: pretend one before its middle prompt.
        first, name = middle_prompt(entries), path.name + " *"
        boundary = json.dumps({"type": "system", "subtype": "compact_boundary",
                               "isSidechain": False, "content": "Conversation compacted",
                               "compactMetadata": {"trigger": "auto"}}) + "\n"
        later = lines[:first] + [boundary] + lines[first:]
    trigger, instructions = compaction_of(entries, first)
    block = run.compact(lines[:first], trigger, instructions)
    if not found:
        rows["boundary"].append(["%s @ line %d *" % (path.name, first + 1)]
                                + measure(block, entries[:first], cwd))
    block = run.compact(later, "manual", "")
    rows["second"].append([name] + measure(block, entries, cwd))
    return rows


HEADER = ["transcript", "last ask named", "open tasks recalled", "modified files recalled",
          "last failure informative", "checkpoint chars"]
TITLES = {
    "boundary": "Cut just before each compact_boundary",
    "end": "At the end of the transcript",
    "second": "Second compaction in the same state directory (at the end)",
}


def table(rows):
    out = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary", nargs="?")
    parser.add_argument("--transcripts", type=Path, default=DEFAULT_TRANSCRIPTS)
    args = parser.parse_args()
    if not args.transcripts.is_dir():
        print("no transcripts at %s: nothing to evaluate" % args.transcripts)
        return 0
    paths = sorted(args.transcripts.glob("*.jsonl"))
    if not paths:
        print("no .jsonl transcripts in %s: nothing to evaluate" % args.transcripts)
        return 0
    binary = find_binary(args.binary)
    all_rows = {"boundary": [], "end": [], "second": []}
    with tempfile.TemporaryDirectory() as workdir:
        for path in paths:
            for moment, rows in evaluate(binary, path, workdir).items():
                all_rows[moment] += rows
    for moment in ("boundary", "end", "second"):
        print("### %s\n" % TITLES[moment])
        print(table(all_rows[moment]) if all_rows[moment] else "(none)")
        print()
    print("`–`: nothing to recall at that moment (no ask, no open task, no modified file, "
          "no failure shown). `*`: no compaction in the transcript; cut (and for the second "
          "compaction, a compact_boundary inserted) before its middle prompt.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
