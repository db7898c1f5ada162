"""Helpers for organizer tests: the seeded messy workspace and small builders."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

from openprogram_memory.config import load_settings
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.memory import MemoryWorkspace

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "workspaces" / "messy.py"


def load_messy():
    """The ``fixtures/workspaces/messy.py`` builder module."""
    spec = importlib.util.spec_from_file_location("messy_workspace_fixture", FIXTURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def workspace(state: Path) -> MemoryWorkspace:
    return MemoryWorkspace.open(load_settings(state), create=True)


def archive(ws: MemoryWorkspace, count: int, thread: str = "t") -> list[str]:
    """Archive ``count`` messages ``openprogram/<thread>/m<n>``; return their ids."""
    messages = [SourceMessage(f"openprogram/{thread}/m{n}", "Dana", "dana", f"2026-07-{1 + n % 28:02d}T09:00:00+00:00",
                              f"message {n}") for n in range(count)]
    ws.archive(messages)
    return [m.source_id for m in messages]


def topic(lines: list[tuple[str, str | None]]) -> str:
    """Markdown from ``(text, source id)`` lines; a None source makes the text a raw line (a heading)."""
    body, defs = [], []
    for text, source in lines:
        if source is None:
            body += [text, ""]
            continue
        n = len(defs) + 1
        body += [f"{text}[^n{n}]", ""]
        defs.append(f"[^n{n}]: Sources: [said]({source})")
    return "\n".join(body + defs) + "\n"


def digest(root: Path, under: str = "") -> dict[str, str]:
    out = {}
    base = root / under if under else root
    for dirpath, _dirs, files in os.walk(base):
        for name in files:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if not rel.endswith("write.lock") and not rel.startswith(".scriptorium/manifest.sqlite"):  # (caches)
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out
