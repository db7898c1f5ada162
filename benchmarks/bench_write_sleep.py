"""Writing and organizing cost what changed (issue 12 item 7): ``write`` of the same sessions and ``sleep`` with
nothing changed, on workspaces of 1,000 and 10,000 records.

Each size gets the same 2 sessions of 20 user statements (new facts, so the
rules writer creates records and compares each with the records already
there), written in process with ``force=True`` (what ``write --all-idle``
does per session); then ``sleep`` (the rules organizer) on the workspace as
it is, and once more (nothing changed since). The chat case follows: one new
fact a turn, written as it comes (median per turn). The sleep with nothing
changed is also timed in a process that watches the root (``memory
serve``/``mcp``) and as a cold ``memory sleep --json`` process; last, a cold ``memory write``
process of one turn whose fact has a slot ("I live in …"). Prints
medians and the ratios; targets 10k/1k <= 1.5 for the writes and for the
sleep with nothing changed.

    .venv/bin/python benchmarks/bench_write_sleep.py [--runs 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_apply import wall  # noqa: E402
from bench_transaction import build, ensure_bytecode  # noqa: E402

from openprogram_memory.organizer.sleep import ORGANIZED_AT, reorganize  # noqa: E402
from openprogram_memory.workspace.manifest import RACY_NS, Manifest  # noqa: E402
from openprogram_memory.sessions.store import SessionStore  # noqa: E402
from openprogram_memory.workspace import watch  # noqa: E402
from openprogram_memory.writer.pipeline import write_report  # noqa: E402

STATEMENTS = [
    "I prefer {x} over tabs in every {y} file.", "My manager {x} owns the {y} budget.",
    "We deploy the {y} service every {x}.", "I live in {x} and work on {y}.",
    "Always answer with {x} units when we talk about {y}.", "The {y} pipeline writes to bucket {x}.",
    "We decided to move {y} to {x} last week.", "{x} is the on-call person for {y} this month.",
]
FILL = ["Oslo", "Lisbon", "Kyoto", "Quito", "Tuesday", "Friday", "spaces", "metric", "Ravi", "Mei"]
TOPICS = ["billing", "search", "ingest", "mobile", "payments", "reports", "auth", "infra"]


def statement(tag: str, s: int, i: int) -> str:
    """The ``i``-th user statement of session ``s``: a new fact (its project name is new to the workspace)."""
    return STATEMENTS[(i + s) % len(STATEMENTS)].format(x=FILL[(i * 3 + s) % len(FILL)],
                                                        y=TOPICS[(i + 2 * s) % len(TOPICS)] + f"{tag}{i}")


def add_sessions(ws, tag: str, start: datetime) -> list[str]:
    store = SessionStore(ws.settings.sessions_dir)
    sessions = []
    for s in range(2):
        session = f"{tag}-s{s}"
        store.create_session(session, created_at=start.isoformat())
        for i in range(20):
            store.append(session, "user", statement(tag, s, i), node_id=f"n{i}",
                         created_at=(start + timedelta(minutes=i)).isoformat())
        sessions.append(session)
    return sessions


def per_turn(workspaces: dict, turns: int, start: datetime) -> dict[int, list[float]]:
    """The chat case: one user turn (a new fact) appended and written at once (``write`` per turn, forced), each
    timed alone, the sizes interleaved so machine noise hits both alike. The first two turns warm the process's
    caches and indexes, as any long-lived writer has them."""
    stores = {size: SessionStore(ws.settings.sessions_dir) for size, ws in workspaces.items()}
    for store in stores.values():
        store.create_session("chat", created_at=start.isoformat())
    times: dict[int, list[float]] = {size: [] for size in workspaces}
    for i in range(turns + 2):
        for size, ws in workspaces.items():
            stores[size].append("chat", "user", statement("chat", 0, i), node_id=f"c{i}",
                                created_at=(start + timedelta(minutes=i)).isoformat())
            t0 = time.perf_counter()
            write_report(ws, "chat", force=True)
            if i >= 2:
                times[size].append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-write-"))
    try:
        workspaces = {size: build(tmp / f"s{size}", size) for size in (1_000, 10_000)}
        writes: dict[int, list[float]] = {size: [] for size in workspaces}
        sleeps: dict[int, list[float]] = {size: [] for size in workspaces}
        idle: dict[int, list[float]] = {size: [] for size in workspaces}
        settled: dict[int, list[float]] = {size: [] for size in workspaces}
        racy: dict[int, list[int]] = {size: [] for size in workspaces}
        start = datetime(2026, 8, 9, 9, 0, tzinfo=timezone.utc)
        for run in range(args.runs):
            for size, ws in workspaces.items():
                sessions = add_sessions(ws, f"r{run}", start + timedelta(days=run))
                t0 = time.perf_counter()
                for session in sessions:
                    write_report(ws, session, force=True)
                writes[size].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                reorganize(ws)
                sleeps[size].append(time.perf_counter() - t0)
                racy[size].append(len((Manifest(ws.root).meta(ORGANIZED_AT) or {}).get("racy") or {}))
                t0 = time.perf_counter()
                reorganize(ws)  # again: nothing changed since
                idle[size].append(time.perf_counter() - t0)
            time.sleep(RACY_NS / 1e9 + 0.1)
            for size, ws in workspaces.items():  # once more, after the timestamp tick of the last write
                t0 = time.perf_counter()
                reorganize(ws)
                settled[size].append(time.perf_counter() - t0)
        turn = per_turn(workspaces, 20 * args.runs, start + timedelta(days=args.runs))
        # A process that watches the root (`memory serve`, `memory mcp`): the first check is a stat pass,
        # later ones cost nothing until the watch reports a change.
        served: dict[int, list[float]] = {size: [] for size in workspaces}
        for size, ws in workspaces.items():
            watch.start(ws.root)
            deadline = time.monotonic() + 10
            while watch.token(ws.root.resolve()) is None and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.5)  # the writes above reported
            reorganize(ws)
            for _ in range(args.runs):
                t0 = time.perf_counter()
                reorganize(ws)
                served[size].append(time.perf_counter() - t0)
            watch.stop(ws.root)
        # What a person (or cron) runs: a cold `memory sleep --json` process, beside a bare interpreter.
        ensure_bytecode()
        openprogram = str(Path(sys.executable).with_name("openprogram"))
        cli: dict[int, list[float]] = {size: [] for size in workspaces}
        bare = []
        cold_write: dict[int, list[float]] = {size: [] for size in workspaces}
        stores = {size: SessionStore(ws.settings.sessions_dir) for size, ws in workspaces.items()}
        for store in stores.values():
            store.create_session("cold", created_at=start.isoformat())
        for run in range(args.runs):
            bare.append(wall([sys.executable, "-c", "pass"]))
            for size in workspaces:
                cli[size].append(wall([openprogram, "memory", "sleep", "--json", "--state", str(tmp / f"s{size}")]))
                # a cold `memory write` of one turn whose fact has a slot ("I live in …"): the records that state
                # one are found from per-file keys kept in the tree cache, not by reading every record again
                stores[size].append("cold", "user", f"I live in {FILL[run % 4]} now and work on cold{run}.",
                                    node_id=f"k{run}", created_at=(start + timedelta(hours=run)).isoformat())
                cold_write[size].append(wall([openprogram, "memory", "write", "cold", "--force", "--json", "--state",
                                              str(tmp / f"s{size}")]))
        for name, figures in (("write (2 sessions x 20 statements)", writes),
                              ("write per turn (one new fact a turn)", turn), ("sleep after the write", sleeps),
                              ("sleep with nothing changed", idle), ("… 2 s after the last write", settled),
                              ("… in a watching process", served),
                              ("… cold CLI `memory sleep --json`", cli),
                              ("cold CLI `memory write` of a turn", cold_write)):
            small, large = statistics.median(figures[1_000]), statistics.median(figures[10_000])
            print(f"{name:<36} 1k {small * 1000:7.1f} ms | 10k {large * 1000:7.1f} ms | ratio {large / small:.2f}"
                  " (target <= 1.5)")
        print(f"{'bare python -c pass':<36} {statistics.median(bare) * 1000:7.1f} ms")
        print("files written within the 2 s timestamp tick before a sleep with nothing changed (hashed again):"
              f" 1k {statistics.median(racy[1_000]):.0f}, 10k {statistics.median(racy[10_000]):.0f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
