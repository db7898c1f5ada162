"""Change notification for a memory root, for processes that answer many reads (architecture §9).

A process that serves searches for a long time (`memory mcp`, `memory
serve`) should not stat every topic and archive file before each query to
learn that nothing moved. :func:`start` watches ``topics/`` and ``sources/``
with ``watchfiles`` (inotify / FSEvents / ReadDirectoryChangesW) in a daemon
thread; :func:`token` is then a cheap value that differs whenever something
may have changed since it was last read:

* a batch of file events under ``topics/`` or ``sources/`` (edits by hand,
  other tools, other processes: seen ~50-100 ms after the write settles);
* a transaction of this process (:func:`note_change`, called by the install
  and the crash recovery: seen at once);
* the manifest's signature (every transaction of any process records its
  install there before it returns: seen at once).

Until the watch is running (its first report), after it stopped or failed
(missing library, watch limit, the directory removed), and in every process
that never called :func:`start`, :func:`token` is ``None``: the caller checks
the files themselves, as before. The watch only ever makes a read skip a
check that would have found nothing; it never decides what is on disk.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from .layout import MANIFEST
from .scan import Signature, signature

WATCHED = ("topics", "sources")
_STEP_MS = 50  # how long a batch of events may settle before it is reported
_TIMEOUT_MS = 200  # the first report (the watch is running) comes at most this late

Token = tuple[int, int, Signature | None]


class RootWatch:
    """One daemon thread reporting file events under one memory root."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.generation = 0
        self.live = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"memory-watch {root}", daemon=True)
        self._thread.start()

    def _relevant(self, _change: object, path: str) -> bool:
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        return rel.split("/", 1)[0] in WATCHED

    def _run(self) -> None:
        import logging

        log = logging.getLogger(__name__)
        try:
            import watchfiles
        except ImportError:
            log.info("watchfiles is not installed: searches check the files before each query")
            return
        try:
            for changes in watchfiles.watch(self.root, watch_filter=self._relevant, step=_STEP_MS,
                                            rust_timeout=_TIMEOUT_MS, yield_on_timeout=True,
                                            stop_event=self._stop, raise_interrupt=False,
                                            ignore_permission_denied=True):
                if changes or not self.live:
                    self.generation += 1  # the first report: whatever happened before it is checked once
                self.live = True
        except Exception as exc:  # memory never takes down the caller: fall back to checking the files
            log.warning("file watch of %s stopped (%s): searches check the files before each query", self.root, exc)
        finally:
            self.live = False

    def stop(self, wait: float = 1.0) -> None:
        self._stop.set()
        self._thread.join(wait)
        self.live = False


_WATCHES: dict[Path, RootWatch] = {}
_LOCAL: dict[Path, int] = {}  # transactions of this process, by root
_HOLDERS: dict[Path, int] = {}  # roots watched for as long as someone holds them (not for the whole process)
_LOCK = threading.Lock()


def start(root: Path) -> RootWatch | None:
    """Watch ``root`` for the rest of this process (idempotent); ``None`` when there is no workspace yet."""
    root = Path(root).resolve()
    with _LOCK:
        _HOLDERS.pop(root, None)  # (for good now: a release no longer stops it)
        return _running(root)


def _running(root: Path) -> RootWatch | None:
    if not root.is_dir():
        return None
    watch = _WATCHES.get(root)
    if watch is None or not watch._thread.is_alive():
        watch = _WATCHES[root] = RootWatch(root)
    return watch


def hold(root: Path) -> RootWatch | None:
    """Watch ``root`` until every holder has called :func:`release` (a memory provider, from its session's start
    to its shutdown); a root :func:`start` watches stays watched."""
    root = Path(root).resolve()
    with _LOCK:
        if root in _WATCHES and root not in _HOLDERS and _WATCHES[root]._thread.is_alive():
            return _WATCHES[root]  # watched for good already
        running = _running(root)
        if running is not None:
            _HOLDERS[root] = _HOLDERS.get(root, 0) + 1
        return running


def release(root: Path) -> None:
    """One holder of ``root`` is done; the last one stops the watch (reads check the files again)."""
    root = Path(root).resolve()
    with _LOCK:
        left = _HOLDERS.get(root, 0) - 1
        if left < 0:
            return  # not held (watched for good, or never)
        if left:
            _HOLDERS[root] = left
            return
        del _HOLDERS[root]
        watch = _WATCHES.pop(root, None)
    if watch is not None:
        watch.stop()


def stop(root: Path | None = None) -> None:
    """Stop watching ``root`` (or every root); reads check the files again."""
    with _LOCK:
        roots = list(_WATCHES) if root is None else [Path(root).resolve()]
        watches = [_WATCHES.pop(r) for r in roots if r in _WATCHES]
        for r in roots:
            _HOLDERS.pop(r, None)
    for watch in watches:
        watch.stop()


def note_change(root: Path) -> None:
    """This process changed files under ``root`` (install, recovery): the next read checks them."""
    root = Path(root).resolve()
    with _LOCK:
        _LOCAL[root] = _LOCAL.get(root, 0) + 1


def token(root: Path) -> Token | None:
    """A value equal to an earlier one only if nothing under ``root`` changed in between; ``None`` when
    no running watch can vouch for that (check the files)."""
    watch = _WATCHES.get(root)
    if watch is None or not watch.live:
        return None
    manifest = signature(os.path.join(root, MANIFEST))
    return (watch.generation, _LOCAL.get(root, 0), manifest)
