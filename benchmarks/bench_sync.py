"""`memory sync` of one new record between two workspaces at 1,000 vs 10,000 records.

Machine A and machine B start from the same memory (B is a copy of A after
A's first push). Each run adds one record on A and syncs it (push), then
syncs B (fetch + install, a fast-forward); a second series adds one record
on each side first, so B's sync is a real two-parent merge. Prints the
medians and the 10k/1k ratios (target ≤ 1.5: sync cost follows the change,
not the workspace size).

    .venv/bin/python benchmarks/bench_sync.py [--runs 10]
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dulwich.repo import Repo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_transaction import build  # noqa: E402

from openprogram_memory.config import load_settings  # noqa: E402
from openprogram_memory.sync import sync  # noqa: E402
from openprogram_memory.memory import MemoryWorkspace  # noqa: E402

COUNTER = itertools.count()


def _open(state: Path) -> MemoryWorkspace:
    return MemoryWorkspace.open(load_settings(state))


def _add(ws: MemoryWorkspace, rel: str) -> None:
    n = next(COUNTER)
    text = ws.read_topic(rel) if (ws.root / rel).exists() else f"# Bench {rel}\n"
    record = f"Bench record {n} says the team ships on day {n}.[^b{n}]\n\n[^b{n}]: Sources: [note](openprogram/t0/m1)\n"
    ws.update(changes=[{"path": rel, "content": text.rstrip("\n") + "\n\n" + record}])


def measure(records: int, runs: int, work: Path) -> dict[str, float]:
    a_state, b_state = work / "a", work / "b"
    remote = work / "remote.git"
    Repo.init_bare(str(remote), mkdir=True)
    build(a_state, records)
    sync(_open(a_state), str(remote))
    shutil.copytree(a_state, b_state, symlinks=True)
    sync(_open(b_state), str(remote))
    fast, merged = [], []
    for _ in range(runs):
        _add(_open(a_state), "topics/bench/a.md")
        sync(_open(a_state), str(remote))
        b = _open(b_state)
        start = time.perf_counter()
        result = sync(b, str(remote))
        fast.append(time.perf_counter() - start)
        assert result["merged"] and not result["pushed"], result
    for _ in range(runs):
        _add(_open(a_state), "topics/bench/a.md")
        _add(_open(b_state), "topics/bench/b.md")
        sync(_open(a_state), str(remote))
        b = _open(b_state)
        start = time.perf_counter()
        result = sync(b, str(remote))
        merged.append(time.perf_counter() - start)
        assert result["merged"] and result["pushed"], result
    sync(_open(a_state), str(remote))
    return {"fast_forward": statistics.median(fast), "merge": statistics.median(merged)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    figures = {}
    for records in (1000, 10000):
        work = Path(tempfile.mkdtemp(prefix=f"bench-sync-{records}-"))
        try:
            figures[records] = measure(records, args.runs, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"{records:>6} records: sync after one new record on A: fast-forward "
              f"{figures[records]['fast_forward'] * 1000:.1f} ms, two-parent merge "
              f"{figures[records]['merge'] * 1000:.1f} ms (median of {args.runs})")
    for kind in ("fast_forward", "merge"):
        ratio = figures[10000][kind] / figures[1000][kind]
        print(f"ratio 10k/1k {kind.replace('_', '-')}: {ratio:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
