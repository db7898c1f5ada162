"""Records that rest only on an abandoned branch, and what a pass did with them (architecture §15).

A rewind supersedes the written turns it abandons (``sessions/store.py``).
A record whose *every* cited source is such a turn — of the session being
written or of a session spawned from it — is a *candidate for retraction*:
the writer pass of the new branch receives the candidates as context and
decides per record (keep, update, delete) with the new branch's evidence,
through the one transaction. Nothing here edits memory; a branch switch
alone never retracts (only a written pass does).

A record already kept and marked as from an abandoned branch (its footnote
time qualified ``(abandoned branch)``) is not offered again. When the person
goes back to that branch (``SessionStore.switch``, or a new turn under it),
its turns are no longer superseded and such a record is *restored*: the next
pass drops the qualifier, since what the branch said is current again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ..failures import MemoryFailure
from ..sessions.store import SessionStore
from ..sources.archive import split_source_id
from ..topics.normalize import ABANDONED_QUALIFIER
from ..workspace.caches import RecordInfo, TreeState

PROVIDER = "openprogram"


@dataclass(frozen=True)
class SupersededRecord:
    """One candidate: a record whose every source lies on superseded turns."""

    memory_id: str
    topic: str
    content: str
    sources: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"memory_id": self.memory_id, "topic": self.topic, "content": self.content,
                "sources": list(self.sources)}


def related_sessions(store: SessionStore, session_id: str) -> set[str]:
    """The session and every session spawned from it, transitively."""
    seen: set[str] = set()
    todo = [session_id]
    while todo:
        current = todo.pop()
        if current in seen or not store.exists(current):
            continue
        seen.add(current)
        todo.extend(store.spawned(current))
    return seen


def is_marked_abandoned(record: RecordInfo) -> bool:
    """Whether a pass already kept this record and marked it as from an abandoned branch."""
    return any(evidence.time and evidence.time.endswith(ABANDONED_QUALIFIER) for evidence in record.evidence)


class _Turns:
    """Whether a source id names a superseded turn of the bundled store (node reads cached)."""

    def __init__(self, store: SessionStore, workspace_id: str, sessions: set[str]) -> None:
        self.store, self.workspace_id, self.sessions = store, workspace_id, sessions
        self.known: dict[str, bool] = {}

    def session_of(self, source_id: str) -> str | None:
        try:
            provider, thread, _message = split_source_id(source_id)
        except MemoryFailure:
            return None
        return thread if provider == PROVIDER else None

    def superseded(self, source_id: str) -> bool:
        if source_id not in self.known:
            self.known[source_id] = self._read(source_id)
        return self.known[source_id]

    def _read(self, source_id: str) -> bool:
        try:
            _provider, thread, message = split_source_id(source_id)
            # an importer-refreshed turn is archived as <node>~<digest>; the node is the same
            return self.store.get_node(thread, message.split("~", 1)[0]).superseded_for(self.workspace_id)
        except MemoryFailure:
            return False  # a source outside the store (another provider, a deleted session) is never abandoned


@dataclass(frozen=True)
class BranchRecords:
    """The records a pass reconsiders because a branch of their session was abandoned or went back to."""

    superseded: list[SupersededRecord]  # every source superseded, not marked yet: candidates for retraction
    restored: list[SupersededRecord]  # marked as from an abandoned branch, which is current again


def branch_records(tree: Callable[[], TreeState], store: SessionStore, workspace_id: str,
                   session_id: str) -> BranchRecords:
    """Candidates for retraction and restored records among those citing ``session_id`` or its spawned sessions.

    ``tree`` gives the installed tree, asked only when a session was ever rewound: a snapshot costs a stat
    pass over every topic file, which a pass of a session never rewound (the common case) need not pay."""
    out = BranchRecords([], [])
    sessions = related_sessions(store, session_id)
    if not any(store.ever_superseded(s) for s in sessions):
        return out  # the common case costs a meta.json read, not a scan of every record
    turns = _Turns(store, workspace_id, sessions)
    for record in tree().records():
        sources = record.source_ids
        if not sources or not any(turns.session_of(s) in turns.sessions for s in sources):
            continue
        superseded, marked = all(turns.superseded(s) for s in sources), is_marked_abandoned(record)
        if superseded != marked:  # superseded and not yet marked, or marked and back on a live branch
            (out.superseded if superseded else out.restored).append(
                SupersededRecord(record.memory_id, record.topic, record.content, tuple(sources)))
    return out


def outcomes(candidates: Iterable[SupersededRecord], tree: TreeState) -> list[dict[str, Any]]:
    """What the installed pass did with each candidate.

    ``deleted`` (gone), ``replaced`` (rewritten, no longer citing the
    abandoned turns), ``confirmed`` (same text, now resting on the new
    branch), ``kept`` (still resting on the abandoned turns). The first two
    are retractions.
    """
    out = []
    for candidate in candidates:
        record = tree.find(candidate.memory_id)
        if record is None:
            action = "deleted"
        elif set(record.source_ids) & set(candidate.sources):
            action = "kept"
        else:
            action = "confirmed" if record.content == candidate.content else "replaced"
        out.append({"memory_id": candidate.memory_id, "topic": candidate.topic, "action": action,
                    "content": candidate.content})
    return out


def retracted(results: Iterable[dict[str, Any]]) -> list[str]:
    """The block IDs of the outcomes that retracted a record."""
    return [r["memory_id"] for r in results if r["action"] in ("deleted", "replaced")]
