"""Concurrency figures (a script, not a test): N processes × M mixed operations on one workspace.

Operations: apply, edit (scripted $EDITOR), write --force, sleep. Every
failure must be CONCURRENT_UPDATE (exit 75); no acknowledged update lost;
history linear; fsck clean; tree == HEAD. See tests/faults/concurrency.py.

Run: ``.venv/bin/python benchmarks/concurrency.py [--workers N] [--ops M] [--seed S]``
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from faults.concurrency import run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--ops", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="concurrency-") as tmp:
        started = time.monotonic()
        figures = run(args.workers, args.ops, Path(tmp), args.seed)
        elapsed = time.monotonic() - started
    summary = figures.summary()
    print(f"{args.workers} processes × {args.ops} operations in {elapsed:.0f} s, {summary['commits']} commits")
    print("| operation | ok | CONCURRENT_UPDATE | other failures |\n|---|---|---|---|")
    for kind, row in sorted(summary["by_kind"].items()):
        print(f"| {kind} | {row['ok']} | {row['CONCURRENT_UPDATE']} | {row['other']} |")
    print(f"problems: {len(figures.problems)}")
    for problem in figures.problems[:20]:
        print("  ", problem)
    print(json.dumps(summary["by_kind"]))


if __name__ == "__main__":
    main()
