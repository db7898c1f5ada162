"""The write pipeline: ``write()`` and one pass, ``write_session()`` (architecture §5, §6; design §01, §02, §04, §07).

Two entries, one logic, differing only in ``force``:

- per turn (``force=False``): reads the pending turns back from the session
  store (no messages are passed in) and writes one pass only when the
  pending text reaches ``memory.writer.trigger_tokens`` or the newest
  pending turn is over an hour old; otherwise it returns at once without a
  model call, the lock or the revision — O(pending), whatever the session's
  size;
- forced (``force=True``, the session boundary): head first, then every
  other live branch tip, pass after pass until nothing is pending.

One pass, under the write lock for the whole pass (the writer waits at most
:data:`WRITER_LOCK_TIMEOUT`; busy → retryable ``CONCURRENT_UPDATE``, never
"below threshold"): pending → batch → archive the batch → the writer in one
staged transaction with one repair → markers (only after install, only if
files changed, on the walked span through the batch's last turn) → organize
if due (its failure is logged, never undoes the write).

A batch the writer reviewed and explicitly found nothing durable in is
recorded in the review ledger (:mod:`.reviewed`) and never marked; a run
that changes nothing *without* that verdict is ``WRITER_NO_PROGRESS``.

``write()`` answers ``None`` or raises :class:`MemoryFailure`; every
failure is recorded in ``writer-status.json`` and ``events.jsonl`` first.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from ..config import Settings
from ..failures import FailureCode, MemoryFailure, as_failure
from ..sessions.markers import live_tips, mark_written
from ..sessions.store import SessionStore
from ..sources.archive import SourceMessage, archive_relpath_for
from ..topics.ids import source_anchor
from ..memory import MemoryWorkspace
from ..transaction.engine import WRITER_LOCK_TIMEOUT
from ..workspace.caches import register_eager_loader
from ..workspace.state import RuntimeState, record_outcome, write_lock
from . import journal
from .backend import WriterBackend
from .backends import resolve_backend
from .batching import Pending, batch_turn, cut_batch, is_due, read_pending, source_message
from .reviewed import Rereview, ReviewLedger
from .runner import run_writer
from .superseded import branch_records, retracted
from ..timeutil import utc_seconds

PARENT_CONTEXT_CHARS = 600

log = logging.getLogger("openprogram_memory.writer")


def load_writer_keys() -> None:
    """Register the per-file index keys a write reads (the token index, the slotted records): eager keys, kept
    with the parse in the tree cache. Imported only when a process saves that cache (the extractor alone costs
    a cold process ~0.2 s, which a turn that is not due never pays): see
    :func:`~openprogram_memory.workspace.caches.register_eager_loader`."""
    from ..placement import similarity  # noqa: F401  (registers "tokens")
    from . import statements  # noqa: F401  (registers "slotted")


# every process that writes imports this module before it opens the workspace: whatever path of it parses the tree
# and saves it (an adoption on open, a rewound session's records, the transaction), the next cold write finds its keys
register_eager_loader(load_writer_keys)


@dataclass
class PassResult:
    """What one pass did: ``written`` (installed, marked) or ``reviewed`` (nothing durable)."""

    outcome: str
    batch: list[str]
    marked: list[str]
    changed_files: list[str]
    revision: str
    tokens: int
    runs: int
    organize: dict[str, Any] | None = None
    superseded: list[dict[str, Any]] = field(default_factory=list)  # what became of abandoned-branch records


@dataclass
class WriteReport:
    """What one ``write`` call did, for the CLI and tests."""

    session: str | None
    force: bool
    passes: list[PassResult] = field(default_factory=list)
    pending: int | None = None
    revision: str | None = None
    skipped: str | None = None
    interrupted: bool = False  # stopped by Ctrl-C between two passes

    def to_json(self) -> dict[str, Any]:
        """The ``memory write --json`` object (architecture §12.1) plus ``reviewed``, ``skipped`` and
        ``interrupted`` (when Ctrl-C stopped it between two passes)."""
        changed = sorted({f for p in self.passes for f in p.changed_files})
        out: dict[str, Any] = {
            "ok": True,
            "session": self.session,
            "passes": len(self.passes),
            "written": [n for p in self.passes if p.outcome == "written" for n in p.batch],
            "reviewed": [n for p in self.passes if p.outcome == "reviewed" for n in p.batch],
            "pending": self.pending,
            "revision": self.revision,
            "changed_files": changed,
            "retracted": [i for p in self.passes for i in retracted(p.superseded)],
        }
        superseded = [s for p in self.passes for s in p.superseded]
        if superseded:
            out["superseded"] = superseded
        organized = [p.organize for p in self.passes if p.organize]
        if organized:
            out["organize"] = organized
        if self.skipped:
            out["skipped"] = self.skipped
        if self.interrupted:
            out["interrupted"] = True
        return out


class WriteContext:
    """Everything one ``write`` call shares across its passes."""

    def __init__(self, ws: MemoryWorkspace, session_id: str, now: datetime, backend: WriterBackend | None,
                 rereview: Rereview | None = None) -> None:
        self.ws = ws
        self.session_id = session_id
        self.now = now
        self.store = SessionStore(ws.settings.sessions_dir)
        self.workspace_id = ws.workspace_id
        self.threshold = int(ws.settings["memory.writer.trigger_tokens"])
        self.ledger = ReviewLedger(ws.layout)
        self.rereview = rereview
        self._backend = backend

    @property
    def backend(self) -> WriterBackend:
        """The writer, resolved only when a pass needs it (never on a not-due turn)."""
        if self._backend is None:
            self._backend = resolve_backend(self.ws.settings["memory.writer.model"])
        return self._backend

    def pending(self, tip: str | None) -> Pending:
        """Pending turns from ``tip`` (default head); a damaged store is SESSION_NODES_UNAVAILABLE."""
        reopen = None
        if self.rereview is not None:
            entries = self.ledger.entries(self.session_id)
            writer, rereview = self.backend.name, self.rereview
            reopen = lambda node: rereview.reopens(entries.get(node.id, {}), node, writer)  # noqa: E731
        try:
            return read_pending(self.store, self.session_id, self.workspace_id, tip,
                                self.ledger.ids(self.session_id), reopen)
        except MemoryFailure as failure:
            if failure.code is FailureCode.MEMORY_NOT_FOUND:
                raise MemoryFailure(FailureCode.SESSION_NODES_UNAVAILABLE, failure.message,
                                    details=failure.details) from None
            raise

    def archived(self, source_id: str) -> SourceMessage | None:
        return self.ws.cache.sources.lookup(archive_relpath_for(source_id), source_anchor(source_id))


def open_workspace(settings_or_ws: Settings | MemoryWorkspace) -> MemoryWorkspace:
    """The workspace for ``write``: given, or opened (created) from settings."""
    if isinstance(settings_or_ws, MemoryWorkspace):
        return settings_or_ws
    return MemoryWorkspace.open(settings_or_ws, create=True)


def write(settings_or_ws: Settings | MemoryWorkspace, session_id: str | None, *, force: bool = False,
          messages: Any = None, backend: WriterBackend | None = None, now: datetime | None = None,
          busy_deferred: bool = False) -> None:
    """Write a session into memory: ``None`` (written, or nothing due) or raise MemoryFailure.

    ``messages`` (``[{"role": "user"|"assistant", "content": …, "id"?: …}]``)
    are first appended to the bundled store on the session's head (the
    session is created if needed; messages whose ids are already there are
    skipped — :func:`~openprogram_memory.sessions.messages.append_messages`).
    The pass itself always reads the store, so a restart loses nothing.

    ``busy_deferred``: a busy workspace (``CONCURRENT_UPDATE``) is raised
    but not recorded as a writer failure — the caller retries and records
    the deferral itself (the Claude Code hook's worker).
    """
    if messages is not None:
        ws = open_workspace(settings_or_ws)
        if isinstance(session_id, str) and session_id.strip():
            from ..sessions.messages import append_messages

            try:
                append_messages(SessionStore(ws.settings.sessions_dir), session_id, messages)
            except MemoryFailure as failure:
                journal.record_failure(ws.layout, session_id, failure, None, now or datetime.now(timezone.utc))
                raise
        settings_or_ws = ws
    write_report(settings_or_ws, session_id, force=force, backend=backend, now=now, busy_deferred=busy_deferred)
    return None


def write_report(settings_or_ws: Settings | MemoryWorkspace, session_id: str | None, *, force: bool = False,
                 backend: WriterBackend | None = None, now: datetime | None = None,
                 rereview: Rereview | None = None, should_stop: Callable[[], bool] | None = None,
                 busy_deferred: bool = False) -> WriteReport:
    """:func:`write`, returning what was done (passes, written turns, pending, revision).

    ``rereview`` (with ``force``) also reads turns another writer settled as
    nothing durable (:func:`.rereview.rereview_sessions`). When
    ``should_stop()`` (Ctrl-C) turns true, a forced write stops before its
    next pass (each pass is one transaction: what was written stays written)
    and the report says ``interrupted``. ``busy_deferred`` as in :func:`write`.
    """
    ws = open_workspace(settings_or_ws)
    if not ws.settings["memory.writer.enabled"]:
        return WriteReport(session_id, force, skipped="memory.writer.enabled=false")
    moment = now or datetime.now(timezone.utc)
    if not isinstance(session_id, str) or not session_id.strip():
        failure = MemoryFailure(FailureCode.MISSING_SESSION_ID, "write needs a session id (memory write --session ID)")
        journal.record_failure(ws.layout, None, failure, None, moment)
        raise failure
    ctx = WriteContext(ws, session_id, moment, backend, rereview)
    try:
        return _write(ctx, force, should_stop)
    except MemoryFailure as failure:
        if not (busy_deferred and failure.code is FailureCode.CONCURRENT_UPDATE):  # nothing wrong: it waits
            _record_failure(ctx, failure)
        raise
    except Exception as exc:
        unknown = as_failure(exc, FailureCode.WRITER_FAILURE_UNKNOWN)
        _record_failure(ctx, unknown)
        raise unknown from exc


def _write(ctx: WriteContext, force: bool, should_stop: Callable[[], bool] | None = None) -> WriteReport:
    if not ctx.store.exists(ctx.session_id):
        raise MemoryFailure(FailureCode.SESSION_NODES_UNAVAILABLE,
                            f"no session {ctx.session_id!r} in {ctx.store.root}",
                            details={"session": ctx.session_id})
    report = WriteReport(ctx.session_id, force)
    if not force:
        pending = ctx.pending(None)
        if not is_due(pending, ctx.threshold, ctx.now):
            journal.record_pending(ctx.ws.layout, ctx.session_id, len(pending.turns))
            report.pending = len(pending.turns)
            report.skipped = "not due" if pending.turns else None
            return report
        result = write_session(ctx, None, force=False)
        report.passes = [result] if result else []
    else:
        # round after round over the live tips until one finds nothing pending: turns that arrived while a pass ran
        # (a Stop hook imported them, and its own write found this one holding the lock) extend a tip this round
        # began from, and are written too, not left for the watcher
        passes = -1
        while not report.interrupted and passes != len(report.passes):
            passes = len(report.passes)
            try:
                tips = live_tips(ctx.store, ctx.session_id)
            except MemoryFailure as failure:
                raise MemoryFailure(FailureCode.SESSION_NODES_UNAVAILABLE, failure.message) from None
            for tip in tips:
                while not report.interrupted:
                    if should_stop is not None and should_stop():
                        report.interrupted = True
                    elif (result := write_session(ctx, tip, force=True)) is None:
                        break
                    else:
                        report.passes.append(result)
                if report.interrupted:
                    break
    report.pending = len(ctx.pending(None).turns)
    report.revision = ctx.ws.revision()
    if report.passes or force:
        journal.record_success(ctx.ws.layout, ctx.session_id, report.pending, ctx.now)
    else:  # due, but another writer got there first under the lock
        journal.record_pending(ctx.ws.layout, ctx.session_id, report.pending)
    if report.passes:
        journal.emit_event(ctx.ws.layout, "memory.write_completed", {
            "session": ctx.session_id, "force": force, **{k: v for k, v in report.to_json().items()
                                                          if k in ("passes", "written", "reviewed", "changed_files")}},
            ctx.now)
    return report


def write_session(ctx: WriteContext, tip: str | None = None, *, force: bool = False) -> PassResult | None:
    """One pass over the branch ending at ``tip``; None when nothing is pending (or due)."""
    with write_lock(ctx.ws.layout, WRITER_LOCK_TIMEOUT):
        pending = ctx.pending(tip)  # re-read under the lock: another writer may have moved markers
        if not pending.turns or (not force and not is_due(pending, ctx.threshold, ctx.now)):
            return None
        batch = cut_batch(pending.turns, lambda turn: turn.tokens, ctx.threshold)
        messages = [source_message(ctx.session_id, turn.node, ctx.archived) for turn in batch]
        ctx.ws.archive(messages)  # before the writer runs: the archive never lags the markers
        turns = [batch_turn(message, turn.node.id) for message, turn in zip(messages, batch)]
        tokens = sum(turn.tokens for turn in batch)
        reconsider = branch_records(ctx.ws.cache.snapshot, ctx.store, ctx.workspace_id, ctx.session_id)
        outcome = run_writer(ctx.ws, ctx.backend, turns, stage="write", session_id=ctx.session_id, tokens=tokens,
                             now=ctx.now, lock_timeout=WRITER_LOCK_TIMEOUT,
                             message=f"memory: write {len(turns)} turn(s) of session {ctx.session_id}",
                             superseded=reconsider.superseded, restored=reconsider.restored,
                             parent_context=parent_context(ctx.store, ctx.session_id))
        batch_ids = [turn.node.id for turn in batch]
        if outcome.changed:
            span = pending.walk.span_through(batch[-1].node.id)
            mark_written(ctx.store, ctx.session_id, span, ctx.workspace_id)  # after install, never before
            ctx.ledger.forget(ctx.session_id, span)
            result = PassResult("written", batch_ids, span, outcome.result.changed_files, outcome.result.revision,
                                tokens, outcome.runs, superseded=outcome.superseded)
            result.organize = organize_if_due(ctx.ws, ctx.now)
            return result
        if outcome.reviewed(turns):
            ctx.ledger.add(ctx.session_id, {
                turn.node_id: {"at": utc_seconds(ctx.now), "source": turn.source_id,
                               "backend": outcome.run.backend}
                for turn in turns})
            return PassResult("reviewed", batch_ids, [], [], outcome.result.revision, tokens, outcome.runs)
        stop = outcome.run.stop_reason or "none"
        raise MemoryFailure(
            FailureCode.WRITER_NO_PROGRESS,
            f"the writer changed nothing for {len(turns)} pending turn(s) and did not say the batch holds "
            f"nothing durable (stop reason: {stop}); the turns stay pending",
            retryable=False,
            details={"session": ctx.session_id, "batch": batch_ids, "notes": outcome.run.notes},
        )


def parent_context(store: SessionStore, session_id: str) -> str | None:
    """A spawned session's parent context: the turn that spawned it, clipped (None for other sessions)."""
    link = store.parent_link(session_id)
    if link is None:
        return None
    try:
        node = store.get_node(link["session"], link["node"])
    except MemoryFailure:
        return None  # the parent was deleted: the child is written on its own
    text = " ".join(node.content.split())
    clipped = text if len(text) <= PARENT_CONTEXT_CHARS else text[: PARENT_CONTEXT_CHARS - 1] + "…"
    return f"session {link['session']}, turn {node.id} ({node.role}): {clipped}"


def organize_if_due(ws: MemoryWorkspace, now: datetime) -> dict[str, Any] | None:
    """Run the organizer when due (architecture §5 step 4); a failure is logged and recorded, never raised."""
    from ..organizer import organize_due

    if not organize_due(RuntimeState.load(ws.layout), now):
        return None
    return organize_logged(ws, now)


def organize_logged(ws: MemoryWorkspace, now: datetime) -> dict[str, Any]:
    """Organize now with the default organizer; log the run, emit an event on failure, never raise."""
    from ..organizer import reorganize
    from ..organizer.sleep import default_model

    model = default_model(ws)  # the writer's model when it can organize, else rules
    try:
        report = reorganize(ws, model=model, now=now)
    except Exception as exc:  # the write is installed and marked; an organize failure must not undo it
        failure = as_failure(exc)
        log.warning("organize after write failed: %s", failure)
        journal.log_run(ws.layout, {"stage": "organize", "backend": model,
                                    "error": {"code": failure.code.value, "retryable": failure.retryable,
                                              "message": failure.message}}, now)
        journal.emit_event(ws.layout, "memory.organize_failed",
                           {"code": failure.code.value, "retryable": failure.retryable, "message": failure.message},
                           now)
        record_outcome(ws.layout, "sleep", failure, now)
        return {"ok": False, "code": failure.code.value, "message": failure.message}
    record_outcome(ws.layout, "sleep", None, now)
    journal.log_run(ws.layout, {"stage": "organize", "backend": report.get("model"),
                                "changed_files": report.get("changed_files"), "revision": report.get("revision"),
                                "error": None}, now)
    return {"ok": True, "changed_files": report.get("changed_files", []), "revision": report.get("revision")}


def _record_failure(ctx: WriteContext, failure: MemoryFailure) -> None:
    """Every failure, even one the caller swallows, lands in writer-status.json and events.jsonl."""
    try:
        pending: int | None = len(ctx.pending(None).turns)
    except Exception:  # the store itself may be what failed
        pending = None
    journal.record_failure(ctx.ws.layout, ctx.session_id, failure, pending, ctx.now)
    log.debug("memory write for %s: %s", ctx.session_id, failure)  # callers (provider, watcher) log at their level
