"""Staging and scratch directories in the system temp dir, named so the workspace finds its own.

``openprogram-memory-<kind>-<workspace key>-<pid>-<random>``: the key is a
digest of the workspace path, the pid the owner's. A process killed while
it held one leaves it behind; the next open removes every directory of
this workspace whose owner is gone (a kept draft of ``memory edit`` is
marked with :data:`KEEP` and stays for its person).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "openprogram-memory-"
KINDS = ("stage", "edit")
KEEP = ".keep"


def workspace_key(root: Path) -> str:
    return hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:12]


def make_scratch(root: Path, kind: str) -> Path:
    """A new private directory of ``kind`` for the workspace at ``root``."""
    if kind not in KINDS:
        raise ValueError(kind)
    directory = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{workspace_key(root)}-{os.getpid()}-"))
    os.chmod(directory, 0o700)
    return directory


def keep(directory: Path) -> None:
    """Mark a scratch directory as holding something for a person (never reclaimed)."""
    (directory / KEEP).touch(mode=0o600)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reclaim(root: Path) -> list[str]:
    """Remove this workspace's scratch directories whose owner process is gone; return their names."""
    key = workspace_key(root)
    base = Path(tempfile.gettempdir())
    removed: list[str] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not name.startswith(PREFIX):
            continue
        parts = name[len(PREFIX):].split("-")
        if len(parts) < 4 or parts[0] not in KINDS or parts[1] != key or not parts[2].isdigit():
            continue
        if _alive(int(parts[2])) or not entry.is_dir(follow_symlinks=False):
            continue
        if os.path.exists(os.path.join(entry.path, KEEP)):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(name)
    return removed
