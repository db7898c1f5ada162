"""Writer benchmark (a script, not a test): the per-turn ``write()`` that has nothing to do.

Every turn of a chatting session calls ``write(session, force=False)``;
almost always the pending text is below the threshold and the call must
return at once, at a cost that follows the pending turns, not the session.
This times that call, in-process, on a 2,000-node and a 20-node session,
each with 3 pending (unwritten) turns after the written ones.

Targets: each median < 50 ms; ratio (2,000 / 20) <= 1.5.

Run: ``.venv/bin/python benchmarks/bench_writer.py [--runs N]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from openprogram_memory.config import load_settings
from openprogram_memory.sessions.markers import MARKER_KEY
from openprogram_memory.sessions.nodes import Node
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.writer.pipeline import write_report

PENDING = 3
START = datetime(2026, 8, 9, 10, 0, tzinfo=timezone.utc)


def build_session(store: SessionStore, session_id: str, size: int, workspace_id: str) -> datetime:
    """``size`` nodes (bulk insert), all but the last PENDING marked written; returns the newest time."""
    store.create_session(session_id, created_at=START.isoformat())
    nodes, parent = [], None
    for i in range(1, size + 1):
        stamp = (START + timedelta(seconds=i)).isoformat()
        metadata = {MARKER_KEY: workspace_id} if i <= size - PENDING else {}
        node = Node(f"n{i}", parent, "user" if i % 2 else "assistant", f"turn {i} of {size}: short and sweet",
                    stamp, stamp, metadata)
        nodes.append(node)
        parent = node.id
    store.insert_nodes(session_id, nodes, head=parent, fsync=False)
    return START + timedelta(seconds=size)


def median_ms(ws: MemoryWorkspace, sessions: list[str], now: datetime, runs: int) -> list[float]:
    """Median wall time of one per-turn ``write`` per session, in ms.

    Runs are interleaved in a shuffled order (after a warm-up), so neither
    session profits from going first; alternating sessions also means every
    call rewrites ``writer-status.json`` (its pending count and session
    change), as it does in a chat where every turn adds a pending turn.
    """
    samples: dict[str, list[float]] = {s: [] for s in sessions}
    order = list(sessions)
    shuffler = random.Random(7)
    for run in range(runs + 10):
        shuffler.shuffle(order)
        for session in order:
            start = time.perf_counter()
            report = write_report(ws.settings, session, now=now)  # as the provider calls it: from settings
            elapsed = (time.perf_counter() - start) * 1000
            assert report.passes == [] and report.pending == PENDING, report
            if run >= 10:
                samples[session].append(elapsed)
    return [statistics.median(samples[s]) for s in sessions]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(Path(tmp) / "state")
        ws = MemoryWorkspace.open(settings, create=True)
        store = SessionStore(settings.sessions_dir)
        newest = max(build_session(store, "big", 2000, ws.workspace_id),
                     build_session(store, "small", 20, ws.workspace_id))
        now = newest + timedelta(minutes=5)  # pending turns are fresh: below threshold, not stale
        big, small = median_ms(ws, ["big", "small"], now, args.runs)
    print(f"per-turn write() below threshold, {PENDING} pending turns, {args.runs} runs each:")
    print(f"  2,000-node session: median {big:.2f} ms")
    print(f"     20-node session: median {small:.2f} ms")
    ratio = big / small if small else float("inf")
    print(f"  ratio 2,000/20: {ratio:.2f} (target <= 1.5); each < 50 ms: {'yes' if max(big, small) < 50 else 'NO'}")


if __name__ == "__main__":
    main()
