"""Promote or demote archived sources: trust frames appended through the one transaction (architecture §9).

A source's frame is never rewritten. ``memory trust promote|demote`` appends
a trust frame to the source's archive file (``sources/archive.py``); the
transaction checks that the file only grew, re-resolves every topic citing
the changed sources (so the core render, search and the views see the new
state in the tree it installs) and commits. A source already in the asked
state adds nothing.
"""

from __future__ import annotations

from ..failures import FailureCode, MemoryFailure
from ..sources.archive import SourceMessage, archive_relpath_for, plan_append, split_source_id, trust_frame
from ..timeutil import now_iso
from ..topics.ids import source_anchor
from .engine import Policy, TxResult, staged_edit
from .host import Workspace
from .staging import Staging

VERBS = {"trusted": "promote", "pending": "demote"}


def _current(ws: Workspace, source_id: str) -> SourceMessage:
    split_source_id(source_id)  # INVALID_ARGUMENT for what is not provider/thread/message
    rel = archive_relpath_for(source_id)
    found = ws.cache.sources.lookup(rel, source_anchor(source_id))
    if found is None:
        raise MemoryFailure(FailureCode.MISSING_SOURCE, f"no archived source {source_id} (looked in {rel})",
                            details={"source_id": source_id, "file": rel})
    return found


def change_trust(ws: Workspace, source_ids: list[str], trust_state: str, *, by: str = "owner",
                 reason: str = "") -> TxResult:
    """Set ``trust_state`` (``trusted`` or ``pending``) on archived sources; one commit, or nothing.

    Every id must name an archived source (MISSING_SOURCE otherwise, and
    nothing changes). ``result.extra`` holds ``changed`` and ``unchanged``
    (already in that state) source ids and the ``records`` citing them.
    """
    if trust_state not in VERBS:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"trust_state must be trusted or pending: {trust_state!r}")
    wanted = list(dict.fromkeys(s.strip() for s in source_ids if s.strip()))
    if not wanted:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "name at least one source id (provider/thread/message)")
    for source_id in wanted:
        _current(ws, source_id)  # refused before the lock is taken
    verb = VERBS[trust_state]

    def edit(staging: Staging) -> dict:
        changed = [s for s in wanted if _current(ws, s).trust_state != trust_state]
        when = now_iso()
        frames = [trust_frame(s, trust_state, when, by, reason) for s in changed]
        for rel, (_old, new) in plan_append(ws.root, frames, ws.cache.sources.parse_bytes).items():
            staging.replace_archive(rel, new)
        return {"changed": changed, "unchanged": [s for s in wanted if s not in changed], "trust_state": trust_state}

    result = staged_edit(ws, edit, policy=Policy.HAND, message=f"memory: trust {verb} {len(wanted)} source(s)")
    changed = set(result.extra.get("changed", []))
    result.extra["records"] = [r.memory_id for r in ws.cache.snapshot().records()
                               if changed.intersection(r.source_ids)] if changed else []
    return result
