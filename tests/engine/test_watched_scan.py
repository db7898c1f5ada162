"""A transaction in a process that watches its workspace looks again only at the files the watch reported.

What must hold: the cost of the stat pass follows what changed (no full pass while the watch vouches);
a change the watch reported is seen by the next transaction; a change it has not reported yet is never
overwritten (the transaction fails with CONCURRENT_UPDATE, nothing written, and a retry sees the file);
what a path alone cannot tell (a directory moved), another process's install, this process's own changes
outside a transaction, and a forked child all fall back to a full pass.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest

from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.transaction.engine import Policy
from openprogram_memory.workspace import watch
from openprogram_memory.workspace.scan import TreeScan
from openprogram_memory.workspace.state import RevisionCache

from .helpers import make_workspace, record, tree_digest


class Journal:
    """A running watch whose reports the test makes (:meth:`report`), as the real one would after a write."""

    live = True
    generation = 1

    def __init__(self) -> None:
        self.paths: list[str] = []

    def vouching(self) -> bool:
        return True

    def position(self) -> int:
        return len(self.paths)

    def since(self, position: int) -> list[str]:
        return self.paths[position:]

    def report(self, *rels: str) -> None:
        self.paths.extend(rels)
        self.generation += 1

    def stop(self, wait: float = 1.0) -> None:
        pass


@pytest.fixture
def ws(tmp_path):
    workspace = make_workspace(tmp_path / "state")
    workspace.update(changes=[{"path": "topics/people.md", "content": record("Dana runs a bike shop.")}])
    yield workspace
    watch.stop()


@pytest.fixture
def journal(ws, monkeypatch) -> Journal:
    running = Journal()
    monkeypatch.setitem(watch._WATCHES, ws.root.resolve(), running)
    return running


@pytest.fixture
def full_passes(count_calls) -> list[int]:
    return count_calls(TreeScan, "_walk")


def _add(ws, rel: str, text: str, source: str = "openprogram/s1/u2"):
    """One record more in ``rel`` (a structured create: the file's other records stay)."""
    return ws.update(memory_changes=[{"op": "create_record", "content": text, "time": "2026-08-10",
                                      "sources": [{"source": source, "label": "note"}],
                                      "destination": {"topic_path": rel}}])


def _linking(ws, rel: str, target_file: str, block_id: str):
    return _add(ws, rel, f"The [shop]({target_file}#^{block_id}) opens at nine.")


def _hand_written(ws, rel: str, text: str) -> str:
    """Write a topic file by hand, as a person copying a record of topics/people.md would (a block ID of its
    own, the same citation); returns the ID."""
    (record_id,) = (r.memory_id for r in ws.records() if r.content == "Dana runs a bike shop.")
    block_id = "b0c0ffee"
    up = "../" * rel.count("/")
    copied = (ws.root / "topics/people.md").read_text().replace(record_id, block_id)
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(copied.replace("Dana runs a bike shop.", text).replace("](../sources/", f"]({up}sources/"))
    return block_id


def test_while_the_watch_vouches_a_transaction_makes_no_full_pass_and_reports_the_true_revision(ws, journal,
                                                                                                full_passes):
    _add(ws, "topics/work.md", "Dana uses FastAPI for billing.")  # the first pass under the watch is a full one
    passes = len(full_passes)
    for n in range(3):  # the same file each time: this process's own writes are handed over, not re-read
        result = _add(ws, "topics/work.md", f"Dana uses FastAPI for billing, version {n}.")
        assert result.revision == RevisionCache().revision(ws.root)
    assert len(full_passes) == passes


def test_a_reported_hand_edit_is_seen_by_the_next_transaction(ws, journal, full_passes):
    _add(ws, "topics/work.md", "Dana uses FastAPI for billing.")
    passes = len(full_passes)
    block_id = _hand_written(ws, "topics/places.md", "The shop is on Elm Street.")
    journal.report("topics/places.md")
    result = _linking(ws, "topics/notes.md", "places.md", block_id)  # the link resolves: the edit was seen
    assert result.revision == RevisionCache().revision(ws.root)
    assert len(full_passes) == passes


def test_a_file_changed_before_the_watch_reported_it_is_not_overwritten(ws, journal):
    """An agent read the file at a revision, a person then edits it (not reported yet), the agent writes the
    whole file at the revision it read: without the check the stale view would agree with that revision."""
    _add(ws, "topics/work.md", "Dana uses FastAPI for billing.")
    path = ws.root / "topics/work.md"
    past = time.time_ns() - 60 * 10**9
    os.utime(path, ns=(past, past))  # written a while ago (a fresh write is hashed again anyway)
    journal.report("topics/work.md")
    read_at = _add(ws, "topics/bees.md", "Dana keeps bees.").revision  # (its pass takes the report in)
    agents_copy = path.read_text()
    path.write_text(agents_copy.replace("FastAPI", "Django"))  # by hand; no report yet (~50-100 ms)
    before = tree_digest(ws.root)
    with pytest.raises(MemoryFailure) as failure:
        ws.update(changes=[{"path": "topics/work.md", "content": agents_copy.replace("FastAPI", "Flask")}],
                  base_revision=read_at)
    assert failure.value.code is FailureCode.CONCURRENT_UPDATE and failure.value.retryable
    assert "memory changed since revision" in failure.value.message  # (found when it ran once more)
    assert tree_digest(ws.root) == before  # nothing written: the person's edit stays
    assert "Django" in path.read_text()


def test_a_request_on_a_file_saved_a_moment_before_applies_to_the_file_as_saved(ws, journal):
    _add(ws, "topics/work.md", "Dana uses FastAPI for billing.")
    path = ws.root / "topics/work.md"
    path.write_text(path.read_text().replace("FastAPI", "Django"))  # by hand; no report yet
    result = _add(ws, "topics/work.md", "Dana deploys on Fridays.")  # checked, found changed, run once more
    assert result.memory_committed
    text = path.read_text()
    assert "Django" in text and "Dana deploys on Fridays." in text


def test_an_edit_that_cannot_be_run_again_reports_the_file_saved_a_moment_before(ws, journal):
    _add(ws, "topics/work.md", "Dana uses FastAPI for billing.")
    path = ws.root / "topics/work.md"
    agents_copy = path.read_text()
    path.write_text(agents_copy.replace("FastAPI", "Django"))  # by hand; no report yet
    before = tree_digest(ws.root)
    with pytest.raises(MemoryFailure) as failure:
        ws.edit(lambda staging: staging.write("topics/work.md", agents_copy.replace("FastAPI", "Flask")),
                policy=Policy.MODEL)
    assert failure.value.code is FailureCode.CONCURRENT_UPDATE and failure.value.retryable
    assert "topics/work.md changed on disk" in failure.value.message
    assert tree_digest(ws.root) == before


def test_without_a_watch_a_file_changed_during_the_edit_is_not_overwritten(ws):
    path = ws.root / "topics/people.md"

    agents_copy = path.read_text()

    def edit(staging):
        path.write_text(agents_copy.replace("bike shop", "kite shop"))  # another editor, mid-transaction
        staging.write("topics/people.md", agents_copy.replace("bike shop", "bike and tea shop"))

    before = tree_digest(ws.root)
    with pytest.raises(MemoryFailure) as failure:
        ws.edit(edit, policy=Policy.MODEL)
    assert failure.value.code is FailureCode.CONCURRENT_UPDATE
    after = tree_digest(ws.root)
    assert {rel for rel in after if after[rel] != before.get(rel)} == {"topics/people.md"}  # the person's edit only
    assert "kite shop" in path.read_text()


def test_a_directory_moved_in_makes_a_full_pass(ws, journal, full_passes, tmp_path):
    _add(ws, "topics/work.md", "Dana uses FastAPI for billing.")
    passes = len(full_passes)
    block_id = _hand_written(ws, "topics/old/places.md", "The shop is on Elm Street.")
    os.rename(ws.root / "topics/old", tmp_path / "elsewhere")
    os.rename(tmp_path / "elsewhere", ws.root / "topics/new")
    journal.report("topics/new")  # inotify names the directory moved in, not the files inside it
    _linking(ws, "topics/notes.md", "new/places.md", block_id)
    assert len(full_passes) == passes + 1


def test_a_directory_moved_away_makes_a_full_pass(ws, journal, full_passes, tmp_path):
    block_id = _hand_written(ws, "topics/old/places.md", "The shop is on Elm Street.")
    journal.report("topics/old/places.md")
    _add(ws, "topics/work.md", "Dana uses FastAPI for billing.")
    passes = len(full_passes)
    os.rename(ws.root / "topics/old", tmp_path / "elsewhere")
    journal.report("topics/old")  # only the directory is named
    with pytest.raises(MemoryFailure) as failure:
        _linking(ws, "topics/notes.md", "old/places.md", block_id)
    assert "does not resolve" in failure.value.message  # the record went with its directory
    assert len(full_passes) == passes + 1


def test_another_process_commit_makes_a_full_pass(ws, journal, full_passes):
    _add(ws, "topics/work.md", "Dana uses FastAPI for billing.")
    passes = len(full_passes)
    ws.revision()  # a read (it may write the manifest) is no reason for a full pass
    _add(ws, "topics/work.md", "Dana uses Django for billing.")
    assert len(full_passes) == passes
    block_id = _hand_written(ws, "topics/places.md", "The shop is on Elm Street.")  # its install, unreported
    index = ws.root / ".git/index"
    shutil.copyfile(index, index.with_suffix(".lock"))
    os.replace(index.with_suffix(".lock"), index)  # and its commit (the index is rewritten as a new file)
    _linking(ws, "topics/notes.md", "places.md", block_id)
    assert len(full_passes) == passes + 1


def test_this_process_changes_outside_a_transaction_are_looked_at(ws, journal, full_passes):
    from openprogram_memory.sources.archive import SourceMessage

    _add(ws, "topics/work.md", "Dana uses FastAPI for billing.")
    passes = len(full_passes)
    ws.archive([SourceMessage("openprogram/s2/u1", "Dana", "user-1", "2026-08-12T09:00:00+08:00",
                              "I keep bees.")])  # appended outside a transaction, unreported: handed over by name
    result = _add(ws, "topics/bees.md", "Dana keeps bees.", "openprogram/s2/u1")  # (a pass without it: append-only)
    assert result.revision == RevisionCache().revision(ws.root)
    assert len(full_passes) == passes  # the writer archives before every pass: no full pass for it
    ws.archive([SourceMessage("openprogram/s3/u1", "Dana", "user-1", "2026-08-12T10:00:00+08:00",
                              "I keep a third hive.")])  # a new thread: a new archive directory
    result = _add(ws, "topics/bees.md", "Dana keeps a third hive.", "openprogram/s3/u1")
    assert result.revision == RevisionCache().revision(ws.root) and len(full_passes) == passes
    watch.note_change(ws.root)  # (what a recovery says, with nothing committed)
    _add(ws, "topics/bees.md", "Dana keeps two hives.", "openprogram/s2/u1")
    assert len(full_passes) == passes + 1
    watch.note_change(ws.root)
    ws.archive([SourceMessage("openprogram/s2/u2", "Dana", "user-1", "2026-08-12T11:00:00+08:00",
                              "I sell honey.")])  # a pass already stale is not handed over: still a full pass
    _add(ws, "topics/bees.md", "Dana sells honey.", "openprogram/s2/u2")
    assert len(full_passes) == passes + 2


def test_a_forked_child_does_not_trust_its_parents_watch(ws):
    running = watch.start(ws.root)
    deadline = time.monotonic() + 10
    while not running.live and time.monotonic() < deadline:
        time.sleep(0.01)
    assert running.vouching() and watch.token(ws.root.resolve()) is not None
    running.pid = -1  # what a child of fork() holds: the object, not the thread
    assert not running.vouching() and watch.token(ws.root.resolve()) is None


def test_the_real_watch_reports_a_hand_edit_to_the_next_transaction(ws, full_passes):
    running = watch.start(ws.root)
    deadline = time.monotonic() + 10
    while not running.live and time.monotonic() < deadline:
        time.sleep(0.01)
    _add(ws, "topics/work.md", "Dana uses FastAPI for billing.")
    passes = len(full_passes)
    at = running.position()
    block_id = _hand_written(ws, "topics/places.md", "The shop is on Elm Street.")
    while "topics/places.md" not in (running.since(at) or []) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "topics/places.md" in running.since(at)
    _linking(ws, "topics/notes.md", "places.md", block_id)
    assert len(full_passes) == passes


def test_a_long_lived_process_starts_a_watch_of_a_large_workspace(tmp_path, monkeypatch):
    monkeypatch.setattr(watch, "AUTO_MIN_FILES", 1)
    try:
        quiet = make_workspace(tmp_path / "quiet", **{"memory.fs_watch": "false"})
        for n in range(3):
            _add(quiet, f"topics/t{n}.md", f"Dana keeps kite {n}.")
        assert quiet.root.resolve() not in watch._WATCHES
        busy = make_workspace(tmp_path / "busy")
        _add(busy, "topics/t0.md", "Dana keeps a kite.")
        assert busy.root.resolve() not in watch._WATCHES  # one pass over a small tree: a one-shot process
        for n in range(1, 3):
            _add(busy, f"topics/t{n}.md", f"Dana keeps kite {n}.")
        assert busy.root.resolve() in watch._WATCHES
    finally:
        watch.stop()


def test_a_pass_looked_at_again_by_reported_paths_answers_as_a_new_pass(ws):
    root = ws.root
    before = TreeScan(root)
    before.topics(), before.under("sources")
    (root / "topics/people.md").write_text("# changed\n")
    (root / "topics/new.md").write_text("# new\n")
    after = before.reported(["topics/people.md", "topics/new.md", "topics/gone.md"])
    assert after is not None and after.files == TreeScan(root).files and after.topics() == TreeScan(root).topics()
    (root / "topics/dir").mkdir()
    assert before.reported(["topics/dir"]) is None  # made here: what is inside was never reported
    (root / "topics/sub").mkdir()
    (root / "topics/sub/x.md").write_text("# x\n")
    with_sub = TreeScan(root)
    (root / "topics/sub/x.md").unlink()
    (root / "topics/sub").rmdir()
    assert with_sub.reported(["topics/sub"]) is None  # removed (or renamed away): its files went with it


def test_only_a_transaction_keeps_its_pass(ws, journal):
    """A read (a revision, a sleep's check) runs outside the write lock and may walk the tree while an install is
    half done: the next transaction must not start from such a pass, only from the last transaction's."""
    _add(ws, "topics/work.md", "Dana uses FastAPI for billing.")
    kept = watch._PASSES[ws.root.resolve()].scan
    _hand_written(ws, "topics/places.md", "The shop is on Elm Street.")
    journal.report("topics/places.md")
    read = watch.tree_scan(ws.root, keep=False)
    assert "topics/places.md" in read.files  # the read sees the report
    assert watch._PASSES[ws.root.resolve()].scan is kept
