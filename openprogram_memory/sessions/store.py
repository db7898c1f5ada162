"""The bundled session store: a tree of nodes per session, one file per node.

Layout under ``root`` (``<state>/sessions``)::

    <session>/meta.json          head_id, created_at, updated_at, node_count,
                                 branches {tip: {name, archived}}, metadata
                                 (metadata.parent = the turn that spawned it),
                                 spawned {child session: node}
    <session>/index.jsonl        one {"id", "predecessor"} line per node, append-only
    <session>/history/<node>.json  id, predecessor, role, content,
                                 created_at, updated_at, metadata
    <session>/.lock              serialises writers of this session

Reading one node is one file, so walking a branch costs the steps walked,
never the size of the session. ``index.jsonl`` is the cheap way to know
every node and its parent (for branch tips) without opening node files;
:meth:`SessionStore.rebuild_index` recreates it from ``history/``.
Directories are 0700, files 0600, every rewrite is atomic (temp file,
fsync, replace).

Crash safety: a change that touches more than one file (append: node,
index line, ``meta.json``; rewind and markers: several nodes) is written
as one ``journal.json`` first — the commit point — then applied, then the
journal is removed. Whoever next takes the session's lock, or reads a
session with a journal or temp files in it, redoes a journal it finds and
removes stray temp files, so a killed process leaves the session exactly
as before the change or exactly as after it. A session is created in a
temporary directory and renamed into place whole.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..failures import FailureCode, MemoryFailure
from ..fsutil import atomic_write_json, atomic_write_text, ensure_dir
from .files import SessionLock, write_json_files
from .journal import JOURNAL, apply_journal, new_session_dir, read_journal, reclaim_new_dirs, stray_temps
from .nodes import (
    DETACHED_FROM_KEY,
    MARKER_KEY,
    REWOUND_KEY,
    SUPERSEDED_BY_PARENT_KEY,
    SUPERSEDED_KEY,
    WRITTEN_BEFORE_ANCESTORS_KEY,
    Node,
    SessionInfo,
    is_valid_id,
    new_id,
    validate_id,
    validate_role,
)
from ..timeutil import normalize_time, now_iso

__all__ = ["BranchSwitch", "Node", "SessionInfo", "SessionStore", "is_valid_id", "new_id", "validate_id",
           "validate_role", "PARENT_KEY", "REWOUND_KEY"]

PARENT_KEY = "parent"  # session metadata of a spawned session: {"session", "node"} that spawned it


@dataclass(frozen=True)
class BranchSwitch:
    """What :meth:`SessionStore.switch` did: turns abandoned (newest first) and restored (oldest first)."""

    abandoned: list[str]
    restored: list[str]


EVER_SUPERSEDED = "ever_superseded"  # meta.json flag; never cleared (a restore may be undone again)


def _note_superseded(meta: dict[str, Any], updates: Mapping[str, Mapping[str, Any]]) -> None:
    if any(change.get(SUPERSEDED_KEY) for change in updates.values()):
        meta[EVER_SUPERSEDED] = True


class SessionStore:
    """Sessions under ``root``; every method validates ids and raises ``MemoryFailure``."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self._held = threading.local()  # sessions whose lock this thread holds
        reclaim_new_dirs(self.root)  # half-built sessions of killed processes (one directory scan)

    # -- paths and low-level I/O -------------------------------------------------

    def _dir(self, session_id: str) -> Path:
        return self.root / validate_id(session_id, "session id")

    def _meta_path(self, session_id: str) -> Path:
        return self._dir(session_id) / "meta.json"

    def _node_path(self, session_id: str, node_id: str) -> Path:
        return self._dir(session_id) / "history" / f"{validate_id(node_id, 'node id')}.json"

    def _locked(self, session_id: str) -> "_Held":
        if not self._dir(session_id).is_dir():
            self._read_meta(session_id)  # raises the "no session" failure
        return _Held(self, session_id)

    def _holds(self, session_id: str) -> bool:
        return session_id in getattr(self._held, "sessions", ())

    def _recover(self, session_id: str) -> None:
        """Redo a journal left by a killed writer and drop its temp files (caller holds the lock)."""
        directory = self._dir(session_id)
        journal = read_journal(directory, session_id)
        if journal is not None:
            apply_journal(directory, journal)
        for path in stray_temps(directory, deep=journal is not None):
            path.unlink(missing_ok=True)

    def _read_meta(self, session_id: str) -> dict[str, Any]:
        directory = self._dir(session_id)
        if stray_temps(directory, deep=False) or (directory / JOURNAL).exists():
            if self._holds(session_id):
                self._recover(session_id)
            elif directory.is_dir():
                with self._locked(session_id):
                    pass  # taking the lock recovers
        path = self._meta_path(session_id)
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise MemoryFailure(
                FailureCode.MEMORY_NOT_FOUND,
                f"no session {session_id!r} in {self.root} (create it with `openprogram session new`)",
                details={"session": session_id},
            ) from None
        except (OSError, ValueError) as exc:
            raise MemoryFailure(
                FailureCode.SESSION_NODES_UNAVAILABLE,
                f"session {session_id!r}: meta.json unreadable ({exc})",
                details={"session": session_id, "path": str(path)},
            ) from None
        meta.setdefault("branches", {})
        meta.setdefault("metadata", {})
        return meta

    def _write_meta(self, session_id: str, meta: dict[str, Any]) -> None:
        atomic_write_json(self._meta_path(session_id), meta)

    def _commit(self, session_id: str, nodes: list[Node], *, index_lines: Sequence[str] = (),
                meta: dict[str, Any] | None = None, fsync: bool = True) -> None:
        """Write nodes, index lines and meta as one unit: journal first, then the files."""
        if not nodes and not index_lines and meta is None:
            return
        directory = self._dir(session_id)
        try:
            node_data = [n.to_json() for n in nodes]
            json.dumps(node_data)
        except TypeError as exc:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"node metadata is not JSON ({exc})") from None
        index = directory / "index.jsonl"
        try:
            index_size = index.stat().st_size
        except FileNotFoundError:
            index_size = 0
        journal = {"version": 1, "nodes": node_data, "index_size": index_size,
                   "index_append": "".join(line + "\n" for line in index_lines), "meta": meta}
        if len(nodes) + bool(index_lines) + (meta is not None) == 1 and not index_lines:
            # one file: its atomic replace is the commit point already
            if nodes:
                self._write_nodes(session_id, nodes, fsync=fsync)
            else:
                assert meta is not None  # the one thing to write is the meta
                self._write_meta(session_id, meta)
            return
        atomic_write_json(directory / JOURNAL, journal, fsync=fsync)
        apply_journal(directory, journal, fsync=fsync)

    # -- sessions ----------------------------------------------------------------

    def exists(self, session_id: str) -> bool:
        """Whether the session has a ``meta.json``."""
        return self._meta_path(session_id).is_file()

    def create_session(
        self, session_id: str | None = None, *, created_at: str | None = None, exist_ok: bool = False
    ) -> str:
        """Create an empty session and return its id (a uuid4 hex unless given).

        An existing id is ``INVALID_ARGUMENT`` unless ``exist_ok``.
        """
        session_id = validate_id(session_id, "session id") if session_id is not None else new_id()
        for directory in (self.root.parent, self.root):
            ensure_dir(directory)  # one level at a time: mkdir(parents=True) ignores mode for parents
        exists = MemoryFailure(
            FailureCode.INVALID_ARGUMENT, f"session {session_id!r} already exists", details={"session": session_id}
        )
        if self.exists(session_id):
            if exist_ok:
                return session_id
            raise exists
        stamp = normalize_time(created_at) if created_at else now_iso()
        meta: dict[str, Any] = {"session": session_id, "head_id": None, "created_at": stamp, "updated_at": stamp,
                "node_count": 0, "branches": {}, "metadata": {}}
        reclaim_new_dirs(self.root)
        fresh = new_session_dir(self.root, session_id)
        try:
            ensure_dir(fresh / "history")
            atomic_write_json(fresh / "meta.json", meta)
            try:
                os.rename(fresh, self._dir(session_id))  # whole, or not at all
            except OSError:
                if not self.exists(session_id):
                    raise
                if exist_ok:
                    return session_id
                raise exists from None
        finally:
            shutil.rmtree(fresh, ignore_errors=True)
        return session_id

    def session_info(self, session_id: str) -> SessionInfo:
        """The session's head, times, node count and metadata."""
        meta = self._read_meta(session_id)
        try:
            info = SessionInfo(
                session=session_id,
                head=meta.get("head_id"),
                created_at=meta["created_at"],
                updated_at=meta["updated_at"],
                node_count=int(meta.get("node_count", 0)),
                metadata=dict(meta["metadata"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise MemoryFailure(
                FailureCode.SESSION_NODES_UNAVAILABLE,
                f"session {session_id!r}: meta.json is damaged ({type(exc).__name__}: {exc})",
                details={"session": session_id, "path": str(self._meta_path(session_id))},
            ) from None
        if not isinstance(info.created_at, str) or not isinstance(info.updated_at, str):
            raise MemoryFailure(FailureCode.SESSION_NODES_UNAVAILABLE,
                                f"session {session_id!r}: meta.json times are not strings",
                                details={"session": session_id, "path": str(self._meta_path(session_id))})
        return info

    def list_sessions(self, damaged: list[MemoryFailure] | None = None) -> list[SessionInfo]:
        """Every session, most recently updated first.

        A half-written or damaged session is not listed; ``damaged``, when
        given, collects why, so a caller looping over sessions can report it.
        """
        if not self.root.is_dir():
            return []
        infos = []
        for entry in self.root.iterdir():
            if entry.is_dir() and is_valid_id(entry.name) and (entry / "meta.json").is_file():
                try:
                    infos.append(self.session_info(entry.name))
                except MemoryFailure as failure:
                    if damaged is not None:
                        damaged.append(failure)
        return sorted(infos, key=lambda info: (info.updated_at, info.session), reverse=True)

    def head(self, session_id: str) -> str | None:
        """The current tip's id, or None for an empty session."""
        return self._read_meta(session_id).get("head_id")

    def updated_at(self, session_id: str) -> str:
        """When the session last changed (appends, forks, rewinds; never markers)."""
        return self._read_meta(session_id)["updated_at"]

    def set_session_metadata(self, session_id: str, updates: Mapping[str, Any]) -> None:
        """Merge ``updates`` into the session's metadata (e.g. ``title``); ``updated_at`` stays."""
        with self._locked(session_id):
            meta = self._read_meta(session_id)
            merged = {**meta["metadata"], **updates}
            if merged != meta["metadata"]:
                meta["metadata"] = merged
                self._write_meta(session_id, meta)

    # -- nodes -------------------------------------------------------------------

    def has_node(self, session_id: str, node_id: str) -> bool:
        """Whether the node file exists (one ``stat``)."""
        return self._node_path(session_id, node_id).is_file()

    def get_node(self, session_id: str, node_id: str) -> Node:
        """Read one node: exactly one file."""
        path = self._node_path(session_id, node_id)
        try:
            return Node.from_json(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            if not self.exists(session_id):
                self._read_meta(session_id)  # raises the "no session" failure
            raise MemoryFailure(
                FailureCode.MEMORY_NOT_FOUND,
                f"no node {node_id!r} in session {session_id!r}",
                details={"session": session_id, "node": node_id},
            ) from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MemoryFailure(
                FailureCode.SESSION_NODES_UNAVAILABLE,
                f"session {session_id!r}: node {node_id!r} unreadable ({exc})",
                details={"session": session_id, "node": node_id, "path": str(path)},
            ) from None

    def append(
        self,
        session_id: str,
        role: str,
        content: str,
        parent: str | None = None,
        node_id: str | None = None,
        created_at: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Node:
        """Add a message under ``parent`` (default: head) and move head to it.

        An explicit ``parent`` other than head forks the session; one a rewind
        abandoned goes back to its branch (see :meth:`_insert_locked`). The
        session's ``updated_at`` becomes the node's time if that is later.
        """
        with self._locked(session_id):
            meta = self._read_meta(session_id)
            if parent is None:
                parent = meta.get("head_id")
            node = self._make_node(session_id, role, content, parent, node_id, created_at, metadata)
            moved = self._insert_locked(session_id, meta, [node], head=node.id)
        self._follow_spawned(session_id, meta, abandoned=moved.abandoned, restored=moved.restored)
        return node

    def insert_nodes(self, session_id: str, nodes: Sequence[Node], *, head: str | None = None,
                     fsync: bool = True) -> None:
        """Bulk-add prepared nodes (importers): parents first, one ``meta.json`` write.

        Each node's predecessor must already exist or come earlier in
        ``nodes``; existing ids are refused. Head moves only if ``head`` is given
        (onto a rewound branch: the conversation went back to it, see :meth:`_insert_locked`).
        """
        with self._locked(session_id):
            meta = self._read_meta(session_id)
            seen: set[str] = set()
            for node in nodes:
                self._check_new_node(session_id, node.id, node.predecessor, seen)
                validate_role(node.role)
                seen.add(node.id)
            moved = self._insert_locked(session_id, meta, list(nodes), head=head, fsync=fsync)
        self._follow_spawned(session_id, meta, abandoned=moved.abandoned, restored=moved.restored)

    def refresh_nodes(self, session_id: str, nodes: Sequence[Node]) -> None:
        """Replace existing nodes' role, content, metadata and ``updated_at`` (importers).

        For a message that grew after it was imported. Ids and predecessors
        never change here; the session's ``updated_at`` moves to the newest
        node time if that is later.
        """
        with self._locked(session_id):
            meta = self._read_meta(session_id)
            fixed = []
            for node in nodes:
                old = self.get_node(session_id, node.id)
                fixed.append(replace(node, predecessor=old.predecessor, role=validate_role(node.role)))
                meta["updated_at"] = max(meta["updated_at"], node.updated_at)
            if fixed:
                self._commit(session_id, fixed, meta=meta)

    def reattach_detached(self, session_id: str) -> list[str]:
        """Put every root whose lost parent (``detached_from``) is now a node back under it (importers).

        A line imported before its parent became a root; once the parent
        arrives the tree is the one a single import would have built, so
        the import order does not decide which branch looks rewound. Written
        markers stay exactly-once: a reattached turn (and its written
        descendants) that a workspace marked while its new ancestors were
        not written keeps the mark as ``WRITTEN_BEFORE_ANCESTORS_KEY``, so
        the pending walk reaches the ancestors and passes over it. Reads
        ``index.jsonl`` and the root nodes; returns the reattached ids.
        """
        with self._locked(session_id):
            parents = self.parent_map(session_id)
            moves: dict[str, str] = {}
            for node_id in [n for n, parent in parents.items() if parent is None]:
                lost = self.get_node(session_id, node_id).metadata.get(DETACHED_FROM_KEY)
                if not isinstance(lost, str) or lost not in parents or node_id in self._ancestry(parents, lost):
                    continue  # not arrived yet, or it would close a cycle
                parents[node_id] = moves[node_id] = lost
            if not moves:
                return []
            children: dict[str, list[str]] = {}
            for node_id, parent in parents.items():
                if parent is not None:
                    children.setdefault(parent, []).append(node_id)
            meta = self._read_meta(session_id)
            updates: dict[str, dict[str, Any]] = {}
            for node_id, parent in moves.items():
                written_above = self.get_node(session_id, parent).metadata.get(MARKER_KEY)
                below, leaves = [node_id], []
                while below:
                    node = self.get_node(session_id, below.pop())
                    mark = node.metadata.get(MARKER_KEY)
                    if mark is not None and mark != written_above:
                        updates.setdefault(node.id, {}).update({MARKER_KEY: None, WRITTEN_BEFORE_ANCESTORS_KEY: mark})
                    below.extend(children.get(node.id, ()))
                    if node.id not in children:
                        leaves.append(node)
                updates.setdefault(node_id, {})[DETACHED_FROM_KEY] = None
                main = [n for n in leaves if not n.metadata.get("sidechain")]  # a sub-agent's branch is never head
                if meta.get("head_id") == parent and main:  # head was the end of what arrived: the conversation goes on
                    meta["head_id"] = max(main, key=lambda n: (n.created_at, n.id)).id
            changed = {node.id: node for node in self._merged_nodes(session_id, updates)}
            for node_id, parent in moves.items():
                changed[node_id] = replace(changed[node_id], predecessor=parent)
            for parent in moves.values():
                meta["branches"].pop(parent, None)  # no longer a tip
            self._commit(session_id, list(changed.values()), meta=meta,
                         index_lines=[json.dumps({"id": n, "predecessor": p}) for n, p in moves.items()])
        return list(moves)

    @staticmethod
    def _ancestry(parents: Mapping[str, str | None], node_id: str | None) -> set[str]:
        seen: set[str] = set()
        while node_id is not None and node_id not in seen:
            seen.add(node_id)
            node_id = parents.get(node_id)
        return seen

    def _check_new_node(self, session_id: str, node_id: str, parent: str | None, pending: set[str]) -> None:
        if node_id in pending or self.has_node(session_id, node_id):
            raise MemoryFailure(
                FailureCode.INVALID_ARGUMENT, f"node {node_id!r} already exists in session {session_id!r}"
            )
        if parent is not None and parent not in pending and not self.has_node(session_id, parent):
            raise MemoryFailure(
                FailureCode.MEMORY_NOT_FOUND,
                f"parent {parent!r} is not a node of session {session_id!r}",
                details={"session": session_id, "node": parent},
            )

    def _make_node(self, session_id: str, role: str, content: str, parent: str | None, node_id: str | None,
                   created_at: str | None, metadata: Mapping[str, Any] | None) -> Node:
        node_id = validate_id(node_id, "node id") if node_id is not None else new_id()
        if parent is not None:
            validate_id(parent, "parent node id")
        self._check_new_node(session_id, node_id, parent, set())
        if not isinstance(content, str):
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "content must be text")
        stamp = normalize_time(created_at) if created_at else now_iso()
        return Node(node_id, parent, validate_role(role), content, stamp, stamp, dict(metadata or {}))

    def _insert_locked(self, session_id: str, meta: dict[str, Any], nodes: list[Node], *, head: str | None,
                       fsync: bool = True) -> BranchSwitch:
        """Add ``nodes`` and move head; return the branch move this made (none unless it continues a rewound one).

        A head that continues a rewound branch (its nearest stored ancestor, or
        itself, is rewound) means the person went back to that branch and went
        on: head moves there first as :meth:`switch` moves it (that branch
        restored, the one left abandoned), in the same commit, so the restored
        branch's unwritten turns are pending and its written ones current again.
        """
        for node in nodes:
            branch = meta["branches"].pop(node.predecessor, None) if node.predecessor else None
            if branch and branch.get("name"):
                meta["branches"][node.id] = {"name": branch["name"], "archived": False}
            meta["updated_at"] = max(meta["updated_at"], node.created_at)
        meta["node_count"] = int(meta.get("node_count", 0)) + len(nodes)
        changed: list[Node] = []
        moved = BranchSwitch([], [])
        if head is not None:
            new = {node.id: node for node in nodes}
            anchor: str | None = head
            while anchor in new:
                anchor = new[anchor].predecessor
            if anchor is not None and self.get_node(session_id, anchor).rewound:  # one read unless it is
                changed, moved = self._move_head_locked(session_id, meta, anchor)
            meta["head_id"] = head
        if nodes or head is not None:
            self._commit(session_id, nodes + changed, index_lines=[
                json.dumps({"id": n.id, "predecessor": n.predecessor}) for n in nodes], meta=meta, fsync=fsync)
        return moved

    def _write_nodes(self, session_id: str, nodes: list[Node], *, fsync: bool = True) -> None:
        try:
            write_json_files([(self._node_path(session_id, n.id), n.to_json()) for n in nodes], fsync=fsync)
        except TypeError as exc:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"node metadata is not JSON ({exc})") from None

    # -- walking -----------------------------------------------------------------

    def walk_back(self, session_id: str, tip: str | None = None) -> Iterator[Node]:
        """Yield nodes from ``tip`` (default head) back to the root, rewound ones included.

        Lazy: a caller that stops early has read only the nodes it saw.
        """
        node_id = tip if tip is not None else self.head(session_id)
        seen: set[str] = set()
        while node_id is not None:
            if node_id in seen:
                raise MemoryFailure(
                    FailureCode.SESSION_NODES_UNAVAILABLE,
                    f"session {session_id!r}: predecessor cycle at node {node_id!r}",
                    details={"session": session_id, "node": node_id},
                )
            seen.add(node_id)
            try:
                node = self.get_node(session_id, node_id)
            except MemoryFailure as failure:
                if node_id != tip and failure.code is FailureCode.MEMORY_NOT_FOUND:
                    raise MemoryFailure(  # a dangling predecessor is damage, not a bad argument
                        FailureCode.SESSION_NODES_UNAVAILABLE,
                        f"session {session_id!r}: predecessor {node_id!r} is missing",
                        details={"session": session_id, "node": node_id},
                    ) from None
                raise
            yield node
            node_id = node.predecessor

    def get_branch(self, session_id: str, tip: str | None = None) -> list[Node]:
        """The branch ending at ``tip`` (default head), root first, rewound turns skipped."""
        nodes = [node for node in self.walk_back(session_id, tip) if not node.rewound]
        nodes.reverse()
        return nodes

    # -- index, tips and branches ------------------------------------------------

    def parent_map(self, session_id: str) -> dict[str, str | None]:
        """``{node id: predecessor}`` for every indexed node, in insertion order (one file)."""
        self._read_meta(session_id)
        parents: dict[str, str | None] = {}
        try:
            with open(self._dir(session_id) / "index.jsonl", encoding="utf-8") as handle:
                for line in handle:
                    try:
                        entry = json.loads(line)
                        parents[str(entry["id"])] = entry.get("predecessor")
                    except (ValueError, KeyError, TypeError):
                        continue  # a torn last line after a crash
        except FileNotFoundError:
            pass
        return parents

    def rebuild_index(self, session_id: str) -> int:
        """Recreate ``index.jsonl`` from ``history/`` (oldest first); returns the node count."""
        with self._locked(session_id):
            meta = self._read_meta(session_id)
            nodes = []
            for path in (self._dir(session_id) / "history").glob("*.json"):
                try:
                    nodes.append(Node.from_json(json.loads(path.read_text(encoding="utf-8"))))
                except (OSError, ValueError, KeyError, TypeError):
                    continue
            nodes.sort(key=lambda node: (node.created_at, node.id))
            lines = "".join(json.dumps({"id": n.id, "predecessor": n.predecessor}) + "\n" for n in nodes)
            atomic_write_text(self._dir(session_id) / "index.jsonl", lines)
            meta["node_count"] = len(nodes)
            self._write_meta(session_id, meta)
        return len(nodes)

    def branch_tips(self, session_id: str, include_archived: bool = False) -> list[str]:
        """Head first, then every other leaf, newest-inserted first.

        Archived tips are left out unless ``include_archived``; head is always
        first even when it is not a leaf (right after a rewind).
        """
        meta = self._read_meta(session_id)
        parents = self.parent_map(session_id)
        has_child = {parent for parent in parents.values() if parent is not None}
        head = meta.get("head_id")
        tips = [head] if head is not None else []
        for node_id in reversed(list(parents)):
            if node_id in has_child or node_id == head:
                continue
            if not include_archived and meta["branches"].get(node_id, {}).get("archived"):
                continue
            tips.append(node_id)
        return tips

    def branches(self, session_id: str) -> dict[str, dict[str, Any]]:
        """The ``{tip: {"name", "archived"}}`` map of named or archived branches."""
        return dict(self._read_meta(session_id)["branches"])

    def set_branch(self, session_id: str, tip: str, *, name: str | None = None,
                   archived: bool | None = None) -> None:
        """Name and/or archive the branch ending at ``tip``."""
        validate_id(tip, "node id")
        with self._locked(session_id):
            meta = self._read_meta(session_id)
            if not self.has_node(session_id, tip):
                self.get_node(session_id, tip)  # raises MEMORY_NOT_FOUND
            entry = dict(meta["branches"].get(tip, {"name": None, "archived": False}))
            if name is not None:
                entry["name"] = name
            if archived is not None:
                entry["archived"] = bool(archived)
            meta["branches"][tip] = entry
            self._write_meta(session_id, meta)

    def archive_branch(self, session_id: str, tip: str, archived: bool = True) -> None:
        """Archive (or revive) the branch ending at ``tip``; archived tips are not live."""
        self.set_branch(session_id, tip, archived=archived)

    def rewind(self, session_id: str, to_node: str) -> list[str]:
        """Move head to ``to_node``; return the abandoned ids (see :meth:`switch`)."""
        return self.switch(session_id, to_node).abandoned

    def switch(self, session_id: str, to_node: str) -> BranchSwitch:
        """Move head to ``to_node``: an ancestor of head (a rewind) or a turn a rewind abandoned.

        The head branch's turns after the common ancestor get ``metadata.rewound
        = true`` (memory never reads them, ``get_branch`` skips them) and the
        old tip is archived; those already written into a workspace are also
        *superseded* for it (``SUPERSEDED_KEY`` = the marker's workspace id).
        Going to an abandoned turn restores its branch up to it (rewound and
        superseded flags removed). Sessions spawned from an abandoned turn are
        superseded whole, and restored with it. Memory is not touched: only a
        written pass retracts (architecture §15). The nodes' ``updated_at`` stays; the
        session's moves (a switch is activity).
        """
        validate_id(to_node, "node id")
        with self._locked(session_id):
            meta = self._read_meta(session_id)
            changed, moved = self._move_head_locked(session_id, meta, to_node)
            meta["updated_at"] = max(meta["updated_at"], now_iso())
            self._commit(session_id, changed, meta=meta)
        self._follow_spawned(session_id, meta, abandoned=moved.abandoned, restored=moved.restored)
        return moved

    def _move_head_locked(self, session_id: str, meta: dict[str, Any], to_node: str) -> tuple[list[Node], BranchSwitch]:
        """Move ``meta``'s head to ``to_node`` as :meth:`switch` says; return the nodes to commit and the move.

        The caller holds the lock, commits the nodes with ``meta``, then follows the spawned sessions.
        """
        target_path = list(self.walk_back(session_id, to_node))
        old_head = meta.get("head_id")
        old_branch = [node.id for node in self.walk_back(session_id, old_head)] if old_head else []
        on_old = set(old_branch)
        if to_node not in on_old and not target_path[0].rewound:
            raise MemoryFailure(
                FailureCode.INVALID_ARGUMENT,
                f"node {to_node!r} is neither on the current branch of session {session_id!r} nor on a "
                "rewound one; rewind goes back along the head branch or returns to an abandoned branch "
                "(use append --parent to fork elsewhere)",
                details={"session": session_id, "node": to_node},
            )
        fork = next((node.id for node in target_path if node.id in on_old), None)
        abandoned = old_branch[: old_branch.index(fork)] if fork is not None else old_branch
        restored = [node for node in target_path if node.rewound and node.id not in on_old]
        updates: dict[str, dict[str, Any]] = {}
        for node in self.walk_back(session_id, old_head) if abandoned else iter(()):
            if node.id == fork:
                break
            updates[node.id] = {REWOUND_KEY: True, SUPERSEDED_KEY: node.written_to}
        for node in restored:
            updates[node.id] = {REWOUND_KEY: None, SUPERSEDED_KEY: None}
        changed = self._merged_nodes(session_id, updates)
        if abandoned:
            entry = meta["branches"].get(old_head, {"name": None})
            meta["branches"][old_head] = {"name": entry.get("name"), "archived": True}
        if to_node in meta["branches"]:
            meta["branches"][to_node]["archived"] = False
        meta["head_id"] = to_node
        _note_superseded(meta, updates)
        return changed, BranchSwitch(abandoned, [node.id for node in reversed(restored)])

    def abandon_branch(self, session_id: str, tip: str) -> list[str]:
        """Rewind the branch ending at ``tip`` back to where it meets the head branch; return its ids.

        For importers: a transcript whose newer branch forked from an older
        one records a rewind the same way :meth:`switch` does (rewound, written
        turns superseded, tip archived, spawned sessions superseded). Turns
        already rewound are passed over unchanged.
        """
        validate_id(tip, "node id")
        with self._locked(session_id):
            meta = self._read_meta(session_id)
            head = meta.get("head_id")
            on_head = {node.id for node in self.walk_back(session_id, head)} if head else set()
            abandoned: list[str] = []
            updates: dict[str, dict[str, Any]] = {}
            for node in self.walk_back(session_id, tip):
                if node.id in on_head:
                    break
                abandoned.append(node.id)
                if not node.rewound:
                    updates[node.id] = {REWOUND_KEY: True, SUPERSEDED_KEY: node.written_to}
            if not updates:
                return abandoned
            entry = meta["branches"].get(tip, {"name": None})
            meta["branches"][tip] = {"name": entry.get("name"), "archived": True}
            _note_superseded(meta, updates)
            self._commit(session_id, self._merged_nodes(session_id, updates), meta=meta)
        self._follow_spawned(session_id, meta, abandoned=list(updates))
        return abandoned

    # -- spawn links -------------------------------------------------------------

    def create_spawned_session(self, parent_session: str, parent_node: str, session_id: str | None = None,
                               *, created_at: str | None = None) -> str:
        """Create a sub-agent session linked to the turn of ``parent_session`` that spawned it.

        The link is ``metadata.parent = {"session", "node"}`` on the child and
        ``spawned[child] = node`` in the parent's ``meta.json`` (so a rewind of
        the parent finds its children without listing every session).
        """
        self.get_node(parent_session, parent_node)  # both must exist: MEMORY_NOT_FOUND otherwise
        child = self.create_session(session_id, created_at=created_at)
        self.link_spawn(child, parent_session, parent_node)
        return child

    def link_spawn(self, session_id: str, parent_session: str, parent_node: str) -> None:
        """Record that ``session_id`` was spawned from ``parent_node`` of ``parent_session`` (idempotent)."""
        if parent_session == session_id:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "a session cannot be spawned from itself")
        parent = self.get_node(parent_session, parent_node)
        self.set_session_metadata(session_id, {PARENT_KEY: {"session": parent_session, "node": parent_node}})
        with self._locked(parent_session):
            meta = self._read_meta(parent_session)
            if meta.get("spawned", {}).get(session_id) != parent_node:
                meta.setdefault("spawned", {})[session_id] = parent_node
                self._write_meta(parent_session, meta)
        if parent.rewound:  # spawned from a turn already abandoned: superseded from the start
            self._supersede_spawned(session_id, f"{parent_session}/{parent_node}", True)

    def parent_link(self, session_id: str) -> dict[str, str] | None:
        """``{"session", "node"}`` of the turn that spawned this session, or None."""
        link = self._read_meta(session_id)["metadata"].get(PARENT_KEY)
        return dict(link) if isinstance(link, dict) else None

    def ever_superseded(self, session_id: str) -> bool:
        """Whether a written turn of this session was ever superseded (lets a writer skip the record scan)."""
        return bool(self._read_meta(session_id).get(EVER_SUPERSEDED))

    def spawned(self, session_id: str) -> dict[str, str]:
        """``{child session: parent node}`` of the sessions spawned from this one."""
        return dict(self._read_meta(session_id).get("spawned", {}))

    def _follow_spawned(self, session_id: str, meta: Mapping[str, Any], *, abandoned: Sequence[str] = (),
                        restored: Sequence[str] = ()) -> None:
        """Supersede the sessions spawned from ``abandoned`` turns and restore those of ``restored`` ones.

        Called after the session's own lock is released (each child takes its own).
        """
        gone, back = set(abandoned), set(restored)
        for child, node_id in sorted(meta.get("spawned", {}).items()):
            if node_id in gone or node_id in back:
                self._supersede_spawned(child, f"{session_id}/{node_id}", node_id in gone)

    def _supersede_spawned(self, session_id: str, cause: str, superseded: bool) -> None:
        """Supersede (or restore) every turn of a spawned session, and its own spawns, for ``cause``."""
        if not self.exists(session_id):
            return  # a dangling link (the child was deleted) is not an error
        with self._locked(session_id):
            updates: dict[str, dict[str, Any]] = {}
            for node_id in self.parent_map(session_id):
                node = self.get_node(session_id, node_id)
                if superseded and not node.rewound:
                    updates[node_id] = {REWOUND_KEY: True, SUPERSEDED_BY_PARENT_KEY: cause,
                                        SUPERSEDED_KEY: node.written_to}
                elif not superseded and node.metadata.get(SUPERSEDED_BY_PARENT_KEY) == cause:
                    updates[node_id] = {REWOUND_KEY: None, SUPERSEDED_BY_PARENT_KEY: None, SUPERSEDED_KEY: None}
            meta = self._read_meta(session_id)
            meta["metadata"][SUPERSEDED_BY_PARENT_KEY] = cause if superseded else None
            meta["metadata"] = {k: v for k, v in meta["metadata"].items() if v is not None}
            _note_superseded(meta, updates)
            self._commit(session_id, self._merged_nodes(session_id, updates), meta=meta)
            spawned = meta.get("spawned", {})
        for child in sorted(spawned):
            self._supersede_spawned(child, cause, superseded)

    # -- metadata ------------------------------------------------------------------

    def merge_metadata(self, session_id: str, updates: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge ``{node id: {key: value}}`` into those nodes' metadata only.

        A value of ``None`` removes the key. Neither the nodes' nor the
        session's ``updated_at`` changes (the idle watcher reads it). Every
        node is checked before any is written.
        """
        with self._locked(session_id):
            self._merge_metadata_locked(session_id, updates)

    def _merge_metadata_locked(self, session_id: str, updates: Mapping[str, Mapping[str, Any]]) -> None:
        self._commit(session_id, self._merged_nodes(session_id, updates))

    def _merged_nodes(self, session_id: str, updates: Mapping[str, Mapping[str, Any]]) -> list[Node]:
        current = {node_id: self.get_node(session_id, node_id) for node_id in updates}
        changed = []
        for node_id, changes in updates.items():
            node = current[node_id]
            merged = {**node.metadata, **changes}
            merged = {key: value for key, value in merged.items() if value is not None}
            if merged != node.metadata:
                changed.append(replace(node, metadata=merged))
        return changed


class _Held:
    """The session lock, plus recovery on entry and a note that this thread holds it."""

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self.lock = SessionLock(store._dir(session_id) / ".lock", session_id)

    def __enter__(self) -> None:
        self.lock.__enter__()
        held = self.store._held.__dict__.setdefault("sessions", set())
        held.add(self.session_id)
        try:
            self.store._recover(self.session_id)
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc_info: object) -> None:
        self.store._held.__dict__.get("sessions", set()).discard(self.session_id)
        self.lock.__exit__(*exc_info)
