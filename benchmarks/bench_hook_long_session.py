"""A long Claude Code session at SessionEnd (a script, not a test): what the hook's background worker costs.

A generated transcript of N messages (default 5,000: alternating prompts of
~60 words and answers of ~80, a durable fact every 50th prompt) goes
through the hook worker the way ``SessionEnd`` runs it — tail import, then
the forced write of every pending turn, with the rules writer — once per
``memory.writer.trigger_tokens`` value, which is also the size of each
pass's batch: a pass is two commits (archive the batch, then the writer's
transaction), so the batch size sets the number of commits and most of the
time. Printed per value: import seconds, write seconds, commits, turns per
pass.

Reference (2 shared cores, 5,000 messages of ~70 tokens, rules writer):
import 2-5 s; 8000 (the default) → 23 s, 91 commits, 44 passes of ~114
turns; 32000 → 16 s, 24 commits, 11 passes of ~456 turns (under load:
69 s / 96 commits against 29 s / 29 commits). With a model writer every
pass is also a model call. A real transcript's messages are longer (~200
tokens, tool output), hence the 40 turns a pass seen on a 34 MB one.

Run: ``.venv/bin/python benchmarks/bench_hook_long_session.py [--messages 5000] [--triggers 8000,32000]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from openprogram_memory.agents import hook_worker
from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.sessions.importers.tail import STATE_DIR, import_appended
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.workspace.layout import Layout

SESSION = "bench-long-session"
FACTS = ["I work at Acme Corp as a backend engineer.", "Our team always uses pnpm, never npm.",
         "My dog is called Biscuit.", "We deploy to Frankfurt every Tuesday.", "I prefer tabs over spaces."]
WORDS = ("can you look at the failing test in the billing module and explain why the fixture setup order "
         "matters here then suggest a fix that keeps the retry logic intact").split()


def transcript(path: Path, messages: int) -> None:
    """``messages`` Claude Code lines, one linear conversation."""
    rnd = random.Random(7)
    parent = None
    with open(path, "w", encoding="utf-8") as out:
        for i in range(messages // 2):
            stamp = f"2025-10-02T{10 + i // 3600 % 10:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"
            prompt = " ".join(rnd.choice(WORDS) for _ in range(60))
            if i % 50 == 0:
                prompt = f"{rnd.choice(FACTS)} {prompt}"
            answer = " ".join(rnd.choice(WORDS) for _ in range(80))
            for line in ({"type": "user", "uuid": f"u{i}", "parentUuid": parent, "sessionId": SESSION,
                          "isSidechain": False, "timestamp": stamp, "message": {"role": "user", "content": prompt}},
                         {"type": "assistant", "uuid": f"a{i}", "parentUuid": f"u{i}", "sessionId": SESSION,
                          "isSidechain": False, "timestamp": stamp,
                          "message": {"id": f"m{i}", "type": "message", "role": "assistant",
                                      "content": [{"type": "text", "text": answer}]}}):
                out.write(json.dumps(line) + "\n")
            parent = f"a{i}"


def bench(work: Path, path: Path, trigger: int) -> None:
    state = work / f"s{trigger}"
    os.environ["OPENPROGRAM_MEMORY_WRITER_TRIGGER_TOKENS"] = str(trigger)
    settings = load_settings(str(state))
    MemoryWorkspace.open(settings, create=True)
    started = time.perf_counter()
    imported = import_appended(SessionStore(settings.sessions_dir), "claude-code", path,
                               Layout(settings.memory_dir).state(STATE_DIR)).imported
    imported_in = time.perf_counter() - started
    started = time.perf_counter()
    hook_worker.run(str(state), SESSION, [str(path)], True, "SessionEnd")  # its import finds nothing new
    written_in = time.perf_counter() - started
    subjects = subprocess.run(["git", "-C", str(settings.memory_dir), "log", "--format=%s"], capture_output=True,
                              text=True, check=True).stdout.splitlines()
    sizes = Counter(int(m.group(1)) for s in subjects if (m := re.match(r"memory: write (\d+) turn", s)))
    print(f"trigger_tokens {trigger:>6}: import {imported:,} nodes {imported_in:5.1f} s; forced write "
          f"{written_in:6.1f} s, {len(subjects)} commits, {sum(sizes.values())} passes, turns a pass "
          f"{', '.join(f'{n}×{c}' for n, c in sizes.most_common(3))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--triggers", default="8000,32000")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPU(s), load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="bench-long-session-") as tmp:
        path = Path(tmp) / "transcript.jsonl"
        transcript(path, args.messages)
        print(f"{args.messages:,} messages, {path.stat().st_size / 1e6:.1f} MB")
        for trigger in (int(t) for t in args.triggers.split(",")):
            bench(Path(tmp), path, trigger)


if __name__ == "__main__":
    main()
