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
  queued      prompts typed while the agent worked (queue-operation enqueue records of human
              text, since the last boundary), the newest five: how many the block names;
  goal        the session's first substantive request (not a one-word acknowledgement) is in
              the block (for a plan from plan mode: its title);
  plan steps  for a plan, how many of its numbered step headings the block names, and never
              the client's plan-mode footer;
  verified    the last test/build/lint/typecheck command with a result is named with a line of
              its output that gives the verdict (a count of passed/failed tests, "All tests
              passed!", "No issues found", ...);
  stale       failures shown although a later identical command, or a later successful edit of
              the same file, cleared them (shown/stale; lower is better);
  subjects    open tasks whose subject the transcript gives anywhere (TaskCreate, TaskGet,
              TaskList, a task_assignment), named with it;
  branch      a non-default gitBranch (and every pull request of a pr-link record) named;
  chars       the size of the checkpoint part of the block.

--self-test runs every scorer on literal cases it must pass and on ones it must fail.

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
DEFAULT_BRANCHES = {"main", "master", "trunk", "develop", "development", "HEAD", ""}
# One-word acknowledgements and menu presses: never a request.
ACK_WORDS = {"ok", "okay", "k", "yes", "y", "yep", "yeah", "sure", "no", "n", "c", "continue",
             "go", "proceed", "next", "done", "thanks", "lgtm", "do", "it", "ahead", "please"}
# What runs tests, builds, linters and type checks (written here, not taken from ctxguard).
VERIFY = re.compile(
    r"(^|[;&|(]\s*|\s)("
    r"cargo (test|nextest|build|check|clippy)|go (test|build|vet)|"
    r"(npm|pnpm|yarn|bun)( run)?( --?[\w=@/.-]+)*( [@\w/.-]+)? (test|build|lint|typecheck|type-check|check)\b(?!:fix)|"
    r"bun test|npx (jest|vitest|tsc|eslint)|jest|vitest|tsc|pytest|python3? -m (pytest|mypy)|mypy|ruff check|"
    r"mix (test|compile|credo|dialyzer)|dart (analyze|test)|flutter (test|analyze)|"
    r"make (test|check)|just (test|check|lint)|gradle\w* (test|build)|mvn (test|verify)|rspec"
    r")\b")
VERDICT = re.compile(
    r"\b\d+ (passed|failed|failures?|errors?|tests?|pass|fail)\b|all tests passed|some tests failed"
    r"|no issues found|found no issues|passed successfully|no fixes applied|test result:|"
    r"no errors|\bFAILED\b", re.I)


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
    if text.startswith("<teammate-message"):
        # The lead's message to a teammate (agent teams): its body, or the task it assigns.
        body = re.sub(r"</?teammate-message[^>]*>", "", text).strip()
        try:
            assigned = json.loads(body)
        except ValueError:
            return body
        return assigned.get("subject") if isinstance(assigned, dict) else body
    if text.startswith("<") or text.startswith("[Request interrupted"):
        return None
    return text


def normal(text):
    return " ".join(text.split())


def is_ack(text):
    words = [w.strip(".,!?;:").lower() for w in text.split()]
    words = [w for w in words if w]
    return len(words) <= 2 and all(w in ACK_WORDS or len(w) <= 2 for w in words)


def queued_of(entry):
    """A prompt typed while the agent worked (a human enqueue), or None."""
    if entry.get("type") != "queue-operation" or entry.get("operation") != "enqueue":
        return None
    text = entry.get("content")
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not text or text[0] in "{<":
        return None
    if text.startswith("/") and "/" not in text.split()[0][1:]:
        name, _, args = text[1:].partition(" ")
        if not args.strip() or name in CLIENT_COMMANDS:
            return None
    return None if is_ack(text) else text


def requests(entries):
    """Every request in time order: typed ones and queued ones, no acknowledgements."""
    out = []
    for e in entries:
        if not main_chain(e):
            continue
        a = ask_of(e) or queued_of(e)
        # A queued prompt later sent as its own turn is one request.
        if a and not is_ack(a) and a not in out[-8:]:
            out.append(a)
    return out


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


def found(text, flat, n=40):
    t = normal(text)
    return t[:n] in flat


def since_boundary(entries):
    b = boundaries(entries)
    return entries[b[-1] + 1:] if b else entries


def plan_parts(text):
    """A plan from plan mode: its title and numbered step headings, or None."""
    if not text.startswith("Implement the following plan:"):
        return None
    heads = [l.lstrip("#").strip() for l in text.splitlines() if re.match(r"#{1,6} ", l)]
    title = heads[0].replace("Plan:", "").strip() if heads else ""
    steps = [h for h in heads[1:] if re.match(r"(\d|Step)", h)]
    return title, steps


def score_goal(block, entries):
    reqs = requests(entries)
    if not reqs:
        return "–", "–"
    goal, flat = reqs[0], normal(block)
    plan = plan_parts(goal)
    if plan is None:
        return ("yes" if found(goal, flat) else "no"), "–"
    title, steps = plan
    footer = "before exiting plan mode" in block
    kept = sum(found(st, flat, 25) for st in steps)
    goal_cell = "yes" if title and title[:40] in flat else "no"
    return goal_cell, ("footer" if footer else "%d/%d" % (kept, len(steps)))


def score_queued(block, entries):
    part = since_boundary(entries)
    queued = [q for q in (queued_of(e) for e in part if isinstance(e, dict)) if q]
    if not queued:
        return "–"
    newest = queued[-5:]
    flat = normal(block)
    return "%d/%d" % (sum(found(q, flat) for q in newest), len(newest))


def score_verification(block, entries):
    done = results(entries)
    last = None
    for c in calls(entries):
        cmd = (c.get("input") or {}).get("command") or ""
        if c.get("name") == "Bash" and c.get("id") in done and VERIFY.search(cmd.split("\n")[0]):
            text = done[c["id"]][1]
            if "running in background with ID" not in text:
                last = (cmd, text)
    if last is None:
        return "–"
    cmd, text = last
    m = re.search(r"Last verification:\n`{3,}text\n(.*?)\n`{3,}", block, re.S)
    if not m or normal(cmd.split("\n")[0])[:30] not in normal(m.group(1)):
        return "no"
    shown = normal(m.group(1))
    verdicts = [normal(l) for l in text.splitlines() if VERDICT.search(l)]
    if not verdicts:
        return "yes (no verdict in output)"
    return "yes" if any(v[:40] in shown for v in verdicts) else "no verdict"


def stale_failures(entries):
    """Failed calls that a later identical command, or a later successful edit of the same
    file, cleared: the command or path of each."""
    done = results(entries)
    seq = []
    for c in calls(entries):
        inp = c.get("input") or {}
        key = inp.get("command") if c.get("name") == "Bash" else inp.get("file_path")
        if c.get("id") in done and key:
            seq.append((c.get("name"), key, done[c["id"]][0]))
    stale = []
    for i, (tool, key, failed) in enumerate(seq):
        if not failed:
            continue
        later = seq[i + 1:]
        if tool == "Bash" and any(t == "Bash" and k == key and not f for t, k, f in later):
            stale.append(key)
        elif tool in EDIT_TOOLS | {"Read"} and any(
                t in EDIT_TOOLS and k == key and not f for t, k, f in later):
            stale.append(key)
    return stale


def score_stale(block, entries, cwd):
    stale = stale_failures(entries)
    if not stale:
        return "–"
    m = re.search(r"Recent tool failures \(newest first\):\n`{3,}text\n(.*?)\n`{3,}", block, re.S)
    shown = normal(m.group(1)) if m else ""

    def named(key):
        rel = os.path.relpath(key, cwd) if cwd and key.startswith(cwd.rstrip("/") + "/") else key
        return normal(rel.split("\n")[0])[:40] + " → " in shown if shown else False
    return "%d/%d" % (sum(map(named, set(stale))), len(set(stale)))


def task_subjects(entries):
    """Subjects by task id, from anywhere in the transcript up to here."""
    names = {}
    done = results(entries)
    for c in calls(entries):
        text = done.get(c.get("id"), (False, ""))[1]
        if c.get("name") == "TaskCreate":
            m = re.search(r"#(\d+)", text)
            if m and (c.get("input") or {}).get("subject"):
                names[m.group(1)] = c["input"]["subject"]
        for m in re.finditer(r"^(?:Task )?#(\d+)(?::| \[\w+\]) (.+?)(?: \[blocked by .*\])?(?: \([\w-]+\))?$",
                             text, re.M):
            names[m.group(1)] = m.group(2)
    for e in entries:
        if main_chain(e) and e.get("type") == "user":
            text, _ = contents(e)
            for m in re.finditer(r'"type":"task_assignment","taskId":"(\d+)","subject":"([^"]+)"', text):
                names[m.group(1)] = m.group(2)
    return names


def open_task_ids(entries):
    """Open tasks of the TaskCreate/TaskUpdate kind, by id."""
    done = results(entries)
    status = {}
    for c in calls(entries):
        name, inp = c.get("name"), c.get("input") or {}
        if name == "TaskCreate" and succeeded(c, done):
            m = re.search(r"#(\d+)", done.get(c.get("id"), (False, ""))[1])
            if m:
                status[m.group(1)] = "pending"
        elif name == "TaskUpdate" and succeeded(c, done) and inp.get("taskId") is not None:
            tid = str(inp["taskId"])
            if inp.get("status") == "deleted":
                status.pop(tid, None)
            elif inp.get("status"):
                status[tid] = inp["status"]
            else:
                status.setdefault(tid, "pending")
    return [t for t, st in status.items() if st != "completed"]


def score_subjects(block, entries):
    names = task_subjects(entries)
    known = [t for t in open_task_ids(entries) if t in names]
    if not known:
        return "–"
    flat = normal(block)
    return "%d/%d" % (sum(normal(names[t])[:40] in flat for t in known), len(known))


def score_branch(block, entries):
    branch, prs = "", []
    for e in entries:
        if isinstance(e, dict):
            branch = e.get("gitBranch") or branch
            if e.get("type") == "pr-link" and e.get("prUrl") and e["prUrl"] not in prs:
                prs.append(e["prUrl"])
    wanted = ([] if branch in DEFAULT_BRANCHES else ["branch " + branch]) + prs
    if not wanted:
        return "–"
    return "yes" if all(w in block for w in wanted) else "no"


def measure(block, entries, cwd):
    upto = [e for e in entries if isinstance(e, dict)]
    flat = normal(block)
    asks = requests(upto)
    if asks:
        ask = normal(asks[-1])
        named = ask[:60] in flat and (len(ask) <= 200 or ask[-60:] in flat)
        if not named and plan_parts(asks[-1]):
            named = plan_parts(asks[-1])[0][:40] in flat
        ask_cell = "yes" if named else "no"
    else:
        ask_cell = "–"
    tasks = open_tasks(upto)
    def task_named(t):
        # A task known only by its id ("task #28") may be shown with its subject ("#28 …").
        m = re.match(r"task #(\w+)$", t)
        return bool(re.search(r"#%s\b" % m.group(1), block)) if m else normal(t)[:40] in flat
    task_cell = ("%d/%d" % (sum(map(task_named, tasks)), len(tasks)) if tasks else "–")
    files = modified_files(upto)

    def named_file(path):
        rel = os.path.relpath(path, cwd) if cwd and path.startswith(cwd.rstrip("/") + "/") else path
        return rel in block or path in block
    file_cell = "%d/%d" % (sum(map(named_file, files)), len(files)) if files else "–"
    failure = newest_failure(block)
    if failure is None:
        failure_cell = "–"
    else:
        line = re.sub(r" \(\d+ times\)$", "", failure.split(": ", 1)[-1])
        line = line.split(" → ", 1)[-1]
        failure_cell = "no" if EXIT_ONLY.match(line.strip()) else "yes"
    goal_cell, plan_cell = score_goal(block, upto)
    return [ask_cell, score_queued(block, upto), goal_cell, plan_cell, task_cell,
            score_subjects(block, upto), score_verification(block, upto),
            score_stale(block, upto, cwd), score_branch(block, upto), file_cell, failure_cell,
            str(len(block)) if block else "0"]


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


HEADER = ["transcript", "last ask named", "queued prompts named", "goal kept", "plan steps",
          "open tasks recalled", "task subjects", "last verification with verdict",
          "stale failures shown", "branch / PR", "modified files recalled",
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


def self_test():
    """Every scorer on literal cases: one it must pass, one it must fail."""
    def user(text):
        return {"type": "user", "message": {"content": text}}

    def bash(i, command, output, error=False):
        return [{"type": "assistant", "message": {"content": [
                    {"type": "tool_use", "id": "t%d" % i, "name": "Bash", "input": {"command": command}}]}},
                {"type": "user", "message": {"content": [
                    {"type": "tool_result", "tool_use_id": "t%d" % i, "content": output, "is_error": error}]}}]

    def fenced(title, *lines):
        return "%s\n```text\n%s\n```\n" % (title, "\n".join(lines))

    checks = []

    def check(name, got, want):
        checks.append((name, got == want, got, want))

    queued = [user("start the work"),
              {"type": "queue-operation", "operation": "enqueue", "content": "also add tests"},
              {"type": "queue-operation", "operation": "enqueue", "content": '{"task_id":"x"}'},
              {"type": "queue-operation", "operation": "enqueue", "content": "c"}]
    check("queued yes", score_queued("[queued] also add tests", queued), "1/1")
    check("queued no", score_queued("start the work", queued), "0/1")
    check("newest ask counts a queued one", measure("start the work", queued, "")[0], "no")
    goal = [user("c"), user("Port the parser to Rust"), user("yes"), user("now the lexer")]
    check("goal yes", score_goal("Port the parser to Rust", goal)[0], "yes")
    check("goal no", score_goal("now the lexer", goal)[0], "no")
    plan = [user("Implement the following plan:\n# Plan: Fast path\n## Context\n### 1. Cache the reading\n"
                 "### 2. Skip the parse\nIf you need specific details from before exiting plan mode, read it")]
    check("plan yes", score_goal("Implement the following plan: Fast path. Steps: 1. Cache the reading; "
                                 "2. Skip the parse", plan), ("yes", "2/2"))
    check("plan footer", score_goal("Fast path … If you need specific details from before exiting plan mode",
                                    plan), ("yes", "footer"))
    check("plan no", score_goal("Implement the following plan: ...", plan), ("no", "0/2"))
    red = bash(1, "npm test 2>&1 | tail -3", "Tests:       1 failed, 13 passed, 14 total")
    check("verification yes", score_verification(
        fenced("Last verification:", "[failed] npm test 2>&1 | tail -3 → Tests: 1 failed, 13 passed, 14 total"),
        red), "yes")
    check("verification no verdict", score_verification(
        fenced("Last verification:", "[passed] npm test 2>&1 | tail -3 → exit 0"), red), "no verdict")
    check("verification missing", score_verification("", red), "no")
    fixed = bash(2, "dart analyze", "Exit code 1\nerror - x", True) + bash(3, "dart analyze", "No issues found!")
    check("stale shown", score_stale(fenced("Recent tool failures (newest first):",
                                            "Bash: dart analyze → error - x"), fixed, ""), "1/1")
    check("stale not shown", score_stale("", fixed, ""), "0/1")
    tasks = [{"type": "assistant", "message": {"content": [
                {"type": "tool_use", "id": "u1", "name": "TaskUpdate", "input": {"taskId": "29", "status": "in_progress"}},
                {"type": "tool_use", "id": "g1", "name": "TaskGet", "input": {"taskId": "29"}}]}},
             {"type": "user", "message": {"content": [
                 {"type": "tool_result", "tool_use_id": "u1", "content": "Updated task #29 status"},
                 {"type": "tool_result", "tool_use_id": "g1", "content": "Task #29: TST-6: Integration test\nStatus: pending"}]}}]
    check("subjects yes", score_subjects("[in_progress] #29 TST-6: Integration test", tasks), "1/1")
    check("subjects no", score_subjects("[in_progress] task #29", tasks), "0/1")
    branch = [dict(user("go on"), gitBranch="feat/x"),
              {"type": "pr-link", "prUrl": "https://github.com/o/r/pull/7"}]
    check("branch yes", score_branch("branch feat/x\npull request https://github.com/o/r/pull/7", branch), "yes")
    check("branch no", score_branch("branch feat/x", branch), "no")
    check("branch default", score_branch("", [dict(user("x"), gitBranch="main")]), "–")
    bad = [c for c in checks if not c[1]]
    for name, ok, got, want in checks:
        print("%-4s %s%s" % ("ok" if ok else "FAIL", name, "" if ok else ": got %r, want %r" % (got, want)))
    return 1 if bad else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary", nargs="?")
    parser.add_argument("--transcripts", type=Path, default=DEFAULT_TRANSCRIPTS)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
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
