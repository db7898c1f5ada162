"""Crash fault sweep (a script, not a test): kill each operation before every mutation.

For every operation of ``tests/faults/harness.py`` the command runs once to
record its file-system mutations, then once per kill point N: SIGKILL just
before mutation N, then the checks (fsck, tree == HEAD, next command,
records old-or-new, sessions old-or-new, turns marked-or-pending, rebuild
byte-identical, no leftovers, a later apply commits). Prints a table.

Run: ``.venv/bin/python benchmarks/fault_sweep.py [--every K] [--seed S] [--only NAME] [--spawn]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from faults.harness import build_base, format_table, operations, sweep_op  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=1, help="try every K-th kill point (seeded offset)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", action="append", help="operation name substring (repeatable)")
    parser.add_argument("--spawn", action="store_true", help="real subprocesses armed via sitecustomize")
    parser.add_argument("--examples", action="store_true", help="print up to 3 failing trials per operation")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fault-sweep-") as tmp:
        work = Path(tmp)
        base = build_base(work / "base")
        reports = []
        for index, op in enumerate(operations(base)):
            if args.only and not any(name in op.name for name in args.only):
                continue
            started = time.monotonic()
            report = sweep_op(op, base, work / f"op{index}", every=args.every, seed=args.seed, spawn=args.spawn)
            reports.append(report)
            print(f"{op.name}: {report.tried} kill points, {report.failed} failed "
                  f"({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
            if args.examples:
                for example in report.examples:
                    print("   ", example, file=sys.stderr)
        print(format_table(reports))
        total = sum(r.failed for r in reports)
        print(f"\n{sum(r.tried for r in reports)} kill points, {total} failed")


if __name__ == "__main__":
    main()
