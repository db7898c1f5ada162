"""The session store's write-ahead journal and crash leftovers (see :mod:`.store`).

``<session>/journal.json`` holds one whole change: the node files to
(re)write, the bytes to append to ``index.jsonl`` at a recorded offset, and
the new ``meta.json``. Applying it twice gives the same files, so recovery
simply applies it again. Node ids come from the journal only after they
pass the same id check as every caller's.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..failures import FailureCode, MemoryFailure
from ..fsutil import FILE_MODE, atomic_write_json, fsync_dir
from .files import write_json_files
from .nodes import is_valid_id

JOURNAL = "journal.json"
NEW_PREFIX = ".new-"


def read_journal(directory: Path, session_id: str) -> dict[str, Any] | None:
    """The pending journal, None when there is none; a damaged one is reported by name."""
    path = directory / JOURNAL
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise _damaged(path, session_id, str(exc)) from None
    ok = (isinstance(data, dict) and isinstance(data.get("nodes"), list)
          and isinstance(data.get("index_size"), int) and isinstance(data.get("index_append"), str)
          and (data.get("meta") is None or isinstance(data.get("meta"), dict))
          and all(isinstance(n, dict) and isinstance(n.get("id"), str) and is_valid_id(n["id"])
                  for n in data["nodes"]))
    if not ok:
        raise _damaged(path, session_id, "unexpected shape")
    return data


def _damaged(path: Path, session_id: str, why: str) -> MemoryFailure:
    return MemoryFailure(
        FailureCode.SESSION_NODES_UNAVAILABLE,
        f"session {session_id!r}: {path.name} (an interrupted change) is damaged ({why}); "
        f"remove {path} to drop that change, or restore it from a backup",
        details={"session": session_id, "file": str(path)},
    )


def apply_journal(directory: Path, journal: dict[str, Any], *, fsync: bool = True) -> None:
    """Write what the journal says (idempotent), then remove it."""
    history = directory / "history"
    nodes = journal["nodes"]
    if nodes:
        write_json_files([(history / f"{n['id']}.json", n) for n in nodes], fsync=fsync)
    appended = journal["index_append"].encode("utf-8")
    if appended:
        index = directory / "index.jsonl"
        fd = os.open(index, os.O_WRONLY | os.O_CREAT, FILE_MODE)
        try:
            size = os.fstat(fd).st_size
            if size > journal["index_size"]:
                os.ftruncate(fd, journal["index_size"])  # a redo: drop what the killed run appended
            os.lseek(fd, journal["index_size"], os.SEEK_SET)
            os.write(fd, appended)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
    if journal.get("meta") is not None:
        atomic_write_json(directory / "meta.json", journal["meta"], fsync=fsync)
    (directory / JOURNAL).unlink(missing_ok=True)
    if fsync:
        fsync_dir(directory)


def stray_temps(directory: Path, deep: bool) -> list[Path]:
    """Temp files a killed atomic write left: in the session dir, and in ``history/`` when ``deep``."""
    found: list[Path] = []
    for where in (directory, directory / "history") if deep else (directory,):
        try:
            with os.scandir(where) as it:
                found.extend(Path(e.path) for e in it if e.name.startswith(".") and e.name.endswith(".tmp"))
        except OSError:
            continue
    return found


def new_session_dir(root: Path, session_id: str) -> Path:
    """A private directory to build a session in before it is renamed into place."""
    return Path(tempfile.mkdtemp(prefix=f"{NEW_PREFIX}{os.getpid()}-{session_id[:40]}-", dir=root))


def reclaim_new_dirs(root: Path) -> None:
    """Remove half-built session directories of processes that are gone."""
    try:
        entries = [e for e in os.scandir(root) if e.name.startswith(NEW_PREFIX)]
    except OSError:
        return
    for entry in entries:
        pid = entry.name[len(NEW_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # still building
        except ProcessLookupError:
            shutil.rmtree(entry.path, ignore_errors=True)
        except PermissionError:
            continue
