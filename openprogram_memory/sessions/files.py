"""File primitives of the session store: durable batches, index lines, the lock.

Every node or meta file is replaced atomically (temp file beside it, fsync,
``os.replace``), so a file that exists is complete. Writing many files
fsyncs them all before renaming any: interleaving fsync with file creation
makes each create wait for the journal, while concurrent fsyncs share
journal commits — bulk imports are several times faster with the same
guarantee.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ..failures import FailureCode, MemoryFailure
from ..fsutil import FILE_MODE, FileLock, atomic_write_json, fsync_dir

LOCK_TIMEOUT_SECONDS = 10.0
FSYNC_WORKERS = 8  # fsync releases the GIL; parallel fsyncs share journal commits


def _encode(data: Any) -> bytes:
    # the same bytes fsutil.atomic_write_json writes
    return (json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_files(items: list[tuple[Path, Any]], *, fsync: bool = True) -> None:
    """Atomically write each ``(path, data)`` as JSON; all paths share one directory.

    Raises ``TypeError`` (before anything is renamed) if some data is not JSON.
    """
    if len(items) == 1:
        atomic_write_json(items[0][0], items[0][1], fsync=fsync)
        return
    if not items:
        return
    directory = items[0][0].parent
    temps: list[tuple[str, Path]] = []
    try:
        for target, data in items:
            payload = _encode(data)
            fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
            temps.append((temp, target))
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
            os.chmod(temp, FILE_MODE)
        if fsync:
            from concurrent.futures import ThreadPoolExecutor  # only a many-file write pays for it

            with ThreadPoolExecutor(max_workers=FSYNC_WORKERS) as pool:
                list(pool.map(_fsync_path, [temp for temp, _ in temps]))
        for temp, target in temps:
            os.replace(temp, target)
        temps = []
        if fsync:
            fsync_dir(directory)
    finally:
        for temp, _ in temps:
            try:
                os.unlink(temp)
            except OSError:
                pass


def append_lines(path: Path, lines: list[str]) -> None:
    """Append ``lines`` in one ``write`` (callers hold the session lock; a crash tears only the last line)."""
    if not lines:
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    try:
        os.write(fd, "".join(line + "\n" for line in lines).encode("utf-8"))
    finally:
        os.close(fd)


class SessionLock:
    """The per-session writer lock; a busy lock is ``CONCURRENT_UPDATE`` (retryable)."""

    def __init__(self, lock_path: Path, session_id: str) -> None:
        self._lock = FileLock(lock_path, mode=FILE_MODE)
        self._session_id = session_id

    def __enter__(self) -> None:
        try:
            self._lock.acquire(LOCK_TIMEOUT_SECONDS)
        except TimeoutError:
            raise MemoryFailure(
                FailureCode.CONCURRENT_UPDATE,
                f"session {self._session_id!r} is locked by another writer; try again",
                retryable=True,
            ) from None

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()
