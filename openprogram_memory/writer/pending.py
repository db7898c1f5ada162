"""Turns waiting to be written, across every session: what ``memory status`` shows (architecture §4).

Kept apart from the writer's batching so that ``status`` reads the session
store without importing the writer (archive frames, token counting).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..failures import MemoryFailure
from ..sessions.markers import live_tips, pending_walk
from ..sessions.store import SessionStore
from .reviewed import ReviewLedger

if TYPE_CHECKING:
    from ..memory import MemoryWorkspace


def pending_counts(ws: "MemoryWorkspace") -> dict[str, int]:
    """Turns waiting to be written into ``ws``, per session with any (every live branch; a shared turn once).

    Each walk stops at the first turn already written for this workspace, so
    a session that is up to date costs a node read per branch tip; turns the
    writer reviewed and found nothing durable in are not waiting. A damaged
    session is left out (``write`` reports it).
    """
    store = SessionStore(ws.settings.sessions_dir)
    ledger = ReviewLedger(ws.layout)
    workspace_id = ws.workspace_id
    out: dict[str, int] = {}
    for info in store.list_sessions():
        reviewed = ledger.ids(info.session)
        waiting: set[str] = set()
        try:
            for tip in live_tips(store, info.session):
                waiting.update(node.id for node in pending_walk(store, info.session, workspace_id, tip).turns
                               if node.id not in reviewed)
        except MemoryFailure:
            continue
        if waiting:
            out[info.session] = len(waiting)
    return out
