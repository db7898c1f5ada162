"""A status that finds every memory file and the git index as the last status found them answers from that status's
memo (no topic row, no git index read); any change — a hand edit, a commit, another core budget, files still within
their timestamp tick — reads again."""

from __future__ import annotations

import re
import time
from types import SimpleNamespace

import pytest

from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.transaction import moves
from openprogram_memory.views import facts as facts_module
from openprogram_memory.views.facts import STATUS_MEMO
from openprogram_memory.workspace.manifest import Manifest

from .helpers import make_workspace, record

HOUR_NS = 3600 * 10**9


@pytest.fixture
def state(tmp_path, monkeypatch):
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": "topics/shop.md", "content": "# Shop\n\n" + record("Dana runs a bike shop.")}])
    return tmp_path / "state"


def _status(state, **overrides):
    return MemoryWorkspace.open(load_settings(state, overrides or None), scan_all=True).status()


def _at_rest(monkeypatch):
    """An hour from now: every file past its timestamp tick, as a workspace at rest."""
    monkeypatch.setattr(facts_module, "time", SimpleNamespace(time_ns=lambda: time.time_ns() + HOUR_NS))


def _no_reads(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("read although nothing changed")

    monkeypatch.setattr(Manifest, "current_topics", refuse)
    monkeypatch.setattr(moves, "read_stats", refuse)


def test_a_second_status_answers_from_the_memo(state, monkeypatch):
    _at_rest(monkeypatch)
    first = _status(state)
    _no_reads(monkeypatch)
    assert _status(state) == first and first["records"] == 1


def test_a_hand_edit_after_the_memo_is_read_and_adopted(state, monkeypatch):
    _at_rest(monkeypatch)
    _status(state)
    path = state / "memory" / "topics" / "shop.md"
    text = path.read_text(encoding="utf-8")
    block = re.search(r"Dana runs a bike shop\.(\[\^[^\]]+\]) \^([0-9a-f]+)", text)
    path.write_text(text.replace(block.group(0), block.group(0) + "\n\nDana sells e-bikes." + block.group(1)
                                 + " ^0badcafe"), encoding="utf-8")  # another editor: a second record
    assert _status(state)["records"] == 2


def test_a_commit_or_another_budget_reads_again(state, monkeypatch):
    _at_rest(monkeypatch)
    first = _status(state)
    assert _status(state, **{"memory.core.budget_tokens": 500})["core"]["budget"] == 500
    ws = MemoryWorkspace.open(load_settings(state))
    ws.update(changes=[{"path": "topics/tea.md", "content": record("Dana prefers green tea.")}])
    second = _status(state)
    assert second["records"] == 2 and second["revision"] != first["revision"]


def test_files_within_their_timestamp_tick_leave_no_memo(state):
    _status(state)  # everything was just written
    assert Manifest(state / "memory").meta(STATUS_MEMO) is None


def test_a_changed_git_index_is_read_again(state, monkeypatch):
    import os

    _at_rest(monkeypatch)
    _status(state)
    index = state / "memory" / ".git" / "index"
    data = index.read_bytes()
    (index.parent / "index.new").write_bytes(data)
    os.replace(index.parent / "index.new", index)  # what `git add` or `git reset` leaves: the same files, a new index
    _no_reads(monkeypatch)
    with pytest.raises(AssertionError, match="read although"):
        _status(state)
