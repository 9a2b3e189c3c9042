#!/usr/bin/env python3
"""How much of a real Codex session the recovery block brings back.

For every rollout in the directories given (default: the held-back part of the manifest,
bench/codex_rollouts.tsv, fetched by bench/fetch_codex_rollouts.sh into ../codex-rollouts/;
its `fresh` part, sessions with no compaction read by nobody before, gives midturn moments),
runs the real binary's PreCompact then SessionStart(compact) in a temporary CTXGUARD_HOME, HOME
and CODEX_HOME, with the rollout cut at two kinds of moment:

  boundary  just before each `compacted` line (what PreCompact saw when Codex compacted there);
  midturn   just after up to three tool outputs spread over the session (where an automatic
            compaction lands, in the middle of a turn).

Each is checked against what the rollout says at that moment, read here from the rollout itself
(Codex's own events where it writes them) and not through ctxguard's rules:

  ask       the newest `user_message` event's text (its start or end) is in the block;
  goal      the first `user_message` of the session is;
  branch    the newest `session_meta`'s git branch (when it has one) is named;
  verify    the last test/build/lint/typecheck command of the cycle (since the previous
            `compacted` line) that got an output, from a `function_call` (`exec_command`,
            `shell`) or a code-mode cell (`tools.exec_command({cmd: ...})`, decoded here with
            Python's JSON decoder), is named from its runner on (its first 25 characters). A
            command still running is judged where its session is read for the last time in
            the whole rollout (`write_stdin`, in a cell or not, and a cell's `wait`): the
            rollout's future says which read saw it end, which no hook can know;
  verdict   for that command, a verdict line of its output (a count of passed/failed tests,
            `test result:`, `Finished`, an `error:` line) is in the block;
  file      the newest successful patch of the cycle (`patch_apply_end` events, `success`) has
            one of its files named among the files modified;
  PR        the pull requests of the cycle whose URL its output printed (`gh pr create`'s, a
            GitHub app's `structuredContent.url`) are named (`#N`).

Prints markdown tables per rollout and a summary per check (moments where the rollout has
something to recall / moments the block names it).

Usage: bench/codex_eval.py [BINARY] [--rollouts DIR]... [--self-test]
BINARY defaults to $CTXGUARD_BIN, then target/release/ctxguard, then target/debug/ctxguard.
Python 3 standard library only.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DIRS = [ROOT.parent / "codex-rollouts" / "held"]

# Test, build, lint and type-check runners: this script's own list.
RUNNER = re.compile(
    r"(?<![\w/.-])("
    r"cargo (?:\+\S+ )?(?:test|nextest|build|check|clippy)|cargo fmt(?=.* --check)|"
    r"(?:pnpm|npm|yarn|bun)(?: (?:--filter|-F|--cwd|-C|--prefix|--workspace|-w)[= ]\S+)*(?: run)? "
    r"(?:test|build|typecheck|lint|check|vitest|tsc)\S*|"
    r"bun test|npx (?:vitest|jest|tsc|eslint)|vitest|jest|tsc(?: |$)|eslint|"
    r"pytest|python3? -m (?:pytest|unittest)|go (?:test|build|vet)|"
    r"mise (?:run )?(?:test|build|lint|check)(?::[\w-]+)*|make(?: (?:test|build|check|lint)\S*)?$|"
    r"make (?:test|build|check|lint)\S*|just (?:test|build|lint|check)\S*|"
    r"mix test|gradle\S* (?:test|build)|mvn (?:test|verify|package)|swift (?:test|build)|"
    r"dotnet (?:test|build)|ruff check|mypy|golangci-lint"
    r")(?=$|[\s;&|)])(?!\S*fix)"
)

VERDICT = re.compile(
    r"(test result: .*|.*\b\d+ (?:passed|failed|passing|failing)\b.*|"
    r"Tests?(?: Files| Suites)?:?\s+\d+.*|Tests?: .*\d+.*|ERROR:? .*\bfailed\b.*|"
    r".*Finished .*(?:profile|target).*|error(?:\[E\d+\])?: .*|FAIL(?:ED)?\b.*|ok\s+\S+\s+(?:[\d.]+s|\(cached\)).*|"
    r".*[Bb]uilt in .*|.*\bFound \d+ errors?.*|.*No issues found.*|All checks passed.*)"
)

WRAPPERS = ("<environment_context>", "<user_instructions>", "<INSTRUCTIONS>", "# AGENTS.md",
            "<turn_aborted>", "<user_shell_command>", "<skills_instructions>",
            "<permissions instructions>", "<collaboration_mode>", "<subagent_notification>",
            "<model_switch>")


PREFIX = re.compile(r"(?:\s*(?:\w+=\S*|time|nice|env|command|timeout \d+\w?|npx|bunx|uv run|"
                    r"poetry run|bundle exec|rtk|mise (?:exec|x)(?: \S+)*? --)\s+)*")


def runner(command):
    """Where a test/build runner starts a segment of any line of the command (`cd x && cargo
    test`, `cd x` then `cargo test` on the next line; not `rg "cargo build"`, nor a PR body or a
    here-document mentioning `cargo test`), or None."""
    at = 0
    heredoc = None
    for line in command.split("\n"):
        start = at
        at += len(line) + 1
        if heredoc is not None:
            if line.strip() == heredoc:
                heredoc = None
            continue
        m = re.search(r"<<-?\s*['\"]?(\w+)", line)
        if m and "<<<" not in line:
            heredoc = m.group(1)
        quoted = re.sub(r"'[^']*'|\"[^\"]*\"", lambda q: " " * len(q.group(0)), line)
        pos = start
        for seg in re.split(r"(&&|\|\||;|\|)", quoted):
            if seg in ("&&", "||", ";", "|"):
                pos += len(seg)
                continue
            lead = len(seg) - len(seg.lstrip(" ("))
            p = PREFIX.match(seg, lead)
            m = RUNNER.match(seg, p.end())
            if m:
                return pos + m.start()
            pos += len(seg)
    return None


def normal(text):
    """Lower-cased, whitespace collapsed, markdown emphasis and backslash escapes dropped."""
    text = re.sub(r"[*_`\\]", "", text)
    return " ".join(text.split()).lower()


def js_string(cell, at):
    """The JavaScript string literal at `at` ("..." only) decoded as JSON, or None."""
    m = re.compile(r'"(?:[^"\\\n]|\\.)*"').match(cell, at)
    if not m:
        return None
    try:
        return json.loads(m.group(0))
    except ValueError:
        return None


def cell_commands(cell):
    """The commands a code-mode cell gives `tools.exec_command` as a plain string."""
    out = []
    for m in re.finditer(r'tools\.exec_command\(\s*\{\s*"?cmd"?\s*:\s*', cell):
        cmd = js_string(cell, m.end())
        if cmd is not None:
            out.append(cmd)
    return out


def parts_of(output):
    if isinstance(output, str):
        return [output]
    if isinstance(output, list):
        return [p.get("text", "") for p in output if isinstance(p, dict)]
    if isinstance(output, dict):
        return parts_of(output.get("content"))
    return []


def part_output(part):
    """A printed part: an exec result printed whole gives its `output`."""
    t = part.strip()
    if t.startswith("{") and t.endswith("}"):
        try:
            o = json.loads(t)
            if isinstance(o, dict) and "chunk_id" in o:
                return o.get("output") or ""
        except ValueError:
            pass
    return part


def stdin_session(p):
    """The background session a `write_stdin` call (a function call, or one in a cell) reads."""
    if p.get("name") == "write_stdin" or "tools.write_stdin(" in (p.get("input") or ""):
        m = re.search(r"session_id\"?\s*:\s*(\d+)", p.get("arguments") or p.get("input") or "")
        if m:
            return m.group(1)
    return None


class Session:
    """What a rollout says, line by line: the truths at every line."""

    def __init__(self, lines):
        self.lines = lines
        self.entries = []
        for line in lines:
            try:
                self.entries.append(json.loads(line))
            except ValueError:
                self.entries.append({})
        # Each background session's last read in the whole rollout: a read before it found the
        # command still running (whether or not the read printed an exit code).
        self.last_read = {}
        for i, e in enumerate(self.entries):
            p = e.get("payload") or {}
            if e.get("type") == "response_item" and p.get("type") in ("function_call",
                                                                       "custom_tool_call"):
                session = stdin_session(p)
                if session:
                    self.last_read[session] = i

    def truths(self, end):
        """The truths of the rollout cut before line `end`."""
        t = dict(ask=None, goal=None, branch=None, verify=None, verdicts=[], files=None, prs=[])
        calls = {}
        sessions = {}
        cells = {}  # cells still running, by id: their call
        for at, e in enumerate(self.entries[:end]):
            kind, p = e.get("type"), e.get("payload") or {}
            if kind == "compacted":
                t.update(verify=None, verdicts=[], files=None, prs=[])
                calls = {}
            elif kind == "session_meta":
                branch = ((p.get("git") or {}).get("branch"))
                # ctxguard names a branch other than the default one.
                if branch and branch not in ("HEAD", "main", "master", "trunk", "develop"):
                    t["branch"] = branch
            elif kind == "event_msg" and p.get("type") == "user_message":
                msg = (p.get("message") or "").strip()
                if msg and not msg.startswith(WRAPPERS):
                    t["ask"] = msg
                    t["goal"] = t["goal"] or msg
            elif kind == "event_msg" and p.get("type") == "patch_apply_end" and p.get("success"):
                files = []
                for path, change in (p.get("changes") or {}).items():
                    files.append((change or {}).get("move_path") or path)
                if files:
                    t["files"] = files
            elif kind == "response_item" and p.get("type") in ("function_call", "custom_tool_call"):
                cmds = []
                if p.get("name") == "exec" and p.get("type") == "custom_tool_call":
                    cmds = cell_commands(p.get("input") or "")
                elif p.get("name") in ("exec_command", "shell", "shell_command"):
                    try:
                        a = json.loads(p.get("arguments") or "{}")
                    except ValueError:
                        a = {}
                    c = a.get("cmd") or a.get("command")
                    if isinstance(c, list):
                        c = c[-1] if c else None
                    cmds = [c] if isinstance(c, str) else []
                if p.get("name") == "wait":
                    # Code mode's `wait` for a cell still running: its output is that cell's.
                    m = re.search(r"cell_id\"?\s*:\s*\"?(\d+)", p.get("arguments") or "")
                    if m and m.group(1) in cells:
                        calls[p.get("call_id")] = cells[m.group(1)]
                        continue
                session = stdin_session(p)
                if session and session in sessions:
                    cmds = [sessions[session]]
                    if self.last_read.get(session, at) > at:
                        cmds = []  # read again later: still running
                calls[p.get("call_id")] = (p.get("name"), cmds, p.get("input") or "")
            elif kind == "response_item" and p.get("type") in (
                    "function_call_output", "custom_tool_call_output"):
                name, cmds, cell = calls.get(p.get("call_id"), (None, [], ""))
                parts = parts_of(p.get("output"))
                if parts and parts[0].startswith("Script ") and "\nOutput:\n" in parts[0]:
                    head, rest = parts[0].split("\nOutput:\n", 1)
                    parts = ([rest] if rest else []) + parts[1:]
                    if head.startswith("Script running"):
                        m = re.match(r"Script running with cell ID (\d+)", head)
                        if m:
                            cells[m.group(1)] = (name, cmds, cell)
                        parts = []
                text = "\n".join(part_output(x) for x in parts)
                for url in re.findall(r"https://github\.com/[\w.-]+/[\w.-]+/pull/(\d+)", text):
                    if "create_pull_request" in cell or any("gh pr create" in c for c in cmds):
                        if url not in t["prs"]:
                            t["prs"].append(url)
                for i, cmd in enumerate(cmds):
                    at = runner(cmd)
                    if at is None:
                        continue
                    own, raw = text, "\n".join(parts)
                    if len(cmds) > 1:
                        own = part_output(parts[i]) if len(parts) == len(cmds) else ""
                        raw = parts[i] if len(parts) == len(cmds) else ""
                    if not parts:
                        continue
                    # Still running: its verdict comes when its session is read again. The
                    # session shows in the result printed whole (`"session_id":N` and no exit
                    # code), in Codex's own words, or as the cell printed it (`SESSION_ID=N`).
                    running = re.search(r'"session_id":\s*(\d+)', raw)
                    if running and '"exit_code"' in raw:
                        running = None
                    running = (running
                               or re.search(r"Process running with session ID (\d+)", own)
                               or re.search(r"(?m)^SESSION_ID=(\d+)$", raw))
                    if running:
                        sessions[running.group(1)] = cmd
                        continue
                    start = cmd.split("\n")[0][at:]
                    t["verify"] = start
                    t["verdicts"] = [v.strip() for v in VERDICT.findall(own) if len(v.strip()) < 200]
        return t


def block_files(block):
    m = re.search(r"Files modified[^\n]*:\n(`{3,})text\n(.*?)\n\1", block, re.S)
    return m.group(2).splitlines() if m else []


def named_file(path, listed):
    def rel(entry):  # `./a` is `a`; `.github/x` keeps its dot
        while entry.startswith("./"):
            entry = entry[2:]
        return entry
    return any(entry == path or path.endswith("/" + rel(entry)) for entry in listed)


def found(text, flat, n=40):
    t = normal(text)
    return bool(t) and (t[:n] in flat or t[-n:] in flat)


def judge(t, block):
    """Each check: None (nothing to recall), True or False."""
    flat = normal(block)
    r = {}
    r["ask"] = None if not t["ask"] else found(t["ask"], flat)
    r["goal"] = None if not t["goal"] else found(t["goal"], flat)
    r["branch"] = None if not t["branch"] else ("branch " + t["branch"]) in block
    r["verify"] = None if not t["verify"] else normal(t["verify"])[:25] in flat
    verdicts = [v for v in t["verdicts"] if normal(v)]
    r["verdict"] = None if not (t["verify"] and verdicts) else any(
        normal(v)[:30] in flat for v in verdicts)
    r["file"] = None if not t["files"] else any(named_file(f, block_files(block)) for f in t["files"])
    r["PR"] = None if not t["prs"] else all(("#" + n) in block for n in t["prs"][-3:])
    return r


class Run:
    def __init__(self, binary, workdir):
        self.binary = binary
        self.dir = Path(tempfile.mkdtemp(dir=workdir))
        for d in ("home", "codex", "sessions"):
            (self.dir / d).mkdir()

    def hook(self, name, payload):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("CTXGUARD_", "CLAUDE_", "CODEX_"))}
        env.update(HOME=str(self.dir / "home"), CTXGUARD_HOME=str(self.dir / "state"),
                   CODEX_HOME=str(self.dir / "codex"))
        out = subprocess.run([self.binary, name], input=json.dumps(payload), env=env,
                             capture_output=True, text=True, timeout=60)
        return out.stdout

    def block(self, name, lines, session, cwd):
        path = self.dir / "sessions" / name
        path.write_text("".join(lines))
        common = {"session_id": session, "transcript_path": str(path), "cwd": cwd,
                  "model": "gpt-5"}
        self.hook("precompact", dict(common, hook_event_name="PreCompact", trigger="auto",
                                     turn_id="t"))
        out = self.hook("sessionstart", dict(common, hook_event_name="SessionStart",
                                             source="compact"))
        if not out.strip():
            return ""
        return json.loads(out)["hookSpecificOutput"]["additionalContext"]


def moments(session):
    lines = session.lines
    out = [("boundary", i) for i, e in enumerate(session.entries) if e.get("type") == "compacted"]
    outputs = [i + 1 for i, e in enumerate(session.entries)
               if e.get("type") == "response_item"
               and (e.get("payload") or {}).get("type") in ("function_call_output",
                                                           "custom_tool_call_output")]
    if outputs:
        for k in (1, 2, 3):
            out.append(("midturn", outputs[len(outputs) * k // 4]))
    return [(kind, min(i, len(lines))) for kind, i in out]


CHECKS = ["ask", "goal", "branch", "verify", "verdict", "file", "PR"]


def evaluate(binary, paths):
    totals = {kind: {c: [0, 0] for c in CHECKS} for kind in ("boundary", "midturn")}
    misses = []
    with tempfile.TemporaryDirectory() as workdir:
        print("| rollout | moment | " + " | ".join(CHECKS) + " |")
        print("|---|---|" + "---|" * len(CHECKS))
        for path in paths:
            lines = path.read_text().splitlines(keepends=True)
            s = Session(lines)
            meta = next((e.get("payload") or {} for e in s.entries
                         if e.get("type") == "session_meta"), {})
            sid = meta.get("id") or "session"
            cwd = meta.get("cwd") or "/"
            for kind, end in moments(s):
                run = Run(binary, workdir)
                block = run.block(path.name, lines[:end], sid, cwd)
                shutil.rmtree(run.dir, ignore_errors=True)
                r = judge(s.truths(end), block)
                cells = []
                for c in CHECKS:
                    if r[c] is None:
                        cells.append("·")
                        continue
                    totals[kind][c][0] += 1
                    totals[kind][c][1] += r[c]
                    cells.append("✓" if r[c] else "✗")
                    if not r[c]:
                        misses.append((path.name[-45:], kind, end, c))
                print(f"| {path.name[-41:-6]} | {kind} {end} | " + " | ".join(cells) + " |")
    print()
    print("| check | boundary | midturn | all |")
    print("|---|---|---|---|")
    for c in CHECKS:
        b, m = totals["boundary"][c], totals["midturn"][c]
        a = [b[0] + m[0], b[1] + m[1]]
        cell = lambda x: f"{x[1]}/{x[0]}" + (f" ({100 * x[1] // x[0]}%)" if x[0] else "")
        print(f"| {c} | {cell(b)} | {cell(m)} | {cell(a)} |")
    return misses


def self_test():
    cell = 'const r = await tools.exec_command({cmd:"cd x && cargo test --lib \\"a\\"","workdir":"/w"});'
    assert cell_commands(cell) == ['cd x && cargo test --lib "a"'], cell_commands(cell)
    assert runner("cd x && cargo test --lib") == 8
    assert runner("rg -n 'cargo build|x' src") is None
    assert runner('gh pr create --body "- `cargo test`"') is None
    assert runner("sed -n 1p vitest.config.ts") is None
    assert runner("mise run lint-fix") is None
    line = "env GOCACHE=/tmp/c mise exec -- go test -count=1 ./internal/sem"
    assert line[runner(line):].startswith("go test -count=1")
    line = "RUST_LOG=x timeout 60 mise run test:unit"
    assert line[runner(line):] == "mise run test:unit"
    assert VERDICT.findall("running 1 test\ntest result: ok. 1 passed; 0 failed")
    assert not VERDICT.findall("Test environment can be examined in /tmp/test_env.Xy12ab")
    assert VERDICT.findall("Tests:       49 passed, 49 total") == ["Tests:       49 passed, 49 total"]
    assert VERDICT.findall("ERROR: E2E test cli/test_parse failed: exited with status code 1")
    # a workspace package's script (the package manager's --filter before it)
    assert runner("bun --filter @o/web build") == 0
    assert runner("pnpm -F api test") == 0
    # go test's pass line for a package whose result it reused: the same verdict as a timed one.
    assert VERDICT.findall("ok  \tgithub.com/o/r/internal/x\t(cached)")
    block = "Files modified (newest first):\n```text\ntarlet/src/lib.rs\n```\n"
    assert named_file("/Users/j/src/tarlet/src/lib.rs", block_files(block))
    assert not named_file("/Users/j/src/other/src/lib.rs", block_files(block))
    assert named_file("/w/mise/.github/workflows/test.yml", [".github/workflows/test.yml"])
    assert named_file("/w/mise/src/a.rs", ["./src/a.rs"])
    t = dict(ask="Fix the parser", goal="Fix the parser", branch="main", verify="cargo test",
             verdicts=["test result: ok. 1 passed"], files=["/a/b.rs"], prs=["12"])
    good = ("Fix the parser\nbranch main\npull request #12\n[passed] cargo test → test result: "
            "ok. 1 passed\nFiles modified (newest first):\n```text\n/a/b.rs\n```\n")
    assert all(judge(t, good).values()), judge(t, good)
    assert not any(judge(t, "nothing here").values())
    print("self-test passed")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?")
    ap.add_argument("--rollouts", action="append", type=Path)
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--misses", action="store_true", help="list every miss")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return
    binary = next((b for b in [args.binary, os.environ.get("CTXGUARD_BIN"),
                               ROOT / "target/release/ctxguard", ROOT / "target/debug/ctxguard"]
                   if b and Path(b).exists()), None)
    if not binary:
        sys.exit("no ctxguard binary: build it or pass its path")
    dirs = args.rollouts or DEFAULT_DIRS
    paths = sorted(p for d in dirs for p in Path(d).glob("rollout-*.jsonl"))
    if not paths:
        sys.exit("no rollouts in " + ", ".join(map(str, dirs)) +
                 ": run bench/fetch_codex_rollouts.sh")
    misses = evaluate(str(binary), paths)
    if args.misses:
        print()
        for m in misses:
            print("miss:", *m)


if __name__ == "__main__":
    main()
