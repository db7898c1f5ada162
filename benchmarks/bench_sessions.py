"""Session store benchmarks (a script, not a test): prints figures and ratios.

1. ``pending_turns`` on a 2,000-node and a 20-node session, each with 3
   pending turns after the written ones: the walk must cost the pending
   turns, not the session (target: ratio <= 1.5, each median < 50 ms).
2. Import throughput of a synthetic 10,000-line Claude Code transcript.

Run: ``.venv/bin/python benchmarks/bench_sessions.py [--runs N]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from openprogram_memory.sessions.importers import import_paths
from openprogram_memory.sessions.markers import mark_written, pending_turns
from openprogram_memory.sessions.store import SessionStore

WORKSPACE = "w-bench000"
PENDING = 3


def build_session(store: SessionStore, session_id: str, size: int) -> None:
    """``size`` nodes through the public API; all but the last PENDING written."""
    store.create_session(session_id)
    ids = [store.append(session_id, "user" if i % 2 else "assistant", f"turn {i} of {size}").id
           for i in range(1, size + 1)]
    mark_written(store, session_id, ids[:-PENDING], WORKSPACE)


def median_ms(store: SessionStore, session_ids: list[str], runs: int) -> list[float]:
    """Median wall time of ``pending_turns`` per session in ms (runs interleaved, after a warm-up)."""
    samples: dict[str, list[float]] = {session_id: [] for session_id in session_ids}
    for run in range(runs + 10):
        for session_id in session_ids:
            start = time.perf_counter()
            found = pending_turns(store, session_id, WORKSPACE)
            elapsed = (time.perf_counter() - start) * 1000
            assert len(found) == PENDING
            if run >= 10:
                samples[session_id].append(elapsed)
    return [statistics.median(samples[session_id]) for session_id in session_ids]


def synthetic_claude_transcript(path: Path, line_count: int) -> int:
    """Write a Claude Code JSONL of about ``line_count`` lines (user, 3-line assistant message, tool result)."""
    session = "bench-0000-4000-8000-000000000000"
    parent = None
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        turn = 0
        while written < line_count:
            turn += 1
            stamp = f"2025-01-01T{(turn // 3600) % 24:02d}:{(turn // 60) % 60:02d}:{turn % 60:02d}.000Z"
            base = {"sessionId": session, "isSidechain": False, "cwd": "/bench", "timestamp": stamp}
            lines = [
                {**base, "type": "user", "uuid": f"u{turn}", "parentUuid": parent,
                 "message": {"role": "user", "content": f"Question {turn}: we use Postgres {turn}."}},
                {**base, "type": "assistant", "uuid": f"a{turn}", "parentUuid": f"u{turn}",
                 "message": {"id": f"msg{turn}", "role": "assistant",
                             "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}]}},
                {**base, "type": "assistant", "uuid": f"b{turn}", "parentUuid": f"a{turn}",
                 "message": {"id": f"msg{turn}", "role": "assistant",
                             "content": [{"type": "text", "text": f"Answer {turn}."}]}},
                {**base, "type": "assistant", "uuid": f"c{turn}", "parentUuid": f"b{turn}",
                 "message": {"id": f"msg{turn}", "role": "assistant",
                             "content": [{"type": "tool_use", "id": f"t{turn}", "name": "Bash",
                                          "input": {"command": "ls"}}]}},
                {**base, "type": "user", "uuid": f"r{turn}", "parentUuid": f"c{turn}",
                 "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{turn}",
                                                          "content": "file.txt"}]}},
            ]
            for line in lines:
                out.write(json.dumps(line) + "\n")
            written += len(lines)
            parent = f"r{turn}"
    return written


def main() -> None:
    """Run both benchmarks and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500, help="pending_turns runs per session (median taken)")
    parser.add_argument("--lines", type=int, default=10_000, help="lines in the synthetic transcript")
    parser.add_argument("--import-runs", type=int, default=3, help="imports timed (median taken)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp) / "sessions")
        build_session(store, "large", 2000)
        build_session(store, "small", 20)
        large, small = median_ms(store, ["large", "small"], args.runs)
        ratio = large / small
        print(f"pending_turns 2,000-node session, 3 pending: median {large:.3f} ms ({args.runs} runs)")
        print(f"pending_turns    20-node session, 3 pending: median {small:.3f} ms ({args.runs} runs)")
        verdict = "OK" if ratio <= 1.5 and large < 50 and small < 50 else "OVER TARGET"
        print(f"ratio large/small: {ratio:.2f} (target <= 1.5, each < 50 ms): {verdict}")

        transcript = Path(tmp) / "synthetic.jsonl"
        lines = synthetic_claude_transcript(transcript, args.lines)
        rates, no_op_rates, imported = [], [], 0
        for attempt in range(args.import_runs):  # a fresh store each time; disk noise is large
            fresh = SessionStore(Path(tmp) / f"import-{attempt}")
            start = time.perf_counter()
            imported = import_paths(fresh, "claude-code", [transcript]).imported
            rates.append(lines / (time.perf_counter() - start))
            start = time.perf_counter()
            assert import_paths(fresh, "claude-code", [transcript]).imported == 0
            no_op_rates.append(lines / (time.perf_counter() - start))
        print(f"import {lines:,} Claude Code lines -> {imported:,} nodes: median {statistics.median(rates):,.0f} "
              f"lines/s (min {min(rates):,.0f}, max {max(rates):,.0f}, {args.import_runs} runs, fsync on)")
        print(f"re-import (no-op): median {statistics.median(no_op_rates):,.0f} lines/s")

if __name__ == "__main__":
    main()
