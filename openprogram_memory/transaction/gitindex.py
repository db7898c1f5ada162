"""A cached git index (format v2) updated per path.

``git status`` is clean only if the index matches HEAD and the work tree,
so every commit must update the index. dulwich reads and re-serializes every
entry in Python on each write, which grows with the workspace. Here the
packed bytes of each entry are kept per process and the file is rewritten by
joining them; the index is re-read (through dulwich) only when its file
changed behind our back (someone ran ``git add``).
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
from pathlib import Path

from ..fsutil import fsync_dir

_HEADER = struct.Struct(">4sLL")
_ENTRY = struct.Struct(">LLLLLLLLLL20sH")
_CACHE: dict[str, tuple[tuple[int, int, int] | None, dict[bytes, bytes]]] = {}
_LOCK = threading.Lock()


def _sig(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _split_time(value) -> tuple[int, int]:
    if isinstance(value, tuple):
        return int(value[0]), int(value[1])
    seconds = int(value)
    return seconds, int(round((float(value) - seconds) * 1e9))


def pack_entry(name: bytes, st_values: tuple, mode: int, sha: bytes) -> bytes:
    """One v2 entry: stat fields, mode, sha, flags, name, NUL padding to 8."""
    (ctime_s, ctime_ns), (mtime_s, mtime_ns), dev, ino, uid, gid, size = st_values
    flags = min(len(name), 0xFFF)
    body = _ENTRY.pack(ctime_s & 0xFFFFFFFF, ctime_ns, mtime_s & 0xFFFFFFFF, mtime_ns, dev & 0xFFFFFFFF,
                       ino & 0xFFFFFFFF, mode, uid, gid, size & 0xFFFFFFFF, sha, flags) + name
    return body + b"\0" * (8 - len(body) % 8)


def entry_from_stat(name: bytes, st: os.stat_result, mode: int, hex_sha: bytes) -> bytes:
    values = (divmod(st.st_ctime_ns, 1_000_000_000), divmod(st.st_mtime_ns, 1_000_000_000),  # (git: timespec)
              st.st_dev, st.st_ino, st.st_uid, st.st_gid, st.st_size)
    return pack_entry(name, values, mode, bytes.fromhex(hex_sha.decode("ascii")))


def _load(index_path: Path) -> dict[bytes, bytes]:
    if not index_path.exists():
        return {}
    from dulwich.index import Index, IndexEntry

    entries: dict[bytes, bytes] = {}
    for name, entry in Index(str(index_path)).items():
        if not isinstance(entry, IndexEntry):  # conflicted entry: leave it to git
            continue
        values = (_split_time(entry.ctime), _split_time(entry.mtime), entry.dev, entry.ino, entry.uid,
                  entry.gid, entry.size)
        entries[name] = pack_entry(name, values, entry.mode, bytes.fromhex(entry.sha.decode("ascii")))
    return entries


def update_index(git_dir: Path, changes: dict[bytes, tuple[os.stat_result, bytes, int] | None]) -> None:
    """Set (stat, hex sha, mode) or remove (None) entries, and write the index."""
    index_path = git_dir / "index"
    key = str(index_path)
    with _LOCK:
        cached = _CACHE.get(key)
        sig = _sig(index_path)
        if cached is None or cached[0] != sig or sig is None:
            entries = _load(index_path)
        else:
            entries = dict(cached[1])
        for name, value in changes.items():
            if value is None:
                entries.pop(name, None)
            else:
                st, hex_sha, mode = value
                entries[name] = entry_from_stat(name, st, mode, hex_sha)
        _write(git_dir, entries)


def write_index(git_dir: Path, entries: dict[bytes, bytes]) -> None:
    """Replace the whole index with packed ``entries`` (a repair)."""
    with _LOCK:
        _write(git_dir, dict(entries))


def _write(git_dir: Path, entries: dict[bytes, bytes]) -> None:
    index_path = git_dir / "index"
    body = _HEADER.pack(b"DIRC", 2, len(entries)) + b"".join(entries[name] for name in sorted(entries))
    data = body + hashlib.sha1(body).digest()
    lock_path = git_dir / "index.lock"
    fd = os.open(lock_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(lock_path, index_path)
    fsync_dir(git_dir)
    _CACHE[str(index_path)] = (_sig(index_path), entries)


def read_stats(git_dir: Path) -> dict[str, tuple[int, int, int, int]] | None:
    """``{path: (mtime seconds, mtime nanoseconds, size, inode)}`` of a v2 index, read without dulwich
    (the cheap "did a file change since it was committed" check of every open); None when the index is
    missing, another version, or damaged (the caller then knows nothing, and acts on nothing)."""
    try:
        data = (git_dir / "index").read_bytes()
    except OSError:
        return None
    if len(data) < 12 + 20:
        return None
    signature, version, count = _HEADER.unpack_from(data, 0)
    if signature != b"DIRC" or version != 2:
        return None
    out: dict[str, tuple[int, int, int, int]] = {}
    at, end = 12, len(data) - 20
    try:
        for _ in range(count):
            fields = _ENTRY.unpack_from(data, at)
            length = fields[11] & 0xFFF
            start = at + _ENTRY.size
            stop = data.index(b"\0", start) if length == 0xFFF else start + length
            if stop > end:
                return None
            name = data[start:stop].decode("utf-8", "surrogateescape")
            out[name] = (fields[2], fields[3], fields[9], fields[5])
            at += (_ENTRY.size + (stop - start) + 8) // 8 * 8
    except (struct.error, ValueError):
        return None
    return out


def index_key(sig: tuple[int, int, int]) -> tuple[int, int, int, int]:
    """The index's view of a scan signature ``(mtime_ns, size, inode)``: what :func:`read_stats` compares
    against (32-bit fields, as git keeps them)."""
    mtime_ns, size, ino = sig
    return (mtime_ns // 1_000_000_000 & 0xFFFFFFFF, mtime_ns % 1_000_000_000, size & 0xFFFFFFFF, ino & 0xFFFFFFFF)
