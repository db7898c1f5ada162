"""Pending turns, when a write is due, and how a batch is cut (architecture §5 steps 1–2).

*Pending* is the walk from a tip back to the first node marked for this
workspace (:func:`~openprogram_memory.sessions.markers.pending_walk`),
memory input only, minus turns a writer already reviewed and found nothing
durable in (:mod:`.reviewed`). A per-turn write is *due* when the pending
text reaches the threshold, or when something is pending and its newest
turn is over an hour old. A *batch* is the leading pending turns up to and
including the one whose running token total reaches the threshold; the
rest waits for the next pass (a forced write takes the same shape, pass
after pass).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Callable, Sequence, TypeVar

from ..timeutil import parse_instant
from ..sessions.markers import PendingWalk, pending_walk
from ..sessions.store import Node, SessionStore
from ..sessions.wrappers import without_wrappers
from ..sources.archive import SourceMessage, make_source_id
from ..tokens import count_tokens
from .backend import BatchTurn

PROVIDER = "openprogram"
STALE_AFTER = timedelta(hours=1)
TRUST_KEY = "trust_state"

T = TypeVar("T")


class PendingTurn:
    """One pending memory-input turn; its token count is computed on first use.

    A token is at least one byte of UTF-8, so ``utf8_bytes`` bounds
    ``tokens`` from above: the per-turn check that finds the pending text
    below the threshold by bytes never builds the tokenizer (a quarter of a
    second in a fresh process).
    """

    __slots__ = ("node", "utf8_bytes", "_tokens")

    def __init__(self, node: Node) -> None:
        self.node = node
        self.utf8_bytes = len(node.content.encode("utf-8", "surrogatepass"))
        self._tokens: int | None = None

    @property
    def tokens(self) -> int:
        if self._tokens is None:
            self._tokens = count_tokens(self.node.content)
        return self._tokens


@dataclass(frozen=True)
class Pending:
    """What a tip owes this workspace: the raw walk and the turns still to write."""

    walk: PendingWalk
    turns: tuple[PendingTurn, ...]

    @property
    def total_tokens(self) -> int:
        return sum(turn.tokens for turn in self.turns)

    def reaches(self, threshold: int) -> bool:
        """Whether the pending text has ``threshold`` tokens; counted only when its bytes could."""
        if sum(turn.utf8_bytes for turn in self.turns) < threshold:
            return False
        return self.total_tokens >= threshold

    @property
    def newest_at(self) -> datetime | None:
        """When the newest pending turn last changed."""
        if not self.turns:
            return None
        node = self.turns[-1].node
        return parse_instant(node.updated_at) or parse_instant(node.created_at)


def read_pending(store: SessionStore, session_id: str, workspace_id: str, tip: str | None,
                 reviewed: frozenset[str] = frozenset(), reopen: Callable[[Node], bool] | None = None) -> Pending:
    """Pending turns from ``tip`` (default head): O(pending) node reads; tokens counted when needed.

    ``reviewed`` turns are left out unless ``reopen`` says to read them again.
    """
    walk = pending_walk(store, session_id, workspace_id, tip)
    turns = tuple(PendingTurn(node) for node in walk.turns
                  if node.id not in reviewed or (reopen is not None and reopen(node)))
    return Pending(walk, turns)


def is_due(pending: Pending, threshold: int, now: datetime) -> bool:
    """Per-turn rule: enough pending text, or pending turns whose newest is over an hour old."""
    if not pending.turns:
        return False
    if pending.reaches(threshold):
        return True
    newest = pending.newest_at
    now = now if now.tzinfo else now.replace(tzinfo=timezone.utc)
    return newest is not None and now - newest > STALE_AFTER


def cut_batch(items: Sequence[T], tokens_of: Callable[[T], int], threshold: int) -> list[T]:
    """The leading items up to and including the one whose running total reaches ``threshold``."""
    batch: list[T] = []
    total = 0
    for item in items:
        batch.append(item)
        total += tokens_of(item)
        if total >= threshold:
            break
    return batch


def source_message(session_id: str, node: Node, archived: Callable[[str], SourceMessage | None]) -> SourceMessage:
    """The archive frame for one session turn: ``openprogram/<session>/<node>``.

    The bundled store's own turns are ``trusted`` unless the node's metadata
    says ``trust_state: pending``. The archive is append-only and content
    addressed, so a node whose text changed after it was archived (an
    importer refreshing a message that grew) gets a content-suffixed id
    ``<node>~<8 hex>`` instead of a refused rewrite of the first frame.
    """
    trust = node.metadata.get(TRUST_KEY)
    message = SourceMessage(
        source_id=make_source_id(PROVIDER, session_id, node.id),
        speaker=node.role,
        speaker_id=node.role,
        timestamp=node.created_at,
        text=node.content,
        trust_state=trust if trust in ("trusted", "pending") else "trusted",
        speaker_kind=node.role,
    )
    known = archived(message.source_id)
    if known is not None and known.frame() != message.frame():
        digest = hashlib.sha256(node.content.encode("utf-8")).hexdigest()[:8]
        message = replace(message, source_id=make_source_id(PROVIDER, session_id, f"{node.id}~{digest}"))
    return message


def batch_turn(message: SourceMessage, node_id: str) -> BatchTurn:
    """What the writer sees of one archived turn: a person's turn without the runtime's wrapper elements.

    A user turn the importer kept as the person's may still carry a whole
    wrapper element beside their words (a ``<system-reminder>`` before them);
    every writer, and the label it gives the citation, reads only the words.
    The archive frame keeps the text as it came (it is the evidence).
    """
    text = message.text
    if message.speaker_kind == "user" and (typed := without_wrappers(text)) != text:
        text = typed.strip()  # (not the blank lines the elements stood between)
    return BatchTurn(
        source_id=message.source_id,
        node_id=node_id,
        role=message.speaker_kind,
        speaker=message.speaker,
        timestamp=message.timestamp,
        text=text,
    )
