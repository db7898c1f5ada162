"""Runtime state (``runtime.json``), the workspace revision, and the write lock."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

from filelock import FileLock, Timeout

from ..failures import FailureCode, MemoryFailure
from ..fsutil import atomic_write_text, ensure_dir, read_json
from .layout import RUNTIME, SCRIPTORIUM, Layout

RUNTIME_VERSION = 1


@dataclass
class RuntimeState:
    """``runtime.json``: creation order and organize counters.

    An unreadable file loads as defaults (the order is then rebuilt from
    file order by the next transaction).
    """

    version: int = RUNTIME_VERSION
    created_order: dict[str, int] = field(default_factory=dict)
    next_order: int = 0
    batches_since_organize: int = 0
    tokens_since_organize: int = 0
    writes_since_global: int = 0
    last_global_at: str | None = None
    last_local_at: str | None = None
    last_write_at: str | None = None

    @classmethod
    def load(cls, layout: Layout) -> "RuntimeState":
        data = read_json(layout.path(RUNTIME), None)
        if not isinstance(data, dict):
            return cls()
        state = cls()
        for key, value in data.items():
            if hasattr(state, key):
                setattr(state, key, value)
        if not isinstance(state.created_order, dict):
            state.created_order = {}
        return state

    def to_text(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"

    def assign_order(self, block_ids: list[str]) -> None:
        for block_id in block_ids:
            if block_id not in self.created_order:
                self.created_order[block_id] = self.next_order
                self.next_order += 1


def workspace_id(layout: Layout) -> str:
    """``w-`` + 8 hex, created once per workspace."""
    path = layout.state("workspace-id")
    try:
        value = path.read_text().strip()
        if value.startswith("w-") and len(value) == 10:
            return value
    except OSError:
        pass
    value = "w-" + secrets.token_hex(4)
    atomic_write_text(path, value + "\n")
    return value


class RevisionCache:
    """File bytes by signature, so a revision rereads only what changed."""

    def __init__(self) -> None:
        self._bytes: dict[str, tuple[tuple[int, int, int], bytes]] = {}
        self._lock = threading.Lock()

    def revision(self, root: Path) -> str:
        """First 32 hex of sha256 over sorted ``(relpath \\0 bytes \\0)``.

        Every file except ``.git/`` and ``.scriptorium/``, but including
        ``.scriptorium/runtime.json``.
        """
        paths: list[str] = []
        for dirpath, dirs, files in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root)
            if rel_dir == ".":
                dirs[:] = [d for d in dirs if d not in (".git", SCRIPTORIUM)]
            for name in files:
                rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
                paths.append(rel)
        if (root / RUNTIME).is_file():
            paths.append(RUNTIME)
        digest = hashlib.sha256()
        seen: set[str] = set()
        for rel in sorted(paths):
            data = self._read(root, rel)
            if data is None:
                continue
            seen.add(rel)
            digest.update(rel.encode("utf-8") + b"\0" + data + b"\0")
        with self._lock:
            for stale in set(self._bytes) - seen:
                if stale.startswith(str(root)):
                    self._bytes.pop(stale, None)
        return digest.hexdigest()[:32]

    def _read(self, root: Path, rel: str) -> bytes | None:
        path = root / rel
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return None
        key = f"{root}\0{rel}"
        sig = (st.st_mtime_ns, st.st_size, st.st_ino)
        with self._lock:
            hit = self._bytes.get(key)
        if hit and hit[0] == sig:
            return hit[1]
        try:
            data = path.read_bytes() if not path.is_symlink() else os.readlink(path).encode()
        except OSError:
            return None
        with self._lock:
            self._bytes[key] = (sig, data)
        return data


REVISIONS = RevisionCache()

# One FileLock object per lock path in this process: filelock's locks are
# reentrant per object, so a writer pass that holds the lock can run the
# transaction inside it.
# A thread lock beside it keeps threads of one process (the HTTP server)
# apart too.
_LOCKS: dict[str, tuple[threading.RLock, FileLock]] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(path: Path) -> tuple[threading.RLock, FileLock]:
    key = str(path)
    with _LOCKS_GUARD:
        pair = _LOCKS.get(key)
        if pair is None:
            pair = _LOCKS[key] = (threading.RLock(), FileLock(key, thread_local=False))
        return pair


@contextmanager
def write_lock(layout: Layout, timeout: float) -> Iterator[None]:
    """The cross-process write lock; busy past ``timeout`` → CONCURRENT_UPDATE."""
    ensure_dir(layout.scriptorium)
    thread_lock, file_lock = _lock_for(layout.lock_file)
    busy = MemoryFailure(
        FailureCode.CONCURRENT_UPDATE,
        f"another writer holds {layout.lock_file} (waited {timeout:g}s); try again",
        retryable=True,
    )
    if not thread_lock.acquire(timeout=max(timeout, 0)):
        raise busy
    try:
        try:
            file_lock.acquire(timeout=timeout)
        except Timeout:
            raise busy from None
        try:
            yield
        finally:
            file_lock.release()
    finally:
        thread_lock.release()
