"""``memory sleep`` splitting one huge hand-written topic into parts (a tester's report: a 39,150-record, 5 MB
topic took ~110 s, the write lock held throughout).

Each size gets one topic file of N records, "Fact number <n> about the cluster, …", all citing one footnote (the
tester's workspace), written as a person would (no block IDs yet); the rules organizer splits it into parts of a
few dozen records, one ``move_records`` per part. Prints per size the ``sleep`` time, the records moved and a
digest of the topic files it leaves (the same digest before and after a change to the editor means byte-identical
output).

    .venv/bin/python benchmarks/bench_sleep_split.py [--sizes 10000 20000 40000]

Figures (one machine; the same digests before and after: byte-identical output). Before: each record's paragraph
found by a scan of its file, the moved paragraphs and the footnotes only they cited taken out of the big file once
per part (a part is one move of ~30 records); after: an index of each file's paragraphs, and the file filtered
once, when it is next read:

    records   before     after
      2,000     1.4 s     0.3 s
     10,000     9.4 s     1.7 s
     20,000    35.6 s     4.5 s
     40,000    85.9 s    11.7 s

The tester's workspace (/tmp/h32/big: 39,150 records, 5 MB, one topic), reorganize() alone: 51.6 s -> 7.6 s.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench_sleep_duplicates import build  # a sibling script: run from the repository root as shown above

from openprogram_memory.organizer.sleep import reorganize


def topics_digest(root: Path) -> str:
    """A digest of every topic file's path and bytes."""
    digest = hashlib.sha256()
    for path in sorted((root / "topics").rglob("*.md")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 20_000, 40_000])
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-sleep-split-"))
    now = datetime.datetime(2026, 2, 1, 3, 0, tzinfo=datetime.timezone.utc)
    try:
        for size in args.sizes:
            texts = [f"Fact number {i} about the cluster, with some padding text to make it longer than usual for "
                     "testing." for i in range(size)]
            ws = build(tmp / str(size), texts, now)
            t0 = time.perf_counter()
            report = reorganize(ws, now=now)
            took = time.perf_counter() - t0
            print(f"{size:>7} records: sleep {took:8.2f} s | moved {report['moved']:>6} | topics {topics_digest(ws.root)}",
                  flush=True)
            shutil.rmtree(tmp / str(size), ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
