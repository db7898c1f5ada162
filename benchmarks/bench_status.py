"""Cold ``memory status --json`` at 1,000 / 10,000 / 50,000 records, beside a bare interpreter and ``git status``.

Each run is a fresh process (what a shell prompt, cron or a script pays).
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


def timed(cmd: list[str], runs: int, cwd: Path | None = None) -> tuple[float, float]:
    """Median wall time (s) and the peak RSS (MB) of one run, measured in a child that runs only ``cmd``."""
    times, peaks = [], []
    for _ in range(runs):
        probe = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
                 "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, cwd=None); "
                 "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        out = subprocess.run([sys.executable, "-c", probe, *cmd], check=True, capture_output=True, text=True,
                             cwd=cwd).stdout.split()
        times.append(float(out[0]))
        peaks.append(int(out[1]) / 1024)
    return statistics.median(times), max(peaks)


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
        bare, bare_rss = timed([sys.executable, "-c", "pass"], args.runs)
        print(f"bare `python -c pass`: {bare * 1000:.1f} ms, {bare_rss:.0f} MB")
        results = {}
        for size in sizes:
            state = tmp / f"s{size}"
            subprocess.run([openprogram, "memory", "status", "--json", "--state", str(state)], check=True,
                           capture_output=True)  # the first status after the build records the manifest
            results[size] = timed([openprogram, "memory", "status", "--json", "--state", str(state)], args.runs)
            git, _ = timed(["git", "status", "--porcelain"], args.runs, cwd=state / "memory")
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
