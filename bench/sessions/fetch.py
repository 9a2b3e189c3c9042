#!/usr/bin/env python3
"""Download the sessions listed in MANIFEST.tsv into a cache and check each one's SHA-256.

Each file is the blob at `path` in the named commit of a public GitHub repository (Entire CLI
checkpoint refs: `refs/heads/entire/checkpoints/v1` or `refs/entire/checkpoints/…`). It is taken
from raw.githubusercontent.com/<repo>/<commit>/<path>; when that fails (a commit only reachable
from a non-branch ref), from a blobless partial clone of the repository with that ref fetched.
Files already in the cache with the right hash, or kept gzip-compressed beside the project in
../shared/from-project/bench/sessions/data/, are not downloaded again (sessions of public
repositories are never committed to the project).

Usage: bench/sessions/fetch.py [--cache DIR] [--part tune|held|all]
Default cache: bench/sessions/cache/ (gitignored). Python 3 standard library (and git) only.
"""
import argparse, gzip, hashlib, subprocess, sys, tempfile, urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent


def manifest():
    for line in (HERE / "MANIFEST.tsv").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        f, repo, path, ref, commit, sha, size, version, lines, bounds, split = line.split("\t")
        yield dict(file=f, repo=repo, path=path, ref=ref, commit=commit, sha256=sha,
                   bytes=int(size), split=split)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def by_raw(m):
    url = "https://raw.githubusercontent.com/%s/%s/%s" % (m["repo"], m["commit"], m["path"])
    with urllib.request.urlopen(url, timeout=120) as r:
        return r.read()


def by_git(m):
    with tempfile.TemporaryDirectory() as d:
        run = lambda *a: subprocess.run(["git", "-C", d] + list(a), check=True, capture_output=True)
        run("init", "-q")
        run("remote", "add", "o", "https://github.com/%s.git" % m["repo"])
        run("fetch", "-q", "--filter=blob:none", "--depth=1", "o", "%s:refs/x" % m["ref"])
        return subprocess.run(["git", "-C", d, "show", "%s:%s" % (m["commit"], m["path"])],
                              check=True, capture_output=True).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", default=str(HERE / "cache"))
    ap.add_argument("--part", default="all", choices=["tune", "held", "all"])
    a = ap.parse_args()
    bad = 0
    for m in manifest():
        if a.part != "all" and m["split"] != a.part:
            continue
        dst = Path(a.cache) / m["split"] / m["file"]
        if dst.exists() and sha(dst.read_bytes()) == m["sha256"]:
            continue
        gz = HERE.parent.parent.parent / "shared" / "from-project" / "bench" / "sessions" / "data" / (m["file"] + ".gz")
        data = gzip.decompress(gz.read_bytes()) if gz.exists() else None
        for how in (by_raw, by_git):
            if data is not None and sha(data) == m["sha256"]:
                break
            try:
                data = how(m)
            except Exception as e:  # network, missing ref: try the next way
                print("%s: %s failed: %s" % (m["file"], how.__name__, e), file=sys.stderr)
        if data is None or sha(data) != m["sha256"]:
            print("%s: SHA-256 mismatch or not downloaded" % m["file"], file=sys.stderr)
            bad += 1
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
        print("%s/%s %d bytes ok" % (m["split"], m["file"], len(data)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
