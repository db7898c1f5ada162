"""The writer's runtime files in ``.scriptorium/`` (architecture §2.4).

- ``writer-status.json`` — ``{version, last_outcome, last_success_at,
  last_failure: {at, reason_code, retryable, message, session, hint?} | null,
  pending, session, updated_at, last_hook_problem: {at, code, message,
  hook, hook_event, stage, session, log} (until a hook call works again),
  last_deferred: {at, code, message, session, hook_event, log} (a hook's
  write that found the workspace busy, until that session is written)}``;
  ``memory status`` reads it.
- ``agent-history.jsonl`` — one line per writer run (stage, session, batch,
  prompt, reply, rounds, tokens, stop reason or error).
- ``events.jsonl`` — the event bus (``memory.ingest_ended`` and friends).

None of these is memory: they are git-excluded and outside the revision.
Writing them must never fail a write, so every function here logs and
swallows its own I/O errors.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..failures import MemoryFailure
from ..fsutil import append_jsonl, atomic_write_json, read_json
from ..timeutil import utc_seconds

if TYPE_CHECKING:
    from ..workspace.layout import Layout

log = logging.getLogger("openprogram_memory.writer")

STATUS_FILE = "writer-status.json"
HISTORY_FILE = "agent-history.jsonl"
EVENTS_FILE = "events.jsonl"
STATUS_VERSION = 1


def _append(layout: "Layout", name: str, record: dict[str, Any]) -> None:
    try:
        append_jsonl(layout.state(name), record)
    except OSError as exc:  # runtime bookkeeping never fails a write
        log.warning("could not append to %s: %s", layout.state(name), exc)


def emit_event(layout: "Layout", event: str, payload: dict[str, Any], now: datetime | None = None) -> None:
    """Append ``{"event", "at", **payload}`` to ``events.jsonl``."""
    _append(layout, EVENTS_FILE, {"event": event, "at": utc_seconds(now), **payload})


def log_run(layout: "Layout", record: dict[str, Any], now: datetime | None = None) -> None:
    """Append one writer/organizer run to ``agent-history.jsonl``."""
    _append(layout, HISTORY_FILE, {"at": utc_seconds(now), **record})


def read_status(layout: "Layout") -> dict[str, Any]:
    """The current ``writer-status.json`` (defaults when missing or unreadable)."""
    data = read_json(layout.state(STATUS_FILE), None)
    status: dict[str, Any] = {"version": STATUS_VERSION, "last_outcome": None, "last_success_at": None,
                              "last_failure": None, "pending": None}
    if isinstance(data, dict):
        status.update({k: v for k, v in data.items()
                       if k in status or k in ("session", "updated_at", "last_hook_problem", "last_deferred")})
    return status


def _write_status(layout: "Layout", status: dict[str, Any]) -> None:
    try:
        atomic_write_json(layout.state(STATUS_FILE), status, fsync=False)
    except OSError as exc:
        log.warning("could not write %s: %s", layout.state(STATUS_FILE), exc)


def record_success(layout: "Layout", session: str, pending: int | None, now: datetime | None = None) -> None:
    """A write answered ``None`` after doing work: last_outcome = success."""
    status = read_status(layout)
    stamp = utc_seconds(now)
    status.update(last_outcome="success", last_success_at=stamp, pending=pending, session=session,
                  updated_at=stamp)
    deferred = status.get("last_deferred")
    if isinstance(deferred, dict) and deferred.get("session") == session:  # the turns that waited are written
        del status["last_deferred"]
    _write_status(layout, status)


def record_failure(layout: "Layout", session: str | None, failure: MemoryFailure, pending: int | None,
                   now: datetime | None = None) -> None:
    """A write failed (even if the caller swallows it): status and a ``memory.write_failed`` event."""
    status = read_status(layout)
    stamp = utc_seconds(now)
    status.update(
        last_outcome="failure",
        last_failure={"at": stamp, "reason_code": failure.code.value, "retryable": failure.retryable,
                      "message": failure.message, "session": session,
                      **({"hint": failure.hint} if failure.hint else {})},
        session=session,
        updated_at=stamp,
    )
    if pending is not None:
        status["pending"] = pending
    _write_status(layout, status)
    emit_event(layout, "memory.write_failed",
               {"session": session, "code": failure.code.value, "retryable": failure.retryable,
                "message": failure.message}, now)


def record_hook_problem(layout: "Layout", failure: MemoryFailure, *, hook: str, hook_event: Any, session: str | None,
                        log_path: str, stage: str | None = None, now: datetime | None = None) -> None:
    """A hook call that could not do its part (input it cannot use, a transcript it cannot import): one
    ``memory.hook_failed`` event and ``last_hook_problem`` in the status, with where the hook's log is.

    Not :func:`record_failure`: nothing was written, so the writer's outcome stays as it was — a bad hook
    call must not make the writer look broken.
    """
    stamp = utc_seconds(now)
    problem = {"at": stamp, "code": failure.code.value, "message": failure.message, "hook": hook,
               "hook_event": hook_event, "stage": stage, "session": session, "log": log_path}
    status = read_status(layout)
    status["last_hook_problem"] = problem
    _write_status(layout, status)
    emit_event(layout, "memory.hook_failed", {"hook": hook, "hook_event": hook_event, "stage": stage,
                                              "session": session, "code": failure.code.value,
                                              "retryable": failure.retryable, "message": failure.message}, now)


def clear_hook_problem(layout: "Layout") -> None:
    """A hook call that did its part: the last problem is over (``events.jsonl`` keeps it)."""
    status = read_status(layout)
    if status.pop("last_hook_problem", None) is not None:
        _write_status(layout, status)


def record_deferred(layout: "Layout", session: str, failure: MemoryFailure, *, hook_event: Any, log_path: str,
                    now: datetime | None = None) -> None:
    """A hook's write that found the workspace busy (another write holds the lock past the hook's retries):
    ``last_deferred`` in the status and one ``memory.write_deferred`` event.

    Not :func:`record_failure`: nothing is wrong — the session's turns stay pending in the store, and the
    running write, the next hook or the watcher writes them; a success for the session ends the note.
    """
    stamp = utc_seconds(now)
    status = read_status(layout)
    status["last_deferred"] = {"at": stamp, "code": failure.code.value, "message": failure.message,
                               "session": session, "hook_event": hook_event, "log": log_path}
    _write_status(layout, status)
    emit_event(layout, "memory.write_deferred", {"session": session, "hook_event": hook_event,
                                                 "code": failure.code.value, "message": failure.message}, now)


def record_pending(layout: "Layout", session: str, pending: int) -> None:
    """A per-turn call that wrote nothing: refresh the pending count only (and only if it moved)."""
    status = read_status(layout)
    if status.get("pending") == pending and status.get("session") == session:
        return
    status.update(pending=pending, session=session)
    _write_status(layout, status)

