"""The seam between the write pipeline and a writer backend (rules, Anthropic).

The pipeline picks the batch, archives its turns, and opens ONE staged
transaction; inside it, a backend edits the staging copy (through
:mod:`openprogram_memory.writer.tools` or the :class:`Staging` API) and
returns a :class:`WriterRun`. Validation, install and markers are the
pipeline's business, never the backend's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol


if TYPE_CHECKING:
    from ..transaction.staging import Staging
    from ..memory import MemoryWorkspace
    from .superseded import SupersededRecord

MAX_ROUNDS = 20
NOTHING_DURABLE = "nothing_durable"


@dataclass(frozen=True)
class BatchTurn:
    """One turn of the batch, as the writer sees it (already archived)."""

    source_id: str  # provider/thread/message — what evidence cites
    node_id: str
    role: str  # "user" | "assistant"
    speaker: str
    timestamp: str  # ISO 8601
    text: str

    @property
    def date(self) -> str:
        return self.timestamp[:10] if len(self.timestamp) >= 10 else "undated"


@dataclass
class WriterRequest:
    """What one writer run is asked to do."""

    stage: str  # "write" | "write-repair" | "organize" | "backfill"
    turns: list[BatchTurn]
    topic_paths: list[str]  # the current topic tree (staging view)
    session_id: str | None = None
    rejection: str | None = None  # repair runs: the rejected text and the concrete fix
    max_rounds: int = MAX_ROUNDS
    # Records resting only on turns a rewind abandoned (writer/superseded.py): keep, update or delete each.
    superseded: list["SupersededRecord"] = field(default_factory=list)
    # Records kept as from an abandoned branch the person has gone back to: drop their "(abandoned branch)".
    restored: list["SupersededRecord"] = field(default_factory=list)
    # A spawned session's batch: the parent's spawning turn, as context (never a source to cite).
    parent_context: str | None = None


@dataclass
class WriterRun:
    """What a backend reports about one run (logged to agent-history.jsonl)."""

    backend: str
    rounds: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None
    committed: bool = False  # the backend called commit_edits / finished its edits
    prompt: str = ""
    reply: str = ""
    notes: list[str] = field(default_factory=list)
    # An explicit "reviewed, nothing durable" verdict: the writer read every
    # turn of ``reviewed`` (source ids) and found nothing worth recording.
    # It settles those turns only when it covers the whole batch and the
    # run changed no file; it never produces a written marker (see
    # writer/pipeline.py). Leave it None when the run edited topics.
    verdict: str | None = None
    reviewed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "rounds": self.rounds,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "stop_reason": self.stop_reason,
            "committed": self.committed,
            "prompt": self.prompt,
            "reply": self.reply,
            "notes": self.notes,
            "verdict": self.verdict,
            "reviewed": self.reviewed,
        }


class WriterBackend(Protocol):
    """A writer: edits the staging copy for one request."""

    name: str

    def run(self, request: WriterRequest, staging: "Staging", ws: "MemoryWorkspace") -> WriterRun:
        """Edit ``staging`` for ``request``. Raise MemoryFailure (MODEL_* …) on failure."""
        ...
