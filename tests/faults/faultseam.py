"""The fault seam: count file-system mutations under a root, SIGKILL before the N-th.

Test-only. It is switched on either by ``seam/sitecustomize.py`` (a spawned
process with ``seam/`` on ``PYTHONPATH`` and ``OPM_FAULT_ROOT`` set) or by
calling :func:`install` in a forked child. A mutation is what a crash can
interrupt: an open for writing, ``os.write``, ``os.fsync``, a rename or
replace, mkdir, chmod, remove/unlink, rmdir, truncate, link/symlink, utime.
Audit hooks fire *before* the operation runs, so a kill at event N leaves
the file system exactly as events 0..N-1 made it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

ENV_ROOT = "OPM_FAULT_ROOT"
ENV_KILL_AT = "OPM_FAULT_KILL_AT"
ENV_RECORD = "OPM_FAULT_RECORD"

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_PATH_EVENTS = {
    # event: (index of the path argument, index of its dir_fd argument or None)
    "os.rename": (0, 2),  # os.replace raises os.rename too
    "os.mkdir": (0, 2),
    "os.chmod": (0, 2),
    "os.remove": (0, 1),  # os.unlink too
    "os.rmdir": (0, 1),
    "os.truncate": (0, None),
    "os.link": (1, 3),
    "os.symlink": (1, 2),
    "os.utime": (0, 3),
    "os.chown": (0, 4),
}


class Seam:
    """One armed seam: a counter, an optional kill point, an optional log."""

    def __init__(self, root: str, kill_at: int | None = None, record: str | None = None) -> None:
        self.root = os.path.realpath(root)
        self.prefix = self.root + os.sep
        self.kill_at = kill_at
        self.record = record
        self.count = 0
        self.log: list[str] = []
        self.active = True
        self._lock = threading.RLock()
        self._busy = threading.local()

    # -- resolving what an event touches --------------------------------
    def _fd_path(self, fd: int) -> str | None:
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None

    def _resolve(self, path, dir_fd=None) -> str | None:
        if isinstance(path, int):
            return self._fd_path(path)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            try:
                path = os.fspath(path)
            except TypeError:
                return None
        if not os.path.isabs(path):
            base = self._fd_path(dir_fd) if isinstance(dir_fd, int) and dir_fd >= 0 else os.getcwd()
            if base is None:
                return None
            path = os.path.join(base, path)
        parent, name = os.path.split(path)
        # resolve the parent only: the target itself may be a symlink being replaced
        return os.path.join(os.path.realpath(parent), name)

    def hit(self, kind: str, path: str | None) -> None:
        if not self.active or path is None or not (path == self.root or path.startswith(self.prefix)):
            return
        with self._lock:
            index = self.count
            self.count += 1
            if self.record is not None:
                self.log.append(f"{kind} {os.path.relpath(path, self.root)}")
            if self.kill_at is not None and index == self.kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    # -- the hooks --------------------------------------------------------
    def audit(self, event: str, args: tuple) -> None:
        if getattr(self._busy, "on", False) or not self.active:
            return
        if event == "open":
            path, mode, flags = (args + (None, None, None))[:3]
            writing = (isinstance(flags, int) and flags & _WRITE_FLAGS) or (
                isinstance(mode, str) and any(c in mode for c in "wax+"))
            if not writing or isinstance(path, int):
                return
            spec = (path, None)
        elif event in _PATH_EVENTS:
            where, fd_at = _PATH_EVENTS[event]
            spec = (args[where], args[fd_at] if fd_at is not None and fd_at < len(args) else None)
        else:
            return
        self._busy.on = True
        try:
            self.hit(event, self._resolve(*spec))
        finally:
            self._busy.on = False

    def wrap_fd_call(self, name: str):
        original = getattr(os, name)

        def wrapper(fd, *args, **kwargs):
            if self.active and not getattr(self._busy, "on", False):
                self._busy.on = True
                try:
                    self.hit(f"os.{name}", self._fd_path(fd))
                finally:
                    self._busy.on = False
            return original(fd, *args, **kwargs)

        wrapper.__wrapped__ = original
        setattr(os, name, wrapper)

    def dump(self) -> None:
        """Write the mutation log (record mode); the seam goes quiet first."""
        self.active = False
        if self.record is not None:
            with open(self.record, "w", encoding="utf-8") as handle:
                json.dump(self.log, handle)


_SEAM: Seam | None = None


def install(root: str, kill_at: int | None = None, record: str | None = None) -> Seam:
    """Arm the seam in this process (once)."""
    global _SEAM
    if _SEAM is not None:
        raise RuntimeError("fault seam already installed")
    seam = Seam(root, kill_at, record)
    sys.addaudithook(seam.audit)
    for name in ("write", "fsync", "fdatasync", "ftruncate"):
        seam.wrap_fd_call(name)
    _SEAM = seam
    return seam


def install_from_env() -> Seam | None:
    """Arm from ``OPM_FAULT_*``; the variables are removed so child processes (an editor) run unarmed."""
    root = os.environ.pop(ENV_ROOT, None)
    kill_at = os.environ.pop(ENV_KILL_AT, None)
    record = os.environ.pop(ENV_RECORD, None)
    if not root:
        return None
    seam = install(root, int(kill_at) if kill_at not in (None, "") else None, record or None)
    if record:
        import atexit

        atexit.register(seam.dump)
    return seam
