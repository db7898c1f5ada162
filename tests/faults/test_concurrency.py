"""Processes racing mixed operations: only CONCURRENT_UPDATE may fail; nothing acknowledged is lost."""

from __future__ import annotations

from faults.concurrency import run


def test_mixed_operations_from_several_processes(tmp_path):
    figures = run(workers=3, ops=4, where=tmp_path, seed=7)
    summary = figures.summary()
    assert not figures.problems, figures.problems
    assert sum(row["ok"] for row in summary["by_kind"].values()) > 0
    assert sum(row["other"] for row in summary["by_kind"].values()) == 0
    assert len(figures.outcomes) == 12 and figures.commits > 5
