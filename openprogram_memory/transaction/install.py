"""Atomic install with a journal, and recovery of an interrupted one.

The staged files are first copied into ``.scriptorium/install/new/`` (same
file system as the workspace, so renames are atomic) and a journal lists
every path. Then each installed file is moved aside into ``old/`` and its
replacement renamed in. A ``done`` marker is the commit point. A process
killed anywhere leaves a journal; the next open rolls back (before
``done``: every path gets its backup or disappears if it was new) or
forward (after ``done``: only cleanup). Either way the tree is exactly the
old or exactly the new one.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

from ..failures import FailureCode, MemoryFailure
from ..fsutil import FILE_MODE, ensure_dir, fsync_dir
from ..workspace import watch
from ..workspace.layout import Layout, state_path

JOURNAL = "journal.json"
DONE = "done"

# A test hook: called with a step name at each step of the install, so a
# crash can be injected between any two steps.
StepHook = Callable[[str], None]


def _noop(step: str) -> None:
    return None


def install(layout: Layout, files: dict[str, bytes | None], step: StepHook = _noop) -> None:
    """Install ``{relpath: bytes or None (delete)}`` as one unit."""
    try:
        _install(layout, files, step)
    finally:
        watch.note_change(layout.root)  # searches of this process look at the files again


def _install(layout: Layout, files: dict[str, bytes | None], step: StepHook) -> None:
    base = layout.install_dir
    if base.exists():
        recover(layout)
    new_dir, old_dir = base / "new", base / "old"
    ensure_dir(new_dir)
    ensure_dir(old_dir)
    entries: list[dict[str, Any]] = []
    for index, (rel, data) in enumerate(sorted(files.items())):
        target = layout.path(rel)
        entries.append({"path": rel, "slot": str(index), "existed": target.exists(), "delete": data is None})
        if data is not None:
            staged = new_dir / str(index)
            with open(staged, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(staged, FILE_MODE)
    step("staged")
    journal_tmp = base / (JOURNAL + ".tmp")
    journal_tmp.write_text(json.dumps({"entries": entries}))
    with open(journal_tmp, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(journal_tmp, base / JOURNAL)
    fsync_dir(base)
    step("journal")
    for entry in entries:
        target = layout.path(entry["path"])
        if entry["existed"]:
            os.replace(target, old_dir / entry["slot"])
        step(f"backup:{entry['path']}")
        if not entry["delete"]:
            ensure_dir(target.parent)
            os.replace(new_dir / entry["slot"], target)
        step(f"install:{entry['path']}")
    for parent in {layout.path(e["path"]).parent for e in entries}:
        fsync_dir(parent)
    (base / DONE).write_text("done")
    fsync_dir(base)
    step("done")
    _cleanup(layout, entries)


def _cleanup(layout: Layout, entries: list[dict]) -> None:
    for entry in entries:
        if entry["delete"]:
            _remove_empty_parents(layout, layout.path(entry["path"]).parent)
    shutil.rmtree(layout.install_dir, ignore_errors=True)


def _remove_empty_parents(layout: Layout, directory: Path) -> None:
    stop = {layout.root, layout.topics, layout.sources, layout.root / "timeline"}
    while directory not in stop and layout.root in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def _read_journal(layout: Layout, journal: Path) -> list[dict]:
    """The journal's entries; every path must lie inside the workspace, every slot be a plain name.

    The journal is written atomically, so damage means someone else wrote
    it; nothing is touched then, and the failure names the file and the fix.
    """
    rel = journal.relative_to(layout.root).as_posix()
    try:
        entries = json.loads(journal.read_text(encoding="utf-8"))["entries"]
        if not isinstance(entries, list):
            raise TypeError("entries is not a list")
        for entry in entries:
            if state_path(layout, entry["path"], allow_runtime=True) is None:
                raise ValueError(f"path {str(entry['path'])[:200]!r} is not inside the memory tree")
            if not (isinstance(entry["slot"], str) and entry["slot"].isdigit()):
                raise ValueError(f"slot {str(entry['slot'])[:50]!r} is not a slot number")
            if not all(isinstance(entry[key], bool) for key in ("existed", "delete")):
                raise TypeError("existed/delete must be true or false")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MemoryFailure(
            FailureCode.TRANSACTION_FAILURE_UNKNOWN,
            f"{rel} is damaged ({type(exc).__name__}: {exc}); the interrupted install cannot be finished "
            f"safely, and no file was touched. Repair: move {layout.install_dir.relative_to(layout.root)} "
            "out of the workspace (it holds the backups), then run `openprogram memory restore HEAD`",
            details={"file": rel, "repair": "openprogram memory restore HEAD"},
        ) from None
    return entries


def recover(layout: Layout) -> str | None:
    """Finish or roll back an interrupted install. Returns what it did."""
    base = layout.install_dir
    if not base.exists():
        return None
    journal = base / JOURNAL
    if not journal.exists():
        # crashed before the journal: nothing was touched yet
        shutil.rmtree(base, ignore_errors=True)
        return "discarded"
    entries = _read_journal(layout, journal)
    if (base / DONE).exists():
        _cleanup(layout, entries)
        return "rolled-forward"
    old_dir = base / "old"
    for entry in entries:
        target = layout.path(entry["path"])
        backup = old_dir / entry["slot"]
        if backup.exists():
            ensure_dir(target.parent)
            os.replace(backup, target)
        elif not entry["existed"]:
            try:
                target.unlink()
            except FileNotFoundError:
                pass
            _remove_empty_parents(layout, target.parent)
        # existed and no backup: the step never reached this path
    shutil.rmtree(base, ignore_errors=True)
    watch.note_change(layout.root)
    return "rolled-back"
