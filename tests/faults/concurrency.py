"""N processes × M mixed operations on one workspace: only CONCURRENT_UPDATE may fail, nothing is lost.

Each worker runs real ``openprogram`` commands (forked, see :func:`.harness.cli`)
in a seeded order: ``memory apply`` (a new record), ``memory edit`` (a
scripted ``$EDITOR`` adds a record), ``memory write --force`` (after a new
turn in the worker's own session) and ``memory sleep``. Afterwards every
acknowledged record must still be there (its block ID, or the ID it was
merged into as an alias), every acknowledged write must have marked its
turn, history must be linear, ``git fsck --strict`` clean and the tree
equal to HEAD.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .harness import build_base, cli, fsck, snapshot, tree_matches_head

KINDS = ("apply", "edit", "write", "sleep")
EDITOR = '''import sys
path, tag = sys.argv[2], sys.argv[1]
text = open(path, encoding="utf-8").read()
text = text.rstrip("\\n") + f"\\n\\nThe team noted item {tag}.[^{tag}]\\n\\n[^{tag}]: Sources: [said](openprogram/s1/u2)\\n"
open(path, "w", encoding="utf-8").write(text)
'''


@dataclass
class Outcome:
    kind: str
    worker: int
    step: int
    code: int
    data: dict | None
    seconds: float


@dataclass
class Figures:
    workers: int
    ops: int
    outcomes: list[Outcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    commits: int = 0

    def summary(self) -> dict:
        by_kind: dict[str, dict[str, int]] = {}
        for o in self.outcomes:
            row = by_kind.setdefault(o.kind, {"ok": 0, "CONCURRENT_UPDATE": 0, "other": 0})
            if o.code == 0:
                row["ok"] += 1
            elif o.code == 75 and (o.data or {}).get("code") == "CONCURRENT_UPDATE":
                row["CONCURRENT_UPDATE"] += 1
            else:
                row["other"] += 1
        return {"workers": self.workers, "ops_per_worker": self.ops, "by_kind": by_kind,
                "commits": self.commits, "problems": self.problems}


def _worker(args) -> list[dict]:
    trial, worker, ops, seed = args
    trial = Path(trial)
    rng = random.Random(f"{seed}:{worker}")
    editor = trial / "editor.py"
    out = []
    for step in range(ops):
        kind = rng.choice(KINDS)
        tag = f"w{worker}s{step}"
        started = time.monotonic()
        if kind == "apply":
            req = trial / f"req-{tag}.json"
            req.write_text(json.dumps({"memory_changes": [{
                "op": "create_record", "content": f"Concurrent record {tag} was acknowledged.",
                "time": "2026-08-20", "sources": [{"source": "openprogram/s1/u1", "label": "said"}],
                "destination": {"topic_path": f"topics/load/{worker}.md"}}]}))
            run = cli(["memory", "apply", str(req), "--json"], trial)
        elif kind == "edit":
            run = cli(["memory", "edit", f"topics/edits/{worker}.md", "--new", "--json", "--no-reopen"], trial,
                      env={"EDITOR": f"{sys.executable} {editor} {tag}"})
        elif kind == "write":
            session = f"c{worker}"
            cli(["session", "new", "--id", session], trial)
            cli(["session", "append", session, "--role", "user", "--id", tag, "--text",
                 f"I prefer the colour number {worker}{step}."], trial)
            run = cli(["memory", "write", "--session", session, "--force", "--json"], trial)
        else:
            run = cli(["memory", "sleep", "--json"], trial)
        out.append({"kind": kind, "worker": worker, "step": step, "code": run.code, "data": run.json(),
                    "tag": tag, "seconds": time.monotonic() - started})
    return out


def run(workers: int, ops: int, where: Path, seed: int = 0) -> Figures:
    base = build_base(where / "base")
    trial = where / "trial"
    shutil.copytree(base.state, trial / "state", symlinks=True)
    (trial / "editor.py").write_text(EDITOR)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(workers) as pool:
        results = pool.map(_worker, [(str(trial), w, ops, seed) for w in range(workers)])
    figures = Figures(workers, ops)
    state = trial / "state"
    final = snapshot(state)
    ids = set(final.ids)
    memory = state / "memory"
    texts = "".join(p.read_text() for p in (memory / "topics").rglob("*.md"))
    for result in results:
        for item in result:
            figures.outcomes.append(Outcome(item["kind"], item["worker"], item["step"], item["code"], item["data"],
                                            item["seconds"]))
            data = item["data"] or {}
            if item["code"] != 0:
                if not (item["code"] == 75 and data.get("code") == "CONCURRENT_UPDATE"):
                    figures.problems.append(f"{item['kind']} {item['tag']}: exit {item['code']} {data}")
                continue
            if item["kind"] == "apply":
                for created in data.get("created", []):
                    if created["memory_id"] not in ids:
                        figures.problems.append(f"lost update: apply {item['tag']} ^{created['memory_id']}")
            elif item["kind"] == "edit" and f"item {item['tag']}." not in texts:
                figures.problems.append(f"lost update: edit {item['tag']}")
            elif item["kind"] == "write" and (f"c{item['worker']}", item["tag"]) not in final.markers:
                figures.problems.append(f"write {item['tag']} acknowledged but its turn is not marked written")
    parents = subprocess.run(["git", "rev-list", "--parents", "HEAD"], cwd=memory, capture_output=True, text=True)
    lines = parents.stdout.split("\n")[:-1]
    figures.commits = len(lines)
    if any(len(line.split()) > 2 for line in lines):
        figures.problems.append("history is not linear (a merge commit)")
    for problem in (fsck(memory), tree_matches_head(memory)):
        if problem:
            figures.problems.append(problem)
    if len(set(final.ids)) != len(final.ids):
        figures.problems.append("a block ID appears twice")
    return figures
