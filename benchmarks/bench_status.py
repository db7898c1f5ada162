"""Cold ``memory status --json`` at 1,000 / 10,000 / 50,000 records, beside a bare interpreter and ``git status``.

Each run is a fresh process (what a shell prompt, cron or a script pays); the sizes take turns run after run.
Prints medians, peak RSS and the ratios of issue 12's targets: 10k/1k ≤ 1.2,
50k/10k ≤ 1.3, 10k ≤ 4× bare python, peak RSS at 50k ≤ 60 MB.

    .venv/bin/python benchmarks/bench_status.py [--runs 9] [--sizes 1000,10000,50000]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_transaction import build, ensure_bytecode  # noqa: E402  (the same workspaces as the edit benchmark)


def once(cmd: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """Wall time (s) and peak RSS (MB) of one run, measured in a child that runs only ``cmd``."""
    probe = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
             "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, cwd=None); "
             "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe, *cmd], check=True, capture_output=True, text=True,
                         cwd=cwd).stdout.split()
    return float(out[0]), int(out[1]) / 1024


def timed(commands: dict[str, tuple[list[str], Path | None]], runs: int) -> dict[str, tuple[float, float]]:
    """Median wall time (s) and peak RSS (MB) of each command, the commands taking turns run after run (a
    slow spell of the machine then falls on every size alike, not on one)."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (cmd, cwd) in commands.items():
            samples[name].append(once(cmd, cwd))
    return {name: (statistics.median(t for t, _ in got), max(rss for _, rss in got)) for name, got in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--sizes", default="1000,10000,50000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    openprogram = str(Path(sys.executable).with_name("openprogram"))
    tmp = Path(tempfile.mkdtemp(prefix="bench-status-"))
    ensure_bytecode()
    try:
        for size in sizes:
            t0 = time.perf_counter()
            build(tmp / f"s{size}", size)
            print(f"built {size:,} records in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        time.sleep(2.1)  # past the racily-clean window of the files just written
        commands: dict[str, tuple[list[str], Path | None]] = {"bare": ([sys.executable, "-c", "pass"], None)}
        for size in sizes:
            state = tmp / f"s{size}"
            subprocess.run([openprogram, "memory", "status", "--json", "--state", str(state)], check=True,
                           capture_output=True)  # the first status after the build records the manifest
            commands[f"memory {size}"] = ([openprogram, "memory", "status", "--json", "--state", str(state)], None)
            commands[f"git {size}"] = (["git", "status", "--porcelain"], state / "memory")
        measured = timed(commands, args.runs)
        bare, bare_rss = measured["bare"]
        print(f"bare `python -c pass`: {bare * 1000:.1f} ms, {bare_rss:.0f} MB")
        results = {}
        for size in sizes:
            results[size] = measured[f"memory {size}"]
            git = measured[f"git {size}"][0]
            wall, rss = results[size]
            print(f"{size:>6,} records: cold `memory status --json` {wall * 1000:6.1f} ms (×{wall / bare:.1f} bare python),"
                  f" peak RSS {rss:5.1f} MB | `git status` {git * 1000:5.1f} ms")
        if 1000 in results and 10000 in results:
            print(f"ratio 10k / 1k = {results[10000][0] / results[1000][0]:.2f} (target <= 1.2)")
            print(f"10k / bare python = {results[10000][0] / bare:.1f} (target <= 4)")
        if 10000 in results and 50000 in results:
            print(f"ratio 50k / 10k = {results[50000][0] / results[10000][0]:.2f} (target <= 1.3)")
            print(f"peak RSS at 50k = {results[50000][1]:.1f} MB (target <= 60)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    _ = resource  # (used in the probe child)
    main()
