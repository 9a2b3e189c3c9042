#!/usr/bin/env python3
"""An evaluator of the recovery block that shares no rule with ctxguard or recovery_eval.py.

It runs the real binary (PreCompact, then SessionStart(compact), in a temporary HOME and
CTXGUARD_HOME: the harness is recovery_eval.py's plumbing, copied) on transcripts cut at chosen
moments, and checks the block against truths this file derives itself from the transcript:

  verification  the last test/build/lint/typecheck run by the cut. The command is recognised
                from its whole text: every line and every part of a compound (`&&`, `||`, `;`,
                newlines; of a pipe only the left side runs the checks), after `cd DIR`, env
                assignments, `time`/`timeout N`. Its verdict: failed if the exit status says so
                (tool_result is_error, "Exit code N", a background task's <exit_code>/<status>)
                or ANY runner summary in its output does (ANSI colour codes stripped first; the
                worst verdict of a compound wins), else passed. A background run (Bash with
                run_in_background) counts where its output was read (TaskOutput/BashOutput with a
                final status, a Read of its output file, or its task-notification), not where it
                started. Pass: the block's "Last verification" names the runner part of that
                command (its words up to the runner's verb, e.g. `go test`, `mise run lint`,
                `npm run build`) and gives the right mark ([passed]/[failed]).
  stale         failures shown anywhere in the block (any line naming the failed command or the
                failed tool and its target, outside the quoted user text) that a later success
                of the same tool on the same target had cleared by the cut: for Bash, the same
                command modulo pipes, redirections, flags, `cd DIR &&`, env, or inside a compound,
                or the same runner run on the whole suite (`go test ./...`, `npm test` with no
                target); for any other tool (MCP included), the same tool with the same target
                argument (file_path, path, url, or the first string argument); an Edit/Write
                failure is cleared by a later successful edit of the same file. Checked per
                moment: moments with at least one failure before the cut; a pass shows none.
  plan          the newest plan by the cut: ExitPlanMode's `plan`, a Write under
                ~/.claude/plans/, or a prompt pasting one ("Implement the following plan:").
                Its step headings are its markdown headings below the title (the level with at
                least two), else its top-level numbered items. Pass: >= 80% of the headings named
                by their first three words, or the plan file's name, and no heading cut mid-word
                in the middle of the plan section.
  PRs           pull requests the session acted on by the cut: `pr-link` records; the URL in the
                output of `gh pr create`; `gh pr merge|view|comment|review|checks|edit|close|
                ready|diff N` (or a URL); `gh api repos/O/R/pulls/N/...`; `gh pr view` with no
                number whose output names the number. Pass: each of the three newest is named
                as #N (or its URL) in the block.
  ask, goal     the newest typed request (a user prompt that is not a tool result, a meta or
                compact-summary line, a wrapper such as <local-command-...>, <task-notification>,
                <system-reminder>, a bare slash command, an interruption notice; of a record
                bundling several <teammate-message>s, the lead's messages count, each of them)
                and the first substantive one (at least four words, or a slash command with
                arguments): the first 40 characters (whitespace collapsed) are in the block.
  rewind        only for transcripts with a rewind (two user children of the same parentUuid):
                the live conversation is the parentUuid chain from the newest line at the cut;
                no prompt or reply off that chain (its first 40 characters) appears in the block,
                unless a text on the chain holds them too (a prompt retyped after the rewind).
  decisions     the user's answers to the agent's questions in the part the compaction takes
                (after the newest compact_boundary before the cut), as the client recorded them:
                the tool_result of an AskUserQuestion call: its toolUseResult's `answers`
                (question -> answer), else the `"question"="answer"` pairs of its text. A result
                that is an error, a refusal ("doesn't want to proceed") or a timeout ("No
                response after") names no decision. Pass: the first 40 characters of each of the
                three newest answers are in the block.

What it must share with the product: what counts as a test/build/lint/typecheck command (a list
of runners written here, RUNNERS, from the runners' own documentation, not copied from either
file) and, so the check is possible at all, the block's section titles ("Last verification:",
"The plan", "Recent tool failures") and the [passed]/[failed] marks.

Moments: before each real compact_boundary (with the earlier compactions run in the same state
directory), the end, up to six cuts before prompts spread over the session, and up to four
midturn cuts just after tool results spread over it. Deterministic.

Usage: bench/independent_eval.py [--binary B] [--transcripts DIR] [--part tune|held|all]
                                 [--misses] [--only NAME]
Transcripts: DIR/tune/*.jsonl[.gz] and DIR/held/*.jsonl[.gz] (default: ../notes/sessions, then
bench/sessions/cache, then the gzip copies in ../shared/from-project/bench/sessions/data/ with
their part from MANIFEST.tsv; sessions of public repositories are never committed here). --no-task-runners leaves mise/just/task/make tasks out of the verifications.
The default part is tune: the held part is for the lead to score once. Python 3 stdlib only.
"""

import argparse
import datetime
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")

# ---------------------------------------------------------------- transcript reading


def load(path):
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        raw = gzip.decompress(raw)
    lines = raw.decode("utf-8", "replace").splitlines(keepends=True)
    entries = []
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            e = None
        entries.append(e if isinstance(e, dict) else None)
    return lines, entries


def blocks_of(e):
    c = (e.get("message") or {}).get("content")
    if isinstance(c, str):
        return [{"type": "text", "text": c}]
    return [b for b in c if isinstance(b, dict)] if isinstance(c, list) else []


def result_text(b):
    c = b.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(x.get("text", "") for x in c if isinstance(x, dict))
    return ""


def on_main(e):
    return e is not None and not e.get("isSidechain")


class Session:
    """Tool calls and their results, prompts, in transcript order."""

    def __init__(self, entries):
        self.entries = entries
        self.calls = {}      # id -> dict(name, input, at)
        self.results = {}    # id -> dict(at, error, text, extra)
        self.order = []      # call ids in order of their results
        for i, e in enumerate(entries):
            if not on_main(e):
                continue
            for b in blocks_of(e):
                if e.get("type") == "assistant" and b.get("type") == "tool_use":
                    self.calls[b.get("id")] = dict(name=b.get("name", ""), input=b.get("input") or {}, at=i)
                elif e.get("type") == "user" and b.get("type") == "tool_result":
                    tid = b.get("tool_use_id")
                    if tid in self.results:
                        continue
                    self.results[tid] = dict(at=i, error=bool(b.get("is_error")), text=result_text(b),
                                             extra=e.get("toolUseResult"))
                    self.order.append(tid)


# ---------------------------------------------------------------- commands

# Runners: (pattern on the words of one simple command, from its start, after prefixes).
# Group 1 is the runner part to look for in the block.
RUNNERS = [
    r"((?:go|gotestsum)(?: -\S+)* (?:test|build|vet))\b",
    r"(golangci-lint(?: run)?)\b",
    r"(cargo(?: \+\S+)? (?:test|nextest|build|check|clippy))\b",
    r"((?:npm|pnpm|yarn|bun)(?: --?\S+)*(?: run| exec)?(?: --?\S+)* (?:[\w:.-]*test[\w:.-]*|build[\w:.-]*|lint[\w:.-]*|typecheck|type-check|tsc|check|vitest|jest|eslint|ci))\b",
    r"((?:npx|bunx|pnpx)(?: --?\S+)* (?:vitest|jest|tsc|eslint|playwright|biome|prettier --check|next build|vite build|astro check|svelte-check))\b",
    r"(vitest|jest|tsc|eslint|biome (?:check|lint|ci)|playwright test|next build|vite build)\b",
    r"(bun test)\b",
    r"((?:python3?|uv run|poetry run|pdm run)?(?: -m)? ?(?:pytest|mypy|unittest|ruff check|pyright|tox|nox))\b",
    r"(ruff check|pyright|mypy|pytest|tox)\b",
    r"((?:mise|just|task|make)(?: run)? [\w:.-]*(?:test|lint|check|build|ci|verify|typecheck|vet)[\w:.-]*)",
    r"(make)$",
    r"((?:\./)?(?:gradlew?|mvnw?) (?:test|build|check|verify|package))\b",
    r"(dotnet (?:test|build))\b",
    r"(mix (?:test|compile|credo|dialyzer))\b",
    r"(swift (?:test|build))\b",
    r"((?:bundle exec )?rspec)\b",
    r"(shellcheck|actionlint)\b",
]
# --no-task-runners: leave `mise|just|task|make run <task>` out (to see what the rest scores)
if "--no-task-runners" in sys.argv:
    sys.argv.remove("--no-task-runners")
    RUNNERS = [p for p in RUNNERS if not p.startswith("((?:mise")]
RUNNER_RES = [re.compile(p) for p in RUNNERS]
NOT_A_RUN = re.compile(r"(^|\s)(-list|--help|-h|--version|--dry-run|--collect-only|--listTests)(\s|$)")


def split_simple(command):
    """The simple commands of a shell command line: split on newlines, &&, ||, ; (outside
    quotes, roughly), a pipe's right side dropped, prefixes removed."""
    parts, cur, q, i = [], "", None, 0
    s = command
    # heredoc bodies and command substitutions are data here, not commands of the line
    s = re.sub(r"<<-?\s*['\"]?(\w+)['\"]?([^\n]*)\n.*?\n\s*\1[ \t]*(?=\n|$)", r"HEREDOC\2", s, flags=re.S)
    for _ in range(3):
        s = re.sub(r"\$\([^()]*\)", "SUBST", s)
    s = re.sub(r"\d*>&\d|&>>?|\d*>>?\s*/dev/null", " ", s)
    while i < len(s):
        ch = s[i]
        if q:
            cur += ch
            if ch == q:
                q = None
            elif ch == "\\" and q == '"' and i + 1 < len(s):
                cur += s[i + 1]
                i += 1
        elif ch in "'\"":
            q = ch
            cur += ch
        elif ch == "\\" and i + 1 < len(s) and s[i + 1] == "\n":
            cur += " "
            i += 1
        elif ch in "\n;" or s.startswith("&&", i) or s.startswith("||", i):
            parts.append(cur)
            cur = ""
            if s.startswith("&&", i) or s.startswith("||", i):
                i += 1
        elif ch == "|":
            parts.append(cur)
            cur = ""
            # skip the pipe's right side up to the next separator
            j = i + 1
            while j < len(s) and s[j] not in "\n;&" and not s.startswith("||", j):
                j += 1
            i = j - 1
        elif ch == "&" and not s.startswith("&&", i):
            parts.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    parts.append(cur)
    out = []
    for p in parts:
        p = re.sub(r"\s+\d?>>?\s*&?\S+|\s+2>&1|\s+<\s*\S+", " ", p)
        p = p.strip().lstrip("( ").rstrip(") ")
        while True:
            p2 = re.sub(r"^(?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|\"[^\"]*\"|\S*)\s+|time\s+|timeout\s+\S+\s+|env\s+|sudo\s+|command\s+|exec\s+)", "", p)
            if p2 == p:
                break
            p = p2
        if p and not re.match(r"^(cd|pushd|popd|echo|printf|export|set|source|\.|true|false|sleep)\b", p):
            out.append(re.sub(r"\s+", " ", p))
    return out


def runner_of(simple):
    if NOT_A_RUN.search(simple):
        return None
    for r in RUNNER_RES:
        m = r.match(simple)
        if m:
            return m.group(1)
    return None


def runs_of(command):
    """(simple command, runner part) for each verification in a command line."""
    out = []
    for s in split_simple(command or ""):
        r = runner_of(s)
        if r:
            out.append((s, r))
    return out


FAIL_LINE = re.compile(
    r"^(FAIL\b|--- FAIL|FAILED\b|ERROR:|error(\[E\d+\])?:|.*\b[1-9]\d* (failed|failing|failures?|errors?)\b"
    r"|.*\bTests?:? .*\b[1-9]\d* failed|.*BUILD FAILED|.*Build failed|.*\bfound [1-9]\d* errors?"
    r"|.*\b[1-9]\d* problems?\b|.*✖ [1-9]|.*× [1-9]|make: \*\*\*|.*exit status [1-9]|.*\bpanic:)",
    re.I)
NOT_FAIL = re.compile(r"\b0 (failed|failures?|errors?)\b|no errors|0 problems", re.I)


def verdict_of(text, exit_failed):
    """'failed' if the exit status or any summary line in the output says so, else 'passed'."""
    if exit_failed:
        return "failed"
    for line in ANSI.sub("", text or "").splitlines():
        line = line.strip()
        if FAIL_LINE.match(line) and not NOT_FAIL.search(line):
            return "failed"
    return "passed"


def exit_failed(res):
    t = res["text"] or ""
    m = re.match(r"\s*Exit code (-?\d+)", t)
    if m:
        return m.group(1) != "0"
    return res["error"]


def refused(res):
    t = res["text"] or ""
    return bool(re.search(r"doesn't want to proceed|Request interrupted|was blocked|hook (error|blocked)|"
                          r"Permission to use .* has been denied|tool use was rejected", t[:400]))


def verifications(sess, cut):
    """Every verification that completed before `cut`: (at, command, runner, verdict, call id)."""
    out = []
    bg = {}  # background id -> (command, runs, call id)
    for tid in sess.order:
        call, res = sess.calls.get(tid), sess.results[tid]
        if call is None or res["at"] >= cut:
            continue
        name, inp = call["name"], call["input"]
        if name == "Bash":
            runs = runs_of(inp.get("command", ""))
            if not runs or refused(res):
                continue
            m = re.search(r"running in background with ID: (\w+)", res["text"] or "")
            if inp.get("run_in_background") or m:
                if m:
                    bg[m.group(1)] = (inp.get("command", ""), runs, tid)
                continue
            v = verdict_of(res["text"], exit_failed(res))
            out.append((res["at"], inp.get("command", ""), runs[-1][1], v, tid, runs))
        elif name in ("BashOutput", "TaskOutput"):
            key = inp.get("bash_id") or inp.get("task_id") or inp.get("shell_id")
            t = res["text"] or ""
            st = re.search(r"<status>(\w+)</status>", t)
            if key in bg and st and st.group(1) in ("completed", "failed", "killed"):
                cmd, runs, _ = bg.pop(key)
                ec = re.search(r"<exit_code>(-?\d+)</exit_code>", t)
                ef = st.group(1) != "completed" or (ec is not None and ec.group(1) != "0")
                out.append((res["at"], cmd, runs[-1][1], verdict_of(t, ef), tid, runs))
        elif name == "Read":
            p = str(inp.get("file_path", ""))
            for key in list(bg):
                if p.endswith("/%s.output" % key):
                    cmd, runs, _ = bg.pop(key)
                    out.append((res["at"], cmd, runs[-1][1], verdict_of(res["text"], False), tid, runs))
    # task notifications of background runs not read otherwise
    for i, e in enumerate(sess.entries[:cut]):
        if not on_main(e) or e.get("type") != "user":
            continue
        for b in blocks_of(e):
            t = b.get("text", "") if b.get("type") == "text" else ""
            for m in re.finditer(r"<task-id>(\w+)</task-id>.*?<status>(\w+)</status>", t, re.S):
                if m.group(1) in bg and m.group(2) in ("completed", "failed"):
                    cmd, runs, tid = bg.pop(m.group(1))
                    ef = m.group(2) == "failed" or bool(re.search(r"exit code [1-9]", t))
                    out.append((i, cmd, runs[-1][1], "failed" if ef else "passed", tid, runs))
    out.sort(key=lambda x: x[0])
    return out


# ---------------------------------------------------------------- block reading


def sections(block):
    """{title: fenced text} of the block."""
    out = {}
    for m in re.finditer(r"^([^\n`][^\n]*?):?\n(`{3,})[a-z]*\n(.*?)\n\2\s*$", block, re.S | re.M):
        out[m.group(1).strip()] = m.group(3)
    return out


def section(block, prefix):
    for k, v in sections(block).items():
        if k.startswith(prefix):
            return v
    return None


def flat(text):
    return re.sub(r"\s+", " ", ANSI.sub("", text or "")).strip().lower()


def machine_part(block):
    """The block without the sections quoting the user's and the agent's words."""
    out = block
    for k, v in sections(block).items():
        if re.match(r"(The session's goal|Recent user requests|Your last message|The user's|Prompts typed)", k):
            out = out.replace(v, "")
    return out


# ---------------------------------------------------------------- truths and scores


def check_verification(block, sess, cut):
    vs = verifications(sess, cut)
    if not vs:
        return None
    at, cmd, runner, verdict, tid, runs = vs[-1]
    sec = section(block, "Last verification")
    expected = "[%s] %s (line %d)" % (verdict, runner, at + 1)
    if sec is None:
        return (False, expected, "no Last verification section")
    shown = sec.strip().splitlines()[0] if sec.strip() else ""
    mark = re.match(r"\[(passed|failed)\]", shown)
    names = any(flat(r) in flat(shown) for _, r in runs)
    ok = bool(mark) and mark.group(1) == verdict and names
    return (ok, expected, shown[:200])


def core(simple):
    """A simple command without flags, redirections, quotes: its words."""
    words = [w.strip("'\"") for w in simple.split()]
    return tuple(w for w in words if w and not w.startswith("-"))


def whole_suite(c, runner):
    rest = c[len(core(runner)):]
    return all(x in ("./...", "...", ".", "all", "run", "test", "tests") for x in rest)


def bash_cleared(fcmd, scmd):
    """A later success clears a failed command line: each part that may have failed (its
    verification parts, else every part) ran again as the same command modulo flags, or as
    the same runner on the whole suite."""
    fs = split_simple(fcmd)
    ss = split_simple(scmd)
    if not fs:
        return False
    keys = [f for f in fs if runner_of(f)] or fs

    def again(f):
        fc, fr = core(f), runner_of(f)
        for s in ss:
            if core(s) == fc:
                return True
            sr = runner_of(s)
            if fr and sr and flat(fr) == flat(sr) and whole_suite(core(s), sr):
                return True
        return False
    return all(again(f) for f in keys)


TARGET_KEYS = ("file_path", "notebook_path", "path", "url", "pattern", "query", "command")


def target_of(call):
    inp = call["input"]
    for k in TARGET_KEYS:
        if isinstance(inp.get(k), str):
            return inp[k]
    for v in inp.values():
        if isinstance(v, str):
            return v
    return json.dumps(inp, sort_keys=True)[:200]


EDITS = {"Edit", "MultiEdit", "Write", "NotebookEdit"}


def failures(sess, cut):
    """(call id, call, result, cleared_by or None) for failed tool calls before the cut."""
    done = [(tid, sess.calls[tid], sess.results[tid]) for tid in sess.order
            if tid in sess.calls and sess.results[tid]["at"] < cut]
    out = []
    by = failures.by = {}
    for k, (tid, call, res) in enumerate(done):
        if not (res["error"] or exit_failed(res)) or refused(res):
            continue
        cleared = None
        for tid2, call2, res2 in done[k + 1:]:
            if res2["error"] or exit_failed(res2) or refused(res2):
                continue
            if call2["name"] == "Bash" and runs_of(call2["input"].get("command", "")) and \
                    verdict_of(res2["text"], False) == "failed":
                continue  # a piped run whose exit status hid its failing summary
            if call["name"] == "Bash" and call2["name"] == "Bash":
                if bash_cleared(call["input"].get("command", ""), call2["input"].get("command", "")):
                    cleared = res2["at"]
                    by[tid] = call2["input"].get("command", "")
                    break
            elif call["name"] in EDITS and call2["name"] in EDITS:
                if target_of(call) == target_of(call2):
                    cleared = res2["at"]
                    break
            elif call["name"] == call2["name"] and target_of(call) == target_of(call2):
                cleared = res2["at"]
                break
        out.append((tid, call, res, cleared))
    return out


def shown_failure(block, call):
    """The block line that shows this failure, if any (outside the quoted user text)."""
    text = machine_part(block)
    if call["name"] == "Bash":
        cmd = re.sub(r"\s+", " ", call["input"].get("command", "")).strip()
        key = flat(cmd[:50])
        if len(key) < 6:
            return None
        for line in text.splitlines():
            fl = re.sub(r"^(bash:|\[failed\]|-)\s*", "", flat(line))
            if fl.startswith(key[:40].rstrip("…")) and ("→" in line or "[failed]" in line):
                return line
        # a verification shown failed whose runner part is this command's
        sec = section(block, "Last verification") or ""
        if sec.startswith("[failed]") and flat(sec)[len("[failed] "):].startswith(key[:40]):
            return sec.splitlines()[0]
        return None
    tgt = target_of(call)
    t = flat(tgt[:60])
    for line in text.splitlines():
        if line.startswith(call["name"]) and t and t[-40:] in flat(line):
            return line
    return None


def check_stale(block, sess, cut):
    fs = failures(sess, cut)
    if not fs:
        return None
    stale = [(tid, call, res, cl) for tid, call, res, cl in fs if cl is not None and shown_failure(block, call)]
    if not stale:
        return (True, "no cleared failure shown", "")
    tid, call, res, cl = stale[-1]
    what = call["input"].get("command") if call["name"] == "Bash" else target_of(call)
    return (False, "cleared at line %d by [%s]: %s %s (failed at line %d)" % (cl + 1, str(failures.by.get(tid, ""))[:80], call["name"], str(what)[:100], res["at"] + 1),
            "%d stale shown: %s" % (len(stale), shown_failure(block, call)[:160]))


def plan_text_of(sess, cut):
    """The newest plan by the cut: (text, (line, its file or None))."""
    plan, where, path = None, None, None
    for tid in sess.order:
        call, res = sess.calls.get(tid), sess.results[tid]
        if call is None or res["at"] >= cut or res["error"]:
            continue
        fp = str(call["input"].get("file_path", ""))
        if call["name"] in EDITS and "/.claude/plans/" in fp:
            path = fp
            if call["name"] == "Write":
                plan, where = call["input"].get("content", ""), (res["at"], fp)
        if call["name"] == "ExitPlanMode" and isinstance(call["input"].get("plan"), str):
            # the plan file the session wrote in plan mode is this plan's file
            plan, where = call["input"]["plan"], (res["at"], path)
    for i, e in enumerate(sess.entries[:cut]):
        if on_main(e) and e.get("type") == "user" and not e.get("isMeta"):
            for b in blocks_of(e):
                t = b.get("text", "") if b.get("type") == "text" else ""
                if t.startswith("Implement the following plan:") and (where is None or i > where[0]):
                    m = re.search(r"saved at: (\S+\.md)", t)
                    plan, where = t.split("\n", 1)[1] if "\n" in t else t, (i, m.group(1) if m else None)
    if plan is None:
        return None
    return plan, where


def plan_steps(plan):
    lines = plan.splitlines()
    heads = [(len(m.group(1)), m.group(2)) for m in (re.match(r"^(#{1,6})\s+(.*)", l) for l in lines) if m]
    steps = [h for lv, h in heads if lv > 1 and re.match(r"(step|phase|part|stage)?\s*\d+[.:)]?\s", h, re.I)]
    if len(steps) < 2:
        steps = []
    for level in (2, 3, 4):
        if steps:
            break
        hs = [h for lv, h in heads if lv == level]
        if len(hs) >= 2:
            steps = hs
            break
    if not steps:
        steps = [m.group(1) for m in (re.match(r"^\d+[.)]\s+(.*)", l) for l in lines) if m]
    clean = []
    for s in steps:
        s = re.sub(r"[*_`]", "", s).strip()
        s = re.sub(r"^(step\s*)?\d+[.:)]?\s*", "", s, flags=re.I).strip()
        if s:
            clean.append(s)
    return clean


def unmark(text):
    return flat(re.sub(r"[*_`]", "", text or ""))


def check_plan(block, sess, cut):
    got = plan_text_of(sess, cut)
    if not got:
        return None
    plan, (at, path) = got
    steps = plan_steps(plan)
    fb = unmark(block)
    if not steps and not path:
        return None
    named = [s for s in steps if unmark(" ".join(s.split()[:3])) in fb]
    missing = [s for s in steps if s not in named]
    if steps and len(named) >= 0.8 * len(steps):
        return (True, "%d steps" % len(steps), "%d/%d named" % (len(named), len(steps)))
    if path and os.path.basename(path).lower() in flat(block):
        return (True, "plan file %s" % path, "file named")
    return (False, "%d steps (line %d)%s; missing: %s" % (len(steps), at + 1, ", file " + path if path else "",
                                                       "; ".join(m[:50] for m in missing[:4])),
            "%d/%d named" % (len(named), len(steps)))


def check_plan_cut(block, sess, cut):
    """A plan shown in the block: no step heading cut mid-word in its middle (`manual_…tribution`)."""
    sec = section(block, "The plan")
    if sec is None:
        return None
    cuts = re.findall(r"(\S*\w…\w\S*)", sec)
    return (not cuts, "step heads kept whole (shortened from the end)", "cut mid-word: " + ", ".join(cuts[:3]) if cuts else "")


PR_URL = re.compile(r"github\.com/([\w.-]+/[\w.-]+)/pull/(\d+)")


def prs_acted(sess, cut):
    """[(at, number)] in order."""
    out = []
    for i, e in enumerate(sess.entries[:cut]):
        if e is not None and e.get("type") == "pr-link" and e.get("prNumber"):
            out.append((i, int(e["prNumber"])))
    for tid in sess.order:
        call, res = sess.calls.get(tid), sess.results[tid]
        if call is None or res["at"] >= cut or call["name"] != "Bash" or res["error"]:
            continue
        cmd = call["input"].get("command", "")
        text = res["text"] or ""
        for s in split_simple(cmd):
            m = re.match(r"gh pr (create|merge|view|comment|review|checks|edit|close|ready|diff|reopen)\b(.*)", s)
            if m:
                if m.group(1) == "create":
                    u = PR_URL.search(text)
                    if u:
                        out.append((res["at"], int(u.group(2))))
                    continue
                n = re.search(r"(?:^|\s)#?(\d+)\b|/pull/(\d+)", m.group(2))
                if n:
                    out.append((res["at"], int(n.group(1) or n.group(2))))
                elif m.group(1) == "view":
                    u = PR_URL.search(text) or re.search(r'"number":\s*(\d+)|^number:\s*(\d+)', text, re.M)
                    if u:
                        out.append((res["at"], int(u.group(2) if u.re is PR_URL else (u.group(1) or u.group(2)))))
                continue
            m = re.search(r"gh api\s+(?:-\S+\s+)*\S*repos/[\w.-]+/[\w.-]+/(?:pulls|issues)/(\d+)\b", s)
            if m:
                out.append((res["at"], int(m.group(1))))
    out.sort()
    return out


def check_prs(block, sess, cut):
    acted = prs_acted(sess, cut)
    if not acted:
        return None
    newest = []
    for _, n in reversed(acted):
        if n not in newest:
            newest.append(n)
    want = newest[:3]
    fb = block
    missing = [n for n in want if not re.search(r"#%d\b|/pull/%d\b" % (n, n), fb)]
    return (not missing, "PRs " + ", ".join("#%d" % n for n in want),
            "missing " + ", ".join("#%d" % n for n in missing) if missing else "all named")


WRAPPER = re.compile(r"^\s*<(local-command-\w+|command-message|task-notification|system-reminder|bash-input|bash-stdout|bash-stderr|user-memory-input)")


def typed_prompts(sess, cut, live=None):
    """[(at, text)] of the user's typed requests before the cut."""
    out = []
    for i, e in enumerate(sess.entries[:cut]):
        if not on_main(e) or e.get("type") != "user" or e.get("isMeta") or e.get("isCompactSummary"):
            continue
        if live is not None and e.get("uuid") and e["uuid"] not in live:
            continue
        for b in blocks_of(e):
            if b.get("type") != "text":
                continue
            t = b.get("text", "").strip()
            if not t or t.startswith("[Request interrupted") or t.startswith("This session is being continued"):
                continue
            if "<teammate-message" in t:
                for m in re.finditer(r'<teammate-message teammate_id="([^"]*)"[^>]*>(.*?)</teammate-message>', t, re.S):
                    if m.group(1) in ("team-lead", "lead") and not m.group(2).strip().startswith("{"):
                        out.append((i, m.group(2).strip()))
                continue
            if t.startswith("<command-name>"):
                name = re.search(r"<command-name>/?([^<]*)</command-name>", t)
                args = re.search(r"<command-args>(.*?)</command-args>", t, re.S)
                if name and args and args.group(1).strip() and name.group(1) not in ("compact", "model", "add-dir", "config", "resume"):
                    out.append((i, "/%s %s" % (name.group(1), args.group(1).strip())))
                continue
            if WRAPPER.match(t) or t.startswith("Caveat:"):
                continue
            out.append((i, t))
    return out


def prompt_key(t):
    """What of a prompt the block must show: its first 40 characters; of a pasted plan, its title."""
    if t.startswith("Implement the following plan:"):
        title = re.search(r"^#\s+(.*)", t, re.M)
        if title:
            return unmark(title.group(1))[:40]
    return flat(t)[:40]


def check_ask(block, sess, cut, live):
    ps = typed_prompts(sess, cut, live)
    if not ps:
        return None
    at, t = ps[-1]
    key = prompt_key(t)
    block = unmark(block) if t.startswith("Implement the following plan:") else block
    return (key in flat(block), "line %d: %s" % (at + 1, t[:100].replace("\n", " ")), "" if key in flat(block) else "not in block")


def check_goal(block, sess, cut, live):
    for at, t in typed_prompts(sess, cut, live):
        if len(t.split()) >= 4 or t.startswith("/"):
            key = prompt_key(t)
            if t.startswith("Implement the following plan:"):
                block = unmark(block)
            return (key in flat(block), "line %d: %s" % (at + 1, t[:100].replace("\n", " ")), "" if key in flat(block) else "not in block")
    return None


def live_chain(entries, cut):
    """uuids on the parentUuid chain from the newest line, or None when there is no rewind."""
    kids = {}
    by = {}
    for e in entries[:cut]:
        if on_main(e) and e.get("uuid"):
            by[e["uuid"]] = e
            if e.get("type") == "user" and e.get("parentUuid"):
                kids.setdefault(e["parentUuid"], []).append(e)
    forks = [p for p, ks in kids.items() if len([k for k in ks if not any(b.get("type") == "tool_result" for b in blocks_of(k))]) > 1]
    if not forks:
        return None
    newest = next((e for e in reversed(entries[:cut]) if on_main(e) and e.get("uuid") and e.get("type") in ("user", "assistant")), None)
    live, cur = set(), newest
    while cur is not None:
        live.add(cur["uuid"])
        p = cur.get("parentUuid") or cur.get("logicalParentUuid")
        cur = by.get(p)
    return live


def check_rewind(block, sess, cut, live):
    if live is None:
        return None
    gone = []
    for i, e in enumerate(sess.entries[:cut]):
        if on_main(e) and e.get("uuid") and e.get("type") in ("user", "assistant") and e["uuid"] not in live:
            for b in blocks_of(e):
                t = b.get("text", "") if b.get("type") == "text" else ""
                if len(t.split()) >= 4 and not WRAPPER.match(t):
                    gone.append((i, flat(t)[:40]))
    # A prompt retyped after the rewind (the same words, extended) is the live one's text too.
    live_texts = [flat(b.get("text", "")) for e in sess.entries[:cut] if on_main(e) and e.get("uuid") in live
                  for b in blocks_of(e) if b.get("type") == "text"]
    shown = [(i, k) for i, k in gone if k and k in flat(block) and not any(k in t for t in live_texts)]
    return (not shown, "%d abandoned texts" % len(gone), "shown: line %d %s" % (shown[0][0] + 1, shown[0][1]) if shown else "")


ANSWER_PAIR = re.compile(r'"((?:[^"\\]|\\.)*)"="((?:[^"\\]|\\.)*)"', re.S)


def answers(sess, cut):
    """[(at, question, answer)] of the AskUserQuestion results after the newest boundary before
    the cut, oldest first."""
    start = max((i for i, e in enumerate(sess.entries[:cut]) if e and e.get("type") == "system"
                 and e.get("subtype") == "compact_boundary"), default=-1)
    out = []
    for tid in sess.order:
        call, res = sess.calls.get(tid), sess.results[tid]
        if not call or call["name"] != "AskUserQuestion" or not (start < res["at"] < cut):
            continue
        text = res["text"]
        if res["error"] or "want to proceed" in text or text.startswith("No response after"):
            continue
        extra = res["extra"] if isinstance(res["extra"], dict) else {}
        pairs = [(q, a) for q, a in (extra.get("answers") or {}).items() if isinstance(a, str)]
        if not pairs:
            pairs = ANSWER_PAIR.findall(text)
        out.extend((res["at"], q, a) for q, a in pairs if a.strip())
    return out


def check_decisions(block, sess, cut):
    got = answers(sess, cut)[-3:]
    if not got:
        return None
    missing = [(at, a) for at, q, a in got if flat(a)[:40] not in flat(block)]
    return (not missing, "%d answers: %s" % (len(got), "; ".join(flat(a)[:40] for _, _, a in got)),
            "missing line %d: %s" % (missing[0][0] + 1, flat(missing[0][1])[:60]) if missing else "")


ITEMS = ["verification", "stale", "plan", "plan-cut", "prs", "ask", "goal", "rewind", "decisions"]


def measure(block, sess, cut):
    live = live_chain(sess.entries, cut)
    return {
        "verification": check_verification(block, sess, cut),
        "stale": check_stale(block, sess, cut),
        "plan": check_plan(block, sess, cut),
        "plan-cut": check_plan_cut(block, sess, cut),
        "prs": check_prs(block, sess, cut),
        "ask": check_ask(block, sess, cut, live),
        "goal": check_goal(block, sess, cut, live),
        "rewind": check_rewind(block, sess, cut, live),
        "decisions": check_decisions(block, sess, cut),
    }


# ---------------------------------------------------------------- harness (recovery_eval.py's plumbing)


def line_time(line):
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
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXGUARD_", "CLAUDE_"))}
        env.update(HOME=str(self.dir / "home"), CTXGUARD_HOME=str(self.dir / "state"),
                   CTXGUARD_NOW=self.clock.isoformat())
        out = subprocess.run([self.binary, name], input=json.dumps(payload), env=env,
                             capture_output=True, text=True, timeout=120)
        return out.stdout

    def compact(self, lines, trigger, instructions=""):
        self.clock += datetime.timedelta(minutes=10)
        newest = max((t for t in map(line_time, lines[-200:]) if t), default=None)
        if newest and newest + datetime.timedelta(minutes=1) > self.clock:
            self.clock = newest + datetime.timedelta(minutes=1)
        path = self.dir / ("t%d.jsonl" % int(self.clock.timestamp()))
        path.write_text("".join(lines))
        common = {"session_id": self.session, "transcript_path": str(path), "cwd": self.cwd}
        self.hook("precompact", dict(common, hook_event_name="PreCompact", trigger=trigger,
                                     custom_instructions=instructions))
        out = self.hook("sessionstart", dict(common, hook_event_name="SessionStart", source="compact"))
        if not out.strip():
            return ""
        return json.loads(out)["hookSpecificOutput"]["additionalContext"]


def session_of(entries):
    sid, cwd = "eval-session", ""
    for e in entries:
        if e:
            sid = e.get("sessionId") or sid
            cwd = e.get("cwd") or cwd
            if e.get("sessionId") and e.get("cwd"):
                break
    return sid, cwd


def spread(at, n):
    return [at[k * len(at) // (n + 1)] for k in range(1, n + 1)] if at else []


def moments(lines, entries, sess):
    bounds = [i for i, e in enumerate(entries) if e and e.get("type") == "system" and e.get("subtype") == "compact_boundary"]
    prompts = sorted({at for at, _ in typed_prompts(sess, len(entries))})
    results = [i for i, e in enumerate(entries) if on_main(e) and e.get("type") == "user"
               and any(b.get("type") == "tool_result" for b in blocks_of(e))]
    out = [("boundary", b) for b in bounds] + [("end", len(entries))]
    seen = set(bounds) | {len(entries)}
    for kind, at in (("sampled", spread(prompts, 6)), ("midturn", [i + 1 for i in spread(results, 4)])):
        for c in at:
            if c not in seen and c > 0:
                seen.add(c)
                out.append((kind, c))
    return out, bounds


def evaluate(binary, path, workdir):
    lines, entries = load(path)
    sess = Session(entries)
    sid, cwd = session_of(entries)
    ms, bounds = moments(lines, entries, sess)
    rows = []
    for kind, cut in ms:
        run = Run(binary, workdir, sid, cwd)
        for b in bounds:
            if b < cut:
                trig = ((entries[b].get("compactMetadata") or {}).get("trigger")) or "auto"
                run.compact(lines[:b], trig)
        block = run.compact(lines[:cut], "auto")
        rows.append((kind, cut, block, measure(block, sess, cut)))
    return rows


def find_binary(arg):
    for c in [arg, os.environ.get("CTXGUARD_BIN"), "/work/bin/ctxguard", ROOT / "target/release/ctxguard"]:
        if c and Path(c).is_file():
            return str(c)
    sys.exit("no ctxguard binary found")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary")
    ap.add_argument("--transcripts", action="append")
    ap.add_argument("--part", default="tune", choices=["tune", "held", "all"])
    ap.add_argument("--misses", action="store_true")
    ap.add_argument("--only")
    ap.add_argument("--dump", help="write each moment's block into this directory")
    a = ap.parse_args()
    binary = find_binary(a.binary)
    dirs = [Path(d) for d in (a.transcripts or [ROOT.parent / "notes" / "sessions", ROOT / "bench" / "sessions" / "cache"])]
    parts = ["tune", "held"] if a.part == "all" else [a.part]
    ver = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    print("binary: %s (%s)\n" % (binary, ver))
    for part in parts:
        files = {}
        for d in dirs:
            for f in sorted((d / part).glob("*.jsonl*")) if (d / part).is_dir() else []:
                files.setdefault(f.name.replace(".gz", ""), f)
        # the small sessions kept gzip-compressed beside the project (../shared), their part from
        # the manifest
        manifest = ROOT / "bench" / "sessions" / "MANIFEST.tsv"
        if not a.transcripts and manifest.exists():
            for row in manifest.read_text().splitlines():
                c = row.split("\t")
                gz = ROOT.parent / "shared" / "from-project" / "bench" / "sessions" / "data" / (c[0] + ".gz")
                if not row.startswith("#") and len(c) > 10 and c[10] == part and gz.exists():
                    files.setdefault(c[0], gz)
        if a.only:
            files = {k: v for k, v in files.items() if a.only in k}
        tally = {k: [0, 0] for k in ITEMS}
        misses = []
        work = tempfile.mkdtemp(prefix="indep-eval-")
        try:
            for name, f in sorted(files.items()):
                for kind, cut, block, res in evaluate(binary, f, work):
                    if a.dump:
                        Path(a.dump).mkdir(parents=True, exist_ok=True)
                        (Path(a.dump) / ("%s@%d.txt" % (name, cut))).write_text(block)
                    for k, v in res.items():
                        if v is None:
                            continue
                        tally[k][0] += 1
                        tally[k][1] += bool(v[0])
                        if not v[0]:
                            misses.append((k, name, kind, cut, v[1], v[2]))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print("## %s part: %d sessions\n" % (part, len(files)))
        print("| item | moments checked | passes | % |\n|---|---|---|---|")
        for k in ITEMS:
            n, p = tally[k]
            print("| %s | %d | %d | %s |" % (k, n, p, "%.0f%%" % (100.0 * p / n) if n else "–"))
        print()
        if a.misses:
            for k, name, kind, cut, exp, got in misses:
                print("MISS %s %s %s@line %d\n  expected: %s\n  block:    %s" % (k, name, kind, cut, exp, got))
            print()


if __name__ == "__main__":
    main()
