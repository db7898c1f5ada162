"""``memory check --repair``: fix what needs no person's judgement, and say what was done.

Opening the workspace already repairs what a killed process leaves (stale
git locks, a damaged index, an interrupted install, pending commits).
``--repair`` goes further, under the workspace write lock:

- **HEAD at a missing or damaged commit**: the branch is pointed at the
  newest sound commit in the object store (a commit whose whole tree
  reads), then the installed memory tree is committed on top of it, so
  history goes on from what is on disk; with no sound commit left, history
  starts again from the installed tree (the old objects stay in ``.git``);
- **a hand edit outside the product** that keeps the hand-edit rules is
  committed, as every open does (:mod:`.adopt`); a file with any problem is
  left as it is and stays reported;
- **an archive changed outside a commit**: committed when it parses whole
  and only appends to the committed bytes (``sources/`` is append-only);
- **unreadable runtime state** (``runtime.json`` …): removed, it is rebuilt;
- **stale derived views**: rebuilt once the topics are committed.

Problems that need a person (an ID removed by hand, uncited text, a
dangling link, a damaged archive) are not touched: they stay in the
report with their fix.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..failures import MemoryFailure
from .adopt import adopt_out_of_band, rebuild_views
from .check import Problem, _drift, repairable_archives

if TYPE_CHECKING:
    from .host import Workspace

def repair_workspace(ws: "Workspace", problems: list[Problem]) -> list[str]:
    """Repair what ``problems`` (from :func:`~.check.check_workspace`) allows; return what was done."""
    from ..workspace.state import write_lock
    from .engine import EDIT_LOCK_TIMEOUT

    notes: list[str] = []
    with write_lock(ws.layout, EDIT_LOCK_TIMEOUT):
        if any(p.rule == "git-head" for p in problems):
            notes += _repair_head(ws)
        for problem in problems:
            if problem.rule == "runtime-state" and problem.file:
                ws.layout.state(os.path.basename(problem.file)).unlink(missing_ok=True)
                notes.append(f"removed unreadable {problem.file} (rebuilt with defaults)")
        notes += _adopt_archives(ws, problems)
    notes += _relink_moved_files(ws)
    notes += adopt_out_of_band(ws)  # topics: the hand-edit rules every open applies (and their own commit)
    if any(p.rule == "stale-view" for p in problems) or any(n.startswith("adopted") for n in notes):
        rebuilt = rebuild_views(ws)
        if rebuilt.derived_files:
            notes.append("rebuilt the derived views from the topics")
    return notes


def _relink_moved_files(ws: "Workspace") -> list[str]:
    """Rewrite the relative links of each topic file moved to a folder of another depth outside the product, through
    the transaction (a hand edit that takes in the old file's removal): a move needs no judgement."""
    from .moves import moved_outside, relinked_text
    from .engine import EDIT_LOCK_TIMEOUT, Policy, staged_edit

    notes = []
    for old, new in moved_outside(ws).items():
        if relinked_text(ws.root, old, new) is None:
            continue

        def edit(staging, old: str = old, new: str = new) -> None:
            text = relinked_text(ws.root, old, new)  # (read again under the lock)
            if text is not None:
                staging.write(new, text)
            staging.delete_gone(old)

        try:
            staged_edit(ws, edit, policy=Policy.HAND, lock_timeout=EDIT_LOCK_TIMEOUT,
                        message=f"memory: {old} moved to {new} outside the product, its relative links rewritten "
                                "(`memory check --repair`)")
        except MemoryFailure as failure:
            notes.append(f"could not rewrite the relative links of {new} (moved from {old}): {failure.message}")
            continue
        notes.append(f"rewrote the relative links of {new}, moved from {old} outside the product, and committed "
                     "the move")
    return notes


def _adopt_archives(ws: "Workspace", problems: list[Problem]) -> list[str]:
    """Commit the archives changed outside a commit that parse whole and only append."""
    from .history import commit_paths

    archives = repairable_archives(ws, problems, _drift(ws))
    if not archives:
        return []
    try:
        commit_paths(ws.root, archives, "memory: archive append(s) made outside a commit, adopted by "
                     "`memory check --repair`: " + ", ".join(archives[:10]))
    except MemoryFailure as failure:
        return [f"could not commit {', '.join(archives[:5])}: {failure.message}"]
    return [f"adopted archive append(s) made outside a commit: {', '.join(archives[:10])}"
            + (f" and {len(archives) - 10} more" if len(archives) > 10 else "")]


def _repair_head(ws: "Workspace") -> list[str]:
    """Point the branch at the newest sound commit and commit the installed tree on top."""
    from dulwich.repo import Repo

    from . import gitcheck
    from .engine import MEMORY_AREAS
    from .history import commit_paths, tree_differences

    repo = Repo(str(ws.root))
    head_file = ws.root / ".git" / "HEAD"
    text = head_file.read_text(encoding="utf-8", errors="replace").strip()
    ref = text[5:].strip().encode() if text.startswith("ref: ") else b"refs/heads/main"
    if not text.startswith("ref: "):
        head_file.write_text("ref: refs/heads/main\n", encoding="utf-8")
    good = gitcheck.newest_sound_commit(repo)
    if good is not None:
        repo.refs[ref] = good
        notes = [f"HEAD pointed at a missing or damaged commit; the branch now points at {good.decode()[:12]}, "
                 "the newest sound commit"]
    else:
        repo.refs.remove_if_equals(ref, None)
        notes = ["no sound commit was left; history starts again from the installed tree (old objects stay in .git)"]
    paths = tree_differences(ws.root, MEMORY_AREAS)
    commit = commit_paths(ws.root, paths, "memory: commit the installed tree after HEAD damage (`memory check --repair`)")
    gitcheck.rebuild_index(ws.root)
    if commit:
        notes.append(f"committed the installed memory tree on top ({len(paths)} path(s))")
    return notes
