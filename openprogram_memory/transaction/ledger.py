"""The git-pending ledger (``.scriptorium/git-pending.json``): what is installed but not yet committed.

Every change to the memory tree is noted here *before* the files change
(transaction installs and archive appends alike), and the note is removed
only after the commit that covers it. So a process killed anywhere leaves a
ledger, and the next open under the write lock finishes the job: an archive
append that did not complete is cut back to its old size (an append is
all or nothing), then every noted path is committed.

``{"version": 2, "paths": [relpath…], "appends": {relpath: [old size, new size]},
"resync": bool}``; the version-1 form was a bare list of paths. A ledger
that cannot be read is not guessed at: the next recovery compares the whole
memory tree with HEAD and commits every difference (``resync``). Paths are validated as inside
the workspace before use (:func:`..workspace.layout.state_path`): a planted
``../../outside`` or absolute path is dropped and reported, never touched.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..fsutil import atomic_write_json
from ..workspace import watch
from ..workspace.layout import Layout, state_path

if TYPE_CHECKING:
    from .host import Workspace

GIT_PENDING = "git-pending.json"
LEDGER_VERSION = 2


@dataclass
class Ledger:
    paths: set[str] = field(default_factory=set)
    appends: dict[str, tuple[int, int]] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)  # unsafe entries found on load
    damaged: bool = False  # unreadable: the pending paths are unknown
    resync: bool = False  # commit every difference between the tree and HEAD

    def to_json(self) -> dict:
        out = {"version": LEDGER_VERSION, "paths": sorted(self.paths),
               "appends": {rel: list(sizes) for rel, sizes in sorted(self.appends.items())}}
        if self.resync or self.damaged or self.dropped:
            out["resync"] = True
        return out


def ledger_file(layout: Layout):
    return layout.state(GIT_PENDING)


def load(layout: Layout) -> Ledger:
    """The ledger as found, with unsafe entries dropped (and listed) and damage flagged."""
    path = ledger_file(layout)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Ledger()
    except OSError:
        return Ledger(damaged=True, resync=True)
    try:
        data = json.loads(raw)
    except ValueError:
        return Ledger(damaged=True, resync=True)
    ledger = Ledger()
    if isinstance(data, list):  # version 1
        paths, appends = data, {}
    elif isinstance(data, dict) and isinstance(data.get("paths", []), list) and isinstance(data.get("appends", {}), dict):
        paths, appends = data.get("paths", []), data.get("appends", {})
    else:
        return Ledger(damaged=True, resync=True)
    ledger.resync = isinstance(data, dict) and data.get("resync") is True
    for rel in paths:
        safe = state_path(layout, rel)
        if safe is None:
            ledger.dropped.append(repr(rel)[:200])
        else:
            ledger.paths.add(safe)
    for rel, sizes in appends.items():
        safe = state_path(layout, rel)
        if (safe is None or not safe.startswith("sources/") or not isinstance(sizes, list) or len(sizes) != 2
                or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in sizes)):
            ledger.dropped.append(repr(rel)[:200])
            continue
        ledger.appends[safe] = (sizes[0], sizes[1])
        ledger.paths.add(safe)
    return ledger


def note(layout: Layout, paths: list[str], appends: dict[str, tuple[int, int]] | None = None) -> None:
    """Add ``paths`` (and archive appends with their sizes) to the ledger, durably, before they change."""
    if not paths and not appends:
        return
    ledger = load(layout)  # a damaged one keeps its resync flag: nothing noted before is forgotten
    ledger.paths.update(paths)
    for rel, sizes in (appends or {}).items():
        ledger.appends[rel] = sizes
        ledger.paths.add(rel)
    atomic_write_json(ledger_file(layout), ledger.to_json())


def settle_appends(layout: Layout, ledger: Ledger) -> list[str]:
    """Cut every incomplete archive append back to its old size; return what was rolled back.

    A file at its new size is complete (the append is one write); anything
    else is an interrupted append, and the archive must never end in a torn
    frame (appending to a damaged archive is refused forever after).
    """
    rolled = []
    for rel, (old_size, new_size) in ledger.appends.items():
        path = layout.path(rel)
        try:
            size = os.lstat(path).st_size
        except FileNotFoundError:
            continue
        if size == new_size or size == old_size:
            continue
        if path.is_symlink():
            continue
        if old_size == 0:
            path.unlink()
        else:
            with open(path, "r+b") as handle:
                handle.truncate(old_size)
                handle.flush()
                os.fsync(handle.fileno())
        rolled.append(rel)
    if rolled:
        watch.note_change(layout.root)
    return rolled


def clear(layout: Layout) -> None:
    ledger_file(layout).unlink(missing_ok=True)


def needs_recovery(ws: "Workspace", check_index: bool = False) -> bool:
    """Signs that a process died mid-change: an install journal, a ledger, git lock files
    (and, when asked, a damaged git index: that reads the whole index, so only at open)."""
    from . import gitcheck

    layout = ws.layout
    return (layout.install_dir.exists() or ledger_file(layout).exists()
            or bool(gitcheck.stale_locks(layout.git)) or (check_index and gitcheck.index_damaged(layout.git)))
