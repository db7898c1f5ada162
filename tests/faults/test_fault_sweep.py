"""The sampled crash sweep (seeded) and targeted kill points; the full sweep is benchmarks/fault_sweep.py.

Set ``FAULT_SEED`` to try other kill points; a failure prints the seed,
the operation, the mutation it was killed before and the checks that failed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal

import pytest

from faults.harness import (Base, build_base, operations, record_op, run_trial, snapshot,
                            sweep_op)

SEED = int(os.environ.get("FAULT_SEED", "20261203"))


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Base:
    return build_base(tmp_path_factory.mktemp("fault-base"))


def test_sampled_sweep_every_operation(base, tmp_path):
    failed = []
    for index, op in enumerate(operations(base)):
        report = sweep_op(op, base, tmp_path / f"op{index}", seed=SEED, samples=1)
        assert report.error is None, f"{op.name}: {report.error}"
        assert report.tried == 1 and report.mutations > 3, op.name
        if report.failed:
            failed.append(f"{op.name} (seed {SEED}): " + "; ".join(report.examples))
    assert not failed, "\n".join(failed)


def _first(mutations: list[str], needle: str) -> int:
    return next(i for i, m in enumerate(mutations) if needle in m)


@pytest.mark.parametrize("where", ["memory/.git/index.lock", "memory/.git/refs/heads/main.lock"])
def test_kill_inside_the_git_commit(base, tmp_path, where):
    """Killed while git's lock file exists (after the ref update for the index): the next command commits."""
    op = next(o for o in operations(base) if o.name == "apply create")
    mutations, new, _run = record_op(op, base, tmp_path)
    point = _first(mutations, where) + 1  # after the lock file was created
    trial = run_trial(op, base, snapshot(base.state), new, tmp_path, point)
    assert trial.killed and not trial.failures, trial.details


def test_kill_during_an_archive_append_leaves_nothing_untracked(base, tmp_path):
    op = next(o for o in operations(base) if o.name.startswith("write"))
    mutations, new, _run = record_op(op, base, tmp_path)
    point = _first(mutations, "os.write memory/sources/")
    trial = run_trial(op, base, snapshot(base.state), new, tmp_path, point)
    assert trial.killed and not trial.failures, trial.details


def test_the_seam_works_through_sitecustomize_in_a_real_subprocess(base, tmp_path):
    op = next(o for o in operations(base) if o.name == "session append")
    spawned, new, run = record_op(op, base, tmp_path / "spawn", spawn=True)
    forked, _new, _run = record_op(op, base, tmp_path / "fork")
    def shape(mutations):  # temp file names are random
        return [re.sub(r"\.[a-z0-9_]{8}\.tmp$", ".tmp", m) for m in mutations]

    assert run.code == 0 and shape(spawned) == shape(forked) and len(spawned) > 5
    trial = run_trial(op, base, snapshot(base.state), new, tmp_path, len(spawned) // 2, spawn=True)
    assert trial.killed and not trial.failures, trial.details


def test_session_append_old_or_new_at_every_kill_point(tmp_path):
    """The store alone, killed before each of an append's mutations: exactly the old or the new session."""
    from faults.faultseam import install
    from openprogram_memory.sessions.store import SessionStore

    root = tmp_path / "sessions"
    store = SessionStore(root)
    store.create_session("s", created_at="2026-08-01T00:00:00+00:00")
    store.append("s", "user", "first", node_id="a", created_at="2026-08-01T00:00:00+00:00")

    def append(where, kill_at=None, record=None) -> int:
        pid = os.fork()
        if pid == 0:
            try:
                seam = install(str(where), kill_at, record)
                SessionStore(where).append("s", "assistant", "second", node_id="b",
                                           created_at="2026-08-01T00:01:00+00:00")
                seam.dump()
            finally:
                os._exit(0)
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    def view(where) -> dict:
        SessionStore(where).get_branch("s")  # a reader recovers
        return {p.relative_to(where).as_posix(): p.read_bytes() for p in sorted(where.rglob("*"))
                if p.is_file() and p.name != ".lock"}

    old = view(root)
    clean = tmp_path / "clean"
    shutil.copytree(root, clean)
    append(clean, record=str(tmp_path / "log.json"))
    mutations = json.loads((tmp_path / "log.json").read_text())
    new = view(clean)
    assert old != new and len(mutations) >= 6
    seen = set()
    for point in range(len(mutations)):
        trial = tmp_path / f"k{point}"
        shutil.copytree(root, trial)
        assert append(trial, kill_at=point) == -signal.SIGKILL
        after = view(trial)
        assert after in (old, new), f"kill before {mutations[point]}: neither old nor new"
        seen.add(after == new)
        store = SessionStore(trial)
        assert [n.id for n in store.get_branch("s")] in (["a"], ["a", "b"])
        assert list(store.parent_map("s")) in (["a"], ["a", "b"])
    assert seen == {True, False}  # both outcomes happen: the journal is the commit point
