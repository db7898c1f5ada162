"""Fixtures for structured memory_changes: a workspace with archived sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram_memory.memory import MemoryWorkspace
from structured.helpers import make_workspace


@pytest.fixture
def ws(tmp_path: Path) -> MemoryWorkspace:
    """A fresh workspace under ``tmp_path/state`` with sources u1…u8 archived."""
    return make_workspace(tmp_path / "state")


@pytest.fixture
def merged(ws: MemoryWorkspace) -> tuple[str, str]:
    """A merged paragraph in ``topics/m.md``: ``(identity, alias)``, written ``^alias ^identity``."""
    ws.update(changes=[{"path": "topics/m.md", "content": "Merged.[^e1]\n\n[^e1]: Sources: [m](openprogram/s1/u1)\n"},
                       {"path": "topics/n.md", "content": "Alias.[^e1]\n\n[^e1]: Sources: [n](openprogram/s1/u2)\n"}])
    identity = next(r.memory_id for r in ws.records() if r.topic == "topics/m.md")
    alias = next(r.memory_id for r in ws.records() if r.topic == "topics/n.md")
    text = (ws.root / "topics/m.md").read_text()
    ws.update(changes=[{"path": "topics/m.md", "content": text.replace(f"^{identity}", f"^{alias} ^{identity}")},
                       {"path": "topics/n.md", "action": "delete"}])
    assert ws.get(alias)["memory_id"] == identity
    return identity, alias
