"""MCP server benchmarks (a script, not a test): ``openprogram memory mcp`` over real stdio.

For 1,000 / 10,000 synthetic records (the corpus of ``bench_search.py``) it
drives the server with the SDK's own client and prints:

* start: spawn → ``initialize`` answered (cold process, the SDK import
  included), median of a few runs;
* warm ``memory_search`` p50/p95 over many queries through the protocol,
  next to ``search()`` in-process on the same queries — the ratio is what
  the protocol, JSON and worker thread add;
* ``memory_get`` p50 and ``memory_update`` (one ``create_record`` with a new
  source, a full transaction with git commit) p50.

Targets: start < 1.5 s; protocol overhead on search < 5 ms p50.

Run: ``.venv/bin/python benchmarks/bench_mcp.py [--sizes 1000,10000] [--queries 200] [--starts 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from bench_search import CLI, Corpus, fresh_process_state, generate, percentiles
from openprogram_memory.config import load_settings
from openprogram_memory.search import search
from openprogram_memory.memory import MemoryWorkspace


def _params(state: Path) -> StdioServerParameters:
    return StdioServerParameters(command=CLI, args=["memory", "mcp"], env={"OPENPROGRAM_STATE": str(state)})


async def _start_ms(state: Path) -> float:
    with open(os.devnull, "w") as errlog:
        start = time.perf_counter()
        async with stdio_client(_params(state), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return (time.perf_counter() - start) * 1000


async def _session_figures(state: Path, queries: list[str], memory_ids: list[str], updates: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"search": [], "get": [], "update": []}
    with open(os.devnull, "w") as errlog:
        async with stdio_client(_params(state), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.call_tool("memory_search", {"query": "warmup"})
                for query in queries:
                    start = time.perf_counter()
                    result = await session.call_tool("memory_search", {"query": query})
                    out["search"].append((time.perf_counter() - start) * 1000)
                    assert not result.is_error, result.content
                for memory_id in memory_ids:
                    start = time.perf_counter()
                    result = await session.call_tool("memory_get", {"memory_id": memory_id})
                    out["get"].append((time.perf_counter() - start) * 1000)
                    assert not result.is_error, result.content
                for n in range(updates):
                    request = {
                        "memory_changes": [{"op": "create_record", "content": f"Benchmark fact number {n}.",
                                            "time": "2026-12-01",
                                            "sources": [{"source": "new-source-b", "label": "bench"}],
                                            "destination": {"topic_path": "topics/bench.md"}}],
                        "sources": [{"label": "new-source-b", "role": "user",
                                     "content": f"Remember benchmark fact number {n}."}]}
                    start = time.perf_counter()
                    result = await session.call_tool("memory_update", request)
                    out["update"].append((time.perf_counter() - start) * 1000)
                    assert not result.is_error, result.content[0].text
    return out


def bench_size(n: int, args: argparse.Namespace, work: Path) -> dict[str, float]:
    corpus = Corpus(seed=n)
    state = work / f"s{n}"
    generate(state / "memory", n, corpus)
    ws = MemoryWorkspace.open(load_settings(state), create=True)
    ws.rebuild()
    print(f"\n== {n:,} records")
    queries = [corpus.long_query() for _ in range(args.queries)]
    memory_ids = [record.memory_id for record in ws.records()[: min(50, n)]]

    starts = [anyio.run(_start_ms, state) for _ in range(args.starts)]
    figures = anyio.run(_session_figures, state, queries, memory_ids, args.updates)

    fresh_process_state()
    search(ws.root, "warmup")
    in_process = []
    for query in queries:
        start = time.perf_counter()
        search(ws.root, query)
        in_process.append((time.perf_counter() - start) * 1000)

    out = {"start_ms": statistics.median(starts)}
    out["search_p50"], out["search_p95"] = percentiles(figures["search"])
    out["inproc_p50"], out["inproc_p95"] = percentiles(in_process)
    out["get_p50"], _ = percentiles(figures["get"])
    out["update_p50"], _ = percentiles(figures["update"])
    print(f"spawn → initialize (cold)            {out['start_ms']:9.1f} ms   (median of {args.starts})")
    print(f"memory_search over stdio  p50/p95    {out['search_p50']:9.2f} / {out['search_p95']:.2f} ms")
    print(f"search() in-process       p50/p95    {out['inproc_p50']:9.2f} / {out['inproc_p95']:.2f} ms")
    print(f"protocol overhead on search p50      {out['search_p50'] - out['inproc_p50']:9.2f} ms"
          f"   (ratio {out['search_p50'] / out['inproc_p50']:.2f}x)")
    print(f"memory_get p50                       {out['get_p50']:9.2f} ms")
    print(f"memory_update p50 (transaction+git)  {out['update_p50']:9.1f} ms   ({args.updates} updates)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--updates", type=int, default=5)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            results[n] = bench_size(n, args, Path(tmp))
    print("\n" + json.dumps({str(k): {m: round(v, 2) for m, v in r.items()} for k, r in results.items()}))


if __name__ == "__main__":
    sys.exit(main())
