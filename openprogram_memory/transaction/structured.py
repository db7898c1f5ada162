"""Structured ``memory_changes``: record operations rendered into topic Markdown.

architecture §8 and design §10 (统一修改接口). A request is validated whole before
anything is touched — INVALID_ARGUMENT names the offending ``changes[i]`` —
and then ONE :func:`staged_edit` (policy STRUCTURED, ``allowed_deletes`` =
exactly the IDs the delete ops remove) applies the operations *in request
order* to the staging copy:

``create_record {content, time, sources, destination}``
    a new paragraph ``content[^e-…]`` at the destination; the runtime
    assigns its block ID (a caller-supplied ``memory_id`` is refused).
``update_record {memory_id, content, time, sources}``
    the paragraph keeps its block ID(s) and place; its text and evidence
    are replaced by the final values; evidence nobody cites any more goes.
``delete_record {memory_id}``
    removes the record and its unused evidence. An *alias* of a merged
    paragraph (any ID but the last) removes only that alias; deleting the
    identity removes the paragraph with all its IDs. A link still pointing
    at a deleted ID makes the engine reject the whole transaction.
``move_records {memory_ids, destination}``
    moves whole paragraphs (every ID of a merged paragraph, consecutively,
    in paragraph order), in exactly the given order, with their evidence;
    links pointing at moved records are rewritten to the new file.

``destination = {topic_path, headings[≤6], position: start|end|before|after,
anchor_memory_id}``: the heading chain is created when missing; ``start``
/``end`` place the records among the records directly under the chain;
``before``/``after`` need an anchor that sits under that chain and is not
itself moving. ``time`` is ``YYYY``, ``YYYY-MM``, a real ``YYYY-MM-DD``,
``undated`` or null (= undated). ``sources`` items are ``{source, label}``
where ``source`` is an archived ``provider/thread/message`` or a
``new-source-*`` label declared in the request's top-level ``sources``;
the label is kept verbatim as the link text. Legacy ``source_refs:
[string]`` is accepted (label = the string).

The organizer uses one more, internal operation (``merge_records``:
the first ID's paragraph absorbs the others as aliases and unions their
citations); public callers cannot use it.

Parsing and validation live in :mod:`.structured_request`, the rendering of
ops into topic documents in :mod:`.structured_editor` (with the pure
document helpers of :mod:`.structured_markdown`); this module runs the
transaction and re-exports their public names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..workspace.state import RuntimeState
from ..workspace.caches import TreeState
from .engine import Policy, TxResult, staged_edit
from .staging import Staging
from .structured_editor import TopicEditor
from .structured_markdown import definition_meaning, rebase_body
from .structured_request import (
    CREATE,
    DELETE,
    MERGE,
    MOVE,
    UPDATE,
    Destination,
    Op,
    Request,
    SourceRef,
    parse_new_sources,
    parse_request,
)

if TYPE_CHECKING:
    from .host import Workspace

__all__ = [
    "CREATE", "UPDATE", "DELETE", "MOVE", "MERGE",
    "Destination", "SourceRef", "Op", "Request",
    "parse_request", "parse_new_sources", "apply_memory_changes", "run_request", "unchanged_result",
    "TopicEditor", "definition_meaning", "rebase_body",
]


# -- entry points --------------------------------------------------------
def apply_memory_changes(
    ws: "Workspace",
    memory_changes: list[dict],
    *,
    sources: list[dict] | None = None,
    base_revision: str | None = None,
    commit_message: str | None = None,
    lock_timeout: float = 5.0,
) -> TxResult:
    """Apply structured ``memory_changes`` as one transaction (architecture §8).

    Returns the engine's :class:`TxResult`; ``result.extra`` adds
    ``source_ids`` (archived new sources), ``new_sources`` (label → id),
    ``deleted_ids`` and ``created`` (``[{change, memory_id}]``).
    """
    request = parse_request(memory_changes, sources)
    message = commit_message or f"memory: apply {len(request.ops)} structured change(s)"
    return run_request(ws, request, base_revision=base_revision, message=message, lock_timeout=lock_timeout)


def run_request(
    ws: "Workspace",
    request: Request | Callable[[TreeState], Request],
    *,
    base_revision: str | None = None,
    message: str,
    lock_timeout: float = 5.0,
    runtime_update: Callable[[RuntimeState, TxResult], None] | None = None,
    force_views: bool = False,
    stamp: bool = False,
) -> TxResult:
    """Run a validated request (or a planner called with the locked baseline tree).

    The planner form lets the organizer plan under the write lock, against
    exactly the tree the engine validates against.
    """
    deletes: set[str] = set()  # filled by the edit; the engine reads it after
    applied: dict[str, Request] = {}

    def edit(staging: Staging) -> dict[str, Any]:
        tree = ws.cache.snapshot()
        req = request(tree) if callable(request) else request
        applied["request"] = req
        editor = TopicEditor(staging, tree, ws)
        editor.apply(req)
        deletes.update(editor.deleted)
        return _edit_report(editor.deleted, editor.new_source_ids)

    result = staged_edit(ws, edit, policy=Policy.STRUCTURED, allowed_deletes=deletes,  # type: ignore[arg-type]
                         base_revision=base_revision, message=message, lock_timeout=lock_timeout,
                         runtime_update=runtime_update, force_views=force_views, stamp=stamp)
    if "request" in applied:
        result.extra["created"] = _created_ids(ws, applied["request"], result) if result.memory_committed else []
    return result


def _edit_report(deleted: set[str], new_source_ids: dict[str, str]) -> dict[str, Any]:
    return {"deleted_ids": sorted(deleted), "source_ids": sorted(new_source_ids.values()),
            "new_sources": dict(sorted(new_source_ids.items()))}


def unchanged_result(revision: str) -> TxResult:
    """What :func:`run_request` reports for a request that changes nothing, without running one: the same keys."""
    return TxResult(revision=revision, extra={**_edit_report(set(), {}), "created": []})


def _created_ids(ws: "Workspace", request: Request, result: TxResult) -> list[dict[str, Any]]:
    """Which new block ID each create op got (matched by topic and content)."""
    fresh = set(result.block_ids)
    tree = result.tree if result.tree is not None else ws.tree()  # (the installed tree: no second stat pass)
    out = []
    for op in request.ops:
        if op.kind != CREATE or op.destination is None:
            continue
        summary = tree.files.get(op.destination.topic)
        for record in summary.records if summary else []:
            if record.memory_id in fresh and record.content == op.content:
                fresh.discard(record.memory_id)
                out.append({"change": op.index, "memory_id": record.memory_id})
                break
    return out
