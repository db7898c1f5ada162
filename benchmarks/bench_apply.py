"""One-record ``memory apply`` on workspaces built through the API (a script, not a test).

Agents (MCP, HTTP, ``memory apply``) write records with a new source each;
every such source lands in the day's API archive thread. This builds a
workspace of 1,000 and one of 10,000 records that way (64 creates per
call, all observed on one day, so one thread holds them all — the worst
case), then times, in process and interleaved, a one-record apply with its
own new source, and prints the medians, their ratio and the same change
committed by the git CLI (``git commit -qam``) as the peer.

Then the same one-record apply as a cold CLI process (``openprogram memory
apply FILE --json``), interleaved with a bare ``python -c pass``.

Target (issue 12): 10k/1k <= 1.3; in process <= 2x the git commit; the CLI
process at 10k <= 8x the bare interpreter.

Run: ``.venv/bin/python benchmarks/bench_apply.py [--sizes 1000,10000] [--runs 15]``
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_transaction import ensure_bytecode  # noqa: E402

from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace

WORDS = "alpha beta gamma delta bike shop tea garden river owl kite metric units billing deploy friday".split()
PER_TOPIC = 20


class Builder:
    def __init__(self, state: Path, size: int) -> None:
        self.ws = MemoryWorkspace.open(load_settings(state), create=True)
        self.size, self.next, self.rng = size, 0, random.Random(size)

    def changes(self, n: int) -> tuple[list[dict], list[dict]]:
        changes, sources = [], []
        for _ in range(n):
            i = self.next
            self.next += 1
            label = f"new-source-{i}"
            sources.append({"label": label, "role": "user", "observed_at": "2026-12-01T10:00:00+00:00",
                            "content": f"message {i}: " + " ".join(self.rng.choices(WORDS, k=12))})
            changes.append({"op": "create_record", "content": f"Fact {i}: " + " ".join(self.rng.choices(WORDS, k=9)) + ".",
                            "sources": [{"source": label, "label": "note"}],
                            "destination": {"topic_path": f"topics/area{(i // PER_TOPIC) % 10}/t{i // PER_TOPIC}.md"}})
        return changes, sources

    def build(self) -> float:
        started = time.perf_counter()
        while self.next < self.size:
            changes, sources = self.changes(min(64, self.size - self.next))
            self.ws.update(memory_changes=changes, sources=sources)
        return time.perf_counter() - started

    def one(self) -> tuple[float, float]:
        """Wall and CPU seconds of a one-record apply (CPU time leaves out waiting for fsync, which on a
        shared disk swings more than the work itself)."""
        changes, sources = self.changes(1)
        started, cpu = time.perf_counter(), time.process_time()
        self.ws.update(memory_changes=changes, sources=sources)
        return time.perf_counter() - started, time.process_time() - cpu


def wall(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - started


def git_commit_ms(root: Path, runs: int) -> float:
    """The peer: append a line to one topic file and ``git commit -qam`` it with the git CLI."""
    clone = Path(tempfile.mkdtemp(prefix="bench-apply-git-"))
    try:
        subprocess.run(["git", "clone", "-q", str(root), str(clone / "w")], check=True)
        work = clone / "w"
        target = next(work.glob("topics/area0/*.md"))
        times = []
        for i in range(runs):
            with open(target, "a", encoding="utf-8") as handle:
                handle.write(f"\nPeer line {i}.\n")
            started = time.perf_counter()
            subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qam", f"peer {i}"],
                           cwd=work, check=True)
            times.append(time.perf_counter() - started)
        return statistics.median(times) * 1000
    finally:
        shutil.rmtree(clone, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="bench-apply-"))
    try:
        builders = {}
        for size in sizes:
            builders[size] = Builder(tmp / f"s{size}", size)
            seconds = builders[size].build()
            archive = max((builders[size].ws.root / "sources").rglob("api-*.md"), key=lambda p: p.stat().st_size)
            print(f"{size:>6} records built through the API in {seconds:6.1f} s "
                  f"(largest API archive {archive.stat().st_size / 1e6:.1f} MB)", flush=True)
            builders[size].one()  # warm
        time.sleep(2.1)  # past the racy-clean window of the files just written (see RevisionCache)
        times: dict[int, list[tuple[float, float]]] = {size: [] for size in sizes}
        for _ in range(args.runs):
            for size in sizes:
                times[size].append(builders[size].one())
        medians = {size: statistics.median(w for w, _c in t) * 1000 for size, t in times.items()}
        cpu = {size: statistics.median(c for _w, c in t) * 1000 for size, t in times.items()}
        for size in sizes:
            peer = git_commit_ms(builders[size].ws.root, 9)
            print(f"{size:>6} records: one-record apply (with a new source) median {medians[size]:7.1f} ms "
                  f"| git commit -qam {peer:6.1f} ms | ratio to git {medians[size] / peer:5.2f} (target <= 2)")
        if len(sizes) > 1:
            small, large = sizes[0], sizes[-1]
            print(f"ratio {large:,} / {small:,} = {medians[large] / medians[small]:.2f} (target <= 1.3); "
                  f"CPU time {cpu[small]:.1f} / {cpu[large]:.1f} ms, ratio {cpu[large] / cpu[small]:.2f}")
        ensure_bytecode()
        openprogram = str(Path(sys.executable).with_name("openprogram"))
        cold: dict[str, list[float]] = {"bare": [], **{str(size): [] for size in sizes}}
        for run in range(args.runs):
            cold["bare"].append(wall([sys.executable, "-c", "pass"]))
            for size in sizes:
                changes, sources = builders[size].changes(1)
                request = tmp / f"request-{size}-{run}.json"
                request.write_text(json.dumps({"memory_changes": changes, "sources": sources}), encoding="utf-8")
                cold[str(size)].append(wall([openprogram, "memory", "apply", str(request), "--json",
                                             "--state", str(tmp / f"s{size}")]))
        bare = statistics.median(cold["bare"]) * 1000
        for size in sizes:
            ms = statistics.median(cold[str(size)]) * 1000
            print(f"{size:>6} records: cold CLI `memory apply --json` {ms:6.1f} ms | bare python {bare:5.1f} ms "
                  f"| x{ms / bare:4.1f} (target at 10k <= 8)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
