"""One-record edit cost at 1,000 vs 10,000 records (about 20 records a topic).

Prints both medians and their ratio (target ≤ 1.5: staging and install cost
must follow what changed, not the workspace size), plus cold-start
``memory status`` next to ``git status`` on the same workspace.

    .venv/bin/python benchmarks/bench_transaction.py [--runs 30]
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import re
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from openprogram_memory.config import load_settings
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.transaction.engine import Policy
from openprogram_memory.memory import MemoryWorkspace

WORDS = ("bike shop metric units billing service fastapi flask deploy friday review budget team data "
         "pipeline invoice customer tea coffee morning report weekly sync design token memory core").split()
PER_TOPIC = 20
COUNTER = itertools.count()


def ensure_bytecode() -> None:
    """Compile the package's modules once, as any install has them: a cold process then reads bytecode.

    Without it (an editable checkout with PYTHONDONTWRITEBYTECODE set, as on the development machine)
    every cold process compiles each module it imports from source — ~70 ms that no installed copy pays.
    """
    import compileall
    import os

    import openprogram_memory

    compileall.compile_dir(os.path.dirname(openprogram_memory.__file__), quiet=1)


def build(state: Path, records: int, seed: int = 7) -> MemoryWorkspace:
    rng = random.Random(seed)
    ws = MemoryWorkspace.open(load_settings(state), create=True)
    threads = max(records // 50, 1)
    # A bigger workspace is a longer history at the same density: each thread
    # (conversation) spans five days, a new one starts every ~1.2 days.
    start = datetime.date(2020, 1, 1)
    messages = [
        SourceMessage(f"openprogram/t{t}/m{m}", "Dana", "user-1",
                      f"{start + datetime.timedelta(days=t * 6 // 5 + m // 10)}T10:00:00+00:00",
                      " ".join(rng.choice(WORDS) for _ in range(12)))
        for t in range(threads) for m in range(50)
    ]
    ws.archive(messages)
    topics = records // PER_TOPIC

    def edit(staging):
        for t in range(topics):
            lines = [f"# Topic {t}", ""]
            defs = []
            for r in range(PER_TOPIC):
                n = t * PER_TOPIC + r
                msg = messages[n % len(messages)]
                text = " ".join(rng.choice(WORDS) for _ in range(14)).capitalize()
                lines += [f"Record {n}: {text}.[^e{r}]", ""]
                defs.append(f"[^e{r}]: Sources: [note]({msg.source_id})")
            staging.write(f"topics/area{t % 10}/topic{t}.md", "\n".join(lines + defs) + "\n")

    ws.edit(edit, policy=Policy.MODEL, message="bench: seed")
    return ws


def one_record_edits(ws: MemoryWorkspace, runs: int) -> list[float]:
    rel = "topics/area0/topic0.md"
    times = []
    for _ in range(runs):
        text = ws.read_topic(rel)
        revision = next(COUNTER)
        new_text = re.sub(r"^Record 0(?: \(rev \d+\))?:", f"Record 0 (rev {revision}):", text, count=1, flags=re.M)
        start = time.perf_counter()
        ws.write_topic(rel, new_text)
        times.append(time.perf_counter() - start)
    return times


def instrument() -> dict[str, list[float]]:
    """Time the transaction's phases (wraps module functions; benchmark only)."""
    from openprogram_memory.transaction import engine
    from openprogram_memory.workspace import caches as tree, state

    timings: dict[str, list[float]] = {}

    def wrap(owner, name, label):
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                timings.setdefault(label, []).append(time.perf_counter() - start)

        setattr(owner, name, timed)

    wrap(tree.TopicCache, "snapshot", "baseline snapshot (stat scan)")
    wrap(engine, "source_fingerprint", "append-only check")
    wrap(engine, "derived_views", "derived views")
    wrap(engine, "install", "install (journal, renames, fsync)")
    wrap(engine, "_git_commit", "git commit + index")
    wrap(state.RevisionCache, "revision", "revision (stat pass + Merkle digest)")
    return timings


def cold(cmd: list[str], cwd: Path | None = None, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--phases", action="store_true", help="also print per-phase medians")
    args = parser.parse_args()
    timings = instrument() if args.phases else None
    openprogram = str(Path(sys.executable).with_name("openprogram"))
    tmp = Path(tempfile.mkdtemp(prefix="bench-tx-"))
    try:
        workspaces, built = {}, {}
        for size in (1_000, 10_000):
            t0 = time.perf_counter()
            workspaces[size] = build(tmp / f"s{size}", size)
            built[size] = time.perf_counter() - t0
            one_record_edits(workspaces[size], 3)  # warm the per-process caches
        # Files written in the last 2 s are "racily clean" (their signature may not yet show a change made
        # within the same timestamp tick), so the revision re-hashes them: measure the steady state after it.
        time.sleep(2.1)
        # interleave the two sizes so machine noise hits both alike
        times: dict[int, list[float]] = {1_000: [], 10_000: []}
        phases: dict[int, dict[str, list[float]]] = {1_000: {}, 10_000: {}}
        for _ in range(args.runs):
            for size, ws in workspaces.items():
                if timings is not None:
                    timings.clear()
                times[size].extend(one_record_edits(ws, 1))
                for label, values in (timings or {}).items():
                    phases[size].setdefault(label, []).append(sum(values))
        medians = {size: statistics.median(t) for size, t in times.items()}
        for size, ws in workspaces.items():
            status = cold([openprogram, "memory", "status", "--json", "--state", str(tmp / f"s{size}")])
            git = cold(["git", "status", "--porcelain"], cwd=ws.root)
            ordered = sorted(times[size])
            print(f"{size:>6} records: seed {built[size]:6.2f} s | one-record edit median {medians[size] * 1000:7.1f} ms "
                  f"(p90 {ordered[int(len(ordered) * 0.9)] * 1000:6.1f} ms) | cold `memory status` {status * 1000:6.0f} ms"
                  f" vs `git status` {git * 1000:5.0f} ms")
        print(f"ratio 10,000 / 1,000 = {medians[10_000] / medians[1_000]:.2f} (target <= 1.5)")
        for label in phases[1_000]:
            small = statistics.median(phases[1_000][label]) * 1000
            large = statistics.median(phases[10_000][label]) * 1000
            print(f"  {label:<36} {small:6.2f} ms -> {large:6.2f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
