"""The idle watcher: write a session once it has been quiet (architecture §5, §6; design §07).

Every ``memory.watcher.poll_seconds`` it looks at every session; one whose
``updated_at`` is at least ``memory.watcher.idle_seconds`` old and not yet
processed at that ``updated_at`` (``.scriptorium/session-end.json``:
``{session: updated_at}``) gets ``write(force=True)``. The answer decides:

- ``None`` — record it as processed, emit ``memory.ingest_ended {ok: true}``;
- retryable — do not record it: the next poll tries again (the
  conversation is safe in the store); ``status`` still names the failed
  poll until one succeeds;
- not retryable — record it as processed *and* emit
  ``memory.ingest_ended {ok: false, reason}``: the same input would fail
  the same way, and a failure nobody sees is never fixed;
- ``WRITER_PRECONDITION_FAILED`` (a topic file a person left invalid by
  hand, a lost workspace id) — not retryable (the poll exits 65: only the
  person can fix it), yet not recorded either: it is not the turns that
  fail, so the first poll after the fix writes them.

After the writes, the poll runs the nightly organizer once per day, at or
after the local time ``memory.organize.at``, when memory was written since
the last organize (:func:`~openprogram_memory.organizer.due.scheduled_organize_due`);
a failure is logged and emitted as an event, like an organize after a write.

Every mode of ``memory watch`` (file events, ``--poll``, ``--once``) first
imports what was appended to the transcripts under ``memory.watch.paths``
(:func:`import_watched`), so their turns are in the store before the poll
looks for idle sessions.

Each session is recorded right after its own write, so a crash mid-poll
retries only the unfinished session. A corrupt ``session-end.json`` is
reported (event, log, stderr) and left exactly as it is: that poll still
writes idle sessions (markers make a repeat harmless) but records nothing.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any, Callable, Iterable

from ..config import Settings
from ..failures import FailureCode, MemoryFailure, as_failure
from ..fsutil import atomic_write_json
from ..organizer.due import scheduled_organize_due
from ..timeutil import parse_instant
from ..sessions.store import SessionStore
from . import journal
from ..workspace.layout import Layout
from ..workspace.state import RuntimeState, record_outcome
from ..memory import MemoryWorkspace, require_workspace
from .pipeline import organize_logged, write_report

log = logging.getLogger("openprogram_memory.writer")

STATE_FILE = "session-end.json"


@dataclass
class Outcome:
    """What one idle session's forced write answered, and whether it was recorded."""

    session: str
    updated_at: str
    ok: bool
    retryable: bool = False
    reason: str | None = None
    message: str | None = None
    recorded: bool = False
    interrupted: bool = False  # Ctrl-C stopped it after a pass: what was written stays, the rest stays pending
    write: dict[str, Any] | None = None  # the write's ``memory write --json`` object (passes, turns), when it ran

    @property
    def settled(self) -> bool:
        """Whether the poll is done with this session at this ``updated_at``: written, or failed so that writing
        the same turns again would fail the same way. A retryable failure, and a write held by something outside
        the session (``WRITER_PRECONDITION_FAILED``: a topic file left invalid by hand), wait for the next poll."""
        return self.ok or not (self.retryable or self.reason == FailureCode.WRITER_PRECONDITION_FAILED.value)

    def to_json(self) -> dict[str, Any]:
        """The write's own object (the counts ``memory write --session --json`` gives) with the outcome's fields."""
        own = {key: value for key, value in self.__dict__.items() if key != "write"}
        return {**(self.write or {}), **own}


class PollReport(list):
    """One poll's outcomes (a list of :class:`Outcome`), ``organize``: the nightly run's result, if any,
    and ``sync``: the result of the sync that followed a change (``memory.sync.auto``), if one ran."""

    organize: dict[str, Any] | None = None
    sync: dict[str, Any] | None = None
    interrupted: bool = False  # stopped between two sessions when asked to (Ctrl-C); a rerun continues
    due: int = 0  # idle sessions this poll found to write
    remaining: int = 0  # of those, not started when it stopped


class CorruptState(Exception):
    """``session-end.json`` exists but is not a ``{session: updated_at}`` object."""


def load_processed(path) -> dict[str, str]:
    """The processed map; ``{}`` when missing; :class:`CorruptState` when unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptState(f"{path}: unreadable ({exc})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CorruptState(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise CorruptState(f"{path}: expected an object {{session: updated_at}}")
    return data


def watch_once(settings: Settings, now: datetime | None = None, *, write_fn: Callable[..., Any] = write_report,
               tz: tzinfo | None = None, progress: Callable[[int, int, str], None] | None = None,
               should_stop: Callable[[], bool] | None = None, command: str = "memory watch") -> PollReport:
    """One poll: force-write every idle, unprocessed session, then the nightly organize if due.

    Returns what each session answered; ``.organize`` holds the organize
    result when one ran. ``tz`` is the zone of ``memory.organize.at``
    (None: the system's local time). ``progress(done, total, session)`` is
    called before each session; when ``should_stop()`` turns true the poll
    stops after the current pass (one transaction: what was written stays
    written; a long session's rest stays pending, unrecorded) and reports ``interrupted``.
    ``command`` is what ran the poll, as ``status`` names it when the poll failed.
    """
    if not settings["memory.writer.enabled"]:
        return PollReport()
    moment = now or datetime.now(timezone.utc)
    ws = MemoryWorkspace.open(settings)  # never creates one: a mistyped --state must not become a workspace
    store = SessionStore(settings.sessions_dir)
    path = ws.layout.state(STATE_FILE)
    try:
        processed: dict[str, str] | None = load_processed(path)
    except CorruptState as exc:
        message = f"{exc}; left untouched — fix or delete it (this poll records no session)"
        log.error("%s", message)
        print(f"openprogram memory watcher: {message}", file=sys.stderr)
        journal.emit_event(ws.layout, "memory.watcher_state_corrupt", {"path": str(path), "message": message}, moment)
        processed = None
    idle = timedelta(seconds=int(settings["memory.watcher.idle_seconds"]))
    auto_sync = bool(settings["memory.sync.auto"] and settings["memory.sync.remote"])
    revision = ws.revision() if auto_sync else None
    outcomes = PollReport()
    damaged: list[MemoryFailure] = []
    infos = store.list_sessions(damaged)
    for failure in damaged:  # one damaged session is reported; the others are still written
        outcomes.append(_damaged(ws, failure, moment))
    due = [info for info in sorted(infos, key=lambda i: (i.updated_at, i.session))
           if (updated := parse_instant(info.updated_at)) is not None and moment - updated >= idle
           and not (processed is not None and processed.get(info.session) == info.updated_at)]
    outcomes.due = len(due)
    for done, info in enumerate(due):
        if should_stop is not None and should_stop():
            outcomes.interrupted, outcomes.remaining = True, len(due) - done
            return outcomes
        if progress is not None:
            progress(done, len(due), info.session)
        outcome = _write_one(ws, info.session, info.updated_at, moment, write_fn, should_stop)
        if outcome.interrupted:  # not processed: the next poll writes the rest
            outcomes.append(outcome)
            outcomes.interrupted, outcomes.remaining = True, len(due) - done
            return outcomes
        if processed is not None and outcome.settled:
            processed[info.session] = info.updated_at
            atomic_write_json(path, processed)  # per session: a crash retries only the unfinished one
            outcome.recorded = True
        if outcome.settled:
            journal.emit_event(ws.layout, "memory.ingest_ended",
                               {"session": info.session, "ok": outcome.ok, "retryable": outcome.retryable,
                                "reason": outcome.reason}, moment)
        outcomes.append(outcome)
    if scheduled_organize_due(RuntimeState.load(ws.layout), moment, settings["memory.organize.at"], tz):
        outcomes.organize = organize_logged(ws, moment)
    if auto_sync and ws.revision() != revision:
        outcomes.sync = _auto_sync(ws, moment)
    record_outcome(ws.layout, "watch", _poll_failure(outcomes), moment, command)
    return outcomes


def _poll_failure(outcomes: list[Outcome]) -> MemoryFailure | None:
    """The first session a poll could not write, as the poll's outcome (one it will not retry first).

    A failure the poll retries counts too: the session stays unwritten until a later poll succeeds (an invalid
    hand edit can hold it for days, while every poll exits 65), so ``status`` must say so."""
    failed = min((o for o in outcomes if not o.ok), key=lambda o: o.retryable, default=None)
    if failed is None:
        return None
    try:
        code = FailureCode(failed.reason)
    except ValueError:
        code = FailureCode.WRITER_FAILURE_UNKNOWN
    return MemoryFailure(code, f"session {failed.session}: {failed.message or failed.reason}",
                         retryable=failed.retryable)


def _auto_sync(ws, now: datetime) -> dict[str, Any]:
    """``memory sync`` after a poll that changed memory; a failure is recorded, never raised."""
    from ..sync import sync

    try:
        result = sync(ws)
    except MemoryFailure as failure:
        log.warning("automatic sync failed: %s", failure)
        result = {"ok": False, "code": failure.code.value, "retryable": failure.retryable, "message": failure.message}
    journal.emit_event(ws.layout, "memory.sync_ended",
                       {key: result.get(key) for key in ("ok", "code", "retryable", "pushed", "merged")}, now)
    return result


def _damaged(ws, failure: MemoryFailure, now: datetime) -> Outcome:
    session = str(failure.details.get("session", "?"))
    log.warning("idle writer skips session %s: %s", session, failure.message)
    journal.emit_event(ws.layout, "memory.ingest_ended",
                       {"session": session, "ok": False, "retryable": False, "reason": failure.code.value,
                        "message": failure.message}, now)
    return Outcome(session, "", False, False, failure.code.value, failure.message)


def _write_one(ws, session: str, updated_at: str, now: datetime, write_fn: Callable[..., Any],
               should_stop: Callable[[], bool] | None = None) -> Outcome:
    try:
        report = write_fn(ws, session, force=True, now=now, should_stop=should_stop)
    except Exception as exc:  # the write already recorded it in writer-status.json and events
        failure = exc if isinstance(exc, MemoryFailure) else as_failure(exc, FailureCode.WRITER_FAILURE_UNKNOWN)
        outcome = Outcome(session, updated_at, False, failure.retryable, failure.code.value, failure.message)
        log.log(logging.WARNING if outcome.settled else logging.DEBUG, "idle write of %s: %s", session, failure)
        return outcome
    to_json = getattr(report, "to_json", None)
    return Outcome(session, updated_at, True, interrupted=bool(getattr(report, "interrupted", False)),
                   write=to_json() if callable(to_json) else None)


def transcript_format(path: Path) -> str | None:
    """The transcript format of ``path`` from its first JSON-object line (None: not one, or empty yet)."""
    from ..sessions.importers import FORMATS

    try:
        with open(path, "rb") as handle:
            for raw in handle:
                if raw.strip():
                    line = json.loads(raw)
                    break
            else:
                return None
    except (OSError, ValueError):
        return None
    if not isinstance(line, dict):
        return None
    return next((name for name, (fmt, _) in FORMATS.items() if fmt.owns(line)), None)


def import_transcript(settings: Settings, path: Path) -> int:
    """Import the lines appended to one watched transcript; failures are recorded, never raised."""
    from ..sessions.importers.tail import STATE_DIR, import_appended

    layout = Layout(settings.memory_dir)
    fmt = transcript_format(path)
    if fmt is None:
        return 0
    try:
        return import_appended(SessionStore(settings.sessions_dir), fmt, path, layout.state(STATE_DIR)).imported
    except Exception as exc:
        failure = as_failure(exc, FailureCode.SESSION_NODES_UNAVAILABLE)
        log.warning("import of %s failed: %s", path, failure)
        journal.emit_event(layout, "memory.import_failed", {"path": str(path), "format": fmt,
                                                             "code": failure.code.value, "message": failure.message})
        return 0


def watch_paths(settings: Settings, missing: set[Path] | None = None) -> list[Path]:
    """The configured transcript directories that exist (a missing one is logged and skipped).

    ``missing``: the directories a running watcher has already said are
    missing (updated here); each is logged once when it goes missing, not on
    every poll, and again only after it came back and went away once more.
    """
    found = []
    for raw in settings["memory.watch.paths"]:
        path = Path(raw).expanduser()
        if path.is_dir():
            found.append(path.resolve())
            if missing is not None:
                missing.discard(path)
        elif missing is None or path not in missing:
            log.warning("memory.watch.paths: %s %s", path, _why_not_watched(path, running=missing is not None))
            if missing is not None:
                missing.add(path)
    return found


def _why_not_watched(path: Path, *, running: bool) -> str:
    """What happens to a ``memory.watch.paths`` entry that is no directory: a running watcher follows one that
    does not exist yet (it is watched once made); a file there is never read; a one-shot import reads nothing."""
    if path.exists():
        return "is not a directory; not watched"
    return "does not exist yet; watched once it is created" if running else "does not exist; nothing imported"


def import_watched(settings: Settings, on_import: Callable[[Path, int], None] | None = None,
                   transcripts: Iterable[Path] | None = None, missing: set[Path] | None = None) -> int:
    """Import what was appended to ``transcripts`` (default: every ``*.jsonl`` under ``memory.watch.paths``).

    The one import of every watch mode. ``on_import(path, count)`` is called
    for each file that added nodes; returns how many were added in all.
    ``missing`` as for :func:`watch_paths` (a running watcher's).
    Failures are recorded per file (:func:`import_transcript`), never raised;
    a state directory without a workspace (removed under a running watcher)
    imports nothing and creates nothing.
    """
    try:
        require_workspace(settings)
    except MemoryFailure as failure:
        log.warning("watched transcripts not imported: %s", failure)
        return 0
    if transcripts is None:
        transcripts = [t for root in watch_paths(settings, missing) for t in sorted(root.rglob("*.jsonl"))]
    total = 0
    for transcript in transcripts:
        count = import_transcript(settings, transcript) if transcript.is_file() else 0
        total += count
        if on_import is not None and count:
            on_import(transcript, count)
    return total


def watch_poll(settings: Settings, on_import: Callable[[Path, int], None] | None = None,
               missing: set[Path] | None = None) -> PollReport | None:
    """One regular poll of a running ``memory watch`` (on file events or ``--poll``): import what every transcript
    under ``memory.watch.paths`` gained (:func:`import_watched`: a directory made since the last poll included),
    then :func:`watch_once`. ``None`` when the poll failed as a whole (logged; e.g. the workspace busy being
    recovered): no session was tried, the next poll retries. ``missing`` as for :func:`watch_paths`."""
    try:
        import_watched(settings, on_import, missing=missing)
        return watch_once(settings)
    except MemoryFailure as failure:
        log.warning("watcher poll failed: %s", failure)
        return None


def watch(settings: Settings, *, max_polls: int | None = None, sleep: Callable[[float], None] = time.sleep,
          on_poll: Callable[[list[Outcome]], None] | None = None,
          on_import: Callable[[Path, int], None] | None = None) -> None:
    """Poll every ``memory.watcher.poll_seconds`` until interrupted (or ``max_polls``).

    Each poll first imports what the watched transcripts gained (:func:`watch_poll`).
    """
    polls = 0
    missing: set[Path] = set()  # watched directories found missing: said once, not every poll
    while max_polls is None or polls < max_polls:
        outcomes = watch_poll(settings, on_import, missing)
        if outcomes is None:
            outcomes = PollReport()
        if on_poll is not None:
            on_poll(outcomes)
        polls += 1
        if max_polls is None or polls < max_polls:
            sleep(float(settings["memory.watcher.poll_seconds"]))
