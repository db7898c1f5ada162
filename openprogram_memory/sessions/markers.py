"""Written markers and pending turns (architecture §4.2, §4.3).

The cursor is identity, not position: a node written into a workspace
carries ``metadata[MARKER_KEY] = <workspace id>``. *Pending* is what a walk
from a tip meets before the first node marked for this workspace — so a
fork at m3 after m1…m9 were written leaves exactly the new branch pending,
however long it is, and a shared prefix is written once whichever branch
came first.

Memory input (architecture §4.1): only non-empty ``user``/``assistant`` turns that
are neither runtime-scheduled nor rewound. A turn is *runtime-scheduled*
when its metadata says ``scheduled: true`` or its ``kind`` is one of
:data:`RUNTIME_SCHEDULED_KINDS` (sub-agent prompts and reports, merge
hints, compaction summaries, injected meta/context messages, local command
echoes, interruption notices). Any other role (``tool``, ``system``,
``subagent_report``, ``merge_hint`` …) is never memory input.

Marking the span, not just the batch: tool nodes and other non-input nodes
are never in a batch, so if only batch turns were marked a walk would pass
the unmarked tool nodes after the last mark again and again. A
:class:`PendingWalk` keeps the raw walked nodes; the writer marks
``walk.span_through(last batch node)`` — every walked node up to and
including the batch's newest turn — so the next walk stops right there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..failures import FailureCode, MemoryFailure
from .nodes import MARKER_KEY, SUPERSEDED_KEY
from .store import Node, SessionStore

__all__ = ["MARKER_KEY", "SUPERSEDED_KEY", "PendingWalk", "is_marked", "is_memory_input", "is_runtime_scheduled",
           "live_tips", "mark_written", "pending_turns", "pending_walk"]
SCHEDULED_KEY = "scheduled"
KIND_KEY = "kind"
MEMORY_INPUT_ROLES = frozenset({"user", "assistant"})
RUNTIME_SCHEDULED_KINDS = frozenset(
    {
        "subagent_prompt",  # what an agent told its sub-agent
        "subagent_report",  # what a sub-agent reported back
        "merge_hint",
        "compaction_summary",
        "branch_summary",
        "meta",  # runtime-injected context (caveats, environment, AGENTS.md)
        "local_command",  # slash-command echoes and their output
        "interrupt",  # "[Request interrupted by user]" notices
    }
)


def is_runtime_scheduled(node: Node) -> bool:
    """Whether the runtime, not the conversation, produced this turn."""
    metadata = node.metadata
    return metadata.get(SCHEDULED_KEY) is True or metadata.get(KIND_KEY) in RUNTIME_SCHEDULED_KINDS


def is_memory_input(node: Node) -> bool:
    """True only for non-empty user/assistant turns, not runtime-scheduled, not rewound."""
    return (
        node.role in MEMORY_INPUT_ROLES
        and bool(node.content.strip())
        and not node.rewound
        and not is_runtime_scheduled(node)
    )


def is_marked(node: Node, workspace_id: str) -> bool:
    """Whether ``node`` was written into *this* workspace (another id's mark does not count)."""
    return node.metadata.get(MARKER_KEY) == workspace_id


@dataclass(frozen=True)
class PendingWalk:
    """One walk from a tip back to the first node marked for a workspace.

    ``turns`` are the memory-input turns among ``walked``; both oldest first.
    """

    turns: tuple[Node, ...]
    walked: tuple[Node, ...]

    def span_through(self, node_id: str) -> list[str]:
        """Ids of every walked node up to and including ``node_id`` (what to mark after a batch)."""
        ids = [node.id for node in self.walked]
        try:
            return ids[: ids.index(node_id) + 1]
        except ValueError:
            raise MemoryFailure(
                FailureCode.INVALID_ARGUMENT, f"node {node_id!r} is not pending on this walk"
            ) from None


def _check_workspace_id(workspace_id: str) -> str:
    if not isinstance(workspace_id, str) or not workspace_id.strip():
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "a workspace id is required to read or write markers")
    return workspace_id


def pending_walk(store: SessionStore, session_id: str, workspace_id: str, tip: str | None = None) -> PendingWalk:
    """Walk from ``tip`` (default head) back to the first node marked for ``workspace_id``.

    A turn written before its ancestors were (an imported line whose parent
    arrived later, see ``SessionStore.reattach_detached``) is walked, and
    marked with the span, but is not a turn to write again. Reads one node file per step: O(pending), whatever the session's size.
    """
    _check_workspace_id(workspace_id)
    walked: list[Node] = []
    for node in store.walk_back(session_id, tip):
        if is_marked(node, workspace_id):
            break
        walked.append(node)
    walked.reverse()
    turns = tuple(n for n in walked if is_memory_input(n) and n.written_to != workspace_id)
    return PendingWalk(turns=turns, walked=tuple(walked))


def pending_turns(store: SessionStore, session_id: str, workspace_id: str, tip: str | None = None) -> list[Node]:
    """The memory-input turns not yet written for ``workspace_id``, oldest first."""
    return list(pending_walk(store, session_id, workspace_id, tip).turns)


def mark_written(store: SessionStore, session_id: str, node_ids: Iterable[str], workspace_id: str) -> None:
    """Mark exactly ``node_ids`` as written for ``workspace_id``.

    Call only after the batch's topic transaction is installed (architecture §4.2
    order). Goes through ``merge_metadata``: no ``updated_at`` changes.
    """
    _check_workspace_id(workspace_id)
    ids = list(dict.fromkeys(node_ids))
    if ids:
        store.merge_metadata(session_id, {node_id: {MARKER_KEY: workspace_id} for node_id in ids})


def live_tips(store: SessionStore, session_id: str) -> list[str]:
    """Head first, then every other non-archived branch tip (architecture §4.3)."""
    return store.branch_tips(session_id, include_archived=False)
