"""The workspace manifest: status counts from it without reading the tree, and never says what the tree does not."""

from __future__ import annotations

import hashlib
import os
import stat
import time

import pytest

from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.views.facts import tree_facts
from openprogram_memory.workspace import state as state_module
from openprogram_memory.workspace.caches import TopicCache
from openprogram_memory.workspace.manifest import Manifest
from openprogram_memory.workspace.scan import TreeScan
from openprogram_memory.workspace.state import RevisionCache

from .helpers import MESSAGES, make_workspace, record

HOUR_NS = 3600 * 10**9


@pytest.fixture
def ws(tmp_path) -> MemoryWorkspace:
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[
        {"path": "topics/core.md", "content": "# Dana\n\n" + record("Dana prefers metric units.", "openprogram/s1/u2")},
        {"path": "topics/shop.md", "content": "# Shop\n\n" + record("Dana runs a bike shop.")},
    ])
    return ws


def _facts(ws: MemoryWorkspace, budget: int = 2000):
    """What status reads, by a fresh cache (a new process)."""
    return tree_facts(ws.root, lambda: TopicCache(ws.root), budget)


def _read_from_tree(ws: MemoryWorkspace, budget: int = 2000):
    (ws.root / ".scriptorium" / "manifest.sqlite").unlink()
    return _facts(ws, budget)


def _same(a, b) -> bool:
    keep = ("topics", "records", "core_tokens", "core_budget", "core_excluded", "unreadable", "invalid")
    return all(getattr(a, k) == getattr(b, k) for k in keep)


def test_status_after_a_transaction_comes_from_the_manifest_and_matches_the_tree(ws):
    fast = _facts(ws)
    assert fast.from_manifest and (fast.topics, fast.records) == (2, 2) and fast.core_tokens > 0
    assert _same(fast, _read_from_tree(ws))
    assert stat.S_IMODE(os.stat(ws.root / ".scriptorium" / "manifest.sqlite").st_mode) == 0o600


def test_a_file_changed_outside_the_product_is_read_not_counted_from_the_manifest(ws):
    path = ws.root / "topics/shop.md"
    text, before = path.read_text(), os.stat(path)
    path.write_text(text.replace("Dana runs a bike shop.", "Dana runs a bike shop!"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, inode and mtime: within one tick
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns
    facts = _facts(ws)
    assert not facts.from_manifest
    assert _facts(ws).from_manifest  # the full read recorded the file as it is now


def test_a_file_added_or_removed_by_hand_is_noticed(ws):
    shop = ws.read_topic("topics/shop.md")  # a copy of a valid file (its block ID then appears twice)
    (ws.root / "topics/extra.md").write_text(shop)
    facts = _facts(ws)
    assert not facts.from_manifest and (facts.topics, facts.records) == (3, 3)
    (ws.root / "topics/extra.md").unlink()
    facts = _facts(ws)
    assert not facts.from_manifest and (facts.topics, facts.records) == (2, 2)


def test_a_budget_change_and_a_trust_change_are_not_answered_from_an_old_core_render(ws):
    small = _facts(ws, budget=5)
    assert not small.from_manifest and small.core_excluded  # the record does not fit 5 tokens
    assert _same(small, _read_from_tree(ws, budget=5))
    _facts(ws)  # recorded with the default budget again
    ws.trust(["openprogram/s1/u2"], "pending")
    facts = _facts(ws)
    assert facts.from_manifest and facts.core_tokens == 0  # the trust transaction recorded the new render
    assert _same(facts, _read_from_tree(ws))


def test_unreadable_and_invalid_files_are_reported_the_same_way_from_either_source(ws):
    (ws.root / "topics/bad.md").write_bytes(b"# Bad\n\n\xff\xfe not text\n")
    first = _facts(ws)
    again = _facts(ws)
    assert again.from_manifest and again.unreadable == first.unreadable and "topics/bad.md" in again.unreadable
    (ws.root / "topics/shop.md").write_text(ws.read_topic("topics/shop.md") + "\nAn uncited paragraph.\n")
    invalid = _facts(ws)
    assert "topics/shop.md" in invalid.invalid and not _facts(ws).from_manifest  # served from its commit: read


def test_a_damaged_manifest_is_replaced_and_status_still_answers(ws):
    (ws.root / ".scriptorium" / "manifest.sqlite").write_bytes(b"not a database at all" * 100)
    facts = _facts(ws)
    assert (facts.topics, facts.records) == (2, 2)
    assert _facts(ws).from_manifest
    assert ws.status()["records"] == 2


def _settle(ws: MemoryWorkspace) -> None:
    """Every memory file last changed an hour ago: past the racily clean window, as a workspace at rest."""
    old = time.time_ns() - HOUR_NS
    for path in ws.root.rglob("*"):
        if path.is_file() and ".git" not in path.parts and ".scriptorium" not in path.parts:
            os.utime(path, ns=(old, old))
    os.utime(ws.root / ".scriptorium" / "runtime.json", ns=(old, old))


def test_a_fresh_process_computes_the_revision_without_hashing_unchanged_files(ws, monkeypatch):
    _settle(ws)
    expected = RevisionCache().revision(ws.root)  # hashes every file once and keeps the digests
    hashed = []
    real = hashlib.file_digest
    monkeypatch.setattr(state_module.hashlib, "file_digest", lambda f, d: hashed.append(f.name) or real(f, d))
    assert RevisionCache().revision(ws.root) == expected
    assert hashed == []
    (ws.root / "topics/shop.md").write_text(ws.read_topic("topics/shop.md").replace("bike", "cargo bike"))
    changed = RevisionCache().revision(ws.root)
    assert changed != expected and [os.path.basename(n) for n in hashed] == ["shop.md"]
    assert Manifest(ws.root).digests()  # kept per file


def test_the_core_figures_are_kept_only_for_the_core_file_and_archives_they_were_made_from(ws):
    assert _facts(ws).from_manifest
    manifest = Manifest(ws.root)
    meta = manifest.meta("core")
    manifest.put_topics([], meta={"core": {**meta, "sha256": "0" * 64}})
    assert not _facts(ws).from_manifest  # recorded for other core bytes
    # a trust state rewritten in the archive by another program (not through `memory trust`)
    from openprogram_memory.sources.archive import SourceMessage

    path = ws.root / "sources/openprogram/_v2/s1.md"
    frame = next(m for m in MESSAGES
                 if m.source_id == "openprogram/s1/u2")
    pending = SourceMessage(frame.source_id, frame.speaker, frame.speaker_id, frame.timestamp, frame.text,
                            trust_state="pending")
    path.write_text(path.read_text().replace(frame.frame(), pending.frame()))
    facts = _facts(ws)
    assert not facts.from_manifest and facts.core_tokens == 0


def test_status_reports_the_revision_a_fresh_computation_gives(ws):
    opened = MemoryWorkspace.open(ws.settings, scan_all=True)
    assert opened.status()["revision"] == RevisionCache().revision(ws.root)
    path = ws.root / "topics/shop.md"  # edited outside: adopted (and committed) by the open, then reported
    path.write_text(path.read_text().replace("bike shop", "cargo bike shop"))
    opened = MemoryWorkspace.open(ws.settings, scan_all=True)
    status = opened.status()
    assert status["revision"] == RevisionCache().revision(ws.root)
    assert any("adopted" in w for w in status["warnings"])


def test_a_fresh_process_answers_the_revision_of_unchanged_files_without_reading_a_digest(ws, monkeypatch):
    _settle(ws)
    expected = RevisionCache().revision(ws.root)  # computes, and records it with the signatures it saw
    monkeypatch.setattr(Manifest, "digests", lambda self: (_ for _ in ()).throw(AssertionError("read digests")))
    assert RevisionCache().revision(ws.root) == expected
    path = ws.root / "topics/shop.md"
    path.write_text(path.read_text().replace("bike", "cargo bike"))  # a new signature: computed again
    monkeypatch.undo()
    assert RevisionCache().revision(ws.root) != expected
    assert RevisionCache().revision(ws.root) == ws.revision()  # (and the new one is not taken as recorded)


def test_a_revision_seen_while_a_file_was_racily_clean_is_not_reused(ws):
    path = ws.root / "topics/shop.md"
    RevisionCache().revision(ws.root)  # files written just now: not recorded as the revision of their signatures
    before = os.stat(path)
    path.write_text(path.read_text().replace("bike shop", "bike shed"))  # same size, same tick (mtime put back)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    fresh = RevisionCache()
    fresh._seed(ws.root)
    files = dict(TreeScan(ws.root).files)
    runtime = ws.root / ".scriptorium" / "runtime.json"
    st = os.stat(runtime)
    files[".scriptorium/runtime.json"] = (str(runtime), (st.st_mtime_ns, st.st_size, st.st_ino), False)
    recomputed = fresh._compute(ws.root, os.fspath(ws.root), files)  # hashing what the files hold now
    assert RevisionCache().revision(ws.root) == recomputed
