"""``memory sleep`` on one big topic of look-alike records (a tester's report: minutes to hours, the write lock held
throughout, every write meanwhile failing CONCURRENT_UPDATE).

Each size gets one topic file of N records, each a 12-word sentence from the
26 words of the NATO alphabet, so every record shares most of its words with
thousands of others. Two shapes:

- ``numbered``: "Fact <n>: …", the tester's workspaces (a number each, so no
  two are the same fact);
- ``plain``: no numbers; every fifth record is an earlier one with one word
  changed, so there are near duplicates to merge.

Prints, per size and shape, the ``sleep`` (the rules organizer) after the big
topic is written (its records compared with every record) and ``sleep --full``
(every pair) on a copy, the records merged and a digest of the actions taken (the
same digest before and after a change to the duplicate pass means the same
decisions).

    .venv/bin/python benchmarks/bench_sleep_duplicates.py [--sizes 500 1000 2000] [--shapes numbered plain]
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.organizer.sleep import reorganize
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.transaction.engine import Policy

NATO = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec "
        "romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def sentences(shape: str, n: int, seed: int = 7) -> list[str]:
    """``n`` record texts of ``shape`` (see the module docstring)."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(n):
        if shape == "plain" and i % 5 == 4:
            words = out[rng.randrange(i)].rstrip(".").split()
            words[rng.randrange(1, len(words))] = rng.choice(NATO)
        else:
            words = [rng.choice(NATO) for _ in range(12)]
        text = " ".join(words).capitalize() + "."
        out.append(f"Fact {i}: {text}" if shape == "numbered" else text)
    return out


def build(state: Path, texts: list[str], now: datetime.datetime) -> MemoryWorkspace:
    """A workspace organized once, then given ``topics/big.md`` holding ``texts`` (each citing one archived
    message): what a sleep after a big write or a hand edit finds."""
    ws = MemoryWorkspace.open(load_settings(state), create=True)
    message = SourceMessage("openprogram/t0/m0", "Dana", "user-1", "2026-01-05T10:00:00+00:00", "the facts")
    ws.archive([message])
    footnote = f"[^e0]: Sources: [note]({message.source_id})"

    def topic(rel: str, title: str, lines: list[str]):
        def edit(staging) -> None:
            staging.write(rel, "\n".join([f"# {title}", ""] + [f"{line}[^e0]\n" for line in lines] + [footnote])
                          + "\n")
        return edit

    ws.edit(topic("topics/small.md", "Small", ["The user likes tea in the morning."]), policy=Policy.MODEL,
            message="bench: seed")
    reorganize(ws, now=now)
    ws.edit(topic("topics/big.md", "Big", texts), policy=Policy.MODEL, message="bench: the big topic")
    return ws


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1_000, 2_000])
    parser.add_argument("--shapes", nargs="+", default=["numbered", "plain"], choices=["numbered", "plain"])
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-sleep-dups-"))
    now = datetime.datetime(2026, 2, 1, 3, 0, tzinfo=datetime.timezone.utc)
    try:
        for shape in args.shapes:
            for size in args.sizes:
                texts = sentences(shape, size)
                for full in (False, True):
                    ws = build(tmp / f"{shape}{size}{full}", texts, now)
                    t0 = time.perf_counter()
                    report = reorganize(ws, now=now, full=full)
                    took = time.perf_counter() - t0
                    digest = hashlib.sha256(json.dumps(report.get("actions"), sort_keys=True,
                                                       default=str).encode()).hexdigest()[:12]
                    verb = "sleep --full" if full else "sleep"
                    print(f"{shape:<9} {size:>6} records: {verb:<12} {took:8.2f} s | merged {report['merged']:>4}"
                          f" | actions {digest}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
