"""The detached half of the Claude Code hook: import the transcript's new lines, then write.

Started by :mod:`.claude_code_hook` for ``Stop``/``SubagentStop`` (per-turn
write) and ``PreCompact``/``SessionEnd`` (``--force``) in its own session,
stdio on ``.scriptorium/hook.log``, so the agent never waits for it::

    python -m openprogram_memory.agents.hook_worker --state DIR [--session ID] [--event NAME]
        [--transcript PATH]... [--force]

Import first (only the lines appended since the last hook, see
:mod:`openprogram_memory.sessions.importers.tail`), then the write entry of
architecture §5, which records every failure in ``writer-status.json``
and ``events.jsonl`` — but a busy workspace: a write that still finds it
busy after its retries (a long ``SessionEnd`` or forced write holds the
lock) is recorded as deferred (``last_deferred``, a ``memory.write_deferred``
event, a line in the log), not as a writer failure: its turns stay pending
for the next write. The sessions written are the
ones the transcripts hold, as the import names them: after ``--resume`` or
``--continue`` Claude Code may send a ``session_id`` other than the
transcript's own ``sessionId`` (a session the store does not have). The
payload's id (it may send none: the transcript is enough) is written only
when the import names none and the store has it. An import or write that finds a lock busy (another hook's import or
write of the same conversation) is tried again a few times: nobody waits
for this process, and a lost forced write would leave the session's last
turns to the idle watcher. A failed import is recorded once, as a hook
problem (nothing was written), and the write still runs over what the store
already holds. So is a failure :func:`run` did not expect: the log has it
(a traceback only for an exception without a failure code), and ``memory
status`` shows it.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from functools import partial
from typing import Callable

from ..config import Settings, load_settings
from ..failures import FailureCode, MemoryFailure, as_failure
from ..sessions.importers.common import ImportResult
from ..sessions.importers.tail import STATE_DIR, import_appended
from ..sessions.store import SessionStore
from ..workspace.layout import Layout
from ..writer import journal
from .claude_code_hook import WORKER_LOG

log = logging.getLogger("openprogram_memory.hook")
FORMAT = "claude-code"
WRITE_ATTEMPTS = 4
IMPORT_ATTEMPTS = 8  # each waits LOCK_TIMEOUT (10 s); a 34 MB import runs ~40 s (bench_hook_long_session, scaled)
LOCK_RETRY_SECONDS = 2.0


def run(state: str | None, session: str | None, transcripts: list[str], force: bool, event: str | None = None) -> int:
    """Import then write; returns 0 (failures are recorded, not raised)."""
    settings = load_settings(state)
    layout = Layout(settings.memory_dir)
    if not settings.enabled or not layout.exists():
        log.info("memory disabled or no workspace at %s: nothing to do", layout.root)
        return 0
    store = SessionStore(settings.sessions_dir)
    touched: list[str] = []
    problem = False
    for transcript in transcripts:
        imported: list[ImportResult] = []

        def import_once(path: str = transcript) -> MemoryFailure | None:
            try:
                imported.append(import_appended(store, FORMAT, path, layout.state(STATE_DIR)))
            except Exception as exc:
                return as_failure(exc, FailureCode.SESSION_NODES_UNAVAILABLE)
            return None

        lost = _retry_busy(f"import of {transcript}", IMPORT_ATTEMPTS, import_once)
        if lost is not None:  # recorded; the store may still hold turns worth writing
            log.warning("import of %s failed: %s", transcript, lost)
            journal.record_hook_problem(layout, lost, hook="claude-code", hook_event=event, session=session,
                                        log_path=str(layout.state(WORKER_LOG)), stage="import")
            problem = True
            continue
        log.info("imported %s: %d new node(s) of %s", transcript, imported[0].imported,
                 ", ".join(imported[0].sessions) or "no session")
        touched += [name for name in imported[0].sessions if name not in touched]
    if transcripts and not problem:
        journal.clear_hook_problem(layout)  # the hook works again: status stops warning about the last problem
    sessions = touched or ([session] if session and store.exists(session) else [])
    if not sessions:
        log.info("no session to write: the import named none%s",
                 f" and the store has no {session}" if session else " and the payload no session_id")
        return 0
    for name in sessions:
        # Stop and SessionEnd often fire together: the later write must not be lost to the earlier one's lock.
        failure = _retry_busy(f"write of {name}", WRITE_ATTEMPTS, partial(_write_once, settings, name, force))
        if failure is None:
            log.info("write of %s (force=%s): ok", name, force)
        elif failure.code is FailureCode.CONCURRENT_UPDATE:  # nothing wrong: a longer write holds the workspace
            log.info("write of %s (force=%s) deferred: the workspace stayed busy (%s); its turns stay pending "
                     "for the next write (the running one, the next hook or the watcher)", name, force,
                     failure.message)
            journal.record_deferred(layout, name, failure, hook_event=event, log_path=str(layout.state(WORKER_LOG)))
        else:
            log.warning("write of %s (force=%s): %s", name, force, failure)
    return 0


def _write_once(settings: Settings, session: str, force: bool) -> MemoryFailure | None:
    """One write of ``session``: its failure, or ``None``. The pipeline records every failure but a busy
    workspace, which :func:`run` records as deferred once its retries are spent."""
    from ..writer.pipeline import write

    try:
        write(settings, session, force=force, busy_deferred=True)
    except Exception as exc:  # memory never takes the agent down: the failure is logged and recorded
        return as_failure(exc, FailureCode.WRITER_FAILURE_UNKNOWN)
    return None


def _retry_busy(what: str, attempts: int, call: Callable[[], MemoryFailure | None]) -> MemoryFailure | None:
    """``call()`` again while it fails ``CONCURRENT_UPDATE``, at most ``attempts`` times; its last failure."""
    for attempt in range(1, attempts + 1):
        failure = call()
        if failure is None or failure.code is not FailureCode.CONCURRENT_UPDATE or attempt == attempts:
            return failure
        log.info("%s: lock busy (attempt %d of %d); retrying in %s s", what, attempt, attempts, LOCK_RETRY_SECONDS)
        time.sleep(LOCK_RETRY_SECONDS)
    return None


def main(argv: list[str] | None = None) -> int:
    """Parse the worker's arguments and :func:`run`; never raises."""
    parser = argparse.ArgumentParser(prog="openprogram_memory.agents.hook_worker")
    parser.add_argument("--state")
    parser.add_argument("--session")  # the payload's id; a payload with a transcript may come without one
    parser.add_argument("--event")
    parser.add_argument("--transcript", action="append", default=[])
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s [{args.session or '-'} pid %(process)d] %(levelname)s %(message)s")
    try:
        return run(args.state, args.session, args.transcript, args.force, args.event)
    except Exception as exc:
        if isinstance(exc, MemoryFailure):  # a failure with a code: its message says it all
            log.warning("hook worker failed: %s", exc)
        else:
            log.exception("hook worker failed")
        _record_crash(args.state, args.session, args.event, exc)
        return 0


def _record_crash(state: str | None, session: str | None, event: str | None, exc: Exception) -> None:
    """A failure :func:`run` did not expect is still a hook problem ``memory status`` shows; never raises."""
    try:
        layout = Layout(load_settings(state).memory_dir)
        failure = as_failure(exc, FailureCode.WRITER_FAILURE_UNKNOWN)
        if layout.exists():
            journal.record_hook_problem(layout, failure, hook="claude-code", hook_event=event, session=session,
                                        log_path=str(layout.state(WORKER_LOG)))
    except Exception:  # recording is best effort: the failure is in the log above
        log.exception("could not record the failure")


if __name__ == "__main__":
    sys.exit(main())
