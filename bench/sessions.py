#!/usr/bin/env python3
"""Measures how ctxguard's per-session costs grow with the number of sessions it has seen.

usage: sessions.py BIN FIXTURES_DIR OUT.md [RUNS]

For 10 and for 10,000 sessions, builds a state directory through the binary itself: each session
reports usage through `statusline` at its own time (evenly over the last 29 days, inside the
default retention), working in one of 50 directories (5 for 10 sessions); every tenth one ends
with `sessionend` (a final checkpoint, recorded in its directory's index). Then `prune` runs once
(the daily pass: it removes nothing here, and completes the indexes, as the first SessionEnd of
the day does). A third directory holds 10,000 sessions all active in the last hour (scripted
`claude -p` runs, say), built the same way; two more hold 10 and 10,000 copies of one session's
directory under sessions/, then one `prune` pass (every copy bucketed at the same instant). Then it times, as fresh processes with stdin from a
file (os.posix_spawn, no shell): SessionStart(clear) of a new session in one of those
directories, and `status --limit 20` (also in the one-hour directory); for reference, the same
SessionStart before the index is complete (every marker read, as ctxguard did before the
index), and `status --all`.

Writes a markdown section to OUT.md and prints it.
"""
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

BIN, FX, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 200
NOW = datetime(2026, 11, 21, 20, 0, 0, tzinfo=timezone.utc)
SPAN = timedelta(days=29)
# The larger state directory (fewer for a quick trial of this script).
LARGE = int(os.environ.get("BENCH_SESSIONS", "10000"))


def spawn(argv, env, stdin_path="/dev/null"):
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, stdin_path, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0),
    ]
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def run(argv, env, stdin_text=None, work=None):
    if stdin_text is None:
        return spawn(argv, env)
    path = os.path.join(work, "stdin.json")
    with open(path, "w") as f:
        f.write(stdin_text)
    return spawn(argv, env, path)


def timed_pair(argv, envs, stdin_paths, runs=RUNS):
    """Median and p95 of `argv` in each of two environments, runs interleaved (A, B, A, B...)
    so that load from elsewhere on the machine falls on both alike."""
    for _ in range(5):
        for env, path in zip(envs, stdin_paths):
            spawn(argv, env, path)
    times = ([], [])
    for _ in range(runs):
        for k, (env, path) in enumerate(zip(envs, stdin_paths)):
            start = time.perf_counter_ns()
            code = spawn(argv, env, path)
            times[k].append((time.perf_counter_ns() - start) / 1e6)
            assert code == 0, (argv, code)
    out = []
    for t in times:
        t.sort()
        out.append((statistics.median(t), t[int(len(t) * 0.95) - 1]))
    return out


def build(n, work, span):
    """A state directory with n sessions active over `span` before NOW, made by the binary."""
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env = {"HOME": home, "CTXGUARD_HOME": os.path.join(work, "state"), "TZ": "UTC",
           "PATH": "/usr/bin:/bin"}
    with open(os.path.join(FX, "statusline-after-turn.json")) as f:
        statusline = json.load(f)
    with open(os.path.join(FX, "SessionEnd.json")) as f:
        session_end = json.load(f)
    transcript = os.path.join(work, "t.jsonl")
    with open(transcript, "w") as f:
        line = {"type": "user", "cwd": "/bench", "timestamp": NOW.isoformat(),
                "message": {"role": "user", "content": "port the lexer, then the parser"}}
        f.write(json.dumps(line) + "\n")
    dirs = 50 if n >= 1000 else 5
    for i in range(n):
        at = NOW - span + span * i / n
        sid = f"bench-{i:05d}-0000-4000-8000-000000000000"
        cwd = f"/bench/proj-{i % dirs:02d}"
        env["CTXGUARD_NOW"] = at.isoformat()
        statusline["session_id"] = sid
        statusline["cwd"] = cwd
        statusline["context_window"]["current_usage"]["cache_read_input_tokens"] = 20_000 + i % 90_000
        assert run([BIN, "statusline", "--quiet"], env, json.dumps(statusline), work) == 0
        if i % 10 == 0:
            env["CTXGUARD_NOW"] = (at + timedelta(minutes=1)).isoformat()
            session_end.update(session_id=sid, cwd=cwd, transcript_path=transcript)
            assert run([BIN, "sessionend"], env, json.dumps(session_end), work) == 0
    env["CTXGUARD_NOW"] = NOW.isoformat()
    assert spawn([BIN, "prune"], env) == 0
    env["CTXGUARD_NOW"] = (NOW + timedelta(minutes=1)).isoformat()
    return env


def prepare(n, span=SPAN):
    """The state directory for n sessions over `span`, and the SessionStart payload file."""
    work = tempfile.mkdtemp(prefix=f"ctxguard-bench-{n}-")
    started = time.time()
    env = build(n, work, span)
    with open(os.path.join(FX, "SessionStart-compact.json")) as f:
        start = json.load(f)
    start.update(session_id="bench-new-session", source="clear", cwd="/bench/proj-00")
    start_path = os.path.join(work, "start.json")
    with open(start_path, "w") as f:
        f.write(json.dumps(start))
    return {"work": work, "env": env, "start": start_path, "build_s": time.time() - started}


def prepare_copies(n):
    """The layout of 10,000 copies of one session's directory under sessions/ (n copies), then
    one `prune` pass: every copy is added to the activity buckets at the same instant, its
    marker's time, as a retention pass adds sessions from before the buckets."""
    work = tempfile.mkdtemp(prefix=f"ctxguard-bench-copies-{n}-")
    started = time.time()
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env = {"HOME": home, "CTXGUARD_HOME": os.path.join(work, "state"), "TZ": "UTC",
           "PATH": "/usr/bin:/bin", "CTXGUARD_NOW": (NOW - timedelta(hours=1)).isoformat()}
    with open(os.path.join(FX, "statusline-after-turn.json")) as f:
        statusline = json.load(f)
    sid = "bench-00000-0000-4000-8000-000000000000"
    statusline.update(session_id=sid, cwd="/bench/proj-00")
    assert run([BIN, "statusline", "--quiet"], env, json.dumps(statusline), work) == 0
    sessions = os.path.join(env["CTXGUARD_HOME"], "sessions")
    for i in range(1, n):
        shutil.copytree(os.path.join(sessions, sid),
                        os.path.join(sessions, f"bench-{i:05d}-0000-4000-8000-000000000000"))
    env["CTXGUARD_NOW"] = NOW.isoformat()
    assert spawn([BIN, "prune"], env) == 0
    env["CTXGUARD_NOW"] = (NOW + timedelta(minutes=1)).isoformat()
    return {"work": work, "env": env, "build_s": time.time() - started}


def measure(small, large, dense, copies):
    """Every command in both state directories (`status --limit 20` also in the one-hour one)."""
    envs = (small["env"], large["env"])
    starts = (small["start"], large["start"])
    nothing = ("/dev/null", "/dev/null")
    out = {
        "floor": timed_pair(["/bin/true"], envs, nothing),
        "start": timed_pair([BIN, "sessionstart"], envs, starts),
        "status": timed_pair([BIN, "status", "--limit", "20"], envs, nothing),
        "status_dense": timed_pair(
            [BIN, "status", "--limit", "20"], (small["env"], dense["env"]), nothing
        ),
        "status_copies": timed_pair(
            [BIN, "status", "--limit", "20"], (copies[0]["env"], copies[1]["env"]), nothing
        ),
    }
    # For reference: the same SessionStart while the index is not complete (every marker read).
    for env in envs:
        complete = os.path.join(env["CTXGUARD_HOME"], "cwd", ".complete")
        os.rename(complete, complete + ".off")
    few = max(RUNS // 10, 20)
    out["start_scan"] = timed_pair([BIN, "sessionstart"], envs, starts, runs=few)
    for env in envs:
        complete = os.path.join(env["CTXGUARD_HOME"], "cwd", ".complete")
        os.rename(complete + ".off", complete)
    out["status_all"] = timed_pair([BIN, "status", "--all"], envs, nothing, runs=few)
    return out


def ms(v):
    return f"{v:.2f} ms"


def main():
    small, large = prepare(10), prepare(LARGE)
    dense = prepare(LARGE, timedelta(hours=1))
    copies = (prepare_copies(10), prepare_copies(LARGE))
    try:
        results = measure(small, large, dense, copies)
    finally:
        for d in (small, large, dense) + copies:
            shutil.rmtree(d["work"], ignore_errors=True)
    rows = [
        ("`/bin/true` (the floor: starting a process)", "floor"),
        ("SessionStart(`clear`): the previous session of the directory, through its index", "start"),
        ("`status --limit 20`: the newest 20, through the activity buckets", "status"),
        (f"`status --limit 20`, the {LARGE:,} sessions all active in the last hour", "status_dense"),
        (f"`status --limit 20`, {LARGE:,} copies of one session's directory after `prune` "
         "(10 copies in the other column)", "status_copies"),
        ("for reference: SessionStart(`clear`) reading every marker (index not complete yet)", "start_scan"),
        ("for reference: `status --all` (every marker)", "status_all"),
    ]
    lines = [
        "## Scale in sessions",
        "",
        f"Generated by `./bench/sessions.sh` on {datetime.now():%Y-%m-%d} ({RUNS} runs per "
        "command in each directory, interleaved, fresh processes, stdin from a file, no shell). Each state directory is made by "
        "the binary: every session reports usage through `statusline` at its own time over 29 "
        "days, in one of 50 directories (5 for 10 sessions); every tenth ends with `sessionend` "
        "(a checkpoint); then `prune` once (the daily pass, which completes the indexes). A third "
        f"directory holds {LARGE:,} sessions made the same way but all in the last hour. The last "
        f"two hold {LARGE:,} and 10 copies of one session's directory under `sessions/`, then "
        "`prune` once, which adds them all to the activity buckets at the same instant.",
        "",
        f"| command | 10 sessions (median, p95) | {LARGE:,} sessions (median, p95) | {LARGE:,} / 10 |",
        "|---|---:|---:|---:|",
    ]
    for label, key in rows:
        a, b = results[key]
        lines.append(f"| {label} | {ms(a[0])}, {ms(a[1])} | {ms(b[0])}, {ms(b[1])} | {b[0] / a[0]:.2f}× |")
    budget = [
        (f"SessionStart(`clear`) at {LARGE:,} ≤ 1.5× at 10", results["start"][1][0] / results["start"][0][0]),
        (f"`status --limit 20` at {LARGE:,} ≤ 1.5× at 10", results["status"][1][0] / results["status"][0][0]),
        (f"`status --limit 20` at {LARGE:,} in one hour ≤ 1.5× at 10",
         results["status_dense"][1][0] / results["status_dense"][0][0]),
        (f"`status --limit 20` on {LARGE:,} copies ≤ 1.5× on 10",
         results["status_copies"][1][0] / results["status_copies"][0][0]),
    ]
    lines += ["", "| budget | result | |", "|---|---|---|"]
    for label, ratio in budget:
        lines.append(f"| {label} | {ratio:.2f}× | {'✅' if ratio <= 1.5 else '❌'} |")
    lines += [
        "",
        f"Making the {LARGE:,} sessions took {large['build_s']:.0f} s (about "
        f"{large['build_s'] / (LARGE * 1.1) * 1000:.1f} ms per hook run, on this machine).",
        "",
    ]
    text = "\n".join(lines)
    with open(OUT, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
