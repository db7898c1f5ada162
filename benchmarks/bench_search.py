"""Search benchmarks (a script, not a test): our BM25 index vs SQLite FTS5.

For 1,000 / 10,000 / 50,000 synthetic records (seeded; ~20 records per topic
file; Zipf-distributed invented vocabulary with English stopwords, 8 %
Chinese records; one archived source per record, 3 % pending) it prints:

* index build (cold, from the files) and one-file incremental refresh;
* warm query p50/p95 over many different queries, short (1-3 keywords)
  and long (a ~12-word message, what an agent sends before a turn):
  ``search()`` end to end, as a script calling it again and again gets it
  (from its second search of a workspace of 256 topic files or more the
  process watches the files, workspace/watch.py: no per-query signature
  check once the watch reports), and the bare ``SearchIndex.top`` scoring;
* cold process: a fresh ``python -c`` running ``search()`` on the built
  cache, and the real CLI ``openprogram memory search Q --state DIR --json``;
* the same through SQLite FTS5 (stdlib sqlite3, ``bm25()`` ranking, same
  document text, any-term ``OR`` match): build, warm p50/p95, cold process
  — and the ratios. Ours and FTS5 are timed interleaved, query by query and
  process by process, so a busy machine slows both alike.

* the same warm queries through ``provider.search()`` between
  ``initialize()`` and ``shutdown()``, as an agent runtime asks before each
  turn: the provider watches the files meanwhile (as ``memory mcp`` and
  ``memory serve`` do), so no per-query file check, numpy scoring
  (search/dense.py). A process with no watch (a one-shot, or the setting
  ``memory.fs_watch`` false) checks every file's signature per query: that
  check alone is printed too.

Targets (issue 12): served warm p50 <= 0.25x FTS5 at 10,000 and 50,000;
cold CLI ``search --json`` <= 5x a bare ``python -c pass``.

Run: ``.venv/bin/python benchmarks/bench_search.py [--sizes 1000,10000] [--queries 300] [--cold-runs 9]``
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from openprogram_memory.config import load_settings
from openprogram_memory.provider import FilesMemory
from openprogram_memory.search import cache as search_cache
from openprogram_memory.search import search
from openprogram_memory.search.segment import document_text
from openprogram_memory.workspace import watch
from openprogram_memory.search.tokenize import STOPWORDS, tokenize
from openprogram_memory.sources.archive import SourceMessage, archive_messages, archive_relpath_for
from openprogram_memory.topics.ids import evidence_id, new_block_id, source_anchor
from openprogram_memory.workspace import caches

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_transaction import ensure_bytecode  # noqa: E402

PER_FILE = 20
PER_THREAD = 200
PYTHON = sys.executable
CLI = str(Path(sys.executable).with_name("openprogram"))
_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
_STOP = sorted(w for w in STOPWORDS if len(w) > 1)
_CJK = [chr(0x4E00 + i) for i in range(0, 20000, 7)][:2500]


class Corpus:
    """Seeded synthetic vocabulary and sentence maker."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        words: set[str] = set()
        while len(words) < 15000:
            words.add("".join(self.rng.choice(_SYLLABLES) for _ in range(self.rng.randint(2, 4))))
        self.words = sorted(words)
        self.rng.shuffle(self.words)
        self.weights = [1 / (rank + 1) ** 1.07 for rank in range(len(self.words))]
        self.cjk_weights = [1 / (rank + 1) ** 0.9 for rank in range(len(_CJK))]
        self.names = [w.capitalize() for w in self.words[3000:3600]]

    def content_words(self, k: int) -> list[str]:
        return self.rng.choices(self.words, self.weights, k=k)

    def sentence(self) -> str:
        if self.rng.random() < 0.08:
            return "".join(self.rng.choices(_CJK, self.cjk_weights, k=self.rng.randint(8, 24))) + "。"
        parts = [self.rng.choice(self.names)]
        for word in self.content_words(self.rng.randint(7, 22)):
            if self.rng.random() < 0.35:
                parts.append(self.rng.choice(_STOP))
            parts.append(word)
        return " ".join(parts) + "."

    def short_query(self) -> str:
        return " ".join(self.content_words(self.rng.randint(1, 3)))

    def long_query(self) -> str:
        return self.sentence()


def generate(root: Path, n_records: int, corpus: Corpus) -> None:
    """Write ``n_records`` records (topic files + archives) under ``root``."""
    rng = corpus.rng
    messages: list[SourceMessage] = []
    records = []
    for i in range(n_records):
        source_id = f"bench/t{i // PER_THREAD:05d}/m{i:06d}"
        text = corpus.sentence()
        trust = "pending" if rng.random() < 0.03 else "trusted"
        day = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}"
        messages.append(SourceMessage(source_id, "B", "user-1", f"{day}T10:00:00+00:00", text, trust_state=trust))
        records.append((text, source_id, day))
    archive_messages(root, messages)
    for f in range(0, n_records, PER_FILE):
        area = corpus.names[(f // PER_FILE) % 40].lower()
        rel = f"topics/{area}/{corpus.words[f // PER_FILE]}.md"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [f"# {corpus.words[f // PER_FILE].capitalize()}", ""]
        defs: list[str] = []
        taken: set[str] = set()
        for j, (text, source_id, day) in enumerate(records[f : f + PER_FILE]):
            if j % 5 == 0:
                lines += [f"## {' '.join(corpus.content_words(2)).capitalize()}", ""]
            label = evidence_id(day, [source_id])
            block = new_block_id(rel, text, taken)
            taken.add(block)
            lines += [f"{text}[^{label}] ^{block}", ""]
            link = os.path.relpath(root / archive_relpath_for(source_id), path.parent)
            defs.append(f"[^{label}]: Time: `{day}`; Sources: [{corpus.words[j]}]({link}#{source_anchor(source_id)})")
        path.write_text("\n".join(lines + defs) + "\n", encoding="utf-8")


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def timed_ms(fn, *args, **kwargs) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return (time.perf_counter() - start) * 1000


def cold_ms(argv: list[str], runs: int, env: dict[str, str] | None = None, *, single: bool = False) -> float:
    """Wall time of a fresh process (spawn to exit): one run, or the median of ``runs`` after a warm-up."""
    samples = []
    for run in range(1 if single else runs + 1):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
        if run or single:
            samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def fresh_process_state() -> None:
    """Forget every in-process cache, as a new process would start."""
    search_cache.forget()
    caches._CACHES.clear()
    watch.stop()


def wait_live(root: Path) -> None:
    """Until the watch of ``root`` reports (its first seconds crawl the tree, on the CPU searches need)."""
    running = watch._WATCHES.get(root.resolve())
    deadline = time.monotonic() + 10
    while running is not None and not running.live and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)


# -- FTS5 -----------------------------------------------------------------

FTS_QUERY = "SELECT memory_id, bm25(docs) AS s FROM docs WHERE docs MATCH ? ORDER BY s LIMIT 5"


def fts_build(db: Path, root: Path) -> float:
    """Index the same document text in FTS5; return build ms (parse included)."""
    start = time.perf_counter()
    records = caches.topic_cache(root).snapshot().records()
    con = sqlite3.connect(db)
    con.execute("CREATE VIRTUAL TABLE docs USING fts5(memory_id UNINDEXED, body)")
    con.executemany(
        "INSERT INTO docs VALUES (?, ?)",
        ((r.memory_id, document_text(r.topic, r.headings, r.content)) for r in records),
    )
    con.commit()
    con.close()
    return (time.perf_counter() - start) * 1000


def fts_match(query: str) -> str:
    """Any-term match, as BM25 scoring over our index is."""
    words = {w for w in tokenize(query)}
    return " OR ".join(f'"{w}"' for w in sorted(words)) or '""'


def bench_size(n: int, args: argparse.Namespace, work: Path) -> dict[str, float]:
    corpus = Corpus(seed=n)
    state = work / f"s{n}"
    root = state / "memory"
    t0 = time.perf_counter()
    generate(root, n, corpus)
    print(f"\n== {n:,} records ({n // PER_FILE} topic files); generated in {time.perf_counter() - t0:.1f}s")
    out: dict[str, float] = {}

    fresh_process_state()
    out["parse_ms"] = timed_ms(lambda: caches.topic_cache(root).snapshot())
    fresh_process_state()
    out["build_ms"] = timed_ms(search, root, "warmup")
    size_kb = search_cache.cache_path(root).stat().st_size / 1024
    print(f"build (parse + tokenize + save)      {out['build_ms']:9.1f} ms   cache file {size_kb:,.0f} KB"
          f"   (parsing topics+archives alone: {out['parse_ms']:.0f} ms)")
    fresh_process_state()
    out["load_ms"] = timed_ms(search, root, "warmup")
    print(f"load cache + check + query, in proc  {out['load_ms']:9.1f} ms")

    # incremental: one file edited, the next search re-indexes it alone
    victim = sorted((root / "topics").rglob("*.md"))[0]
    victim.write_text(victim.read_text(encoding="utf-8").replace(".[^", " edited.[^", 1), encoding="utf-8")
    index, report = search_cache.current_index(root)
    assert report.indexed == [victim.relative_to(root).as_posix()], report
    victim.write_text(victim.read_text(encoding="utf-8").replace(" edited.[^", " again.[^", 1), encoding="utf-8")
    out["incr_ms"] = timed_ms(search, root, "warmup")
    print(f"one file edited → next search        {out['incr_ms']:9.1f} ms   (re-index 1 file + save cache)")

    db = work / f"fts{n}.db"
    fresh_process_state()  # FTS5 build parses the topic files too
    out["fts_build_ms"] = fts_build(db, root)
    print(f"FTS5 build (parse + insert)          {out['fts_build_ms']:9.1f} ms")

    # Warm queries, ours and FTS5 interleaved query by query so machine noise hits both alike.
    queries = {"short": [corpus.short_query() for _ in range(args.queries)],
               "long": [corpus.long_query() for _ in range(args.queries)]}
    con = sqlite3.connect(db)
    search(root, "warmup")  # the second check of a large workspace in this process starts its watch
    wait_live(root)
    for q in queries["short"][:50]:
        search(root, q)
        con.execute(FTS_QUERY, (fts_match(q),)).fetchall()
    index, _ = search_cache.current_index(root)
    for kind, qs in queries.items():
        e2e, fts = [], []
        for q in qs:
            e2e.append(timed_ms(search, root, q))
            match = fts_match(q)
            fts.append(timed_ms(lambda: con.execute(FTS_QUERY, (match,)).fetchall()))
        # The pure-Python scorer (a one-shot process's) in a pass of its own: between the pairs above it
        # evicts the arrays the next search() reads, and that search() pays for it (+25 % at 10k).
        bare = [timed_ms(index.top, tokenize(q), 5) for q in qs]
        for name, samples in (("warm", e2e), ("bare", bare), ("fts", fts)):
            out[f"{name}_{kind}_p50"], out[f"{name}_{kind}_p95"] = percentiles(samples)
        print(f"warm {kind:5} search() p50/p95        {out[f'warm_{kind}_p50']:9.3f} / {out[f'warm_{kind}_p95']:.3f} ms"
              f"   scoring only {out[f'bare_{kind}_p50']:.3f} / {out[f'bare_{kind}_p95']:.3f} ms")
        print(f"     FTS5 p50/p95                    {out[f'fts_{kind}_p50']:9.3f} / {out[f'fts_{kind}_p95']:.3f} ms")
    # A long-running process watches the files: no per-query check while nothing moves (workspace/watch.py).
    # The agent runtime's provider holds the watch from initialize() to shutdown() and asks search() before
    # every turn (`memory mcp` and `memory serve` watch for their whole life). Timed in a pass of its own,
    # through the provider, interleaved with FTS5 again.
    provider = FilesMemory(load_settings(state))
    provider.initialize("")
    wait_live(root)
    provider.search("warmup")
    for kind, qs in queries.items():
        served, fts = [], []
        for q in qs:
            served.append(timed_ms(provider.search, q))
            match = fts_match(q)
            fts.append(timed_ms(lambda: con.execute(FTS_QUERY, (match,)).fetchall()))
        out[f"served_{kind}_p50"], out[f"served_{kind}_p95"] = percentiles(served)
        out[f"fts2_{kind}_p50"], _ = percentiles(fts)
        print(f"served {kind:5} search() p50/p95      {out[f'served_{kind}_p50']:9.3f} / "
              f"{out[f'served_{kind}_p95']:.3f} ms   (provider.search(), its file watch running; "
              f"FTS5 p50 {out[f'fts2_{kind}_p50']:.3f} ms)")
    provider.shutdown()
    con.close()
    check = [timed_ms(index.refresh) for _ in range(50)]
    out["check_ms"] = statistics.median(check)
    print(f"  signature check alone (refresh)     {out['check_ms']:9.3f} ms   (part of every search())")

    # Cold processes, interleaved the same way.
    q = queries["short"][0]
    code = ("import sys; from pathlib import Path; from openprogram_memory.search import search; "
            "search(Path(sys.argv[1]), sys.argv[2])")
    fts_code = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                f"c.execute({FTS_QUERY!r}, (sys.argv[2],)).fetchall()")
    env = {**os.environ, "OPENPROGRAM_STATE": str(state)}
    commands = {
        "cold_py_ms": ([PYTHON, "-c", code, str(root), q], None),
        "fts_cold_ms": ([PYTHON, "-c", fts_code, str(db), fts_match(q)], None),
        "python_ms": ([PYTHON, "-c", "pass"], None),
        "cold_cli_ms": ([CLI, "memory", "search", q, "--state", str(state), "--json"], env),
    }
    cold: dict[str, list[float]] = {name: [] for name in commands}
    for run in range(args.cold_runs + 1):
        for name, (argv, cmd_env) in commands.items():
            try:
                ms = cold_ms(argv, 0, cmd_env, single=True)
            except (OSError, subprocess.CalledProcessError) as exc:
                print(f"{name}: not runnable ({exc})")
                ms = float("nan")
            if run:
                cold[name].append(ms)
    for name, samples in cold.items():
        out[name] = statistics.median(samples)
    print(f"cold process python -c search()      {out['cold_py_ms']:9.1f} ms   (bare python: {out['python_ms']:.1f} ms)")
    print(f"cold process CLI memory search       {out['cold_cli_ms']:9.1f} ms")
    print(f"FTS5 cold process (python -c)        {out['fts_cold_ms']:9.1f} ms")

    print("ratios (ours / FTS5):")
    for kind in ("short", "long"):
        print(f"  warm {kind:5} p50: search() {out[f'warm_{kind}_p50'] / out[f'fts_{kind}_p50']:5.2f}x"
              f"   scoring only {out[f'bare_{kind}_p50'] / out[f'fts_{kind}_p50']:5.2f}x")
    for kind in ("short", "long"):
        print(f"  served {kind:5} p50 (provider / mcp / serve, watched): "
              f"{out[f'served_{kind}_p50'] / out[f'fts2_{kind}_p50']:5.2f}x   (target <= 0.25)")
    fair = out["fts_short_p50"] + out["check_ms"]
    print(f"  warm short p50 vs FTS5 + the same signature check ({fair:.3f} ms): "
          f"{out['warm_short_p50'] / fair:5.2f}x")
    print(f"  cold process: python -c {out['cold_py_ms'] / out['fts_cold_ms']:5.2f}x"
          f"   CLI {out['cold_cli_ms'] / out['fts_cold_ms']:5.2f}x")
    print(f"  build: {out['build_ms'] / out['fts_build_ms']:5.2f}x")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--cold-runs", type=int, default=9)
    parser.add_argument("--keep", action="store_true", help="keep the generated workspaces")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-search-"))
    ensure_bytecode()
    try:
        for n in [int(s) for s in args.sizes.split(",")]:
            bench_size(n, args, work)
    finally:
        if args.keep:
            print(f"\nworkspaces kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
