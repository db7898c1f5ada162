"""``memory watch`` driven by file events instead of a timer (architecture §14: writes triggered by events).

It watches, with ``watchfiles`` (inotify / FSEvents / ReadDirectoryChangesW):

- the bundled session store — a session that changed gets a new idle
  deadline (``updated_at`` + ``memory.watcher.idle_seconds``); when the
  earliest deadline passes, one poll of :func:`.watcher.watch_once` runs
  right then, instead of up to ``poll_seconds`` later;
- the directories in ``memory.watch.paths`` (codex rollouts, pi sessions,
  Claude Code transcripts) — a ``*.jsonl`` file that grew has its new lines
  imported at once (:func:`.watcher.import_transcript`, the one import every
  watch mode runs), which moves that session's deadline like any other change;
  a directory that arrives there (moved in, or written before its watch
  began) has every transcript under it read.

What is watched follows the disk: a directory that appears, goes away or is
made anew (the session store, a ``memory.watch.paths`` entry; a missing one
is said once per disappearance) restarts the watch over what is there now.
The regular poll is the ``--poll`` one (:func:`.watcher.watch_poll`): it
imports every watched transcript too, so what events missed waits one poll.

Idle detection and the write contract are those of :mod:`.watcher` — the
same ``watch_once`` decides, writes and records. A poll still runs at least
every ``memory.watcher.poll_seconds`` (the nightly organize, deadlines the
events missed). Between events it wakes every tenth of the idle time
(0.5 s to 60 s) to see whether a deadline passed, so a session is written
at most 10 % of ``idle_seconds`` late. Where events are unavailable (``watchfiles`` missing, the
inotify watch limit reached) it falls back to the polling loop.
"""

from __future__ import annotations

import contextlib
import logging
import stat
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Callable

from ..config import Settings
from ..fsutil import ensure_dir
from ..timeutil import parse_instant
from ..sessions.store import SessionStore
from ..workspace.layout import Layout
from ..memory import MemoryWorkspace
from .watcher import (STATE_FILE, CorruptState, Outcome, PollReport, import_watched, load_processed, watch, watch_paths,
                      watch_poll)

log = logging.getLogger("openprogram_memory.writer")

TICK_SECONDS = 60.0  # the longest a passed deadline waits when no event comes
MIN_TICK_SECONDS = 0.5
DEBOUNCE_MS = 200


def next_deadline(settings: Settings, failed: dict[str, str] | None = None) -> float:
    """When the earliest unprocessed session goes idle (epoch seconds; ``inf`` when none will).

    ``failed`` (``{session: updated_at}``) are sessions the last poll tried and must retry (e.g. an
    invalid hand edit holds them): their deadline has passed, so counting it would poll at every tick,
    twice a second, until someone fixes the file. They wait for the next regular poll, or a new turn.
    """
    failed = failed or {}
    idle = timedelta(seconds=int(settings["memory.watcher.idle_seconds"]))
    try:
        processed = load_processed(Layout(settings.memory_dir).state(STATE_FILE))
    except CorruptState:
        processed = {}  # watch_once reports it; a deadline too early only costs one poll
    deadlines = []
    for info in SessionStore(settings.sessions_dir).list_sessions():
        updated = parse_instant(info.updated_at)
        if updated is not None and info.updated_at not in (processed.get(info.session), failed.get(info.session)):
            deadlines.append((updated + idle).timestamp())
    return min(deadlines, default=float("inf"))


def watch_events(settings: Settings, *, stop: threading.Event | None = None,
                 on_poll: Callable[[list[Outcome]], None] | None = None,
                 on_import: Callable[[Path, int], None] | None = None, tick_seconds: float = TICK_SECONDS,
                 on_ready: Callable[[], None] | None = None) -> None:
    """Watch until ``stop`` is set (or interrupted); fall back to polling where events are unavailable.

    ``on_ready`` is called once file events are live (at the first wake-up
    of the event loop, at most one tick after start), right after the
    transcripts are read once more: a line appended between the start-up
    import and the moment the operating system began reporting events is
    imported there, not lost until the next change of that file.

    What is watched follows the disk: at every wake-up the watched
    directories (the session store, the ``memory.watch.paths`` that exist)
    are looked at again; when one appeared, went away or was made anew (a
    watch on the old one sees nothing), the watch restarts over them and
    reads every transcript once more, as at start.
    """
    try:
        import watchfiles
    except ImportError:
        log.warning("watchfiles is not installed: polling every %s s", settings["memory.watcher.poll_seconds"])
        watch(settings, on_poll=on_poll, on_import=on_import)
        return
    MemoryWorkspace.open(settings)  # refuses a state dir without a workspace (`memory init` makes one)
    ensure_dir(settings.sessions_dir)
    stop = stop or threading.Event()
    missing: set[Path] = set()  # watched directories found missing: said once per disappearance
    poll_every = float(settings["memory.watcher.poll_seconds"])
    idle = float(settings["memory.watcher.idle_seconds"])
    tick = max(MIN_TICK_SECONDS, min(tick_seconds, poll_every, idle / 10))

    failed: dict[str, str] = {}  # sessions the last poll must retry: at the regular pace, not every tick
    ready = False

    def poll() -> None:
        outcomes = watch_poll(settings, on_import, missing)  # the one poll of every mode
        if outcomes is None:  # no session was tried: the held ones keep waiting for the regular poll
            outcomes = PollReport()
        else:
            failed.clear()
            failed.update((o.session, o.updated_at) for o in outcomes if not o.settled)
        if on_poll is not None:
            on_poll(outcomes)

    poll()  # first imports the lines appended while nobody watched
    last_poll, deadline = time.monotonic(), next_deadline(settings, failed)

    def wake(changes: set, sources: list[Path], first: bool) -> None:
        """One wake-up: import the transcripts that grew, then poll if a deadline (or the regular poll) is due.
        ``first``: the first of a watch (events flow from here on): catch what was appended before they did."""
        nonlocal ready, last_poll, deadline
        grown = _grown(changes, sources)
        if first:
            grown.update(t for path in sources for t in path.rglob("*.jsonl"))
        if grown:
            import_watched(settings, on_import, sorted(grown))
        if first and not ready:
            ready = True
            if on_ready is not None:
                on_ready()
        if changes or first:  # a new watch may come with sessions no event told of
            deadline = next_deadline(settings, failed)
        if time.time() >= deadline or time.monotonic() - last_poll >= poll_every:
            poll()
            last_poll, deadline = time.monotonic(), next_deadline(settings, failed)

    try:
        while not stop.is_set():
            roots = watched_roots(settings, missing)
            sources = [path for path in roots if path != settings.sessions_dir]
            if not roots:  # nothing to watch until a directory appears: wake every tick all the same
                stop.wait(tick)
                wake(set(), sources, False)
                continue
            first = True
            try:
                with contextlib.closing(watchfiles.watch(*roots, stop_event=stop, yield_on_timeout=True,
                                                         rust_timeout=int(tick * 1000), debounce=DEBOUNCE_MS,
                                                         raise_interrupt=True)) as events:
                    for changes in events:
                        wake(changes, sources, first)
                        first = False
                        if watched_roots(settings, missing) != roots or _root_removed(changes, roots):
                            break  # a directory appeared, went away or was made anew: watch what is there now
                    else:
                        return  # stopped (Ctrl-C raises KeyboardInterrupt: the CLI ends every verb on it alike)
            except FileNotFoundError:
                if watched_roots(settings, missing) == roots:
                    raise
                # a directory went away as its watch started: watch what is there now
    except OSError as exc:  # no events here (inotify limit, unsupported file system)
        log.warning("file events unavailable (%s): polling every %s s", exc, poll_every)
        watch(settings, on_poll=on_poll, on_import=on_import)


def watched_roots(settings: Settings, missing: set[Path]) -> dict[Path, tuple[int, int]]:
    """The directories to watch, each with its identity (device, inode): a directory moved in is another one.

    The session store and the ``memory.watch.paths`` that exist (:func:`.watcher.watch_paths`, which says a
    missing one once per disappearance)."""
    roots: dict[Path, tuple[int, int]] = {}
    for path in [settings.sessions_dir, *watch_paths(settings, missing)]:
        try:
            status = path.stat()
        except OSError:  # not there (yet): watched once it is
            continue
        if stat.S_ISDIR(status.st_mode):
            roots.setdefault(path, (status.st_dev, status.st_ino))
    return roots


def _root_removed(changes: set, roots: dict[Path, tuple[int, int]]) -> bool:
    """Whether a batch of events says a watched directory itself was removed: its watch is gone even when one made
    at once at the same path is there again, with the same inode (the file system gives the freed one back)."""
    return any(change.name == "deleted" and Path(raw) in roots for change, raw in changes)


def _grown(changes: set, sources: list[Path]) -> set[Path]:
    """The transcripts a batch of events may have grown: each changed ``*.jsonl`` under ``sources``, and every one
    under a directory that arrived there (moved in, or written before the watch reached it: no event of its own)."""
    grown: set[Path] = set()
    for change, raw in changes:
        path = Path(raw)
        if not _under(path, sources):
            continue
        if raw.endswith(".jsonl"):
            grown.add(path)
        elif change.name == "added" and path.is_dir():
            grown.update(path.rglob("*.jsonl"))
    return grown


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)
