"""A snapshot that finds every file as the last transaction left it is that transaction's tree (no file looked up
again); anything that moved since — a hand edit, a source appended by another process — is read."""

from __future__ import annotations

from .helpers import make_workspace, record


def _workspace(tmp_path):
    ws = make_workspace(tmp_path / "state")
    installed = ws.update(changes=[{"path": "topics/shop.md",
                                    "content": "# Shop\n\n" + record("Dana runs a bike shop in Oslo.")}]).tree
    return ws, installed


def test_nothing_moved_since_the_transaction_is_its_tree(tmp_path):
    ws, installed = _workspace(tmp_path)
    assert installed is not None and ws.cache.snapshot() is installed
    assert ws.cache.snapshot() is installed


def test_a_hand_edit_after_a_transaction_is_what_the_next_snapshot_reads(tmp_path):
    ws, _installed = _workspace(tmp_path)
    ws.cache.snapshot()
    path = ws.root / "topics" / "shop.md"
    path.write_text(path.read_text(encoding="utf-8").replace("Oslo", "Bergen"), encoding="utf-8")  # another editor
    (record_,) = ws.cache.snapshot().files["topics/shop.md"].records
    assert "Bergen" in record_.content and "Oslo" not in record_.content
