"""``sleep`` with nothing changed since the last organize plans nothing and opens no transaction.

What must hold: the answer is the tree's true revision; any change since the
organize — a hand edit, even one that keeps a file's size and timestamp, a
write, an interrupted transaction — sends the sleep down the full path; in a
process that watches the root the check costs no stat pass until the watch
reports something.
"""

from __future__ import annotations

import os
import re
import time

import pytest

from openprogram_memory.organizer import reorganize
from openprogram_memory.organizer import sleep as sleep_module
from openprogram_memory.workspace import watch

from .helpers import archive, topic, workspace

KITE = "Dana keeps a blue kite in the garden shed."


def _organized(tmp_path):
    ws = workspace(tmp_path / "state")
    ids = archive(ws, 4)
    ws.update(changes=[
        {"path": "topics/a.md", "content": topic([(KITE, ids[0])])},
        {"path": "topics/b.md", "content": topic([("Dana rides her bike to work every Friday.", ids[1])])},
    ])
    first = reorganize(ws)
    return ws, ids, first


def _copy_by_hand(ws, source: str = "a.md", target: str = "c.md") -> None:
    """What a person does in another editor: a record copied into a new file under a new block ID."""
    text = (ws.root / "topics" / source).read_text(encoding="utf-8")
    (ws.root / "topics" / target).write_text(re.sub(r"\^[0-9a-f]{8}\b", "^0badcafe", text), encoding="utf-8")


def _no_transaction(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("a sleep with nothing changed ran a transaction")

    monkeypatch.setattr(sleep_module, "run_request", refuse)


def test_a_second_sleep_runs_no_transaction_and_reports_the_revision(tmp_path, monkeypatch):
    ws, _ids, first = _organized(tmp_path)
    _no_transaction(monkeypatch)
    again = reorganize(ws)
    assert again["revision"] == first["revision"] == ws.revision()
    assert again["changed_files"] == [] and again["merged"] == 0 and again["actions"] == []
    monkeypatch.undo()
    through_a_transaction = reorganize(ws, full=True)  # (compares every pair: a transaction that changes nothing)
    assert through_a_transaction["changed_files"] == [] and again.keys() == through_a_transaction.keys()


def test_a_hand_made_duplicate_is_merged_by_the_next_sleep(tmp_path):
    ws, ids, _first = _organized(tmp_path)
    _copy_by_hand(ws)
    report = reorganize(ws)
    assert report["merged"] == 1 and len(ws.records()) == 2


def test_an_edit_that_keeps_size_and_timestamp_is_not_taken_for_organized(tmp_path):
    ws, _ids, first = _organized(tmp_path)
    path = ws.root / "topics" / "a.md"
    before = os.stat(path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("blue", "gray"), encoding="utf-8")  # same size, same inode
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # … and the timestamp put back
    assert os.stat(path).st_size == before.st_size and os.stat(path).st_ino == before.st_ino
    report = reorganize(ws)
    assert report["revision"] != first["revision"]
    assert report["revision"] == ws.revision()


def test_an_interrupted_transaction_is_recovered_not_skipped(tmp_path, monkeypatch):
    ws, _ids, _first = _organized(tmp_path)
    calls = []
    real = sleep_module.run_request
    monkeypatch.setattr(sleep_module, "run_request", lambda *a, **k: calls.append(1) or real(*a, **k))
    ws.layout.install_dir.mkdir(parents=True, exist_ok=True)  # what a process killed mid-install leaves
    reorganize(ws)
    assert calls == [1] and not ws.layout.install_dir.exists()


def test_a_write_since_the_organize_is_organized(tmp_path):
    ws, ids, _first = _organized(tmp_path)
    ws.update(changes=[{"path": "topics/c.md", "content": topic([(KITE, ids[2])])}])
    assert reorganize(ws)["merged"] == 1


@pytest.fixture
def watched(tmp_path):
    ws, ids, first = _organized(tmp_path)
    watch.start(ws.root)
    deadline = time.monotonic() + 10
    while watch.token(ws.root.resolve()) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert watch.token(ws.root.resolve()) is not None
    yield ws, ids, first
    watch.stop()


def _settle(root, seconds: float = 0.3) -> None:
    """Wait until the watch has reported what happened so far (its token holds still)."""
    token, deadline = watch.token(root), time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(seconds)
        now = watch.token(root)
        if now == token:
            return
        token = now


def test_a_watched_process_checks_no_file_until_the_watch_reports(watched, monkeypatch):
    ws, ids, first = watched
    _settle(ws.root.resolve())
    assert reorganize(ws)["revision"] == first["revision"]  # checked once by stat pass, then vouched for
    scans = []
    real = sleep_module.revision_files
    monkeypatch.setattr(sleep_module, "revision_files", lambda *a, **k: scans.append(1) or real(*a, **k))
    assert reorganize(ws)["revision"] == first["revision"]
    assert scans == []
    _copy_by_hand(ws)
    _settle(ws.root.resolve())
    assert reorganize(ws)["merged"] == 1 and scans
