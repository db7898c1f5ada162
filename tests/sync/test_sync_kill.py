"""kill -9 during `memory sync`: the local tree is the old or the new one, and the next sync completes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from faults.harness import cli, fsck, tree_matches_head

from openprogram_memory.sync import sync

from .helpers import add, bare_remote, machine, reopen


def _memory(state: Path) -> dict[str, bytes]:
    root = state / "memory"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.relative_to(root).as_posix().startswith((".git/", ".scriptorium"))}


def _trial(base: Path, work: Path) -> Path:
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(base, work, symlinks=True)
    return work


def test_kill_during_a_merging_sync_leaves_old_or_new_and_the_next_sync_completes(tmp_path):
    remote = bare_remote(tmp_path)
    a = machine(tmp_path, "a")
    b = machine(tmp_path, "base/state")
    add(a, "topics/dana.md", "Dana runs a bike shop.")
    sync(reopen(a), remote)
    sync(reopen(b), remote)
    add(a, "topics/dana.md", "Dana lives in Leeds.", "openprogram/s1/u2")
    add(b, "topics/work.md", "Dana uses FastAPI for billing.", "openprogram/s1/u3")
    sync(reopen(a), remote)
    shutil.copytree(remote, tmp_path / "base" / "remote.git")
    base = tmp_path / "base"
    old = _memory(base / "state")

    def argv(trial: Path) -> list[str]:
        return ["memory", "sync", "--remote", str(trial / "remote.git"), "--json"]

    clean = _trial(base, tmp_path / "clean")
    log = tmp_path / "mutations.json"
    run = cli(argv(clean), clean, record=log)
    assert run.code == 0, run.out
    assert run.json()["merged"]
    new = _memory(clean / "state")
    mutations = json.loads(log.read_text())
    assert len(mutations) > 10 and new != old
    points = sorted(set(range(0, len(mutations), max(1, len(mutations) // 8))) | {len(mutations) - 1})
    for point in points:
        trial = _trial(base, tmp_path / "trial")
        killed = cli(argv(trial), trial, kill_at=point)
        assert killed.killed, f"kill before #{point} ({mutations[point]}): {killed.out[-300:]}"
        status = cli(["memory", "status", "--json"], trial)  # opening recovers
        assert status.code == 0, status.out
        after = _memory(trial / "state")
        assert after in (old, new), f"kill before #{point} ({mutations[point]}): a mix of old and new"
        again = cli(argv(trial), trial)
        assert again.code == 0, f"kill before #{point}: {again.out[-300:]}"
        assert _memory(trial / "state") == new, f"kill before #{point}: the next sync differs from a clean one"
        root = trial / "state" / "memory"
        assert fsck(root) is None and tree_matches_head(root) is None, f"kill before #{point}"
