"""Building small workspaces for engine tests."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from openprogram_memory.config import load_settings
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.memory import MemoryWorkspace

MESSAGES = [
    SourceMessage("openprogram/s1/u1", "Dana", "user-1", "2026-08-09T10:00:00+08:00", "I run a bike shop."),
    SourceMessage("openprogram/s1/u2", "Dana", "user-1", "2026-08-10T09:00:00+08:00", "Always answer in metric units."),
    SourceMessage("openprogram/s1/u3", "Dana", "user-1", "2026-08-11T09:00:00+08:00", "We use FastAPI for billing."),
]


def make_workspace(state: Path | None = None, **overrides) -> MemoryWorkspace:
    settings = load_settings(state, overrides or None)
    ws = MemoryWorkspace.open(settings, create=True)
    ws.archive(MESSAGES)
    return ws


def record(text: str, source: str = "openprogram/s1/u1", label: str = "e1", keyword: str = "note") -> str:
    """A writer-style record: normalization turns it into the canonical form."""
    return f"{text}[^{label}]\n\n[^{label}]: Sources: [{keyword}]({source})\n"


def linked_pair(ws: MemoryWorkspace) -> str:
    """topics/people.md holds a record that topics/work.md links to; returns the linked block ID."""
    ws.update(changes=[{"path": "topics/people.md", "content": record("Dana runs a bike shop.")}])
    target = ws.records()[0].memory_id
    ws.update(changes=[{"path": "topics/work.md",
                        "content": record(f"The [shop](people.md#^{target}) opens at nine.", "openprogram/s1/u2")}])
    return target


def tree_digest(root: Path) -> dict[str, str]:
    """Every byte of the workspace except runtime locks: {relpath: sha256}."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if rel.endswith("write.lock") or rel.startswith(".scriptorium/manifest.sqlite"):  # a cache of reads
                continue
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out
