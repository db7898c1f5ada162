"""Searches in a long-running process: a file watch vouches that nothing moved, so no file is checked per query.

What must hold: a change of this process (a transaction) and of another
product process (its manifest write) is seen by the very next search; a
hand edit is seen once the watch reports it; without a running watch every
search checks the files, as before.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.search import search
from openprogram_memory.search.index import SearchIndex
from openprogram_memory.transaction.engine import Policy
from openprogram_memory.workspace import watch

from .helpers import HeldWatch, Rec, archive_source, topic_text, write_topic


@pytest.fixture
def ws(state: Path):
    workspace = MemoryWorkspace.open(load_settings(state), create=True)
    yield workspace
    watch.stop()


@pytest.fixture
def refreshes(count_calls) -> list[int]:
    return count_calls(SearchIndex, "refresh")


def _hold(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(watch._WATCHES, root.resolve(), HeldWatch())


def _add_through_transaction(ws: MemoryWorkspace, rel: str, rec: Rec) -> None:
    archive_source(ws.root, rec)
    text, _ids = topic_text(ws.root, rel, [rec])
    ws.edit(lambda staging: staging.write(rel, text), policy=Policy.MODEL)


def test_a_vouched_search_checks_no_file_and_a_hand_edit_waits_for_the_report(ws, refreshes, monkeypatch):
    write_topic(ws.root, "topics/a.md", [Rec("Dave runs a bike shop.", "openprogram/s1/u1")])
    _hold(ws.root, monkeypatch)
    assert search(ws.root, "bike")  # the first search checks once
    checked = len(refreshes)
    for _ in range(5):
        assert search(ws.root, "bike")
    assert len(refreshes) == checked  # nothing moved: no file was looked at
    write_topic(ws.root, "topics/b.md", [Rec("Dave keeps chickens.", "openprogram/s2/u1")])
    assert search(ws.root, "chickens") == []  # edited by hand, not reported yet
    watch._WATCHES[ws.root.resolve()].generation += 1  # the report
    assert [hit.content for hit in search(ws.root, "chickens")] == ["Dave keeps chickens."]


def test_a_transaction_of_this_process_is_seen_by_the_next_search(ws, monkeypatch):
    _hold(ws.root, monkeypatch)
    assert search(ws.root, "chickens") == []
    # even when the manifest could not be written (it is a cache)
    monkeypatch.setattr(watch, "MANIFEST", ".scriptorium/unwritable.sqlite")
    _add_through_transaction(ws, "topics/b.md", Rec("Dave keeps chickens.", "openprogram/s2/u1"))
    assert [hit.content for hit in search(ws.root, "chickens")] == ["Dave keeps chickens."]


def test_a_transaction_of_another_process_is_seen_through_the_manifest(ws, monkeypatch):
    _hold(ws.root, monkeypatch)
    assert search(ws.root, "chickens") == []
    with monkeypatch.context() as other_process:  # its installs do not touch this process's counter
        other_process.setattr(watch, "note_change", lambda root: None)
        _add_through_transaction(ws, "topics/b.md", Rec("Dave keeps chickens.", "openprogram/s2/u1"))
    assert [hit.content for hit in search(ws.root, "chickens")] == ["Dave keeps chickens."]


def test_without_a_running_watch_every_search_checks_the_files(ws, refreshes):
    assert watch.token(ws.root.resolve()) is None
    search(ws.root, "bike")
    search(ws.root, "bike")
    assert len(refreshes) == 2
    write_topic(ws.root, "topics/a.md", [Rec("Dave runs a bike shop.", "openprogram/s1/u1")])
    assert search(ws.root, "bike")  # at once


def test_the_real_watch_reports_a_hand_edit(ws):
    running = watch.start(ws.root)
    assert running is not None
    deadline = time.monotonic() + 10
    while not running.live and time.monotonic() < deadline:
        time.sleep(0.01)
    assert running.live
    assert search(ws.root, "chickens") == []
    before = running.generation
    write_topic(ws.root, "topics/b.md", [Rec("Dave keeps chickens.", "openprogram/s2/u1")])
    while running.generation == before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert running.generation > before
    assert [hit.content for hit in search(ws.root, "chickens")] == ["Dave keeps chickens."]
    settled = _quiet(running, deadline)  # (a loaded machine may deliver the write's events in two batches)
    (ws.root / ".scriptorium" / "noise").write_text("x")  # runtime state is not memory: no report
    (ws.root / ".scriptorium" / "noise").unlink()
    time.sleep(0.3)
    assert running.generation == settled


def _quiet(running, deadline: float, still: float = 0.3) -> int:
    """The watch's generation once it has not moved for ``still`` seconds (or at ``deadline``)."""
    seen, since = running.generation, time.monotonic()
    while time.monotonic() - since < still and time.monotonic() < deadline:
        time.sleep(0.01)
        if running.generation != seen:
            seen, since = running.generation, time.monotonic()
    return seen


def test_a_watch_that_cannot_run_leaves_searches_checking_the_files(ws, monkeypatch):
    import watchfiles

    def broken(*_args, **_kwargs):
        raise OSError(28, "inotify watch limit reached")
        yield  # pragma: no cover

    monkeypatch.setattr(watchfiles, "watch", broken)
    running = watch.start(ws.root)
    running._thread.join(5)
    assert not running.live and watch.token(ws.root.resolve()) is None
    write_topic(ws.root, "topics/a.md", [Rec("Dave runs a bike shop.", "openprogram/s1/u1")])
    assert search(ws.root, "bike")


@pytest.mark.parametrize("setting, watched", [(None, True), ("false", False)])
def test_a_process_that_searches_a_large_workspace_again_watches_it(ws, monkeypatch, setting, watched):
    monkeypatch.setattr(watch, "AUTO_MIN_FILES", 1)
    if setting is not None:
        monkeypatch.setenv("OPENPROGRAM_MEMORY_FS_WATCH", setting)
    write_topic(ws.root, "topics/a.md", [Rec("Dave runs a bike shop.", "openprogram/s1/u1")])
    assert search(ws.root, "bike")
    assert ws.root.resolve() not in watch._WATCHES  # one search: a one-shot process
    assert search(ws.root, "bike")
    assert (ws.root.resolve() in watch._WATCHES) is watched
