#!/usr/bin/env python3
"""Download the pi sessions listed in bench/pi_sessions.tsv into bench/pi-sessions/ and check
each one's SHA-256 (sessions of public repositories are never committed to the project).

Each file is the blob at `path` in the named commit of a public GitHub repository, taken from
raw.githubusercontent.com/<repo>/<commit>/<path>. Files already there with the right hash are
not downloaded again. tests/pi_real.rs reads them when they are there.

Usage: bench/fetch_pi_sessions.py [--cache DIR]. Python 3 standard library only.
"""
import argparse, hashlib, sys, urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent


def rows():
    for line in (HERE / "pi_sessions.tsv").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        f, repo, path, commit, sha, size, *_ = line.split("\t")
        yield f, repo, path, commit, sha


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", default=str(HERE / "pi-sessions"))
    cache = Path(ap.parse_args().cache)
    cache.mkdir(parents=True, exist_ok=True)
    bad = 0
    for f, repo, path, commit, sha in rows():
        out = cache / f
        if out.exists() and hashlib.sha256(out.read_bytes()).hexdigest() == sha:
            continue
        url = "https://raw.githubusercontent.com/%s/%s/%s" % (repo, commit, path)
        try:
            with urllib.request.urlopen(url, timeout=120) as r:
                data = r.read()
        except Exception as e:  # a network without GitHub: say so, go on
            print("could not fetch %s: %s" % (url, e), file=sys.stderr)
            bad += 1
            continue
        if hashlib.sha256(data).hexdigest() != sha:
            print("%s: SHA-256 differs from the manifest; not kept" % url, file=sys.stderr)
            bad += 1
            continue
        out.write_bytes(data)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
