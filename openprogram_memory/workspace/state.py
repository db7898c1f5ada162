"""Runtime state (``runtime.json``), the workspace revision, and the write lock."""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import marshal
import os
import re
import secrets
import threading
import time
from array import array
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from operator import itemgetter
from pathlib import Path
from typing import Iterator

from ..failures import FailureCode, MemoryFailure
from ..fsutil import FileLock, atomic_write_text, ensure_dir, read_json
from .layout import RUNTIME, Layout, is_memory_file
from .scan import TreeScan

RUNTIME_VERSION = 2  # 2: the creation order as one string (1: a list)
# The derived views' format (``views.derived``): a workspace whose views an older one rendered has them rendered
# again on its next open (:func:`~..transaction.adopt.upgrade_views`). 1 (or absent): record wikilinks missing from
# relations.json; 2: they count there, like markdown links.
VIEWS_VERSION = 2


@dataclass
class RuntimeState:
    """``runtime.json``: creation order and organize counters.

    The creation order is stored as a list of block IDs, oldest first, and
    held as an insertion-ordered dict ``{id: order}`` (orders only grow, so
    iterating the dict backwards gives the newest first). An unreadable file
    loads as defaults.
    """

    version: int = RUNTIME_VERSION
    views_version: int = VIEWS_VERSION  # (what rendered the views; a file written before it existed: 1)
    created_order: dict[str, int] = field(default_factory=dict)
    batches_since_organize: int = 0
    tokens_since_organize: int = 0
    writes_since_global: int = 0
    last_global_at: str | None = None
    last_local_at: str | None = None
    last_write_at: str | None = None
    # (the order dict, how many IDs, the last of them and its number, the JSON of ``order`` and of
    # ``order_numbers`` — "" while 0, 1, 2 …): what to_text encoded last (not compared, not saved)
    _order_memo: tuple | None = field(default=None, compare=False, repr=False)

    @classmethod
    def load(cls, layout: Layout) -> "RuntimeState":
        path = layout.path(RUNTIME)
        try:
            st = os.stat(path)
            sig = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            return cls()
        cached = _RUNTIME_CACHE.get(str(path))
        if cached is not None and cached[0] == sig:
            return cached[1].copy()
        data = read_json(path, None)
        state = cls._with_counters(data)
        if isinstance(data, dict):
            state.created_order = _created_order(data)
        _RUNTIME_CACHE[str(path)] = (sig, state.copy())
        return state

    @classmethod
    def load_counters(cls, layout: Layout) -> "RuntimeState":
        """The counters and times alone (no creation order): what ``status`` shows, without building the
        order of every record."""
        return cls._with_counters(read_json(layout.path(RUNTIME), None))

    @classmethod
    def _with_counters(cls, data: object) -> "RuntimeState":
        """A state with the scalar fields of ``data``; field by field: a value of the wrong type loads as its
        default (architecture §2.4)."""
        state = cls()
        if isinstance(data, dict):
            state.views_version = 1  # (unless the file says: written before the views had a version)
            for name, kinds in _FIELD_TYPES.items():
                value = data.get(name)
                if isinstance(value, kinds) and not isinstance(value, bool) and not (
                        isinstance(value, int) and value < 0):
                    setattr(state, name, value)
        return state

    def copy(self) -> "RuntimeState":
        clone = RuntimeState(**{f.name: getattr(self, f.name) for f in fields(self)})
        clone.created_order = dict(self.created_order)
        if self._order_memo is not None and self._order_memo[0] is self.created_order:
            clone._order_memo = (clone.created_order, *self._order_memo[1:])
        return clone

    @property
    def next_order(self) -> int:
        if not self.created_order:
            return 0
        return self.created_order[next(reversed(self.created_order))] + 1

    def remember(self, layout: Layout) -> None:
        """Prime the per-process cache after this state was written to disk. The cache keeps this object
        (no copy of the order): do not change it afterwards (:meth:`load` hands out copies)."""
        path = layout.path(RUNTIME)
        try:
            st = os.stat(path)
        except OSError:
            return
        _RUNTIME_CACHE[str(path)] = ((st.st_mtime_ns, st.st_size, st.st_ino), self)

    def to_text(self) -> str:
        """The file's text: the creation order as one string of block IDs (oldest first), not a list of
        strings — writing and reading it cost a join and a split, not an encoder call per record.

        Byte for byte ``json.dumps(fields, sort_keys=True, separators=(",", ":"))``. The order's JSON is
        kept from the last call, so a transaction that adds records encodes the IDs it added, not all."""
        data: dict[str, str] = {f.name: json.dumps(getattr(self, f.name)) for f in fields(self)
                                if f.compare and f.name != "created_order"}
        data["version"] = str(RUNTIME_VERSION)
        order, numbers = self._order_json()
        data["order"] = order
        if numbers is not None:
            # Deletes leave gaps; keeping the numbers keeps every derived view
            # (recent_events.jsonl carries them) rebuildable byte for byte.
            data["order_numbers"] = numbers
        return "{" + ",".join(f"{json.dumps(key)}:{data[key]}" for key in sorted(data)) + "}\n"

    def _order_json(self) -> tuple[str, str | None]:
        """The JSON strings of ``order`` and of ``order_numbers`` (None while the numbers run 0, 1, 2 …).

        What the last call encoded is reused while it is still the start of the order: the same dict, at
        least as long, with the same ID and number where the encoded part ended (a removal or a re-added ID
        moves that position or renumbers it; a new dict is never trusted). Only the IDs after it are encoded.
        """
        order = self.created_order
        memo = self._order_memo
        done, head, head_numbers, expected = 0, None, "", 0
        if memo is not None and memo[0] is order and 0 < memo[1] <= len(order):
            _order, count, last, last_number, text, numbers_text = memo
            at = next(itertools.islice(reversed(order), len(order) - count, None))  # (from the end: O(added))
            if at == last and order[at] == last_number:
                done, head, head_numbers, expected = count, text, numbers_text, last_number + 1
        tail = list(itertools.islice(reversed(order.items()), len(order) - done))[::-1]
        text = json.dumps(" ".join(i for i, _n in tail)) if head is None else (
            head[:-1] + json.dumps(" " + " ".join(i for i, _n in tail))[1:] if tail else head)
        if head_numbers == "" and all(n == expected + k for k, (_i, n) in enumerate(tail)):
            numbers = ""  # 0, 1, 2 … (not written)
        elif head is not None and head_numbers != "":
            numbers = head_numbers[:-1] + json.dumps(" " + " ".join(str(n) for _i, n in tail))[1:] if tail \
                else head_numbers
        else:
            numbers = json.dumps(" ".join(map(str, order.values())))
        if order:
            last_id, last_no = tail[-1] if tail else (memo[2], memo[3])  # type: ignore[index]
            self._order_memo = (order, len(order), last_id, last_no, text, numbers)
        return text, numbers or None

    def assign_order(self, block_ids: list[str]) -> None:
        """Give IDs not seen before the next creation positions."""
        fresh = [block_id for block_id in dict.fromkeys(block_ids) if block_id not in self.created_order]
        if not fresh:
            return
        start = self.next_order
        for offset, block_id in enumerate(fresh):
            self.created_order[block_id] = start + offset


def _created_order(data: dict) -> dict[str, int]:
    """``{block id: creation number}`` of a runtime.json: ``order`` (a string of IDs, version 2) or ``created``
    (a list of IDs, version 1), each with its numbers when deletes left gaps; a damaged value reads as none."""
    order, listed = data.get("order"), data.get("created")
    numbers: object = data.get("order_numbers") if isinstance(order, str) else data.get("created_numbers")
    created: list = order.split() if isinstance(order, str) else listed if isinstance(listed, list) else []
    if isinstance(numbers, str):
        try:
            numbers = [int(n) for n in numbers.split()]
        except ValueError:
            numbers = None
    return {block_id: number for block_id, number in zip(created, _created_numbers(numbers, len(created)))
            if isinstance(block_id, str)}


def _created_numbers(value: object, count: int) -> list[int]:
    """The stored creation numbers, or 0..count-1 when absent or unusable."""
    if (isinstance(value, list) and len(value) == count
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value)
            and all(a < b for a, b in zip(value, value[1:]))):
        return value
    return list(range(count))


_RUNTIME_CACHE: dict[str, tuple[tuple[int, int, int], RuntimeState]] = {}
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "version": (int,),
    "views_version": (int,),
    "batches_since_organize": (int,),
    "tokens_since_organize": (int,),
    "writes_since_global": (int,),
    "last_global_at": (str,),
    "last_local_at": (str,),
    "last_write_at": (str,),
}


_WORKSPACE_ID = re.compile(r"w-[0-9a-f]{8}")
WORKSPACE_ID_BACKUP = "openprogram-workspace-id"  # in .git/: survives a lost .scriptorium/
MARKER_KEY = "memory_written_scriptorium"  # sessions.markers names it too; state may not import sessions


def _read_id(path: Path) -> str | None:
    try:
        value = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return value if _WORKSPACE_ID.fullmatch(value) else None


def workspace_id(layout: Layout, sessions_dir: Path | None = None, *, create: bool = False) -> str:
    """``w-`` + 8 hex, created once per workspace and never regenerated silently.

    Every written marker holds this value, so a new one would make every
    written turn pending again. When ``.scriptorium/workspace-id`` is lost
    or damaged it comes back from the copy in ``.git/``, else from the
    markers in the session store (when they name exactly one id). Only a
    workspace that no marker refers to gets a new one; several candidates
    are refused with WRITER_PRECONDITION_FAILED, naming them and the fix.
    """
    path = layout.state("workspace-id")
    backup = layout.git / WORKSPACE_ID_BACKUP
    value = _read_id(path)
    if value is not None:
        if layout.git.is_dir() and _read_id(backup) != value:
            atomic_write_text(backup, value + "\n")
        return value
    value = _read_id(backup) if layout.git.is_dir() else None
    if value is None and not create and sessions_dir is not None:
        found = _marker_ids(sessions_dir)
        if len(found) > 1:
            raise MemoryFailure(
                FailureCode.WRITER_PRECONDITION_FAILED,
                f"{path} is missing or damaged and the session markers name several workspaces "
                f"({', '.join(sorted(found))}); write the id of this workspace into that file "
                "(one line, e.g. `w-1234abcd`) — a new id would send every written turn to the writer again",
                details={"file": str(path), "candidates": sorted(found)},
            )
        value = next(iter(found), None)
    if value is None:
        value = "w-" + secrets.token_hex(4)
    atomic_write_text(path, value + "\n")
    if layout.git.is_dir():
        atomic_write_text(backup, value + "\n")
    return value


def _marker_ids(sessions_dir: Path) -> set[str]:
    """Every workspace id a written marker in the bundled session store names (a full scan: repairs only)."""
    found: set[str] = set()
    if not sessions_dir.is_dir():
        return found
    for node in sessions_dir.glob("*/history/*.json"):
        try:
            value = json.loads(node.read_text(encoding="utf-8")).get("metadata", {}).get(MARKER_KEY)
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, str) and _WORKSPACE_ID.fullmatch(value):
            found.add(value)
    return found


# A file whose mtime is this close to the moment it was hashed may still be
# written within the same timestamp tick ("racily clean", as git calls it):
# its digest is not trusted by signature next time but recomputed.
_RACY_NS = 2_000_000_000


REVISION_KEY = "revision"  # the manifest's: the last revision computed, with the signatures it was computed from


def revision_files(root: Path, tree_scan: "TreeScan | None" = None) -> dict[str, tuple[str, tuple[int, int, int], bool]]:
    """What a revision covers: ``tree_scan``'s memory files (when None, a stat pass: the last one brought up to
    date where a running watch vouches for it) and ``runtime.json``. What an editor or vault app leaves beside
    them (``.x.md.swp``, ``.obsidian/``, ``.DS_Store``) is not memory (:func:`~.layout.is_memory_file`, the
    rule adoption uses): it moves no revision, so it never fails a compare-and-set."""
    if tree_scan is None:
        from . import watch

        tree_scan = watch.tree_scan(root, keep=False)
    files = {rel: entry for rel, entry in tree_scan.files.items() if is_memory_file(rel)}
    runtime = os.path.join(os.fspath(root), RUNTIME)
    try:
        st = os.stat(runtime)
        files[RUNTIME] = (runtime, (st.st_mtime_ns, st.st_size, st.st_ino), False)
    except OSError:
        pass
    return files


# the last files a key was made of, and the key: a status that keys its memo and then the revision (or a sleep
# and then the revision) over the same stat pass makes it once
_LAST_KEY: tuple[dict[str, tuple[str, tuple[int, int, int], bool]], str] | None = None


def signatures_key(files: dict[str, tuple[str, tuple[int, int, int], bool]]) -> str:
    """sha256 of every file's path and signature, in path order: the paths joined, then the signatures as
    64-bit integers (no per-file formatting: at 50k records this runs over ~5,000 files per ``status``)."""
    global _LAST_KEY
    last = _LAST_KEY
    if last is not None and last[0] == files:
        return last[1]
    key = _signatures_key(files)
    _LAST_KEY = (dict(files), key)
    return key


def _signatures_key(files: dict[str, tuple[str, tuple[int, int, int], bool]]) -> str:
    rels = sorted(files)
    sigs = list(map(itemgetter(1), map(files.__getitem__, rels)))
    digest = hashlib.sha256("\0".join(rels).encode("utf-8", "surrogateescape"))
    try:
        digest.update(array("q", itertools.chain.from_iterable(sigs)).tobytes())
    except OverflowError:  # (an inode number past 2**63, as overlay file systems make)
        digest.update(marshal.dumps(sigs))
    return digest.hexdigest()


class RevisionCache:
    """Computes revisions as the Merkle digest of architecture §2.4, hashing only files that changed.

    Per file, the sha256 of its bytes is kept with the file's signature
    ``(mtime_ns, size, inode)``; a revision stats every file and re-hashes
    only those whose signature moved (or that were written too recently to
    trust their signature). The final digest combines one short line per
    file, so an edit costs the bytes it wrote plus a stat pass — not the
    bytes of the workspace, and no file's bytes stay in memory.
    """

    def __init__(self) -> None:
        self._digests: dict[str, tuple[tuple[int, int, int], bytes]] = {}
        self._seeded: dict[str, set[str]] = {}  # root → paths the manifest knew when this process first looked
        self._lines: dict[str, dict[str, tuple[tuple[int, int, int], bytes]]] = {}
        self._keys: dict[str, str] = {}  # root → the signatures key this process last recorded
        # root → (the files of the last digest, their paths in order, each one's line, those not yet trusted)
        self._last: dict[str, tuple[dict, list[str], dict[str, bytes], set[str]]] = {}
        self._lock = threading.Lock()

    def revision(self, root: Path, tree_scan: "TreeScan | None" = None) -> str:
        """First 32 hex of sha256 over sorted ``(relpath \\0 sha256-hex(bytes) \\n)``.

        Every memory file (:func:`revision_files`: not ``.git/``, ``.scriptorium/`` or editor leftovers), and
        ``.scriptorium/runtime.json``; a symlink counts as its target text.
        A fresh process starts from the digests the manifest kept, so it
        hashes only files that changed since (architecture §2.5). ``tree_scan``: the transaction's own stat
        pass, instead of a new one.
        """
        base = os.fspath(root)
        files = revision_files(root, tree_scan)
        # Every file as the last revision a process computed found it (no file changing within the timestamp
        # tick): that revision, without reading a digest (architecture §2.5). A process that has its digests
        # already, or files just written, does not need the key.
        from .manifest import Manifest

        fresh_process = base not in self._seeded
        now = time.time_ns()
        settled = not any(now - sig[0] <= _RACY_NS for _path, sig, _link in files.values())
        key = signatures_key(files) if fresh_process or settled else None
        if fresh_process:
            known_revision = Manifest(root).meta(REVISION_KEY)
            if isinstance(known_revision, dict) and known_revision.get("key") == key:
                return str(known_revision.get("revision"))
            self._seed(root)
        revision = self._compute(root, base, files)
        if settled and key is not None and self._keys.get(base) != key:
            Manifest(root).put_meta(REVISION_KEY, {"key": key, "revision": revision})
            self._keys[base] = key
        return revision

    def _compute(self, root: Path, base: str, files: dict[str, tuple[str, tuple[int, int, int], bool]]) -> str:
        """The Merkle digest over ``files`` (``rel → (path, signature, symlink)``), hashing only what changed.

        Against the files of this process's last digest of ``root``, only the entries that differ (found by
        a set difference, not a loop over every file) and those still too recent to trust are looked at;
        the lines of the rest, kept in path order, are joined again as they were.
        """
        lines_of = self._lines.setdefault(base, {})  # rel → (signature, its line): unchanged files cost a lookup
        fresh: dict[str, tuple[tuple[int, int, int], bytes]] = {}
        last = self._last.get(base)
        diff = files.items() ^ last[0].items() if last is not None else None
        if last is not None and diff is not None and len(diff) <= max(16, len(files) // 8):
            _files, rels, lines, racy = last
            rels, lines, racy = list(rels), dict(lines), set(racy)
            for rel in {rel for rel, _entry in diff} | last[3]:
                entry = files.get(rel)
                line = None if entry is None else self._line(rel, entry, lines_of, fresh, racy)
                if line is None:
                    if lines.pop(rel, None) is not None:
                        del rels[bisect.bisect_left(rels, rel)]
                    if entry is None:
                        racy.discard(rel)
                    continue
                if rel not in lines:
                    bisect.insort(rels, rel)
                lines[rel] = line
        else:
            rels, lines, racy = [], {}, set()
            for rel in sorted(files):
                line = self._line(rel, files[rel], lines_of, fresh, racy)
                if line is not None:
                    rels.append(rel)
                    lines[rel] = line
        self._last[base] = (files, rels, lines, racy)
        gone = self._seeded[base].difference(files) if self._seeded[base] else set()
        if fresh or gone:
            from .manifest import Manifest

            Manifest(root).put_digests(fresh, gone)
            self._seeded[base] -= gone
        return hashlib.sha256(b"".join(map(lines.__getitem__, rels))).hexdigest()[:32]

    def _line(self, rel: str, entry: tuple[str, tuple[int, int, int], bool],
              lines_of: dict[str, tuple[tuple[int, int, int], bytes]],
              fresh: dict[str, tuple[tuple[int, int, int], bytes]], racy: set[str]) -> bytes | None:
        """One file's line of the digest (None when it cannot be read); ``racy`` gains it while its signature
        cannot be trusted yet, ``fresh`` when its digest just became trusted."""
        path, sig, _link = entry
        hit = lines_of.get(rel)
        if hit is not None and hit[0] == sig:
            racy.discard(rel)
            return hit[1]
        known = self._digests.get(path)
        digest = self._digest(path, sig)
        if digest is None:
            racy.add(rel)  # (unreadable: tried again next time, as a racy file is)
            return None
        line = b"%s\0%s\n" % (rel.encode("utf-8", "surrogateescape"), digest)
        stored = self._digests.get(path)
        if stored is not None and stored[0] == sig:  # trusted by signature from now on
            lines_of[rel] = (sig, line)
            racy.discard(rel)
            if known is None or known[0] != sig:
                fresh[rel] = stored
        else:
            racy.add(rel)
        return line

    def _seed(self, root: Path) -> None:
        from .manifest import Manifest

        base = os.fspath(root)
        rows = Manifest(root).digests()
        prefix = base if base.endswith(os.sep) else base + os.sep  # (the path a scan gives: base + sep + rel)
        with self._lock:
            for rel, entry in rows.items():
                self._digests.setdefault(prefix + rel, entry)
            self._seeded[base] = set(rows)

    def _digest(self, path: str, sig: tuple[int, int, int]) -> bytes | None:
        """sha256 hex of a file's bytes (a symlink: of its target text), by signature when it can be trusted."""
        hit = self._digests.get(path)
        if hit and hit[0] == sig:
            return hit[1]
        try:
            if os.path.islink(path):
                digest = hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest().encode()
            else:
                with open(path, "rb") as handle:
                    digest = hashlib.file_digest(handle, "sha256").hexdigest().encode()
        except OSError:
            return None
        if time.time_ns() - sig[0] > _RACY_NS:
            with self._lock:
                self._digests[path] = (sig, digest)
        return digest


REVISIONS = RevisionCache()

# One FileLock object per lock path in this process: the lock is reentrant
# per object, so a writer pass that holds the lock can run the transaction
# inside it.
# A thread lock beside it keeps threads of one process (the HTTP server)
# apart too.
_LOCKS: dict[str, tuple[threading.RLock, FileLock]] = {}
# How long a change waits for the workspace write lock: a person's edit, and the background writer
# (which gives up sooner: CONCURRENT_UPDATE, retried on its next run).
EDIT_LOCK_TIMEOUT = 5.0
WRITER_LOCK_TIMEOUT = 1.0
_LOCKS_GUARD = threading.Lock()


def _lock_for(path: Path) -> tuple[threading.RLock, FileLock]:
    key = str(path)
    with _LOCKS_GUARD:
        pair = _LOCKS.get(key)
        if pair is None:
            pair = _LOCKS[key] = (threading.RLock(), FileLock(key))
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
        except TimeoutError:
            raise busy from None
        try:
            yield
        finally:
            file_lock.release()
    finally:
        thread_lock.release()


@contextmanager
def lock_if_free(layout: Layout) -> Iterator[bool]:
    """The write lock if nobody holds it (yields True), else no lock at all (False): never waits.

    For a read that wants one snapshot when it can have it but must not wait for a write (``core show``):
    without the lock it reads the installed files, each of which a write replaces whole.
    """
    held = True
    with ExitStack() as stack:
        try:
            stack.enter_context(write_lock(layout, 0))
        except MemoryFailure as failure:
            if failure.code is not FailureCode.CONCURRENT_UPDATE:
                raise
            held = False
        yield held


SCHEDULED = "scheduled.json"
SCHEDULED_KINDS = ("sleep", "watch")


def record_outcome(layout: Layout, kind: str, failure: MemoryFailure | None, now: datetime | None = None,
                   command: str | None = None) -> None:
    """The last outcome of scheduled work (``sleep``, a ``watch`` poll), for ``status``; never raises.

    ``command``: what the person ran (``memory write --all-idle`` polls like ``memory watch``), so the
    warning names the command that failed; default ``memory <kind>``."""
    try:
        outcomes = read_scheduled(layout)
        at = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(microsecond=0).isoformat()
        outcomes[kind] = {"ok": failure is None, "at": at, "code": failure.code.value if failure else None,
                          "message": failure.message if failure else None, "command": command or f"memory {kind}"}
        atomic_write_text(layout.state(SCHEDULED), json.dumps(outcomes, sort_keys=True) + "\n", fsync=False)
    except Exception as exc:  # noqa: BLE001 - bookkeeping must not fail the work it describes
        import logging

        logging.getLogger(__name__).warning("could not record the %s outcome: %s", kind, exc)


def read_scheduled(layout: Layout) -> dict[str, dict]:
    """``{kind: {ok, at, code, message}}`` of the last sleep and watch poll; a damaged file reads as none."""
    data = read_json(layout.state(SCHEDULED), {})
    if not isinstance(data, dict):
        return {}
    return {kind: value for kind, value in data.items()
            if kind in SCHEDULED_KINDS and isinstance(value, dict) and isinstance(value.get("ok"), bool)}


PERSON_DELETED = "person-deleted.json"


def note_person_deletes(layout: Layout, result) -> None:
    """Remember the sources of records a person deleted (edit, web, apply, MCP), so no writer or backfill
    writes them back as if they had never been read (architecture §15); never raises."""
    if not getattr(result, "deleted_sources", None) or not result.memory_committed:
        return
    try:
        known = person_deleted_sources(layout)
        at = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
        for source in result.deleted_sources:
            known.setdefault(source, {"at": at, "memory_ids": result.deleted_ids})
        atomic_write_text(layout.state(PERSON_DELETED), json.dumps(known, sort_keys=True, indent=1) + "\n")
    except Exception as exc:  # noqa: BLE001 - the delete itself is installed and committed
        import logging

        logging.getLogger(__name__).warning("could not note the deleted records' sources: %s", exc)


def person_deleted_sources(layout: Layout) -> dict[str, dict]:
    """``{source id: {at, memory_ids}}`` of records a person deleted; a damaged file reads as none."""
    data = read_json(layout.state(PERSON_DELETED), {})
    return {str(k): v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}
