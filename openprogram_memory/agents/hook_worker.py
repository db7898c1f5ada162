"""The detached half of the Claude Code hook: import the transcript's new lines, then write.

Started by :mod:`.claude_code_hook` for ``Stop``/``SubagentStop`` (per-turn
write) and ``PreCompact``/``SessionEnd`` (``--force``) in its own session,
stdio on ``.scriptorium/hook.log``, so the agent never waits for it::

    python -m openprogram_memory.agents.hook_worker --state DIR --session ID [--transcript PATH]... [--force]

Import first (only the lines appended since the last hook, see
:mod:`openprogram_memory.sessions.importers.tail`), then the write entry of
architecture §5 through the provider, which records every failure in
``writer-status.json`` and ``events.jsonl``. A write that finds the lock
busy (another hook's write of the same conversation) is tried again a few
times: nobody waits for this process, and a lost forced write would leave
the session's last turns to the idle watcher. A failed import is recorded
too, and the write still runs over what the store already holds.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

from ..config import load_settings
from ..failures import FailureCode, as_failure
from ..sessions.importers.tail import STATE_DIR, import_appended
from ..sessions.store import SessionStore
from ..workspace.layout import Layout
from ..writer import journal

log = logging.getLogger("openprogram_memory.hook")
FORMAT = "claude-code"
WRITE_ATTEMPTS = 4
LOCK_RETRY_SECONDS = 2.0


def run(state: str | None, session: str, transcripts: list[str], force: bool) -> int:
    """Import then write; returns 0 (failures are recorded, not raised)."""
    settings = load_settings(state)
    layout = Layout(settings.memory_dir)
    if not settings.enabled or not layout.exists():
        log.info("memory disabled or no workspace at %s: nothing to do", layout.root)
        return 0
    store = SessionStore(settings.sessions_dir)
    for transcript in transcripts:
        try:
            result = import_appended(store, FORMAT, transcript, layout.state(STATE_DIR))
            log.info("imported %s: %d new node(s)", transcript, result.imported)
        except Exception as exc:  # recorded; the store may still hold turns worth writing
            lost = as_failure(exc, FailureCode.SESSION_NODES_UNAVAILABLE)
            log.warning("import of %s failed: %s", transcript, lost)
            journal.emit_event(layout, "memory.hook_failed", {"hook": "claude-code", "stage": "import",
                                                              "session": session, "code": lost.code.value,
                                                              "retryable": lost.retryable,
                                                              "message": lost.message})
            journal.record_failure(layout, session, lost, None)
    from ..provider import FilesMemory

    memory = FilesMemory(settings)
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        failure = memory.write(session, force=force)  # the pipeline records any failure
        if failure is None or failure.code is not FailureCode.CONCURRENT_UPDATE or attempt == WRITE_ATTEMPTS:
            break
        # Stop and SessionEnd often fire together: the later write must not be lost to the earlier one's lock.
        log.info("write lock busy (attempt %d of %d); retrying in %s s", attempt, WRITE_ATTEMPTS, LOCK_RETRY_SECONDS)
        time.sleep(LOCK_RETRY_SECONDS)
    if failure is None:
        log.info("write of %s (force=%s): ok", session, force)
    else:
        log.warning("write of %s (force=%s): %s", session, force, failure)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the worker's arguments and :func:`run`; never raises."""
    parser = argparse.ArgumentParser(prog="openprogram_memory.agents.hook_worker")
    parser.add_argument("--state")
    parser.add_argument("--session", required=True)
    parser.add_argument("--transcript", action="append", default=[])
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s [{args.session} pid %(process)d] %(levelname)s %(message)s")
    try:
        return run(args.state, args.session, args.transcript, args.force)
    except Exception:
        log.exception("hook worker failed")
        return 0


if __name__ == "__main__":
    sys.exit(main())
