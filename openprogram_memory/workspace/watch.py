"""Change notification for a memory root, for processes that answer many reads (architecture §9).

A process that serves searches for a long time (`memory mcp`, `memory
serve`) should not stat every topic and archive file before each query to
learn that nothing moved. :func:`start` watches every memory file (all but
``.git/`` and ``.scriptorium/``) with ``watchfiles`` (inotify / FSEvents /
ReadDirectoryChangesW) in a daemon thread; :func:`token` is then a cheap
value that differs whenever something may have changed since it was last
read:

* a batch of file events (edits by hand, other tools, other processes: seen
  ~5-200 ms after the write);
* a transaction of this process (:func:`note_change`, called by the install
  and the crash recovery: seen at once);
* the manifest's signature (every transaction of any process records its
  install there before it returns: seen at once).

Until the watch is running (its first report), after it stopped or failed
(missing library, watch limit, the directory removed), in a forked child, and
in every process that never started one, :func:`token` is ``None``: the caller
checks the files themselves, as before. The watch only ever makes a read skip
a check that would have found nothing; it never decides what is on disk.

The watch also keeps the paths it reported, in order (a journal, as git's
fsmonitor keeps them), so :func:`tree_scan` — the stat pass of a
transaction — looks again at just the files reported since its last pass
instead of at every file: an edit costs what it changed, not the size of
the workspace. A full pass is still made when the journal cannot vouch
(the watch not running yet, a directory renamed or removed, the journal
overflowed), after a change of this process outside a transaction, when
another process committed (the git index moved), and at least every
:data:`FULL_PASS_EVERY_S` seconds. Events come ~5-200 ms after a write, so
a file written just before a transaction may not be in the journal yet:
the transaction therefore looks once more at every file it is about to
overwrite, just before its install
(:func:`~openprogram_memory.transaction.engine.staged_edit`), and a file
found changed fails it with ``CONCURRENT_UPDATE`` and nothing written
(``MemoryWorkspace.update`` and ``write_topic`` then run once more).

A process that makes a second full pass over a workspace of at least
:data:`AUTO_MIN_FILES` files is long-lived (a Python program, ``write``
over many sessions): it starts a watch of that root by itself (at most
:data:`AUTO_MAX_ROOTS` roots per process), unless the setting
``memory.fs_watch`` is false.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable

from .layout import MANIFEST
from .scan import Signature, TreeScan, signature

UNWATCHED = (".git", ".scriptorium")  # not memory files: every other path under the root is reported
_STEP_MS = 5  # how long a batch of events may settle before it is reported (a transaction's pass waits for none)
_TIMEOUT_MS = 200  # the first report (the watch is running) comes at most this late
_DEBOUNCE_MS = 200  # while writes keep coming, a batch is reported at least this often
GIT_INDEX = ".git/index"  # rewritten by every commit of the product (and by `git add`), never by a read
_JOURNAL_MAX = 8192  # paths kept; a pass that fell further behind is a full one
AUTO_MIN_FILES = 256  # a workspace this large, passed over twice by one process, gets a watch of its own
AUTO_MAX_ROOTS = 4
FULL_PASS_EVERY_S = 30.0  # a full pass at least this often, watched or not (bounds what a lost event could hide)

Token = tuple[int, int, Signature | None]


class RootWatch:
    """One daemon thread reporting file events under one memory root."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.generation = 0
        self.live = False
        self.pid = os.getpid()  # a forked child has the object but not the thread: it must not trust it
        self._journal: list[str] = []  # relative paths reported, oldest first
        self._dropped = 0  # how many were cut from the front
        self._journal_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"memory-watch {root}", daemon=True)
        self._thread.start()

    def _relevant(self, _change: object, path: str) -> bool:
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        return rel != "." and not rel.startswith("..") and rel.split("/", 1)[0] not in UNWATCHED

    def vouching(self) -> bool:
        """Running, reporting, and this process's own (not a forked copy)."""
        return self.live and self.pid == os.getpid() and self._thread.is_alive()

    def position(self) -> int:
        """Where the journal ends now: paths reported from here on are :meth:`since` it."""
        with self._journal_lock:
            return self._dropped + len(self._journal)

    def since(self, position: int) -> list[str] | None:
        """The paths reported after ``position`` (relative, ``/``-separated; repeats possible); None when the
        journal no longer reaches back that far."""
        with self._journal_lock:
            if position < self._dropped:
                return None
            return self._journal[position - self._dropped:]

    def _note(self, changes: set) -> None:
        rels = [os.path.relpath(path, self.root).replace(os.sep, "/") for _change, path in changes]
        with self._journal_lock:
            self._journal.extend(rels)
            over = len(self._journal) - _JOURNAL_MAX
            if over > 0:
                cut = over + _JOURNAL_MAX // 2
                del self._journal[:cut]
                self._dropped += cut

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
                                            debounce=_DEBOUNCE_MS, rust_timeout=_TIMEOUT_MS, yield_on_timeout=True,
                                            stop_event=self._stop, raise_interrupt=False,
                                            ignore_permission_denied=True):
                if changes:
                    self._note(changes)  # (before the generation moves: a reader seeing it finds the paths)
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
_LOCAL_LOCK = threading.Lock()  # _LOCAL and the passes
_PASSES: dict[Path, _Pass] = {}
_FULL_PASSES: dict[Path, int] = {}  # full passes over a root this process made (the second one starts a watch)
_AUTO: list[Path] = []  # roots this process started watching by itself, oldest first
_DECLINED: set[Path] = set()  # roots whose setting said no (asked once per process)


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
            _PASSES.pop(r, None)
            _FULL_PASSES.pop(r, None)
            _DECLINED.discard(r)
            if r in _AUTO:
                _AUTO.remove(r)
    for watch in watches:
        watch.stop()


def note_change(root: Path) -> None:
    """This process changed files under ``root`` (install, recovery, an archive append): the next read checks
    them, and the next :func:`tree_scan` is a full pass unless a transaction hands over its own
    (:func:`installed`)."""
    root = Path(root).resolve()
    with _LOCAL_LOCK:
        _LOCAL[root] = _LOCAL.get(root, 0) + 1
        last = _PASSES.get(root)
        if last is not None:
            last.stale = True


def token(root: Path) -> Token | None:
    """A value equal to an earlier one only if nothing under ``root`` changed in between; ``None`` when
    no running watch can vouch for that (check the files)."""
    watch = _WATCHES.get(root)
    if watch is None or not watch.vouching():
        return None
    manifest = signature(os.path.join(root, MANIFEST))
    return (watch.generation, _LOCAL.get(root, 0), manifest)


class _Pass:
    """The last stat pass of a root in this process, and what can bring it up to date without a new one."""

    __slots__ = ("scan", "watch", "position", "committed", "full_at", "stale")

    def __init__(self, scan: TreeScan, watch: RootWatch | None, position: int, committed: Signature | None,
                 full_at: float) -> None:
        self.scan, self.watch, self.position, self.full_at = scan, watch, position, full_at
        self.committed = committed  # the git index as the pass found it: another process's commit moves it
        self.stale = False  # this process changed files it did not name (the next pass is a full one)


def tree_scan(root: Path, *, keep: bool, auto_watch: bool = False) -> TreeScan:
    """The stat pass of every memory file of ``root`` (what ``TreeScan(root)`` finds) as of now.

    Where a running watch of ``root`` can vouch for the last pass, that pass with only the paths reported
    since looked at again; otherwise a full pass. See the module's notes for what the watch cannot see
    yet and how a transaction makes up for it. ``keep``: this pass becomes the process's last pass — only a
    transaction's, under the write lock (a reader's pass could catch an install half done). ``auto_watch``:
    a second full pass over a large workspace may start a watch (the setting ``memory.fs_watch``)."""
    root = Path(root).resolve()
    watch = _WATCHES.get(root)
    if watch is not None and not watch.vouching():
        watch = None
    position = watch.position() if watch is not None else 0  # (read before the files are looked at)
    committed = signature(os.path.join(root, GIT_INDEX))
    last = _PASSES.get(root)
    now = time.monotonic()
    if (watch is not None and last is not None and last.watch is watch and not last.stale
            and last.committed == committed and now - last.full_at < FULL_PASS_EVERY_S):
        reported = watch.since(last.position)
        if reported is not None:
            scan = last.scan.reported(set(reported)) if reported else last.scan
            if scan is not None:
                if keep:
                    _PASSES[root] = _Pass(scan, watch, position, committed, last.full_at)
                return scan
    scan = TreeScan(root)
    if watch is None:
        full_pass_made(root, len(scan.files), auto_watch)
    if keep:
        if watch is not None:
            _PASSES[root] = _Pass(scan, watch, position, committed, now)
        else:
            _PASSES.pop(root, None)
    return scan


def kept_pass(root: Path) -> TreeScan | None:
    """The pass the next :func:`tree_scan` would start from (the last transaction's, under the write lock), or None
    when there is none or it is stale. A change this process makes outside a transaction under the write lock (an
    archive append) hands it to :func:`installed` with its files looked at again, as a transaction does: its
    next transaction then looks at what the watch reported, not at every file."""
    with _LOCAL_LOCK:
        last = _PASSES.get(Path(root).resolve())
        return None if last is None or last.stale else last.scan


def installed(root: Path, before: TreeScan, after: TreeScan) -> None:
    """A transaction of this process installed files: ``after`` is its pass ``before`` with the files it wrote
    looked at again, and the next :func:`tree_scan` starts from it (the git index moved by this commit, not
    by another process's: commits are made under the write lock)."""
    root = Path(root).resolve()
    with _LOCAL_LOCK:
        last = _PASSES.get(root)
        if last is not None and last.scan is before:  # (its install marked the pass stale: these are its files)
            _PASSES[root] = _Pass(after, last.watch, last.position, signature(os.path.join(root, GIT_INDEX)),
                                  last.full_at)


def forget_pass(root: Path) -> None:
    """The next :func:`tree_scan` of ``root`` is a full pass (a file was found changed behind the last one)."""
    _PASSES.pop(Path(root).resolve(), None)


def full_pass_made(root: Path, files: int, allowed: bool | Callable[[], bool]) -> None:
    """Count a pass over every file of ``root`` (``files`` of them) made without a watch; the second over a large
    workspace starts one (a long-lived process), if ``allowed`` (the setting ``memory.fs_watch``; a callable is
    asked once, then)."""
    root = Path(root).resolve()
    if files < AUTO_MIN_FILES or allowed is False or root in _DECLINED:
        return
    count = _FULL_PASSES[root] = _FULL_PASSES.get(root, 0) + 1
    if count < 2 or root in _WATCHES:
        return
    if callable(allowed) and not allowed():
        _DECLINED.add(root)
        return
    gone = None
    with _LOCK:
        if len(_AUTO) >= AUTO_MAX_ROOTS:
            oldest = _AUTO.pop(0)
            gone = _WATCHES.pop(oldest, None) if oldest not in _HOLDERS else None
        if _running(root) is not None:
            _AUTO.append(root)
    if gone is not None:
        gone.stop(wait=0)
