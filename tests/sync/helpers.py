"""Two workspaces (two machines) and one bare remote, all in tmp."""

from __future__ import annotations

import subprocess
from pathlib import Path

from dulwich.repo import Repo

from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace

from tests.engine.helpers import MESSAGES, record


def bare_remote(tmp_path: Path) -> str:
    path = tmp_path / "remote.git"
    Repo.init_bare(str(path), mkdir=True)
    return str(path)


def machine(tmp_path: Path, name: str, archive: bool = True) -> MemoryWorkspace:
    ws = MemoryWorkspace.open(load_settings(tmp_path / name), create=True)
    if archive:
        ws.archive(MESSAGES)
    return ws


def reopen(ws: MemoryWorkspace) -> MemoryWorkspace:
    return MemoryWorkspace.open(load_settings(ws.settings.state_dir))


def add(ws: MemoryWorkspace, path: str, text: str, source: str = "openprogram/s1/u1") -> str:
    """Append one record to ``path`` (a topic); returns its new block ID."""
    current = ws.read_topic(path) if (ws.root / path).exists() else "# " + Path(path).stem.title() + "\n"
    label = f"e{len(current)}"
    result = ws.update(changes=[{"path": path, "content": current.rstrip("\n") + "\n\n" + record(text, source, label)}])
    return result.block_ids[-1]


def memory_files(ws: MemoryWorkspace) -> dict[str, bytes]:
    """Every file git tracks in the workspace (memory/ minus runtime state)."""
    out = {}
    for path in sorted(ws.root.rglob("*")):
        rel = path.relative_to(ws.root).as_posix()
        if path.is_file() and not rel.startswith((".git/", ".scriptorium")):
            out[rel] = path.read_bytes()
    return out


def fsck(ws: MemoryWorkspace) -> None:
    subprocess.run(["git", "-C", str(ws.root), "fsck", "--strict"], check=True, capture_output=True)
