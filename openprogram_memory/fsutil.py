"""Small file-system helpers: atomic writes with fsync, private modes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

DIR_MODE = 0o700
FILE_MODE = 0o600


def ensure_dir(path: Path) -> Path:
    """Create ``path`` and every missing parent with mode 0700.

    (``Path.mkdir(parents=True, mode=…)`` gives the mode to the last
    directory only; the parents it makes get the umask's 0755.)
    """
    missing = []
    current = Path(path)
    while not current.is_dir() and current != current.parent:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise
    return path


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, *, fsync: bool = True, mode: int = FILE_MODE) -> None:
    """Write ``data`` to a unique temp file beside ``path``, fsync, replace (the file gets ``mode``)."""
    ensure_dir(path.parent)
    import tempfile  # (its import costs more than most verbs that never write)

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: Path, text: str, *, fsync: bool = True, mode: int = FILE_MODE) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync, mode=mode)


def atomic_write_json(path: Path, data: Any, *, fsync: bool = True) -> None:
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n", fsync=fsync)


def read_json(path: Path, default: Any = None) -> Any:
    """Load JSON, or ``default`` when missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line (O_APPEND, so concurrent appenders don't interleave)."""
    ensure_dir(path.parent)
    line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
