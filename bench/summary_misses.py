#!/usr/bin/env python3
"""How often the client's own compaction summaries missed each kind of fact that ctxguard's
facts block (PreCompact's output for the summarizer) names.

For every compact_boundary in the transcripts of ../shared/transcripts/ (or the directory given),
the facts are read from the transcript before the boundary with this script's own reading (none
of ctxguard's code), and looked for in the client's real summary: the `isCompactSummary` user
message written after that boundary. Two checks per fact:
  - word for word: the fact's text is in the summary, whitespace runs made one space, case ignored
    (what the facts block asks the summary to keep, and what ctxguard's recovery filtering
    matches);
  - named: looser, the fact is recognisably there (a file's base name, a branch, a PR number, a
    task subject or an ask with four fifths of its words of 4+ letters, a verdict's numbers).
The table counts the moments that had such a fact, and how many the summary kept each way.

usage: bench/summary_misses.py [TRANSCRIPT_DIR] [--markdown]
Without the directory (it is outside this repository) it says so and exits 0.
"""

import json
import os
import re
import sys

ACKS = {"c", "y", "n", "yes", "no", "ok", "okay", "k", "continue", "go", "go on", "proceed",
        "sure", "thanks", "thank you", "yep", "yeah", "done", "next", "1", "2", "3", "do it"}
DEFAULT_BRANCHES = {"", "main", "master", "trunk", "develop", "development", "HEAD"}
VERIFY = re.compile(
    r"(^|[\s;&|(])(pytest|jest|vitest|tsc|eslint|ruff|mypy|pyright|cargo\s+(test|build|clippy|check)"
    r"|go\s+(test|vet|build)|mix\s+(test|compile|credo)|(npm|pnpm|yarn|bun)\s+(run\s+)?(\S*\s+)?"
    r"(test|lint|build|typecheck)|flutter\s+(test|analyze)|dart\s+analyze|make\s+(test|check))\b")
VERDICT = re.compile(
    r"\b\d+\s+(passed|failed|failures?|errors?|tests?)\b|all tests passed|no issues found"
    r"|test result:|all clean|build succeeded|compiled successfully", re.I)
PR = re.compile(r"https://github\.com/[^\s/]+/[^\s/]+/pull/(\d+)")


def norm(text):
    return " ".join(text.split()).lower()


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def is_ask(text):
    t = text.strip()
    if not t or t.startswith("<") or t.startswith("{") or t.startswith("["):
        return False
    if t.startswith("Caveat:") or "This session is being continued" in t:
        return False
    return norm(t).strip(".!") not in ACKS


def words(text):
    return {w for w in re.findall(r"[a-z0-9_]{4,}", text.lower())}


def named_loosely(fact, summary_norm, summary_words):
    w = words(fact)
    if not w:
        return norm(fact) in summary_norm
    return len(w & summary_words) >= 0.8 * len(w)


class Moment:
    """Facts known at one point of the transcript."""

    def __init__(self):
        self.goal = None
        self.asks = []          # (text, queued)
        self.todos = {}         # key -> [subject, status]
        self.todo_order = []
        self.verification = None  # (command, verdict or None)
        self.branch = None
        self.prs = []
        self.files = []
        self.cwd = ""
        self.pending = {}       # tool_use_id -> (name, input)


def read(path):
    """Yields (facts before the boundary, the summary after it) for each boundary."""
    lines = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
    m = Moment()
    waiting = None
    for o in lines:
        if not isinstance(o, dict) or o.get("isSidechain"):
            continue
        kind = o.get("type")
        if waiting is not None and kind == "user" and o.get("isCompactSummary"):
            yield waiting, text_of(o.get("message", {}).get("content"))
            waiting = None
            continue
        if kind == "system" and o.get("subtype") == "compact_boundary":
            waiting = snapshot(m)
            m.asks = []
            continue
        if o.get("gitBranch"):
            m.branch = o["gitBranch"]
        if o.get("cwd"):
            m.cwd = o["cwd"]
        if kind == "queue-operation" and o.get("operation") == "enqueue":
            c = o.get("content")
            if isinstance(c, str) and is_ask(c):
                m.asks.append((c.strip(), True))
            continue
        if kind == "pr-link":
            url = o.get("prUrl") or o.get("url") or ""
            if url and url not in m.prs:
                m.prs.append(url)
            continue
        msg = o.get("message") or {}
        content = msg.get("content")
        if kind == "user" and not o.get("isMeta") and not o.get("isCompactSummary"):
            if isinstance(content, str) and is_ask(content):
                m.asks.append((content.strip(), False))
                if m.goal is None:
                    m.goal = content.strip()
            elif isinstance(content, list):
                for b in content:
                    if isinstance(b, dict) and b.get("type") == "text" and is_ask(b.get("text", "")):
                        m.asks.append((b["text"].strip(), False))
                        if m.goal is None:
                            m.goal = b["text"].strip()
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        result(m, b)
        if kind == "assistant" and isinstance(content, list):
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    m.pending[b.get("id")] = (b.get("name"), b.get("input") or {})


def result(m, block):
    name, inp = m.pending.pop(block.get("tool_use_id"), (None, {}))
    out = block.get("content")
    out = out if isinstance(out, str) else text_of(out)
    for full in re.finditer(PR, out or ""):
        if full.group(0) not in m.prs:
            m.prs.append(full.group(0))
    failed = bool(block.get("is_error"))
    if name in ("Edit", "Write", "MultiEdit", "NotebookEdit") and not failed:
        p = inp.get("file_path") or inp.get("notebook_path")
        if p:
            if p in m.files:
                m.files.remove(p)
            m.files.insert(0, p)
    if name == "TodoWrite" and not failed:
        m.todos, m.todo_order = {}, []
        for i, t in enumerate(inp.get("todos") or []):
            m.todos[i] = [t.get("content", ""), t.get("status", "")]
            m.todo_order.append(i)
    if name == "TaskCreate" and not failed:
        n = re.search(r"#(\d+)", out or "")
        key = n.group(1) if n else f"new{len(m.todo_order)}"
        m.todos[key] = [inp.get("subject", ""), "pending"]
        m.todo_order.append(key)
    if name == "TaskUpdate" and not failed:
        key = str(inp.get("taskId", ""))
        if key in m.todos and inp.get("status"):
            m.todos[key][1] = inp["status"]
    if name == "Bash":
        cmd = (inp.get("command") or "").splitlines()[0] if inp.get("command") else ""
        if VERIFY.search(cmd):
            verdict = None
            for line in (out or "").splitlines():
                if VERDICT.search(line):
                    verdict = line.strip()
            m.verification = (cmd, verdict)


def snapshot(m):
    asks = m.asks
    newest = asks[-1][0] if asks else None
    queued = [a for a, q in asks if q][-5:]
    tasks = [m.todos[k][0] for k in m.todo_order
             if m.todos[k][1] != "completed" and m.todos[k][0]]
    branch = m.branch if m.branch and m.branch not in DEFAULT_BRANCHES else None
    return {
        "newest ask": [newest] if newest else [],
        "queued prompts": queued,
        "goal": [m.goal] if m.goal else [],
        "open task subjects": tasks,
        "last verification verdict": [m.verification[1]] if m.verification and m.verification[1] else [],
        "branch": [branch] if branch else [],
        "pull requests": list(m.prs),
        # As a summary would write them: relative to the session's directory when under it.
        "files modified": [os.path.relpath(f, m.cwd) if m.cwd and f.startswith(m.cwd + "/") else f
                           for f in m.files[:30]],
    }


def loose(kind, fact, s_norm, s_words):
    if kind == "files modified":
        return os.path.basename(fact).lower() in s_norm
    if kind == "pull requests":
        n = re.search(r"(\d+)$", fact)
        return fact.lower() in s_norm or bool(n and ("#" + n.group(1)) in s_norm)
    if kind == "branch":
        return fact.lower() in s_norm
    if kind == "last verification verdict":
        nums = re.findall(r"\d+", fact)
        return all(n in s_norm for n in nums) if nums else named_loosely(fact, s_norm, s_words)
    return named_loosely(fact, s_norm, s_words)


KINDS = ["newest ask", "queued prompts", "goal", "open task subjects",
         "last verification verdict", "branch", "pull requests", "files modified"]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    here = os.path.dirname(os.path.abspath(__file__))
    root = args[0] if args else os.path.join(here, "..", "..", "shared", "transcripts")
    if not os.path.isdir(root):
        print(f"{root}: no such directory (the shared transcripts are outside this repository); "
              "nothing measured")
        return 0
    totals = {k: [0, 0, 0, 0] for k in KINDS}  # moments with it, facts, word for word, named
    moments = 0
    per = []
    for name in sorted(os.listdir(root)):
        if not name.endswith(".jsonl"):
            continue
        for facts, summary in read(os.path.join(root, name)):
            if not summary.strip():
                continue
            moments += 1
            s_norm = norm(summary)
            s_words = words(summary)
            row = {}
            for kind in KINDS:
                items = [f for f in facts[kind] if f]
                if not items:
                    continue
                exact = sum(1 for f in items if norm(f) in s_norm)
                named = sum(1 for f in items if norm(f) in s_norm or loose(kind, f, s_norm, s_words))
                t = totals[kind]
                t[0] += 1
                t[1] += len(items)
                t[2] += exact
                t[3] += named
                row[kind] = (len(items), exact, named)
            per.append((name, row))
    print(f"{moments} compactions with a summary, in {root}\n")
    print("| fact | moments with it | facts | kept word for word | named at all | missed (not named) |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind in KINDS:
        m, n, exact, named = totals[kind]
        if m == 0:
            print(f"| {kind} | 0 | – | – | – | – |")
            continue
        print(f"| {kind} | {m} | {n} | {exact} ({100 * exact // n}%) | {named} ({100 * named // n}%)"
              f" | {n - named} ({100 * (n - named) // n}%) |")
    print("\nPer compaction (facts: word for word / named / total):\n")
    for name, row in per:
        cells = ", ".join(f"{k} {e}/{nm}/{n}" for k, (n, e, nm) in row.items())
        print(f"- {name}: {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
