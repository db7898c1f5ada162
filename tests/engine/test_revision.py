"""The revision is exactly the specified hash, however it is computed incrementally."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from engine.helpers import make_workspace, record
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.workspace.layout import is_memory_file


def plain_revision(root: Path) -> str:
    """architecture §2.4, literally: sha256 over sorted (relpath \\0 sha256-hex(bytes) \\n) of every memory file,
    first 32 hex."""
    items = []
    for dirpath, dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel == ".":
            dirs[:] = [d for d in dirs if d not in (".git", ".scriptorium")]
        items += [path for path in (name if rel == "." else f"{rel}/{name}" for name in files)
                  if is_memory_file(path)]
    if (root / ".scriptorium/runtime.json").exists():
        items.append(".scriptorium/runtime.json")
    digest = hashlib.sha256()
    for rel in sorted(items):
        digest.update(rel.encode() + b"\0" + hashlib.sha256((root / rel).read_bytes()).hexdigest().encode() + b"\n")
    return digest.hexdigest()[:32]


def test_revision_matches_the_formula_through_edits_and_outside_changes():
    ws = make_workspace()
    for i in range(40):  # enough files to cross several saved hash states
        ws.update(changes=[{"path": f"topics/t{i:02d}.md", "content": record(f"Fact number {i}.")}])
        assert ws.revision() == plain_revision(ws.root)
    (ws.root / "topics/t05.md").write_text(ws.read_topic("topics/t05.md") + "\n")  # a hand edit, no tool
    assert ws.revision() == plain_revision(ws.root)
    (ws.root / "sources/extra.md").write_bytes(b"x" * 100_000)  # a large file
    assert ws.revision() == plain_revision(ws.root)
    (ws.root / "relations.json").unlink()
    assert ws.revision() == plain_revision(ws.root)
    (ws.root / "sources/extra.md").unlink()
    assert ws.revision() == plain_revision(ws.root)


def test_a_same_size_rewrite_within_the_timestamp_tick_is_seen():
    """A file rewritten with the same size and the same mtime (a coarse clock) still moves the revision."""
    ws = make_workspace()
    ws.update(changes=[{"path": "topics/a.md", "content": record("Fact A.")}])
    path = ws.root / "topics/a.md"
    before = ws.revision()
    st = path.stat()
    path.write_text(path.read_text().replace("Fact A.", "Fact B."))  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime (inode kept: written in place)
    assert ws.revision() != before
    assert ws.revision() == plain_revision(ws.root)


def test_only_memory_changes_move_the_revision():
    ws = make_workspace()
    ws.update(changes=[{"path": "topics/a.md", "content": record("Fact A.")}])
    before = ws.revision()
    (ws.root / ".scriptorium" / "events.jsonl").write_text("{}\n")  # runtime state: not memory
    assert ws.revision() == before
    (ws.root / "topics/a.md").write_text(ws.read_topic("topics/a.md").replace("Fact A.", "Fact A!"))
    assert ws.revision() != before


EDITOR_LEFTOVERS = ("topics/.a.md.swp", "topics/a.md~", "topics/.obsidian/workspace.json", "topics/.DS_Store",
                    ".DS_Store", "topics/team/Thumbs.db", "sources/.DS_Store", "notes.txt")


def test_what_an_editor_or_vault_app_leaves_beside_the_topics_moves_no_revision():
    """vim's swap file, Obsidian's workspace.json (rewritten on every click), .DS_Store: not memory, so a
    compare-and-set read before they appeared still applies (was CONCURRENT_UPDATE, exit 75, for no change)."""
    ws = make_workspace()
    ws.update(changes=[{"path": "topics/a.md", "content": record("Fact A.")}])
    before = ws.revision()
    for rel in EDITOR_LEFTOVERS:
        (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws.root / rel).write_bytes(os.urandom(1024))
    assert ws.revision() == before == plain_revision(ws.root)
    result = ws.update(changes=[{"path": "topics/b.md", "content": record("Fact B.")}], base_revision=before)
    assert result.revision != before
    for rel in EDITOR_LEFTOVERS:  # a leftover rewritten again, after the transaction: still not memory
        (ws.root / rel).write_bytes(os.urandom(1024))
    assert ws.revision() == result.revision
    (ws.root / "topics/b.md").write_text(ws.read_topic("topics/b.md").replace("Fact B.", "Fact C."))
    with pytest.raises(MemoryFailure) as info:  # a topic changed by hand still moves it
        ws.update(changes=[{"path": "topics/c.md", "content": record("Fact D.")}], base_revision=result.revision)
    assert info.value.code is FailureCode.CONCURRENT_UPDATE
