"""Search topic records (BM25) and build the recall block an agent receives.

``search`` runs before every turn, so it reads a cached index (see
:mod:`.cache`) and re-indexes only topic files whose signature moved.

Trust: by default (automatic context) a record citing any ``pending``
source is never returned; ``include_pending=True`` returns it marked
``trust_state="pending"`` — for people and tools that ask explicitly.

Missing workspace: :func:`search` raises ``MEMORY_NOT_FOUND`` when the
memory root is not a directory, so callers can tell "no memory" from "no
match". It is the provider hook's job to swallow that (memory never takes a
conversation down); an existing root without topics simply finds nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from ..config import MAX_TOP_K
from ..failures import FailureCode, MemoryFailure
from ..frozen import Frozen
from .cache import current_index
from .fence import fence
from .tokenize import tokenize

RECALL_NOTE = "Recalled from long-term memory (earlier sessions), not new user input. Use it as background."
PENDING_MARK = "[unverified]"


class SearchHit(Frozen):
    """One found record. ``sources`` are ``{"source", "label"}`` dicts.

    Immutable, compared by value; a plain class rather than a dataclass so
    the per-prompt hook does not import ``dataclasses`` (see ``Settings``).
    """

    __slots__ = ("memory_id", "topic", "headings", "content", "score", "sources", "trust_state")
    memory_id: str
    topic: str
    headings: tuple[str, ...]
    content: str
    score: float
    sources: list[dict[str, str]]
    trust_state: str

    def __init__(self, memory_id: str, topic: str, headings: tuple[str, ...], content: str, score: float,
                 sources: list[dict[str, str]] | None = None, trust_state: str = "trusted") -> None:
        self._init(memory_id, topic, headings, content, score, sources if sources is not None else [], trust_state)

    def to_json(self) -> dict[str, Any]:
        """The stable JSON shape of one result (architecture §12.1)."""
        return {
            "memory_id": self.memory_id,
            "topic": self.topic,
            "content": self.content,
            "score": self.score,
            "sources": [dict(source) for source in self.sources],
            "headings": list(self.headings),
            "trust_state": self.trust_state,
        }


def search(memory_root: Path, query: str, top_k: int = 5, *, include_pending: bool = False) -> list[SearchHit]:
    """The ``top_k`` records best matching ``query``, best first.

    Raises ``INVALID_ARGUMENT`` for an empty query or ``top_k`` outside 1..``MAX_TOP_K`` and
    ``MEMORY_NOT_FOUND`` when ``memory_root`` is not a directory. A query of
    stopwords or punctuation only matches nothing.
    """
    if not isinstance(query, str) or not query.strip():
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "search query is empty; pass the words to look for")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"top_k must be an integer from 1 to {MAX_TOP_K}, got {top_k!r}")
    root = Path(memory_root)
    if not root.is_dir():
        raise MemoryFailure(
            FailureCode.MEMORY_NOT_FOUND,
            f"no memory workspace at {root}; run `openprogram memory init` (or pass --state)",
        )
    terms = tokenize(query)
    if not terms:
        return []
    index, report = current_index(root)
    with index.lock:  # a watched (long-running) process scores with numpy: the same matches, bit for bit
        matches = index.top(terms, top_k, include_pending=include_pending, dense=report.watched)
    return [
        SearchHit(
            memory_id=m.doc.memory_id,
            topic=m.topic,
            headings=tuple(m.doc.headings),
            content=m.doc.content,
            score=m.score,
            sources=m.sources,
            trust_state=m.trust_state,
        )
        for m in matches
    ]


def _recall_line(hit: SearchHit) -> str:
    place = " › ".join([hit.topic, *hit.headings])
    mark = f" {PENDING_MARK}" if hit.trust_state != "trusted" else ""
    content = "\n  ".join(hit.content.splitlines())
    return f"- {content}{mark} ({place}; ^{hit.memory_id})"


def recall_block(hits: Iterable[SearchHit]) -> str:
    """The text an agent receives: hits fenced once in ``<memory-context>``.

    One line per record with where it lives; records citing a pending
    source (only present if the caller asked for them) are marked
    ``[unverified]``. No hits → ``""`` (nothing is injected).
    """
    return fence("\n".join(_recall_line(hit) for hit in hits), RECALL_NOTE)
