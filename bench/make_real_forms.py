"""Builds the excerpts of ../shared/from-project/fixtures/codex/real-forms/ (never committed to the
project: tests/codex_real_forms.rs reads them there) from real Codex rollouts (../codex-rollouts/held, jdx/mise,
entireio/entire-graph, tsutoringo/shui on entire/checkpoints branches; see bench/codex_rollouts.tsv).
Each fixture: the rollout's session_meta (kept to id, cwd, originator, version, source, git), then
real lines copied verbatim (a compaction's long texts cut)."""
import json, sys
from pathlib import Path
ROOT = Path(__file__).resolve().parent.parent
HELD = ROOT.parent / "codex-rollouts" / "held"
OUT = ROOT.parent / "shared" / "from-project" / "fixtures" / "codex" / "real-forms"

def lines_of(name):
    return (HELD / name).read_text().splitlines()

def meta(line):
    e = json.loads(line)
    p = e["payload"]
    keep = {k: p[k] for k in ("id", "timestamp", "cwd", "originator", "cli_version", "source", "git") if k in p}
    e["payload"] = keep
    return json.dumps(e, ensure_ascii=False, separators=(",", ":"))

def cut_history(line, keep_chars=300):
    e = json.loads(line)
    for item in e["payload"].get("replacement_history", []):
        for part in item.get("content") or []:
            if isinstance(part, dict) and isinstance(part.get("text"), str) and len(part["text"]) > keep_chars:
                part["text"] = part["text"][:keep_chars] + "…"
        if item.get("encrypted_content"):
            item["encrypted_content"] = "REDACTED"
    return json.dumps(e, ensure_ascii=False, separators=(",", ":"))

SPECS = {
    # name: (rollout, [(first line, last line) 1-based inclusive] , transform of some lines)
    "replacement-history": ("rollout-2026-07-01T23-49-36-019f2016-8a7a-7440-a3d7-85ddf269a3d6.jsonl",
                            [(331, 332), (804, 804)], "the user messages a 0.142 compaction kept, in replacement_history only"),
    "recommended-plugins": ("rollout-2026-07-20T19-07-49-019f80ed-65ac-7eb3-9c28-9885c0fbca91.jsonl",
                            [(6, 6), (9, 10)], "a newer Codex's <recommended_plugins> context, then the first prompt"),
    "ack": ("rollout-2026-07-13T20-26-48-019f5d29-32b2-7dc0-b153-ef692ffd3210.jsonl",
            [(142, 143), (147, 148), (154, 155)], "a question, the agent's answer, then 'ok continue'"),
    "toolchain-background": ("rollout-2026-07-02T15-51-34-019f2387-40a7-7151-a232-8ebb871f52ba.jsonl",
                             [(557, 558), (563, 564), (569, 570)], "function calls: cargo +nightly build left running, two write_stdin reads"),
    "closing-time": ("rollout-2026-07-13T20-26-48-019f5d29-32b2-7dc0-b153-ef692ffd3210.jsonl",
                     [(704, 705), (707, 708)], "a cell printing SESSION_ID=N, then a read printing only r.output ending 'Finished in 6.59s'"),
    "failed-then-progress": ("rollout-2026-07-13T20-26-48-019f5d29-32b2-7dc0-b153-ef692ffd3210.jsonl",
                             [(258, 259), (284, 285), (321, 322), (333, 334)], "an e2e run read to its ERROR without an exit code, then a cargo check still running"),
    "env-runner": ("rollout-2026-07-20T19-07-49-019f80ed-65ac-7eb3-9c28-9885c0fbca91.jsonl",
                   [(1639, 1640)], "env GOCACHE=… mise exec -- go test, printed whole"),
    "cell-continues": ("rollout-2026-08-17T17-54-10-01a010dc-082d-7c90-8f8f-4fa24bf5eb34.jsonl",
                       [(583, 584)], "exec_command then write_stdin(r.session_id) in one cell"),
}

sources = ["Real Codex lines (0.142-0.145, Desktop/VS Code) cut from held-back rollouts of bench/codex_rollouts.tsv,",
           "one small rollout per form; session_meta kept to id, cwd, originator, version, source and git; a",
           "compaction's replacement_history texts cut to 300 characters. Made by bench/make_real_forms.py (after",
           "bench/fetch_codex_rollouts.sh). Per file: its source, lines (1-based) and what it holds.", ""]
for name, (rollout, ranges, what) in SPECS.items():
    src = lines_of(rollout)
    out = [meta(src[0])]
    for a, b in ranges:
        for n in range(a, b + 1):
            line = src[n - 1]
            if '"type":"compacted"' in line[:80]:
                line = cut_history(line)
            out.append(line)
    (OUT / f"{name}.jsonl").write_text("\n".join(out) + "\n")
    sources.append(f"{name}.jsonl: {rollout} lines {', '.join(f'{a}-{b}' for a, b in ranges)}: {what}")
(OUT / "SOURCES.txt").write_text("\n".join(sources) + "\n")
