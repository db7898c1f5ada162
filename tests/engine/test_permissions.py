"""Memory is the owner's alone (architecture §1): directories 0700, files 0600, git history and locks included."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from engine.helpers import make_workspace, record


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_every_directory_and_file_of_a_used_workspace_is_owner_only(tmp_path):
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": "topics/people/dana.md", "content": record("Dana runs a bike shop.")}])
    assert (ws.root / "timeline").is_dir() and ws.layout.lock_file.exists()
    assert _mode(ws.root / ".git") == 0o700
    for directory in [ws.root, *(p for p in ws.root.rglob("*") if p.is_dir() and ".git" not in p.parts)]:
        assert _mode(directory) == 0o700, directory
    for path in (p for p in ws.root.rglob("*") if p.is_file() and ".git" not in p.parts):
        assert _mode(path) == 0o600, path


def test_an_older_workspace_with_an_open_git_directory_is_closed_on_open(tmp_path):
    from openprogram_memory.config import load_settings
    from openprogram_memory.memory import MemoryWorkspace

    ws = make_workspace(tmp_path / "state")
    os.chmod(ws.root / ".git", 0o755)
    MemoryWorkspace.open(load_settings(tmp_path / "state"))
    assert _mode(ws.root / ".git") == 0o700
