"""Small file-system helpers: atomic writes with fsync, private modes."""

from __future__ import annotations

import json
import marshal
import os
import shlex
from pathlib import Path
from typing import Any, Callable, TypeVar

T = TypeVar("T")

DIR_MODE = 0o700
FILE_MODE = 0o600


def shell_args(*args: object) -> str:
    """``args`` (paths, words) as they must be typed in a shell command a fix suggests: each quoted where it needs it
    (``rm '/m/topics/alice copy.md'``, never ``rm /m/topics/alice copy.md``, which removes ``copy.md`` too)."""
    return " ".join(shlex.quote(str(arg)) for arg in args)


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


def marshalled(cache: Path, build: Callable[[], T], usable: Callable[[Any], bool]) -> T:
    """``build()`` (plain data: dicts, lists, strings, bytes, numbers), kept in the file ``cache`` as marshal for
    the next process: read from there when it is there and ``usable``, else built and saved again.

    For data derived from a file the package ships, slow to decode from its own format (JSON, base64) and fast
    to read as marshal; ``cache``'s name says which version of that file and of Python it holds. A cache that
    cannot be written (a read-only home) only costs speed; ``build``'s errors are the caller's.
    """
    try:
        value = marshal.loads(cache.read_bytes())
        if usable(value):
            return value
    except (OSError, ValueError, EOFError, TypeError):
        pass
    value = build()
    try:
        atomic_write_bytes(cache, marshal.dumps(value), fsync=False)  # type: ignore[arg-type]  # (plain data)
    except (OSError, ValueError):  # (ValueError: a value marshal cannot write)
        pass
    return value


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


class FileLock:
    """An exclusive lock shared by processes, on a lock file beside what it guards.

    ``fcntl.flock`` on POSIX — what ``filelock.UnixFileLock`` does, polled the
    same way — without importing ``filelock`` (25 ms of inspect, logging, ast…
    at the start of every writing command and hook); ``filelock`` where there
    is no ``fcntl``. Reentrant per object, like ``filelock``'s locks: the
    caller keeps its threads apart. The kernel drops the lock when the
    process dies.
    """

    def __init__(self, path: str | Path, mode: int = FILE_MODE, poll: float = 0.05) -> None:
        self.path, self.mode, self.poll = os.fspath(path), mode, poll
        self._fd: int | None = None
        self._count = 0
        self._fallback: Any = None

    def acquire(self, timeout: float) -> None:
        """Take the lock, waiting up to ``timeout`` seconds; ``TimeoutError`` if it stays busy."""
        if self._count:
            self._count += 1
            return
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            self._acquire_fallback(timeout)
            self._count = 1
            return
        import time

        deadline = time.monotonic() + max(timeout, 0)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, self.mode)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise TimeoutError(f"{self.path} is locked") from None
                time.sleep(self.poll)
                continue
            if os.fstat(fd).st_nlink == 0:  # the file was removed while we waited: the lock is the new file's
                os.close(fd)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, self.mode)
                continue
            self._fd, self._count = fd, 1
            return

    def _acquire_fallback(self, timeout: float) -> None:  # pragma: no cover - not POSIX
        import filelock

        self._fallback = filelock.FileLock(self.path, mode=self.mode, thread_local=False)
        try:
            self._fallback.acquire(timeout=timeout)
        except filelock.Timeout:
            raise TimeoutError(f"{self.path} is locked") from None

    def release(self) -> None:
        if not self._count:
            return
        self._count -= 1
        if self._count:
            return
        if self._fallback is not None:  # pragma: no cover - not POSIX
            self._fallback.release()
            self._fallback = None
        elif self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    @property
    def is_locked(self) -> bool:
        return self._count > 0
