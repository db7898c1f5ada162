"""``memory write --rereview``: read again the turns another writer settled as nothing durable.

The review ledger (:mod:`.reviewed`) records which writer found a batch
holding nothing durable. Those turns stay settled when the writer changes
— until asked: after switching from ``rules`` to ``anthropic:<model>``,
:func:`rereview_sessions` makes them pending again for the current writer
and runs the normal forced write over them (markers only after an
installed change; a second "nothing durable" settles them for this writer).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from ..failures import FailureCode, MemoryFailure
from ..sessions.store import SessionStore
from .backend import WriterBackend
from .backends import resolve_backend
from .reviewed import Rereview, ReviewLedger

if TYPE_CHECKING:
    from ..config import Settings
    from ..memory import MemoryWorkspace


def rereview_sessions(settings_or_ws: "Settings | MemoryWorkspace", *, session_id: str | None = None,
                      since: date | None = None, backend: WriterBackend | None = None,
                      now: datetime | None = None) -> dict[str, Any]:
    """Read again, with the current writer, the turns another writer settled as nothing durable.

    Used after switching writers (``rules`` → ``anthropic:<model>``): each
    session holding such turns (only ``session_id`` if given; turns dated
    on/after ``since`` if given) gets a forced write in which they are
    pending again — the normal pass, so nodes are marked only when it
    installs a change, and a second "nothing durable" settles them for the
    current writer. Stops at the first failure (raised).
    """
    from .pipeline import open_workspace, write_report

    ws = open_workspace(settings_or_ws)
    writer = backend or resolve_backend(ws.settings["memory.writer.model"])
    selector = Rereview(since)
    ledger = ReviewLedger(ws.layout)
    store = SessionStore(ws.settings.sessions_dir)
    if session_id is not None and not store.exists(session_id):
        raise MemoryFailure(FailureCode.SESSION_NODES_UNAVAILABLE, f"no session {session_id!r} in {store.root}",
                            details={"session": session_id})
    reopened: dict[str, int] = {}
    for group in [session_id] if session_id else ledger.groups():
        count = 0
        for node_id, entry in ledger.entries(group).items():
            try:
                node = store.get_node(group, node_id)
            except MemoryFailure:
                continue  # the node is gone from the store: nothing to read
            count += selector.reopens(entry, node, writer.name)
        if count:
            reopened[group] = count
    reports = [write_report(ws, group, force=True, backend=writer, now=now, rereview=selector).to_json()
               for group in reopened]
    return {"ok": True, "writer": writer.name, "since": since.isoformat() if since else None,
            "reopened": sum(reopened.values()), "sessions": reports,
            "changed_files": sorted({f for report in reports for f in report["changed_files"]}),
            "revision": ws.revision()}
