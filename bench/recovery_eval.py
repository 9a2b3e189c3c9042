#!/usr/bin/env python3
"""How much of a real session the recovery block brings back.

For every transcript in ../shared/transcripts/ and, when present, ../notes/transcripts/ (or the
directories given with --transcripts), runs the real binary's PreCompact then
SessionStart(compact) in a temporary CTXGUARD_HOME and HOME, at four kinds of moment:

  boundary  the transcript cut just before each of its compact_boundary lines (what PreCompact
            saw when the client compacted there); for a transcript without one, before its
            middle prompt (marked *);
  end       the whole transcript, as if it compacted now;
  second    two compactions in the same state directory: cut before the first boundary, then
            the whole transcript. A transcript without a boundary gets one inserted before its
            middle prompt (marked *), so the second run reads only what came after it;
  sampled   cut before up to six prompts spread over the session (more moments for the
            rarer items);
  midturn   cut just after up to four tool results spread over the session: where an
            automatic compaction lands, in the middle of a turn (tasks still open, a plan
            half done).

For each it checks the block against what the transcript says at that moment:

  last ask    the newest real user request (a typed prompt, or a slash command with arguments
              as "/name args"; not a client command, a shell command, a notification or another
              agent's message) is in the block (its start, and for a long one its end too);
  open tasks  (item 5) tasks open then, per the TodoWrite / TaskCreate / TaskUpdate history
              (changes whose result failed left out), found in the block;
  files       files modified by the session so far (edits whose result did not fail) named in
              the block;
  failure     the block's newest failure line says more than "Exit code N";
  queued      prompts typed while the agent worked (queue-operation enqueue records of human
              text, since the last boundary), the newest five: how many the block names;
  goal        the session's first substantive request (not a one-word acknowledgement) is in
              the block (for a plan from plan mode: its title);
  plan        (item 3) a plan pasted from plan mode as the goal, or written in plan mode
              (ExitPlanMode's input, a Write under ~/.claude/plans/): its title and step
              headings (or its checklist, a done step shown as done) named, or its file; never
              the client's plan-mode footer;
  verified    (item 1) the last test/build/lint/typecheck command with a result (a background
              run counts where a TaskOutput/BashOutput read its output) is named from its
              runner on with a line of its output that gives the verdict (a count of
              passed/failed tests, "✓ built in", "BUILD SUCCESSFUL", "No issues found", ...);
  stale       failures shown although a later identical command, or a later successful edit of
              the same file, cleared them (shown/stale; lower is better);
  subjects    open tasks whose subject the transcript gives anywhere (TaskCreate, TaskGet,
              TaskList, a task_assignment), named with it;
  branch      a non-default gitBranch (and every pull request of a pr-link record) named;
  PRs         (item 2) of the three newest pull requests the session named (gh pr commands and
              their output, PR URLs, git log's "Merge pull request #N", asks), how many the
              block names;
  team        (item 4) no other agent's message (a peer's, a teammate's status ping) among the
              user's requests, and a short reply answering the agent's question ("approved")
              named with that question;
  chars       the size of the checkpoint part of the block.

Then a summary: each of items 1-5 over every moment with something to recall, the largest
checkpoint part, and the headline: the share of compactions (boundary, second, sampled and
midturn moments) whose block names the newest ask, the goal, the open tasks, the last verdict
and the branch all together.

--self-test runs every scorer on literal cases it must pass and on ones it must fail.

Usage: bench/recovery_eval.py [BINARY] [--transcripts DIR]... [--self-test]
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
# The shared real sessions, and those gathered for issue 27 (kept outside the repository for
# their size), when present.
DEFAULT_TRANSCRIPTS = [ROOT.parent / "shared" / "transcripts", ROOT.parent / "notes" / "transcripts"]

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
    r"cargo (test|nextest|build|check|clippy)|go (test|build|vet)|golangci-lint|"
    r"(npm|pnpm|yarn|bun)( run)?( --?[\w=@/.-]+)*( [@\w/.-]+)? (test|build|lint|typecheck|type-check|check)\b(?!:fix)|"
    r"bun test|npx (jest|vitest|tsc|eslint|playwright test|vite build|webpack)|jest|vitest|tsc|eslint|pytest|"
    r"python3? -m (pytest|mypy)|mypy|ruff check|vite build|webpack|next build|playwright test|"
    r"mix (test|compile|credo|dialyzer)|dart (analyze|test)|flutter (test|analyze)|"
    r"make( (test|check|build|all))?$|make (test|check|build|all)|just (test|check|lint)|"
    r"(\./)?gradlew? (test|build|check)|(\./)?mvnw? (test|verify|package)|dotnet (test|build)|rspec"
    r")\b")
# A verdict line of the common runners: counts of passed/failed tests, a build's or a linter's
# last word.
VERDICT = re.compile(
    r"\b\d+ (passed|failed|failures?|errors?|tests?|pass|fail|problems?|warnings?)\b|all tests passed"
    r"|some tests failed|no issues found|found no issues|passed successfully|no fixes applied"
    r"|test result:|no errors|\bFAILED\b|built in \d|BUILD (SUCCESS|FAILED)|Build (succeeded|FAILED)"
    r"|compiled (successfully|with)|All checks passed|Success: no issues|^ok\s+\S+\s+[\d.]+s"
    r"|^(FAIL|PASS)\s+\S|Ran \d+ tests?|Finished `", re.I | re.M)
# How the client hands over another agent's message (agent teams, 2.1.2xx).
PEER = "Another Claude session sent a message:"


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
    if text.startswith(PEER) or is_peer_teammate(text):
        # Another agent's message, a status ping: not the user's.
        return None
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


def is_peer_teammate(text):
    """A teammate's message that is not its lead's, or a status ping (not a task assignment)."""
    m = re.match(r'<teammate-message teammate_id="([^"]*)"[^>]*>\s*(.*)', text, re.S)
    if not m:
        return False
    body = m.group(2)
    status = body.startswith('{"type":"') and not body.startswith('{"type":"task_assignment"')
    return status or m.group(1) != "team-lead"


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


def line_time(line):
    """A transcript line's timestamp, or None."""
    m = re.search(r'"timestamp":\s*"([^"]+)"', line)
    if not m:
        return None
    try:
        return datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00"))
    except ValueError:
        return None


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
        # Hooks run after what they read was written: a clock before the transcript's own times
        # would make every line look newer than the checkpoint (a summary prepared ahead).
        newest = max((t for t in map(line_time, lines[-200:]) if t), default=None)
        if newest and newest + datetime.timedelta(minutes=1) > self.clock:
            self.clock = newest + datetime.timedelta(minutes=1)
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


def unquoted(line):
    """`line` with its quoted strings blanked: `grep -E '(error|mypy)'` runs no mypy."""
    return re.sub(r"'[^']*'|\"[^\"]*\"", lambda m: " " * len(m.group(0)), line)


# A package manager asked about a package, or installing one, runs none of it ("npm view vitest").
PACKAGE_QUERY = re.compile(
    r"^\s*((npm|pnpm|yarn|bun) (view|info|show|install|i|add|remove|outdated|ls|list|why)|"
    r"(uv )?pip3? (install|show|download)|brew (install|info)|which|type|man)\b")


def without_heredocs(command):
    """`command` with the bodies of its here-documents blanked (a commit message is text)."""
    out, end = [], None
    for line in command.split("\n"):
        if end is not None:
            out.append("")
            if line.strip() == end:
                end = None
            continue
        m = re.search(r"<<-?\s*['\"]?(\w+)", line)
        if m and "<<<" not in line:
            end = m.group(1)
        out.append(line)
    return "\n".join(out)


def verifies(command):
    # Every line of the command counts (`cd app` then `npx vitest run` on the next), outside
    # quoted strings (which may span lines: `python3 -c "…"`) and here-documents.
    text = unquoted(without_heredocs(command))
    # Each part of a `;`/`&&` chain is judged: `npm view vitest; npm test` still tests.
    # A runner counts where a command starts (after variables and wrappers such as `time`),
    # not as a word in a list (`for pkg in vite vitest; do npm view $pkg; done`).
    parts = re.split(r"\s*(?:&&|\|\||;|\n|\bdo\b|\bthen\b)\s*", text)
    return any(VERIFY.match(command_start(p)) and not PACKAGE_QUERY.search(p) for p in parts)


def command_start(part):
    """`part` from its command on: leading variables and wrappers (time, env, timeout N, uv
    run, poetry run) dropped."""
    return re.sub(r"^\s*((\w+=\S*|time|env|nice|timeout \d+\w?|(uv|poetry|pipenv|hatch) run)\s+)*",
                  "", part)


def from_runner(command):
    """A verification's command from its runner on (past `cd /long/path && `), on its line."""
    text = unquoted(without_heredocs(command))
    for at, line in zip(line_starts(command), text.split("\n")):
        m = VERIFY.search(line)
        if m:
            return command[at + m.start(2):].split("\n")[0]
    return command.split("\n")[0]


def line_starts(text):
    """Where each line of `text` starts."""
    starts, at = [], 0
    for line in text.split("\n"):
        starts.append(at)
        at += len(line) + 1
    return starts


def background_reads(entries):
    """task id -> the output a later TaskOutput/BashOutput read of a finished task gave."""
    done, out = results(entries), {}
    for c in calls(entries):
        inp = c.get("input") or {}
        tid = inp.get("task_id") or inp.get("bash_id") or inp.get("shell_id")
        if c.get("name") in ("TaskOutput", "BashOutput") and tid and c.get("id") in done:
            text = done[c["id"]][1]
            if "<status>running</status>" not in text:
                m = re.search(r"<output>(.*?)(</output>|$)", text, re.S)
                out[tid] = m.group(1) if m else text
    return out


def last_verification(entries):
    """The last test/build/lint run with a result: (command, output), or None. A run sent to
    the background counts where its output was read later."""
    done, last = results(entries), None
    reads = background_reads(entries)
    for c in calls(entries):
        cmd = (c.get("input") or {}).get("command") or ""
        if c.get("name") == "Bash" and c.get("id") in done and verifies(cmd):
            text = done[c["id"]][1]
            m = re.search(r"running in background with ID: (\w+)", text)
            if not m:
                last = (cmd, text)
            elif m.group(1) in reads:
                last = (cmd, reads[m.group(1)])
    return last


def score_verification(block, entries):
    """The last run named from its runner on, with a verdict line of its output."""
    last = last_verification(entries)
    if last is None:
        return "–"
    cmd, text = last
    m = re.search(r"Last verification:\n`{3,}text\n(.*?)\n`{3,}", block, re.S)
    if not m or normal(from_runner(cmd))[:30] not in normal(m.group(1)):
        return "no"
    shown = normal(m.group(1))
    # Colours are not part of a line (the block shows it without them).
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)
    verdicts = [normal(l) for l in text.splitlines() if VERDICT.search(l)]
    if not verdicts:
        return "yes (no verdict in output)"
    return "yes" if any(v[:40] in shown for v in verdicts) else "no verdict"


def pr_numbers(entries):
    """Pull requests the session named, newest first: `gh pr <verb> N`, PR URLs in tool output
    and pr-link records, `git log`'s "Merge pull request #N", and asks naming "PR #N"."""
    done, seen = results(entries), []

    def note(numbers):
        for n in numbers:
            if n in seen:
                seen.remove(n)
            seen.append(n)
    calls_by_id = {c.get("id"): c for c in calls(entries)}
    for e in entries:
        if not isinstance(e, dict) or not main_chain(e):
            continue
        if e.get("type") == "pr-link" and e.get("prUrl"):
            note(re.findall(r"/pull/(\d+)", e["prUrl"]))
            continue
        ask = ask_of(e) if e.get("type") == "user" else None
        if ask:
            note([a or b for a, b in re.findall(r"(?:PR|pull request)\s*#?(\d+)|/pull/(\d+)", ask, re.I)])
        if e.get("type") != "user":
            continue
        for blk in contents(e)[1]:
            if blk.get("type") != "tool_result":
                continue
            call = calls_by_id.get(blk.get("tool_use_id"))
            if not call or call.get("name") != "Bash":
                continue
            cmd = (call.get("input") or {}).get("command") or ""
            text = done.get(call.get("id"), (False, ""))[1]
            merged = re.findall(r"Merge pull request #(\d+)", text)
            note(list(reversed(merged[:8])))
            if "gh pr" in cmd:
                note(re.findall(r"/pull/(\d+)", text))
                note(re.findall(r"gh pr \w+ #?(\d+)", cmd.split("\n")[0]))
    return list(reversed(seen))


def score_prs(block, entries):
    """Of the three newest pull requests the session named, how many the block names."""
    newest = pr_numbers(entries)[:3]
    if not newest:
        return "–"
    named = [n for n in newest if re.search(r"(#|/pull/)%s\b" % n, block)]
    return "%d/%d" % (len(named), len(newest))


def written_plan(entries):
    """The newest plan written in plan mode (ExitPlanMode's input, a Write under
    ~/.claude/plans/): (text, file or None), or None."""
    plan, path = None, None
    done = results(entries)
    for c in calls(entries):
        inp = c.get("input") or {}
        if c.get("name") == "ExitPlanMode" and isinstance(inp.get("plan"), str) and inp["plan"].strip():
            plan = inp["plan"]
            m = re.search(r"plan has been saved to: (\S+)", done.get(c.get("id"), (False, ""))[1])
            path = m.group(1) if m else path
        elif c.get("name") == "Write" and "/.claude/plans/" in (inp.get("file_path") or ""):
            plan, path = inp.get("content") or plan, inp["file_path"]
    return (plan, path) if plan else None


def score_plan(block, entries):
    """A plan (pasted from plan mode as the goal, or written in plan mode): its title and its
    numbered step headings (the first eight) named, or its file; never the client's footer."""
    reqs = requests(entries)
    pasted = plan_parts(reqs[0]) if reqs else None
    written = written_plan(entries)
    if pasted is None and written is None:
        return "–"
    if "before exiting plan mode" in block:
        return "footer"
    flat = normal(block)
    file_named = False
    if pasted is not None:
        title, steps = pasted
    else:
        title, steps = plan_parts("Implement the following plan:\n" + written[0])
        file_named = bool(written[1]) and written[1] in block
        # A plan that tracks its steps as a checklist: those, a done one shown as done.
        checklist = re.findall(r"^\s*(?:\d+\.|[-*])\s+(✅|☑|✔|\[[xX ]\]|⏳|⬜|☐)\s*(.+)$",
                               written[0], re.M)
        if len(checklist) >= 2:
            steps = [("[done] " if mark in ("✅", "☑", "✔", "[x]", "[X]") else "") + item
                     for mark, item in checklist]
    steps = steps[:8]
    kept = sum(found(st, flat, 25) for st in steps)
    if title and title[:40] not in flat:
        return "no"
    if kept == len(steps):
        return "yes"
    return "yes (file)" if file_named else "%d/%d" % (kept, len(steps))


def team_turns(entries):
    """Another agent's messages since the boundary (the start of each), and the newest short
    reply that answers the agent's question: (peers, (reply, question) or None)."""
    peers, answer, question = [], None, None
    for e in since_boundary(entries):
        if not main_chain(e):
            continue
        text, blocks = contents(e)
        if e.get("type") == "assistant":
            if any(b.get("type") == "tool_use" for b in blocks):
                question = None
            elif text.strip():
                last = [l.strip() for l in text.splitlines() if l.strip()][-1:]
                question = last[0] if last and re.search(r"\?|approv|confirm|proceed|승인", text, re.I) else None
        elif e.get("type") == "user" and not e.get("isMeta"):
            t = text.strip()
            if t.startswith(PEER) or is_peer_teammate(t):
                body = re.sub(r"<[^>]+>", " ", t.replace(PEER, ""))
                peers.append(normal(body)[:40])
            elif t and not t.startswith("<") and len(t.split()) <= 2 and question:
                answer = (t, question)
                question = None
    return peers, answer


def score_team(block, entries):
    """No other agent's message under the user's requests; a short reply answering the agent's
    question named with (the start of) that question."""
    peers, answer = team_turns(entries)
    if not peers and not answer:
        return "–"
    m = re.search(r"Recent user requests[^\n]*\n`{3,}text\n(.*?)\n`{3,}", block, re.S)
    asked = normal(m.group(1)) if m else ""
    if any(p and p in asked for p in peers):
        return "no (peer shown)"
    if answer:
        reply, question = answer
        if reply not in asked or normal(question)[:20] not in asked:
            return "no (answer)"
    return "yes"


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
    goal_cell, _ = score_goal(block, upto)
    return [ask_cell, score_queued(block, upto), goal_cell, score_plan(block, upto), task_cell,
            score_subjects(block, upto), score_verification(block, upto),
            score_stale(block, upto, cwd), score_branch(block, upto), score_prs(block, upto),
            score_team(block, upto), file_cell, failure_cell,
            str(len(block)) if block else "0"]


def middle_prompt(entries):
    prompts = [i for i, e in enumerate(entries) if isinstance(e, dict) and ask_of(e)]
    return prompts[len(prompts) // 2] if len(prompts) > 1 else len(entries) // 2


def evaluate(binary, path, workdir):
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    entries = parse(lines)
    session, cwd = session_of(entries)
    rows = {"boundary": [], "end": [], "second": [], "sampled": [], "midturn": []}
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
    # More moments for the rarer items: cut before prompts spread over the session; and, as an
    # automatic compaction comes in the middle of a turn, just after tool results spread over it.
    prompts = [i for i, e in enumerate(entries) if isinstance(e, dict) and ask_of(e)]
    cuts = sorted(spread(prompts, SAMPLES) - {prompts[0], first}) if prompts else []
    results_at = [i for i, e in enumerate(entries) if isinstance(e, dict) and is_tool_result(e)]
    mids = sorted({i + 1 for i in spread(results_at, MIDTURN)} - set(cuts) - set(found) - {first})
    for moment, at in (("sampled", cuts), ("midturn", mids)):
        for cut in at:
            # The compactions before the cut happened in the same state directory.
            run = Run(binary, workdir, session, cwd)
            for b in (b for b in found if b < cut):
                run.compact(lines[:b], *compaction_of(entries, b))
            block = run.compact(lines[:cut], "auto", "")
            rows[moment].append(["%s @ line %d" % (path.name, cut + 1)]
                                + measure(block, entries[:cut], cwd))
    return rows


def spread(at, n):
    """Up to `n` of the indices `at`, spread evenly over them (neither end)."""
    return {at[k * len(at) // (n + 1)] for k in range(1, n + 1)} if at else set()


def is_tool_result(entry):
    """A user line that carries a tool's result (on the main chain)."""
    if entry.get("type") != "user" or not main_chain(entry):
        return False
    content = (entry.get("message") or {}).get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


# Cuts per session, before prompts spread over it, besides the moments above.
SAMPLES = 6
# Cuts per session, just after tool results spread over it.
MIDTURN = 4


HEADER = ["transcript", "last ask named", "queued prompts named", "goal kept", "3 plan",
          "5 open tasks recalled", "task subjects", "1 last verification with verdict",
          "stale failures shown", "branch / PR", "2 pull requests", "4 team turns",
          "modified files recalled", "last failure informative", "checkpoint chars"]
# The columns of issue 27's items 1-5, and those of the headline figure.
ITEMS = {"1 verdict": 7, "2 pull requests": 10, "3 plan": 4, "4 team turns": 11,
         "5 open tasks": 5}
HEADLINE = {"newest ask": 1, "goal": 3, "open tasks": 5, "last verdict": 7, "branch": 9}


def good(cell):
    """Whether a cell is a pass: yes, nothing to recall, or every item recalled."""
    if cell == "–" or cell.startswith("yes"):
        return True
    m = re.match(r"(\d+)/(\d+)$", cell)
    return bool(m) and m.group(1) == m.group(2)


def summary(all_rows):
    """Each of items 1-5 over every moment that had something to recall; the largest block;
    and the headline: the share of compactions whose block names the newest ask, the goal, the
    open tasks, the last verdict and the branch all together."""
    rows = [r for moment in ("boundary", "end", "second", "sampled", "midturn") for r in all_rows[moment]]
    out = ["| item | moments passed | share |", "|---|---|---|"]
    for name, col in ITEMS.items():
        cells = [r[col] for r in rows if r[col] != "–"]
        ok = sum(map(good, cells))
        share = "%d%%" % round(100 * ok / len(cells)) if cells else "–"
        out.append("| %s | %d/%d | %s |" % (name, ok, len(cells), share))
    biggest = max((int(r[-1]) for r in rows), default=0)
    out.append("| largest checkpoint part | %d chars | %s |"
               % (biggest, "within 3200" if biggest <= 3200 else "OVER 3200"))
    # Every moment a compaction happened or is simulated (a cut, then PreCompact).
    compactions = (all_rows["boundary"] + all_rows["second"] + all_rows["sampled"]
                   + all_rows["midturn"])
    whole = sum(all(good(r[c]) for c in HEADLINE.values()) for r in compactions)
    out.append("")
    out.append("**Headline: at %d of %d compactions (%d%%) the block names the newest ask, the "
               "goal, the open tasks, the last verdict and the branch all together.**"
               % (whole, len(compactions), round(100 * whole / max(len(compactions), 1))))
    return "\n".join(out)
TITLES = {
    "boundary": "Cut just before each compact_boundary",
    "end": "At the end of the transcript",
    "second": "Second compaction in the same state directory (at the end)",
    "sampled": "Cut before prompts spread over each session (up to %d a session)" % SAMPLES,
    "midturn": "Cut just after tool results spread over each session (up to %d a session)"
               % MIDTURN,
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
    check("npm view is no test run", verifies("npm view vitest peerDependencies | grep ts"), False)
    check("a test run after a query is", verifies("npm view vitest; npx vitest run"), True)
    check("cd then pytest is", verifies("cd /p && pytest -q"), True)
    check("a runner in a word list is not", verifies("for p in vite vitest; do npm view $p; done"), False)
    check("with variables first it is", verifies("CI=1 FOO=bar npx vitest run"), True)
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
    # 1. A verdict: vite's, read from a background run's output; the command from the runner on.
    vite = (bash(4, "cd /long/path/to/app && npx vite build --mode staging 2>&1 | tail -3",
                 "Command running in background with ID: c0ffee1. Output is being written to: x")
            + [{"type": "assistant", "message": {"content": [
                  {"type": "tool_use", "id": "o1", "name": "TaskOutput", "input": {"task_id": "c0ffee1"}}]}},
               {"type": "user", "message": {"content": [
                  {"type": "tool_result", "tool_use_id": "o1",
                   "content": "<status>completed</status>\n<output>\n✓ 12 modules transformed.\n✓ built in 3.39s\n</output>"}]}}])
    check("verdict yes (vite, background)", score_verification(fenced(
        "Last verification:", "[passed] npx vite build --mode staging 2>&1 | tail -3 → ✓ built in 3.39s"), vite), "yes")
    check("verdict no summary line", score_verification(fenced(
        "Last verification:", "[passed] npx vite build --mode staging 2>&1 | tail -3 → exit 0, no summary line"),
        vite), "no verdict")
    check("verdict cut in the cd prefix", score_verification(fenced(
        "Last verification:", "[passed] cd /long/path/to/app && npx vite b… → ✓ built in 3.39s"), vite), "no")
    jest = bash(5, "npx jest", "PASS a.test.ts\nTests:       49 passed, 49 total")
    check("verdict jest", score_verification(fenced("Last verification:", "[passed] npx jest → Tests: 49 passed, 49 total"), jest), "yes")
    # 2. Pull requests: gh pr create's URL, gh pr merge N, git log's merges; the newest three.
    prs = (bash(6, "git log --oneline", "a Merge pull request #89 from o/x\nb Merge pull request #88 from o/y")
           + bash(7, "cd /x && gh pr create --title t", "https://github.com/o/r/pull/233")
           + bash(8, "gh pr merge 221 --squash", ""))
    check("prs order", pr_numbers(prs), ["221", "233", "89", "88"])
    check("prs yes", score_prs("pull request #221 (merged)\npull request #233 (created)\n#89", prs), "3/3")
    check("prs no", score_prs("pull request #88", prs), "0/3")
    # 3. A plan written in plan mode: its steps, or its file; never the footer.
    written = [{"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "p1", "name": "ExitPlanMode",
         "input": {"plan": "# Phase 0\n## Context\n### 1. ✅ Session storage\n### 2. Resumption testing"}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "p1",
         "content": "User has approved your plan.\nYour plan has been saved to: /h/.claude/plans/x.md\n"}]}}]
    check("plan written yes", score_plan("Phase 0. Steps: 1. ✅ Session storage; 2. Resumption testing", written), "yes")
    check("plan written file", score_plan("Phase 0\nfile: /h/.claude/plans/x.md", written), "yes (file)")
    check("plan written no", score_plan("Phase 0. Steps: 1. ✅ Session storage", written), "1/2")
    checklist = [dict(written[0], message={"content": [dict(written[0]["message"]["content"][0], input={
        "plan": "# Phase 0\n## Status\n1. ✅ Session storage\n2. ⏳ Resumption testing\n### 1. Storage\n### 2. Schema"})]})]
    check("plan checklist yes", score_plan("Phase 0. Steps: 1. [done] Session storage; 2. Resumption testing",
                                           checklist), "yes")
    check("plan step done lost", score_plan("Phase 0. Steps: 1. Session storage; 2. Resumption testing",
                                            checklist), "1/2")
    check("plan pasted footer", score_plan("Fast path before exiting plan mode", plan), "footer")
    # 4. Team turns: a peer's ping is not a request; "approved" answers the agent's question.
    team = [user("migrate the server"),
            user('Another Claude session sent a message:\n<teammate-message teammate_id="reviewer-two">\n'
                 '{"type":"idle_notification","from":"reviewer-two"}\n</teammate-message>'),
            {"type": "assistant", "message": {"content": [{"type": "text", "text": "Design is ready. Approve it?"}]}},
            user("approved")]
    check("team yes", score_team(fenced("Recent user requests (newest first):",
                                        "approved (answering: Design is ready. Approve it?)", "migrate the server"), team), "yes")
    check("team peer shown", score_team(fenced("Recent user requests (newest first):",
                                               'Another Claude session sent a message: {"type":"idle_notification","from":"reviewer-two"}'),
                                        team), "no (peer shown)")
    check("team answer without its question", score_team(fenced("Recent user requests (newest first):", "approved"), team),
          "no (answer)")
    check("team: a peer is no ask", requests(team), ["migrate the server", "approved"])
    # 5. Open tasks: one created and never updated is still open.
    open_ = [{"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "c1", "name": "TaskCreate", "input": {"subject": "Deploy to Streamlit Cloud"}},
        {"type": "tool_use", "id": "c2", "name": "TaskCreate", "input": {"subject": "Fix the parser"}},
        {"type": "tool_use", "id": "u2", "name": "TaskUpdate", "input": {"taskId": "2", "status": "completed"}}]}},
        {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "Task #1 created successfully"},
            {"type": "tool_result", "tool_use_id": "c2", "content": "Task #2 created successfully"},
            {"type": "tool_result", "tool_use_id": "u2", "content": "Updated task #2 status"}]}}]
    check("open tasks yes", measure("[pending] Deploy to Streamlit Cloud", open_, "")[4], "1/1")
    check("open tasks no", measure("[completed] Fix the parser", open_, "")[4], "0/1")
    # The headline's notion of a pass.
    check("good", [good(c) for c in ("yes", "–", "2/2", "yes (file)", "1/2", "no", "footer")],
          [True, True, True, True, False, False, False])
    bad = [c for c in checks if not c[1]]
    for name, ok, got, want in checks:
        print("%-4s %s%s" % ("ok" if ok else "FAIL", name, "" if ok else ": got %r, want %r" % (got, want)))
    return 1 if bad else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary", nargs="?")
    parser.add_argument("--transcripts", type=Path, action="append",
                        help="a directory of .jsonl transcripts (repeatable); default: "
                             "../shared/transcripts and, when present, ../notes/transcripts")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    dirs = args.transcripts or [d for d in DEFAULT_TRANSCRIPTS if d.is_dir()]
    paths = sorted(p for d in dirs if d.is_dir() for p in d.glob("*.jsonl"))
    if not paths:
        print("no .jsonl transcripts in %s: nothing to evaluate" % ", ".join(map(str, dirs)))
        return 0
    binary = find_binary(args.binary)
    all_rows = {"boundary": [], "end": [], "second": [], "sampled": [], "midturn": []}
    with tempfile.TemporaryDirectory() as workdir:
        for path in paths:
            for moment, rows in evaluate(binary, path, workdir).items():
                all_rows[moment] += rows
    for moment in ("boundary", "end", "second", "sampled", "midturn"):
        print("### %s\n" % TITLES[moment])
        print(table(all_rows[moment]) if all_rows[moment] else "(none)")
        print()
    print("`–`: nothing to recall at that moment (no ask, no open task, no modified file, "
          "no failure shown). `*`: no compaction in the transcript; cut (and for the second "
          "compaction, a compact_boundary inserted) before its middle prompt.")
    print()
    print("### Items 1-5 of issue 27, over every moment with something to recall\n")
    print(summary(all_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
