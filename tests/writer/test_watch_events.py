"""``memory watch`` on file events: appended transcript lines imported at once, idle sessions written on time."""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from openprogram_memory.config import Settings, load_settings, parse_value
from openprogram_memory.failures import MemoryFailure
from openprogram_memory.sessions.importers import import_paths
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.writer.watch_events import watch_events
from openprogram_memory.writer.watcher import transcript_format, watch, watch_paths

from .helpers import settings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"


def with_values(cfg, **values):
    merged = dict(cfg.values)
    merged.update({key.replace("__", "."): value for key, value in values.items()})
    return Settings(cfg.state_dir, merged, cfg.origin, cfg.warnings)


class Watcher:
    """``watch_events`` in a thread, stopped (and joined) on exit."""

    def __init__(self, cfg) -> None:
        self.cfg = cfg
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.polls: list = []
        self.imports: list = []
        self.thread = threading.Thread(target=watch_events, args=(cfg,), daemon=True, kwargs={
            "stop": self.stop, "on_poll": self.polls.append, "on_ready": self.ready.set, "tick_seconds": 0.5,
            "on_import": lambda path, count: self.imports.append((path, count))})

    def __enter__(self) -> "Watcher":
        MemoryWorkspace.open(self.cfg, create=True)  # `memory init`: watch never creates a workspace
        self.thread.start()
        # started: the first poll ran and file events are live (timing starts only then, however busy the machine)
        wait_until(lambda: self.polls and self.ready.is_set(), 30)
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()


def wait_until(condition, timeout: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if condition():
            return time.monotonic() - start
        time.sleep(0.02)
    raise AssertionError(f"not within {timeout} s")


@pytest.mark.parametrize("fixture", [FIXTURES / "codex" / "crud.jsonl", FIXTURES / "pi" / "branched.jsonl"],
                         ids=["codex", "pi"])
def test_a_line_appended_to_a_watched_transcript_is_imported_within_2_s(tmp_path: Path, fixture: Path) -> None:
    fmt = transcript_format(fixture)
    expected = import_paths(SessionStore(tmp_path / "whole"), fmt, [fixture])
    session = expected.sessions[0]
    watched = tmp_path / "agent-sessions" / "2026" / "01"
    watched.mkdir(parents=True)
    lines = fixture.read_bytes().splitlines(keepends=True)
    live = watched / fixture.name
    live.write_bytes(b"".join(lines[:6]))  # there before the watcher starts: imported on start
    cfg = with_values(settings(enabled=False), memory__watch__paths=(str(tmp_path / "agent-sessions"),),
                      memory__watcher__poll_seconds=3600)
    store = SessionStore(cfg.sessions_dir)
    with Watcher(cfg) as watcher:
        before = store.session_info(session).node_count
        assert watcher.imports and before < expected.imported
        with open(live, "ab") as handle:
            handle.write(b"".join(lines[6:]))
        took = wait_until(lambda: store.exists(session) and store.session_info(session).node_count
                          == expected.imported, 2.0)
    assert took < 2.0


def test_a_session_is_written_when_it_goes_idle_not_a_poll_later(tmp_path: Path, fake) -> None:
    cfg = with_values(settings(idle=1), memory__watcher__poll_seconds=3600)
    store = SessionStore(cfg.sessions_dir)
    with Watcher(cfg) as watcher:
        store.create_session("chat")
        store.append("chat", "user", "I'm Dana. Always answer in metric units.")
        store.append("chat", "assistant", "Noted.")
        wait_until(lambda: any(o.session == "chat" for poll in watcher.polls for o in poll), 15)
    outcome = next(o for poll in watcher.polls for o in poll if o.session == "chat")
    assert outcome.ok and outcome.recorded


def test_a_file_of_no_known_format_is_left_alone(tmp_path: Path) -> None:
    odd = tmp_path / "notes.jsonl"
    odd.write_text('{"hello": "world"}\n')
    assert transcript_format(odd) is None
    assert transcript_format(FIXTURES / "claude-code" / "rewind.jsonl") == "claude-code"


def test_watch_paths_config_key_is_validated() -> None:
    assert parse_value("memory.watch.paths", ["~/.codex/sessions", " "]) == ("~/.codex/sessions",)
    assert parse_value("memory.watch.paths", "/a:/b") == ("/a", "/b")
    with pytest.raises(MemoryFailure):
        parse_value("memory.watch.paths", [1, 2])
    assert load_settings(environ={"OPENPROGRAM_MEMORY_WATCH_PATHS": "/x:/y"})["memory.watch.paths"] == ("/x", "/y")


def test_lines_appended_before_file_events_are_live_are_imported(tmp_path: Path) -> None:
    """The race at start-up: a line lands after the start-up import but before the OS reports events."""
    fixture = FIXTURES / "codex" / "crud.jsonl"
    expected = import_paths(SessionStore(tmp_path / "whole"), transcript_format(fixture), [fixture])
    session = expected.sessions[0]
    watched = tmp_path / "agent-sessions"
    watched.mkdir()
    lines = fixture.read_bytes().splitlines(keepends=True)
    live = watched / fixture.name
    live.write_bytes(b"".join(lines[:6]))
    cfg = with_values(settings(enabled=False), memory__watch__paths=(str(watched),),
                      memory__watcher__poll_seconds=3600)
    store = SessionStore(cfg.sessions_dir)
    MemoryWorkspace.open(cfg, create=True)
    stop, ready = threading.Event(), threading.Event()

    def on_import(path: Path, count: int) -> None:
        if not ready.is_set() and live.stat().st_size < fixture.stat().st_size:  # during the start-up import
            with open(live, "ab") as handle:
                handle.write(b"".join(lines[6:]))

    thread = threading.Thread(target=watch_events, args=(cfg,), daemon=True, kwargs={
        "stop": stop, "on_import": on_import, "on_ready": ready.set, "tick_seconds": 0.5})
    thread.start()
    try:
        wait_until(ready.is_set, 30)
        assert store.session_info(session).node_count == expected.imported
    finally:
        stop.set()
        thread.join(10)


def _dropped_connection() -> MemoryFailure:
    from openprogram_memory.failures import FailureCode

    return MemoryFailure(FailureCode.MODEL_TRANSPORT, "connection reset", retryable=True)


def _held_by_a_hand_edit() -> MemoryFailure:
    """Not retryable (only the person can fix the file), yet the turns are not what fails: the watcher retries."""
    from openprogram_memory.failures import FailureCode

    return MemoryFailure(FailureCode.WRITER_PRECONDITION_FAILED, "topics/core.md line 3: [duplicate-id] …")


@contextlib.contextmanager
def _chat_write_failing_once(cfg, fake, failure: MemoryFailure | None = None):
    """A watcher running over ``cfg``, and a session "chat" with one turn whose first write fails (``failure``;
    by default retryably, a dropped connection): ``(store, watcher)``."""
    store = SessionStore(cfg.sessions_dir)
    fake.queue.append(failure or _dropped_connection())
    with Watcher(cfg) as watcher:
        store.create_session("chat")
        store.append("chat", "user", "I'm Dana. Always answer in metric units.")
        yield store, watcher


def _chat_outcomes(watcher) -> list:
    """The outcomes of the session "chat" over the watcher's polls so far, in order."""
    return [o for poll in list(watcher.polls) for o in poll if o.session == "chat"]


@pytest.mark.parametrize("failure", [_dropped_connection, _held_by_a_hand_edit])
def test_a_session_whose_write_must_be_retried_waits_for_the_regular_poll_not_every_tick(tmp_path: Path, fake,
                                                                                         failure) -> None:
    """A dropped connection (retryable) or an invalid hand edit (not retryable, yet not the turns' fault) fails
    the write: its idle deadline has passed, yet the watcher must not retry it at every tick (twice a second);
    a new turn makes it due again."""
    cfg = with_values(settings(idle=1), memory__watcher__poll_seconds=3600)
    with _chat_write_failing_once(cfg, fake, failure()) as (store, watcher):
        def tries() -> list:
            return _chat_outcomes(watcher)

        wait_until(lambda: tries(), 15)
        time.sleep(3)  # six ticks
        assert [(o.ok, o.settled) for o in tries()] == [(False, False)]
        store.append("chat", "user", "Our cache cluster runs in Dublin.")
        wait_until(lambda: any(o.ok for o in tries()), 15)
    assert [(o.ok, o.recorded) for o in tries()] == [(False, False), (True, True)]


def test_a_failed_poll_keeps_the_retried_session_at_the_regular_pace(tmp_path: Path, fake, monkeypatch) -> None:
    """A poll that fails as a whole (the workspace busy being recovered) tried no session: the one held back for
    retry keeps waiting for the next regular poll instead of being retried at the next tick."""
    from openprogram_memory.failures import FailureCode
    from openprogram_memory.writer import watcher as module

    real, calls, held_at = module.watch_once, [], []

    def watch_once(settings):  # the poll after the one that held "chat" back fails whole
        calls.append(time.monotonic())
        if len(held_at) == 1 and len(calls) == held_at[0] + 1:
            raise MemoryFailure(FailureCode.TRANSACTION_FAILURE_UNKNOWN, "the workspace is being recovered",
                                retryable=True)
        outcomes = real(settings)
        if not held_at and any(o.session == "chat" and not o.ok for o in outcomes):
            held_at.append(len(calls))
        return outcomes

    monkeypatch.setattr(module, "watch_once", watch_once)  # the one poll of every mode (watch_poll) calls it
    poll_every = 4
    cfg = with_values(settings(idle=1), memory__watcher__poll_seconds=poll_every)
    with _chat_write_failing_once(cfg, fake) as (_store, watcher):
        def tries() -> list:
            return _chat_outcomes(watcher)

        wait_until(lambda: any(o.ok for o in tries()), 30)
    assert [(o.ok, o.recorded) for o in tries()] == [(False, False), (True, True)]
    failed_poll = held_at[0]  # (index of the poll after the one that held "chat" back)
    assert len(calls) == failed_poll + 2
    assert calls[failed_poll + 1] - calls[failed_poll] >= poll_every - 0.5  # the regular pace, not the next tick


def _watched_folder(root: Path) -> Path:
    """A codex rollout, and a Claude Code transcript with one internal compaction run beside it."""
    import shutil

    rollouts = root / "codex" / "2026" / "01"
    rollouts.mkdir(parents=True)
    shutil.copy(FIXTURES / "codex" / "crud.jsonl", rollouts)
    project = root / "claude" / "-home-dana-billing"
    runs = project / REWIND_SESSION / "subagents"
    runs.mkdir(parents=True)
    shutil.copy(FIXTURES / "claude-code" / "rewind.jsonl", project / f"{REWIND_SESSION}.jsonl")
    prompt = json.loads((FIXTURES / "claude-code" / "rewind.jsonl").read_text().splitlines()[3])
    (runs / "agent-acompact-1.jsonl").write_text(json.dumps({**prompt, "uuid": COMPACTION_RUN, "isSidechain": True,
                                                             "agentId": "acompact-1"}) + "\n")
    return root


REWIND_SESSION = "5f0c7a8e-1d2b-4c3a-9e7f-2a6b8c9d0e1f"
COMPACTION_RUN = "00000000-0000-4000-8000-000000000077"


@pytest.mark.parametrize("mode", ["events", "poll", "once"])
def test_every_watch_mode_imports_the_watched_transcripts_but_no_compaction_run(tmp_path: Path, mode: str,
                                                                                monkeypatch) -> None:
    """Was: only the file-event `memory watch` imported `memory.watch.paths`; `--poll` and `--once` never did, and
    said nothing. And the watcher imported `subagents/agent-acompact-*`, which `memory import` leaves out."""
    from openprogram_memory.cli.app import app
    from typer.testing import CliRunner

    watched = _watched_folder(tmp_path / "agent-sessions")
    monkeypatch.setenv("OPENPROGRAM_MEMORY_WATCH_PATHS", str(watched))
    monkeypatch.setenv("OPENPROGRAM_MEMORY_WRITER_ENABLED", "false")  # the import is what is looked at here
    cfg = with_values(load_settings(), memory__watcher__poll_seconds=3600)
    imports: list = []
    if mode == "events":
        with Watcher(cfg) as watcher:
            imports = [path for path, _ in watcher.imports]
    else:
        MemoryWorkspace.open(cfg, create=True)
        if mode == "poll":
            watch(cfg, max_polls=1, on_import=lambda path, count: imports.append(path))
        else:
            result = CliRunner().invoke(app, ["memory", "watch", "--once", "--json"], catch_exceptions=False)
            assert result.exit_code == 0, result.output
            imports = [Path(done["path"]) for done in json.loads(result.stdout)["imported"]]
    store = SessionStore(cfg.sessions_dir)
    codex_session = import_paths(SessionStore(tmp_path / "whole"), "codex", [FIXTURES / "codex" / "crud.jsonl"])
    assert {info.session for info in store.list_sessions()} == {REWIND_SESSION, *codex_session.sessions}
    assert sorted(p.name for p in imports) == sorted(["crud.jsonl", f"{REWIND_SESSION}.jsonl"])
    assert not store.has_node(REWIND_SESSION, COMPACTION_RUN)


def test_a_missing_watched_directory_is_reported_once_per_disappearance(tmp_path: Path, monkeypatch, caplog) -> None:
    """Was: `memory watch --poll` logged "not a directory" for a missing `memory.watch.paths` entry on every poll."""
    gone = tmp_path / "agent-sessions"
    monkeypatch.setenv("OPENPROGRAM_MEMORY_WATCH_PATHS", str(gone))
    monkeypatch.setenv("OPENPROGRAM_MEMORY_WRITER_ENABLED", "false")
    cfg = load_settings()
    MemoryWorkspace.open(cfg, create=True)
    between = iter([lambda: None, gone.mkdir, gone.rmdir, lambda: None])  # missing, missing, back, gone, gone
    said: list[int] = []

    def poll_done(_outcomes) -> None:
        said.append(sum("does not exist yet; watched once it is created" in r.getMessage() for r in caplog.records))

    with caplog.at_level("WARNING", logger="openprogram_memory.writer"):
        watch(cfg, max_polls=5, sleep=lambda _s: next(between)(), on_poll=poll_done)
    assert said == [1, 1, 1, 2, 2]



def test_a_watched_path_is_said_as_what_happens_to_it(tmp_path: Path, monkeypatch, caplog) -> None:
    """Was: a `memory.watch.paths` folder not made yet was said "is not a directory; not watched", yet the running
    watcher watches it once it is made. A file there is not a directory, and is never read."""
    not_yet, a_file = tmp_path / "not-yet", tmp_path / "notes.txt"
    a_file.write_text("no transcripts here")
    monkeypatch.setenv("OPENPROGRAM_MEMORY_WATCH_PATHS", f"{not_yet}:{a_file}")
    with caplog.at_level("WARNING", logger="openprogram_memory.writer"):
        assert watch_paths(load_settings(), set()) == []
    assert [r.getMessage() for r in caplog.records] == [
        f"memory.watch.paths: {not_yet} does not exist yet; watched once it is created",
        f"memory.watch.paths: {a_file} is not a directory; not watched"]


def _imported_in_full(store: SessionStore, fixture: Path, scratch: Path) -> Callable[[], bool]:
    """Whether ``store`` holds every node ``fixture`` (a transcript) imports to (``scratch``: an empty folder)."""
    expected = import_paths(SessionStore(scratch), transcript_format(fixture), [fixture])
    session = expected.sessions[0]
    return lambda: store.exists(session) and store.session_info(session).node_count == expected.imported


@pytest.mark.parametrize("at_once", [True, False], ids=["made-anew-at-once", "made-by-the-first-session"])
def test_a_session_in_a_session_store_made_anew_under_the_watcher_is_written_when_it_goes_idle(tmp_path: Path,
                                                                                                 fake, at_once) -> None:
    """Was: the session folder removed and made again (by the next import or session) under a running watcher was
    no longer watched: a session there was written only at the next regular poll, an hour later here. Made anew
    at once, the folder is at the same path at every wake-up: it is another folder all the same."""
    cfg = with_values(settings(idle=1), memory__watcher__poll_seconds=3600)
    with Watcher(cfg) as watcher:
        shutil.rmtree(cfg.sessions_dir)
        if at_once:
            cfg.sessions_dir.mkdir()
        time.sleep(1)  # two ticks before the first session
        store = SessionStore(cfg.sessions_dir)
        store.create_session("chat")
        store.append("chat", "user", "I'm Dana. Always answer in metric units.")
        wait_until(lambda: _chat_outcomes(watcher), 15)
    assert [(o.ok, o.recorded) for o in _chat_outcomes(watcher)] == [(True, True)]


@pytest.mark.parametrize("fixture", [FIXTURES / "codex" / "crud.jsonl", FIXTURES / "pi" / "branched.jsonl"],
                         ids=["codex", "pi"])
def test_a_watched_directory_that_appears_or_comes_back_is_watched_and_said_missing_once(tmp_path: Path, caplog,
                                                                                           fixture: Path) -> None:
    """Was: `memory watch` watched only the `memory.watch.paths` directories there when it started: one made later,
    or removed and made again, was never imported until the watcher was restarted."""
    lines = fixture.read_bytes().splitlines(keepends=True)
    watched = tmp_path / "agent-sessions"
    cfg = with_values(settings(enabled=False), memory__watch__paths=(str(watched),),
                      memory__watcher__poll_seconds=3600)
    store = SessionStore(cfg.sessions_dir)

    def said() -> int:
        return sum("does not exist yet; watched once it is created" in r.getMessage() for r in caplog.records)

    with caplog.at_level("WARNING", logger="openprogram_memory.writer"), Watcher(cfg):
        assert said() == 1
        for round_ in range(2):  # missing at the start, then removed under the watcher: back twice
            in_full = _imported_in_full(store, fixture, tmp_path / f"whole-{round_}")
            rollouts = watched / "2026" / "01"
            rollouts.mkdir(parents=True)
            live = rollouts / f"rollout-{round_}.jsonl"
            live.write_bytes(b"".join(lines[:6]))
            wait_until(lambda: store.list_sessions(), 5)
            assert not in_full()
            with open(live, "ab") as handle:  # watched, on events
                handle.write(b"".join(lines[6:]))
            wait_until(in_full, 5)
            assert said() == 1 + round_
            shutil.rmtree(watched)
            shutil.rmtree(cfg.sessions_dir)
            wait_until(lambda: said() == 2 + round_, 5)
        time.sleep(1)
        assert said() == 3


def test_a_project_folder_moved_into_a_watched_directory_is_imported(tmp_path: Path) -> None:
    """Was: a folder that arrived whole (moved in, restored, copied before the watch reached it) was seen but not
    looked into: its transcripts, written before it arrived, were never imported until the watcher restarted."""
    watched = tmp_path / "claude"
    watched.mkdir()
    cfg = with_values(settings(enabled=False), memory__watch__paths=(str(watched),),
                      memory__watcher__poll_seconds=3600)
    store = SessionStore(cfg.sessions_dir)
    fixture = FIXTURES / "claude-code" / "rewind.jsonl"
    in_full = _imported_in_full(store, fixture, tmp_path / "whole")
    with Watcher(cfg):
        project = tmp_path / "elsewhere" / "-home-dana-billing"
        project.mkdir(parents=True)
        shutil.copy(fixture, project / f"{REWIND_SESSION}.jsonl")
        project.rename(watched / project.name)
        wait_until(in_full, 5)
