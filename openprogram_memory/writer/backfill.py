"""``memory backfill``: write archived sources no topic cites yet, in normal batches.

One-off (architecture §12): trusted sources in the archive that no record cites —
``pending`` ones excluded — go through the writer in the normal way: batches
of :data:`BATCH_TOKENS` tokens cut like a session pass (per archive thread,
in archive order), the same backend, the same staged transaction with one
repair, under the write lock (waiting :data:`BACKFILL_LOCK_TIMEOUT`).

Bookkeeping, so a second run finds nothing to do: after a batch installs
a change, or the writer returns an explicit nothing-durable verdict for it,
every source of the batch is *settled* — the ones now cited by a record
need nothing more; the others were considered and found not worth a record,
and are remembered in ``.scriptorium/backfill-reviewed.json`` (source id →
when, which backend, why) so they are not sent to a model again and again.
A batch that fails (rejected twice, model error, no progress) settles
nothing: its sources stay *remaining* for the next run.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from typing import Any, Callable

from ..failures import FailureCode, MemoryFailure, as_failure
from ..sources.archive import SourceMessage, split_source_id
from ..tokens import count_tokens
from ..workspace.state import person_deleted_sources, write_lock
from . import journal
from .backend import WriterBackend
from .backends import resolve_backend
from .batching import batch_turn, cut_batch
from .reviewed import BACKFILL_LEDGER, ReviewLedger
from .runner import run_writer
from ..timeutil import utc_seconds

BATCH_TOKENS = 16_000
BACKFILL_LOCK_TIMEOUT = 5.0
GROUP = "sources"

Progress = Callable[[int, int], None]


def backfill_candidates(ws) -> list[tuple[SourceMessage, int]]:
    """Trusted, uncited, not yet reviewed sources with their token counts, in archive order."""
    cited = {source_id for record in ws.records() for source_id in record.source_ids}
    reviewed = ReviewLedger(ws.layout, BACKFILL_LEDGER).ids(GROUP) | person_deleted_sources(ws.layout).keys()
    out = []
    for _rel, message in ws.cache.sources.all_sources():
        if message.trust_state != "trusted" or message.source_id in cited or message.source_id in reviewed:
            continue
        if not message.text.strip():
            continue
        out.append((message, count_tokens(message.text)))
    return out


def backfill(ws, backend: WriterBackend | None = None, *, progress: Progress | None = None,
             now: datetime | None = None) -> dict[str, Any]:
    """Write every uncited trusted source in normal batches; report written/remaining counts."""
    moment = now or datetime.now(timezone.utc)
    candidates = backfill_candidates(ws)
    by_thread: dict[str, list[tuple[SourceMessage, int]]] = defaultdict(list)
    for message, tokens in candidates:
        provider, thread, _ = split_source_id(message.source_id)
        by_thread[f"{provider}/{thread}"].append((message, tokens))
    batches: list[list[tuple[SourceMessage, int]]] = []
    for items in by_thread.values():
        while items:
            batch = cut_batch(items, lambda item: item[1], BATCH_TOKENS)
            batches.append(batch)
            items = items[len(batch):]
    report: dict[str, Any] = {"ok": True, "considered": len(candidates), "batches": len(batches), "written": 0,
                              "cited": 0, "reviewed": 0, "remaining": len(candidates), "changed_files": [],
                              "failures": []}
    if not candidates:
        report["revision"] = ws.revision()
        return report
    writer = backend or resolve_backend(ws.settings["memory.writer.model"])
    ledger = ReviewLedger(ws.layout, BACKFILL_LEDGER)
    changed: set[str] = set()
    done = 0
    for batch in batches:
        try:
            settled, cited, files = _write_batch(ws, writer, batch, ledger, moment)
        except MemoryFailure as failure:
            report["failures"].append({"sources": [m.source_id for m, _ in batch], **failure.to_json()})
            journal.emit_event(ws.layout, "memory.backfill_failed",
                               {"code": failure.code.value, "retryable": failure.retryable,
                                "message": failure.message, "sources": len(batch)}, moment)
            if failure.code is FailureCode.CONCURRENT_UPDATE:
                break  # someone else is writing: the rest stays remaining for the next run
        else:
            report["written"] += settled
            report["cited"] += cited
            report["reviewed"] += settled - cited
            report["remaining"] -= settled
            changed.update(files)
        done += len(batch)
        if progress is not None:
            progress(done, len(candidates))
    report["changed_files"] = sorted(changed)
    report["revision"] = ws.revision()
    report["ok"] = report["remaining"] == 0
    journal.emit_event(ws.layout, "memory.backfill_ended",
                       {k: report[k] for k in ("considered", "written", "cited", "reviewed", "remaining")}, moment)
    return report


def _write_batch(ws, writer: WriterBackend, batch: list[tuple[SourceMessage, int]], ledger: ReviewLedger,
                 now: datetime) -> tuple[int, int, list[str]]:
    """One batch through the writer: ``(settled, newly cited, changed files)``; raises on failure."""
    turns = [batch_turn(message, split_source_id(message.source_id)[2]) for message, _ in batch]
    tokens = sum(t for _, t in batch)
    try:
        with write_lock(ws.layout, BACKFILL_LOCK_TIMEOUT):
            outcome = run_writer(ws, writer, turns, stage="backfill", session_id=None, tokens=tokens, now=now,
                                 lock_timeout=BACKFILL_LOCK_TIMEOUT,
                                 message=f"memory: backfill {len(turns)} archived source(s)")
    except MemoryFailure:
        raise
    except Exception as exc:
        raise as_failure(exc, FailureCode.WRITER_FAILURE_UNKNOWN) from exc
    if not outcome.changed and not outcome.reviewed(turns):
        raise MemoryFailure(FailureCode.WRITER_NO_PROGRESS,
                            f"the writer changed nothing for {len(turns)} source(s) and did not say they hold "
                            "nothing durable; they stay remaining", retryable=False)
    ids = [t.source_id for t in turns]
    cited_now = {sid for record in ws.records() for sid in record.source_ids}
    uncited = [sid for sid in ids if sid not in cited_now]
    reason = "nothing durable" if not outcome.changed else "considered in a batch that installed other records"
    ledger.add(GROUP, {sid: {"at": utc_seconds(now), "backend": outcome.run.backend, "reason": reason}
                       for sid in uncited})
    return len(ids), len(ids) - len(uncited), outcome.result.changed_files if outcome.changed else []
