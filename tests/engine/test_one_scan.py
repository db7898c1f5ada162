"""One stat pass per transaction: what it derives equals what separate scans find, and the revision it reports
equals a fresh computation."""

from __future__ import annotations

import os

import pytest

from openprogram_memory.workspace import scan as scanning
from openprogram_memory.workspace.scan import TreeScan, scan, topic_files
from openprogram_memory.workspace.state import RevisionCache

from .helpers import make_workspace, record


def test_the_transactions_scan_finds_what_the_scanners_find(tmp_path):
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": "topics/a/b.md", "content": record("Dana runs a bike shop.")}])
    root = ws.root
    (root / "topics/.obsidian").mkdir()
    (root / "topics/.obsidian/workspace.md").write_text("x")
    (root / "topics/a/.draft.md").write_text("x")
    (root / "topics/a/notes.txt").write_text("x")
    (root / "topics/inside.md").symlink_to(root / "topics/a/b.md")
    outside = tmp_path / "outside.md"
    outside.write_text("# Out\n")
    (root / "topics/outside.md").symlink_to(outside)
    tree_scan = TreeScan(root)
    assert tree_scan.topics() == topic_files(root)
    assert set(tree_scan.topics()) == {"topics/a/b.md", "topics/inside.md"}
    assert tree_scan.under("sources") == {rel: sig for rel, _link, sig in scan(root, "sources")}


def test_the_revision_a_transaction_reports_is_the_revision_of_what_it_installed(tmp_path):
    ws = make_workspace(tmp_path / "state")
    texts = ["Dana runs a bike shop.", "Dana prefers metric units.", "Dana uses FastAPI for billing."]
    for i, text in enumerate(texts):
        result = ws.update(changes=[{"path": f"topics/t{i}.md", "content": record(text)}])
        assert result.revision == RevisionCache().revision(ws.root) == ws.revision()
    block_id = ws.records()[0].memory_id
    result = ws.update(memory_changes=[{"op": "delete", "memory_id": block_id}])
    assert result.revision == RevisionCache().revision(ws.root)
    os.utime(ws.root / "topics/t1.md", ns=(1, 1))  # touched outside: a new signature, the same bytes
    assert RevisionCache().revision(ws.root) == result.revision


def test_a_scan_looked_at_again_answers_as_a_new_scan(tmp_path):
    """``updated`` carries what the scan worked out (topics, sources) forward with the files looked at again."""
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": f"topics/t{n}.md", "content": record(f"Dana keeps kite {n}.")} for n in range(4)])
    root = ws.root
    (root / "sources/gone.md").write_text("x")
    before = TreeScan(root)
    before.topics(), before.under("sources")  # (worked out, as a transaction's snapshot does)
    (root / "sources/gone.md").unlink()
    (root / "topics/t0.md").write_text("# changed\n")
    (root / "topics/t1.md").unlink()
    (root / "topics/new.md").write_text("# new\n")
    (root / "topics/.hidden.md").write_text("x")
    (root / "topics/link.md").symlink_to(tmp_path / "nowhere.md")  # leads outside: not a topic
    (root / "sources/extra.md").write_text("x")
    looked = ["topics/t0.md", "topics/t1.md", "topics/new.md", "topics/.hidden.md", "topics/link.md",
              "sources/extra.md", "sources/gone.md"]
    after = before.updated(looked)
    fresh = TreeScan(root)
    assert after.topics() == fresh.topics() and after.under("sources") == fresh.under("sources")
    assert after.files == fresh.files and before.topics() != after.topics()


@pytest.mark.skipif(not scanning._BY_FD, reason="no directory descriptors on this platform")
def test_the_walk_by_directory_descriptor_finds_what_the_walk_by_path_finds(tmp_path, monkeypatch):
    """The stat pass walks by descriptor where it can; it must see the same files, follow a workspace that is itself
    a symlink (as a path would), never enter a symlinked directory below it, and leave no descriptor open."""
    real = tmp_path / "real"
    (real / "topics/a/deep").mkdir(parents=True)
    (real / "topics/a/deep/x.md").write_text("x")
    (real / "topics/.hidden").mkdir()
    (real / "topics/.hidden/h.md").write_text("h")
    (real / "sources").mkdir()
    (real / "sources/s.md").write_text("s")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/y.md").write_text("y")
    (real / "topics/linked").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "ws").symlink_to(real)
    open_before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    by_fd = sorted(scan(tmp_path / "ws"))
    monkeypatch.setattr(scanning, "_BY_FD", False)
    by_path = sorted(scan(tmp_path / "ws"))
    assert by_fd == by_path
    assert [(rel, link) for rel, link, _sig in by_fd] == [
        ("sources/s.md", False), ("topics/.hidden/h.md", False), ("topics/a/deep/x.md", False), ("topics/linked", True)]
    if open_before is not None:
        assert len(os.listdir("/proc/self/fd")) == open_before


@pytest.mark.skipif(not scanning._BY_FD, reason="no directory descriptors on this platform")
def test_a_directory_swapped_for_a_symlink_during_the_walk_is_not_entered(tmp_path, monkeypatch):
    """Between listing a directory and opening the one below, someone replaces it by a symlink to outside: the walk
    must not follow it (memory is never read from outside the workspace)."""
    (tmp_path / "ws/topics/a").mkdir(parents=True)
    (tmp_path / "ws/topics/a/x.md").write_text("x")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/secret.md").write_text("s")
    real_scandir = os.scandir

    class Swapping:  # lists the directory, then swaps "a" before the walk looks at the listing
        def __init__(self, fd):
            with real_scandir(fd) as it:
                self.entries = list(it)
            if any(e.name == "a" for e in self.entries):
                os.rename(tmp_path / "ws/topics/a", tmp_path / "ws/topics/gone")
                (tmp_path / "ws/topics/a").symlink_to(tmp_path / "outside")

        def __enter__(self):
            return iter(self.entries)

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(scanning.os, "scandir", Swapping)
    assert [rel for rel, _link, _sig in scan(tmp_path / "ws", "topics")] == []
