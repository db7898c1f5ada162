"""The seam between the write pipeline and a writer backend (rules, Anthropic).

The pipeline picks the batch, archives its turns, and opens ONE staged
transaction; inside it, a backend edits the staging copy (through
:mod:`openprogram_memory.writer.tools` or the :class:`Staging` API) and
returns a :class:`WriterRun`. Validation, install and markers are the
pipeline's business, never the backend's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..failures import FailureCode, MemoryFailure

if TYPE_CHECKING:
    from ..transaction.staging import Staging
    from ..workspace.api import MemoryWorkspace
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


BackendFactory = Callable[[str], WriterBackend]
_BACKENDS: dict[str, BackendFactory] = {}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make ``factory(model)`` answer ``model == name`` (or every ``name…`` model if ``name`` ends in ``:``).

    The built-in ``rules`` and ``anthropic:`` backends are resolved the same
    way; tests register their fakes here, so they walk the real path.
    """
    _BACKENDS[name] = factory


def _rules(_model: str) -> WriterBackend:
    from .rules import RulesWriter

    return RulesWriter()


def _anthropic(model: str) -> WriterBackend:
    from .anthropic_backend import AnthropicWriter

    return AnthropicWriter(model.split(":", 1)[1])


register_backend("rules", _rules)
register_backend("anthropic:", _anthropic)


def resolve_backend(model: str) -> WriterBackend:
    """``rules`` → the offline writer; ``anthropic:<model>`` → the Messages API writer."""
    model = str(model or "").strip()
    factory = _BACKENDS.get(model)
    if factory is None and ":" in model and not model.endswith(":"):
        factory = _BACKENDS.get(model.split(":", 1)[0] + ":")
    if factory is None:
        raise MemoryFailure(
            FailureCode.MEMORY_PROVIDER_RESOLUTION_FAILED,
            f"unknown writer model {model!r}; use 'rules' or 'anthropic:<model>'",
        )
    try:
        return factory(model)
    except ImportError as exc:  # a backend module or its SDK is not installed
        raise MemoryFailure(
            FailureCode.MEMORY_PROVIDER_RESOLUTION_FAILED,
            f"writer model {model!r} is not available here ({exc}); use 'rules' or install its dependencies",
        ) from None
