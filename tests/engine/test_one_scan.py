"""One stat pass per transaction: what it derives equals what separate scans find, and the revision it reports
equals a fresh computation."""

from __future__ import annotations

import os

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
    assert tree_scan.under("sources") == {rel: sig for rel, _entry, sig in scan(root, "sources")}


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
