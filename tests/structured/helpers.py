"""Helpers for structured memory_changes tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openprogram_memory.config import load_settings
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.memory import MemoryWorkspace

from engine.helpers import tree_digest  # noqa: F401 (one digest for every "no byte changed" test: the read cache left out)

SOURCES = [f"openprogram/s1/u{n}" for n in range(1, 9)]


def make_workspace(state: Path) -> MemoryWorkspace:
    """A fresh workspace whose archive holds ``openprogram/s1/u1`` … ``u8``."""
    workspace = MemoryWorkspace.open(load_settings(state), create=True)
    workspace.archive([
        SourceMessage(source, "Dana", "dana", f"2026-08-{n:02d}T10:00:00+00:00", f"message {n}")
        for n, source in enumerate(SOURCES, start=1)
    ])
    workspace.rebuild()  # commits the archive append, so later byte comparisons see only the edit
    return workspace


def dest(topic: str = "topics/t.md", headings: tuple[str, ...] = (), position: str = "end",
         anchor: str | None = None) -> dict[str, Any]:
    """A destination object."""
    out: dict[str, Any] = {"topic_path": topic, "headings": list(headings), "position": position}
    if anchor is not None:
        out["anchor_memory_id"] = anchor
    return out


def create_op(content: str, *, topic: str = "topics/t.md", headings: tuple[str, ...] = (), position: str = "end",
              anchor: str | None = None, sources: tuple[tuple[str, str], ...] = ((SOURCES[0], "first"),),
              time: str | None = "2026-08-01") -> dict[str, Any]:
    """A create_record op."""
    return {"op": "create_record", "content": content, "time": time,
            "sources": [{"source": s, "label": label} for s, label in sources],
            "destination": dest(topic, headings, position, anchor)}


def create(ws: MemoryWorkspace, content: str, **kwargs: Any) -> str:
    """Create one record; return its block ID."""
    result = ws.update(memory_changes=[create_op(content, **kwargs)])
    (created,) = result.extra["created"]
    return created["memory_id"]


def topic_text(ws: MemoryWorkspace, rel: str) -> str:
    return (ws.root / rel).read_text(encoding="utf-8")
