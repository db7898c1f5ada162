"""The model organizer: ``memory sleep --model anthropic:<model>`` (architecture §7).

The same tool loop as the model writer (:mod:`openprogram_memory.writer.tools`,
the backend of :func:`~openprogram_memory.writer.backends.resolve_backend`)
with the organizer prompt (``writer/prompts/organize.md``): the model reads
the topics, merges, splits and moves records in a staging copy and calls
``commit_edits``. It goes through the writer's runner, so it is one
transaction under the model policy (a record may go only together with
every link to it; an ID may never silently vanish) with one repair run.

A broken model setup is never papered over by the rules organizer: no key,
401, 5xx or a transport error leaves as the model's ``MODEL_*`` failure.
A run that stops without ``commit_edits`` installs nothing
(``WRITER_NO_PROGRESS``). The report is computed from the trees before and
after, since a model's edit is not a plan of operations.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable

from ..workspace.caches import TreeState

if TYPE_CHECKING:
    from ..transaction.engine import TxResult
    from ..memory import MemoryWorkspace
    from ..workspace.state import RuntimeState

# Model prefixes whose writer backend runs the tool loop for the organizer too.
TOOL_LOOP_PREFIXES = ("anthropic:",)


def is_model_organizer(name: str) -> bool:
    """Whether ``name`` (e.g. ``anthropic:claude-x``) names a tool-loop organizer."""
    return any(name.startswith(prefix) and len(name) > len(prefix) for prefix in TOOL_LOOP_PREFIXES)


def organize_with_model(ws: "MemoryWorkspace", name: str, *, now: datetime, lock_timeout: float,
                        runtime_update: Callable[["RuntimeState", "TxResult"], None],
                        stamp: bool) -> dict[str, Any]:
    """Run the model organizer once; return the ``sleep`` report. Raises MemoryFailure."""
    from ..writer.backends import resolve_backend
    from ..writer.runner import run_writer

    backend = resolve_backend(name)
    before = ws.tree()
    outcome = run_writer(ws, backend, [], stage="organize", session_id=None, tokens=0, now=now,
                         lock_timeout=lock_timeout, message=f"memory: organize ({name})",
                         runtime_update=runtime_update, stamp=stamp, require_commit=True)
    result = outcome.result
    report: dict[str, Any] = {key: value for key, value in result.to_json().items()
                              if key not in ("block_ids", "evidence_ids")}
    report.update({"model": name, "derived_files": result.derived_files, "deleted_ids": result.deleted_ids,
                   "rounds": outcome.run.rounds, "reply": outcome.run.reply, "actions": []})
    report.update(tree_delta(before, ws.tree()) if result.changed_files else
                  {"merged": 0, "moved": 0, "reordered": 0, "new_topics": []})
    return report


def tree_delta(before: TreeState, after: TreeState) -> dict[str, Any]:
    """What a reorganization did, from the trees: merged, moved, reordered records and new topics.

    ``merged``: records that became aliases of another record; ``moved``:
    records (by identity) now in another topic; ``reordered``: records that
    stayed in their topic but changed place among the records that stayed.
    """
    after_ids = after.by_id
    merged = moved = 0
    stayed: dict[str, list[str]] = {}
    for record in before.records():
        now = after_ids.get(record.memory_id)
        if now is None:
            continue  # deleted: reported as deleted_ids
        if now.memory_id != record.memory_id:
            merged += 1
        elif now.topic != record.topic:
            moved += 1
        else:
            stayed.setdefault(record.topic, []).append(record.memory_id)
    reordered = 0
    for topic, order in stayed.items():
        kept = set(order)
        new_order = [r.memory_id for r in after.files[topic].records if r.memory_id in kept]
        reordered += sum(1 for old, new in zip(order, new_order) if old != new)
    new_topics = sorted(set(after.files) - set(before.files))
    return {"merged": merged, "moved": moved, "reordered": reordered, "new_topics": new_topics}
