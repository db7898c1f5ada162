"""Where the search index lives: in this process, and on disk between processes.

In-process, one :class:`SearchIndex` per memory root is kept and refreshed
in place. On disk it is ``<root>/.scriptorium/search/index.bin``::

    OPENPROGRAM-SEARCH <format>.<tokenizer> <marshal version> <python tag>-<byte order> <crc32>\\n
    <marshal of SearchIndex.to_state()>

``marshal`` of plain dicts, lists, tuples, bytes and ints loads several
times faster than pickle of objects (and runs no code). A file with another
format version, marshal version or Python, a bad checksum, or anything
unreadable is ignored and rebuilt from the topic files — files are the truth
and the index may always lag or vanish. It is written atomically (temp file
and rename, no fsync: a torn write fails the checksum and is rebuilt).
"""

from __future__ import annotations

import marshal
import os
import sys
import threading
import zlib
from pathlib import Path

from ..workspace import watch
from ..workspace.layout import SCRIPTORIUM
from .index import RefreshReport, SearchIndex
from .tokenize import TOKENIZER_VERSION

# Bump when the stored state or the tokenizer changes meaning.
FORMAT_VERSION = 5  # 3: Lucene idf, no mean-idf statistics stored; 4: postings in hash shards; 5: left-out files
CACHE_FILE = f"{SCRIPTORIUM}/search/index.bin"
_MAGIC = b"OPENPROGRAM-SEARCH"

_INDEXES: dict[Path, SearchIndex] = {}
_INDEXES_LOCK = threading.Lock()
_ROOTS: dict[str, tuple[tuple[int, int], Path]] = {}  # path as given -> (its device and inode, resolved)
_ROOTS_MAX = 64


def cache_path(memory_root: Path) -> Path:
    """The on-disk cache file of a memory root."""
    return memory_root / CACHE_FILE


def _header(crc: int) -> bytes:
    tag = f"{sys.implementation.cache_tag}-{sys.byteorder}".encode()
    fields = [_MAGIC, b"%d.%d" % (FORMAT_VERSION, TOKENIZER_VERSION), b"%d" % marshal.version, tag, b"%d" % crc]
    return b" ".join(fields) + b"\n"


def encode(index: SearchIndex) -> bytes:
    """The cache file bytes for ``index``."""
    payload = marshal.dumps(index.to_state())
    return _header(zlib.crc32(payload)) + payload


def decode(memory_root: Path, data: bytes) -> SearchIndex | None:
    """An index from cache bytes, or ``None`` if they are stale or damaged."""
    end = data.find(b"\n", 0, 512)
    if end < 0:
        return None
    head = data[: end + 1]
    payload = memoryview(data)[end + 1 :]  # a view: copying megabytes costs every cold search
    try:
        crc = int(head.rsplit(b" ", 1)[-1])
    except ValueError:
        return None
    if head != _header(crc) or zlib.crc32(payload) != crc:
        return None
    try:
        return SearchIndex.from_state(memory_root, marshal.loads(payload))
    except (ValueError, TypeError, EOFError, KeyError, IndexError):
        return None


def load(memory_root: Path) -> SearchIndex | None:
    """The index stored on disk for ``memory_root``, if usable."""
    try:
        data = cache_path(memory_root).read_bytes()
    except OSError:
        return None
    return decode(memory_root, data)


def save(index: SearchIndex) -> bool:
    """Store ``index`` on disk; a failure (read-only disk…) only costs speed."""
    from ..fsutil import atomic_write_bytes  # only writers pay for tempfile

    try:
        atomic_write_bytes(cache_path(index.root), encode(index), fsync=False)
    except OSError as exc:
        import logging

        logging.getLogger(__name__).debug("search cache not written for %s: %s", index.root, exc)
        return False
    return True


def current_index(memory_root: Path) -> tuple[SearchIndex, RefreshReport]:
    """The up-to-date index of ``memory_root``, and what refreshing it did.

    First use in a process loads the disk cache (or starts empty); then the
    index is refreshed against file signatures, and saved if anything moved.
    Where a running file watch vouches that nothing changed since the last
    refresh (:mod:`~openprogram_memory.workspace.watch`), the signatures are
    not checked at all. The caller must hold ``index.lock`` while reading
    the returned index.
    """
    root = _resolved(memory_root)
    with _INDEXES_LOCK:
        cached = _INDEXES.get(root)
        fresh, loaded = cached is None, False
        if cached is None:
            from_disk = load(root)
            loaded = from_disk is not None
            cached = _INDEXES[root] = from_disk or SearchIndex(root)
        index = cached
    with index.lock:
        seen = watch.token(root)
        if seen is not None and seen == index.clean_token:
            return index, RefreshReport(watched=True)
        report = index.refresh()
        report.watched = seen is not None
        if seen is None:  # a second check of a large workspace: a long-lived process, which watches it instead
            watch.full_pass_made(root, len(index.fid_of), lambda: _watch_allowed(root))
        index.clean_token = seen  # read before the refresh: an event during it makes the next read check again
        report.loaded_from_disk = fresh and loaded
        if report.changed or (fresh and not loaded):
            save(index)
    return index, report


def _resolved(memory_root: Path) -> Path:
    """``memory_root.resolve()``, remembered: a long-lived process asks before every turn, and resolving
    stats every component of the path. One stat tells whether the path still names the same directory
    (device and inode); a link pointed elsewhere, or a relative path from another directory, is resolved
    anew."""
    key = os.fspath(memory_root)
    try:
        st = os.stat(key)
    except OSError:
        return memory_root.resolve()
    known = _ROOTS.get(key)
    if known is not None and known[0] == (st.st_dev, st.st_ino):
        return known[1]
    root = memory_root.resolve()
    if len(_ROOTS) >= _ROOTS_MAX:
        _ROOTS.clear()
    _ROOTS[key] = ((st.st_dev, st.st_ino), root)
    return root


def _watch_allowed(root: Path) -> bool:
    """The setting ``memory.fs_watch`` of the workspace at ``root`` (``<state>/memory``)."""
    from ..config import load_settings

    try:
        return bool(load_settings(root.parent)["memory.fs_watch"])
    except Exception:  # (a state directory that cannot be read: no watch, searches check the files)
        return False


def left_out(memory_root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The topic files the in-process index of ``memory_root`` left out (not text) and those it holds as their
    last committed version (not valid): ``{path: why}`` each, as its last refresh found them."""
    with _INDEXES_LOCK:
        index = _INDEXES.get(_resolved(memory_root))
    if index is None:
        return {}, {}
    with index.lock:
        return dict(index.unreadable), dict(index.invalid)


def forget(memory_root: Path | None = None) -> None:
    """Drop in-process indexes (all, or one root's): the next use reloads from disk."""
    with _INDEXES_LOCK:
        if memory_root is None:
            _INDEXES.clear()
        else:
            _INDEXES.pop(memory_root.resolve(), None)
