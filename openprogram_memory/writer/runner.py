"""One writer run inside the one transaction, with one repair (design §03).

:func:`run_writer` is shared by session passes and backfill: the backend
edits a fresh staging copy inside :meth:`MemoryWorkspace.edit` (policy
MODEL); validation and install are the engine's. A validation rejection
gets exactly one repair run — ``stage="write-repair"``, the rejected text
and one concrete fix — on a new staging copy with the baseline re-read
(``staged_edit`` makes both fresh). A second rejection is
``COMMIT_REJECTED`` (not retryable): nothing is installed, the caller moves
no marker. A rejection of a file a person left invalid by hand is not the
writer's: ``WRITER_PRECONDITION_FAILED``, without a repair run, and not
retryable (exit 65: only the person can fix the file; the turns stay pending).
Every run is one line in ``agent-history.jsonl``.

The model organizer (``memory sleep --model anthropic:…``) runs through
here too, with ``stage="organize"``, its own repair stage, its own runtime
update and ``require_commit``: an organize run that stops without
``commit_edits`` installs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..failures import FailureCode, MemoryFailure
from ..transaction.engine import Policy, TxResult
from ..workspace.state import RuntimeState
from . import journal
from .backend import NOTHING_DURABLE, BatchTurn, WriterBackend, WriterRequest, WriterRun
from .repair import REPAIRABLE, rejection_message
from .superseded import SupersededRecord, outcomes, retracted
from ..timeutil import utc_seconds

if TYPE_CHECKING:
    from ..transaction.staging import Staging
    from ..memory import MemoryWorkspace

REPAIR_STAGE = "write-repair"
REPAIR_STAGES = {"organize": "organize-repair"}  # every other stage repairs as a write
RuntimeUpdate = Callable[[RuntimeState, TxResult], None]


@dataclass
class WriterOutcome:
    """An installed (or empty) writer transaction and the run that made it."""

    result: TxResult
    run: WriterRun
    runs: int = 1
    superseded: list[dict[str, Any]] = field(default_factory=list)  # superseded.outcomes of the candidates

    @property
    def changed(self) -> bool:
        """Whether the run installed a real change to topics."""
        return self.result.memory_committed and bool(self.result.changed_files)

    def reviewed(self, turns: Sequence[BatchTurn]) -> bool:
        """An explicit nothing-durable verdict covering every turn, with no change made."""
        return (not self.changed and self.run.verdict == NOTHING_DURABLE
                and {t.source_id for t in turns} <= set(self.run.reviewed))


@dataclass
class _Attempt:
    result: TxResult | None
    run: WriterRun | None
    rejection: MemoryFailure | None = None
    staged: dict[str, str | None] = field(default_factory=dict)
    superseded: list[dict[str, Any]] = field(default_factory=list)


def run_writer(
    ws: "MemoryWorkspace",
    backend: WriterBackend,
    turns: Sequence[BatchTurn],
    *,
    stage: str,
    session_id: str | None,
    tokens: int,
    now: datetime,
    lock_timeout: float,
    message: str,
    runtime_update: RuntimeUpdate | None = None,
    stamp: bool = False,
    require_commit: bool = False,
    superseded: Sequence[SupersededRecord] = (),
    restored: Sequence[SupersededRecord] = (),
    parent_context: str | None = None,
) -> WriterOutcome:
    """Run ``backend`` on ``turns`` in one staged transaction; repair once; raise on failure.

    ``runtime_update`` replaces the default (count one written batch);
    ``stamp`` installs it even when no topic changed (the runtime update records something); with
    ``require_commit`` a run that never called ``commit_edits`` is
    WRITER_NO_PROGRESS and installs nothing.
    """
    attempt_options = dict(tokens=tokens, now=now, lock_timeout=lock_timeout, message=message,
                           runtime_update=runtime_update, stamp=stamp, require_commit=require_commit)
    request = WriterRequest(stage=stage, turns=list(turns), topic_paths=[], session_id=session_id,
                            superseded=list(superseded), restored=list(restored), parent_context=parent_context)
    first = _attempt(ws, backend, request, **attempt_options)  # type: ignore[arg-type]
    if first.rejection is None:
        return WriterOutcome(first.result, first.run, 1, first.superseded)  # type: ignore[arg-type]
    repair = WriterRequest(stage=REPAIR_STAGES.get(stage, REPAIR_STAGE), turns=list(turns), topic_paths=[],
                           session_id=session_id, rejection=rejection_message(first.rejection, first.staged, turns),
                           superseded=list(superseded), restored=list(restored), parent_context=parent_context)
    second = _attempt(ws, backend, repair, **attempt_options)  # type: ignore[arg-type]
    if second.rejection is None:
        return WriterOutcome(second.result, second.run, 2, second.superseded)  # type: ignore[arg-type]
    raise MemoryFailure(
        FailureCode.COMMIT_REJECTED,
        f"the writer's edit was rejected twice, so the batch is not written "
        f"(first: {first.rejection.message}; after repair: {second.rejection.message})",
        retryable=False,
        details={"first": first.rejection.to_json(), "repair": second.rejection.to_json(),
                 "batch": [t.node_id for t in turns]},
    )


def _attempt(ws: "MemoryWorkspace", backend: WriterBackend, request: WriterRequest, *, tokens: int,
             now: datetime, lock_timeout: float, message: str, runtime_update: RuntimeUpdate | None,
             stamp: bool, require_commit: bool) -> _Attempt:
    captured: dict[str, Any] = {}

    def edit(staging: "Staging") -> None:
        request.topic_paths = staging.list_topics()
        try:
            run = backend.run(request, staging, ws)
        except MemoryFailure:
            raise
        except Exception as exc:  # an unclassified writer error is never retryable
            raise MemoryFailure(FailureCode.WRITER_FAILURE_UNKNOWN,
                                f"writer {getattr(backend, 'name', '?')} failed: {type(exc).__name__}: {exc}",
                                retryable=False) from exc
        if not isinstance(run, WriterRun):
            raise MemoryFailure(FailureCode.WRITER_FAILURE_UNKNOWN,
                                f"writer {getattr(backend, 'name', '?')} returned {type(run).__name__}, not a WriterRun")
        captured["run"] = run
        if not run.committed and require_commit:
            raise MemoryFailure(FailureCode.WRITER_NO_PROGRESS,
                                f"{run.backend} stopped without calling commit_edits "
                                f"(stop reason: {run.stop_reason or 'none'}); nothing was changed",
                                retryable=False, details={"stage": request.stage, "notes": run.notes[-5:]})
        if not run.committed and staging.changes:
            run.notes.append("edits discarded: the writer stopped without committing them")
            staging.reset()
        captured["staged"] = dict(staging.changes)

    def count(state: RuntimeState, _result: TxResult) -> None:
        state.batches_since_organize += 1
        state.tokens_since_organize += tokens
        state.writes_since_global += 1
        state.last_write_at = utc_seconds(now)

    try:
        result = ws.edit(edit, policy=Policy.MODEL, lock_timeout=lock_timeout, message=message,
                         runtime_update=runtime_update or count, stamp=stamp,
                         held=("the writer's", "the turns stay pending and the next write writes them"))
    except MemoryFailure as failure:
        run = captured.get("run")
        # a file a person left invalid by hand: no repair run, and the turns stay pending (the watcher does not
        # settle the session) until the person fixes it
        hand_edit = (ws.hand_edit_failure(failure.details.get("file"), whose="the writer's", rejection=failure,
                                          then="the turns stay pending and the next write writes them")
                     if failure.code in REPAIRABLE else None)
        _log(ws, backend, request, run, now, error=hand_edit or failure)
        if hand_edit is not None:
            raise hand_edit from failure
        if run is not None and failure.code in REPAIRABLE:
            return _Attempt(None, run, failure, captured.get("staged", {}))
        raise
    except Exception as exc:
        _log(ws, backend, request, captured.get("run"), now,
             error=MemoryFailure(FailureCode.TRANSACTION_FAILURE_UNKNOWN, f"{type(exc).__name__}: {exc}"))
        raise
    # judged on the installed tree, so the history says what the pass really did with each candidate
    judged = outcomes(request.superseded, ws.cache.snapshot()) if request.superseded else []
    _log(ws, backend, request, captured["run"], now, result=result, superseded=judged)
    return _Attempt(result, captured["run"], superseded=judged)


def _log(ws: "MemoryWorkspace", backend: WriterBackend, request: WriterRequest, run: WriterRun | None,
         now: datetime, *, result: TxResult | None = None, error: MemoryFailure | None = None,
         superseded: list[dict[str, Any]] | None = None) -> None:
    record: dict[str, Any] = {
        "stage": request.stage,
        "session": request.session_id,
        "backend": getattr(backend, "name", "?"),
        "batch": [t.node_id for t in request.turns],
        "sources": [t.source_id for t in request.turns],
        "rejection": request.rejection,
    }
    if request.superseded:  # what became of the records from an abandoned branch
        record["superseded"] = superseded if superseded is not None else [
            {"memory_id": c.memory_id, "topic": c.topic, "action": "pending"} for c in request.superseded]
        record["retracted"] = retracted(record["superseded"])
    record.update(run.to_json() if run is not None else {"rounds": 0, "prompt": "", "reply": ""})
    if result is not None:
        record.update(changed_files=result.changed_files, revision=result.revision,
                      memory_committed=result.memory_committed, git_committed=result.git_committed,
                      git_error=result.git_error)
    record["error"] = ({"code": error.code.value, "retryable": error.retryable, "message": error.message}
                       if error is not None else None)
    journal.log_run(ws.layout, record, now)
