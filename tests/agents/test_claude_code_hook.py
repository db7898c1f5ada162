"""``openprogram memory hook claude-code``: every event through the real command, JSON on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from openprogram_memory.config import load_settings
from openprogram_memory.provider import FilesMemory
from openprogram_memory.search.fence import is_fenced
from openprogram_memory.sessions.importers import import_paths
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.workspace.state import write_lock
from openprogram_memory.writer.pipeline import write

OPENPROGRAM = str(Path(sys.executable).with_name("openprogram"))
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions" / "claude-code"
REWIND = FIXTURES / "rewind.jsonl"
SESSION = "5f0c7a8e-1d2b-4c3a-9e7f-2a6b8c9d0e1f"


def hook(state: Path, stdin: str | bytes | dict | list, **env: str) -> subprocess.CompletedProcess:
    data = json.dumps(stdin) if isinstance(stdin, (dict, list)) else stdin
    data = data.encode() if isinstance(data, str) else data
    environ = {**os.environ, **env}
    return subprocess.run([OPENPROGRAM, "memory", "hook", "claude-code", "--state", str(state)], input=data,
                          capture_output=True, timeout=60, env=environ)


def wait_for(condition, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("the background write did not finish in time")


def _workers() -> list[str]:
    """Command lines of the hook workers running now (detached: no test holds their pids)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            command = entry.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "openprogram_memory.agents.hook_worker" in command:
            found.append(command)
    return found


@pytest.fixture(autouse=True)
def _background_workers_finish():
    """A test ends when the workers its hooks spawned have ended: a worker still writing when the session
    ends would leave its staging directory behind (and race the next test's files)."""
    yield
    if Path("/proc").is_dir():
        wait_for(lambda: not _workers())


def events(state: Path) -> list[dict]:
    path = state / "memory" / ".scriptorium" / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def writer_status(state: Path) -> dict:
    path = state / "memory" / ".scriptorium" / "writer-status.json"
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.fixture(scope="module")
def written_state(tmp_path_factory) -> Path:
    """A workspace holding what the rewind conversation says (imported and written in-process)."""
    state = tmp_path_factory.mktemp("written") / "state"
    settings = load_settings(state)
    ws = MemoryWorkspace.open(settings, create=True)
    import_paths(SessionStore(settings.sessions_dir), "claude-code", [REWIND])
    write(ws, SESSION, force=True)
    return state


@pytest.fixture
def empty_state(tmp_path: Path) -> Path:
    state = tmp_path / "hookstate"
    MemoryWorkspace.open(load_settings(state), create=True)
    return state


def test_session_start_prints_the_core_block_the_provider_gives(written_state: Path) -> None:
    result = hook(written_state, {"session_id": "s1", "transcript_path": "/nowhere.jsonl", "cwd": "/tmp",
                                  "hook_event_name": "SessionStart", "source": "startup"})
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = output["hookSpecificOutput"]["additionalContext"]
    assert is_fenced(context) and "Dana" in context
    assert context == FilesMemory(load_settings(written_state)).system_prompt()


def test_session_start_prints_nothing_when_core_injection_is_off(written_state: Path) -> None:
    result = hook(written_state, {"session_id": "s1", "hook_event_name": "SessionStart", "source": "resume"},
                  OPENPROGRAM_MEMORY_CORE_INJECT="false")
    assert (result.returncode, result.stdout) == (0, b"")


def test_user_prompt_submit_prints_the_recall_block_for_the_prompt(written_state: Path) -> None:
    prompt = "Which web framework did we pick for billing?"
    result = hook(written_state, {"session_id": "s1", "transcript_path": "/nowhere.jsonl", "cwd": "/tmp",
                                  "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    assert is_fenced(output["additionalContext"]) and "FastAPI" in output["additionalContext"]
    assert output["additionalContext"] == FilesMemory(load_settings(written_state)).search(prompt)


def test_user_prompt_submit_prints_nothing_when_nothing_matches(written_state: Path) -> None:
    result = hook(written_state, {"session_id": "s1", "hook_event_name": "UserPromptSubmit",
                                  "prompt": "zygomorphic quasar xylophone"})
    assert (result.returncode, result.stdout) == (0, b"")


def test_session_end_brings_the_transcripts_durable_facts_into_memory(empty_state: Path) -> None:
    result = hook(empty_state, {"session_id": SESSION, "transcript_path": str(REWIND), "cwd": "/home/dana/billing",
                                "hook_event_name": "SessionEnd", "reason": "exit"})
    assert (result.returncode, result.stdout) == (0, b"")
    wait_for(lambda: writer_status(empty_state).get("last_outcome") == "success")
    settings = load_settings(empty_state)
    memory = FilesMemory(settings)
    assert "FastAPI" in memory.search("billing service web framework")
    assert "Dana" in memory.system_prompt()
    assert any(e["event"] == "memory.write_completed" and e["session"] == SESSION for e in events(empty_state))
    assert SessionStore(settings.sessions_dir).exists(SESSION)


def test_stop_imports_only_new_lines_then_runs_the_per_turn_write(empty_state: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "live.jsonl"
    lines = REWIND.read_bytes().splitlines(keepends=True)
    transcript.write_bytes(b"".join(lines[:8]))
    store = SessionStore(load_settings(empty_state).sessions_dir)
    stop = {"session_id": SESSION, "transcript_path": str(transcript), "hook_event_name": "Stop",
            "stop_hook_active": False}
    assert hook(empty_state, stop).returncode == 0
    wait_for(lambda: writer_status(empty_state).get("session") == SESSION)
    first = store.session_info(SESSION).node_count
    with open(transcript, "ab") as handle:
        handle.write(b"".join(lines[8:]))
    assert hook(empty_state, stop).returncode == 0
    whole = import_paths(SessionStore(tmp_path / "whole"), "claude-code", [REWIND]).imported
    wait_for(lambda: store.session_info(SESSION).node_count == whole > first)
    # the fixture's turns are over an hour old, so the per-turn entry finds them due and writes
    wait_for(lambda: "FastAPI" in FilesMemory(load_settings(empty_state)).search("billing web framework"))
    log = (empty_state / "memory" / ".scriptorium" / "hook.log").read_text()
    assert "force=False): ok" in log and "force=True" not in log


def status_warnings(state: Path) -> list[str]:
    return MemoryWorkspace.open(load_settings(state)).status()["warnings"]


def hook_log(state: Path) -> str:
    path = state / "memory" / ".scriptorium" / "hook.log"
    return path.read_text() if path.exists() else ""


def test_malformed_stdin_exits_0_and_is_recorded_once_as_a_hook_problem(empty_state: Path) -> None:
    result = hook(empty_state, b"{not json")
    assert (result.returncode, result.stdout) == (0, b"")
    assert [(e["event"], e["code"]) for e in events(empty_state)] == [("memory.hook_failed", "INVALID_ARGUMENT")]
    # nothing was written: the writer's health is untouched, and status says what went wrong and where to look
    assert writer_status(empty_state)["last_failure"] is None
    log = empty_state / "memory" / ".scriptorium" / "hook.log"
    assert "hook input is not JSON" in log.read_text()
    assert any("hook input is not JSON" in w and str(log) in w for w in status_warnings(empty_state))


@pytest.mark.parametrize("stdin", [{"session_id": "s1"}, ["SessionStart"], {"hook_event_name": "SessionEnd"},
                                   {"hook_event_name": "Stop", "session_id": " ", "transcript_path": ""}])
def test_unusable_events_exit_0_and_are_recorded_once(empty_state: Path, stdin) -> None:
    result = hook(empty_state, stdin)
    assert (result.returncode, result.stdout) == (0, b"")
    assert [(e["event"], e["code"]) for e in events(empty_state)] in (
        [("memory.hook_failed", "INVALID_ARGUMENT")], [("memory.hook_failed", "MISSING_SESSION_ID")])
    assert writer_status(empty_state)["last_failure"] is None


@pytest.mark.parametrize("name", ["PreToolUse", "Notification", "SomeEventAddedLater"])
def test_events_memory_does_not_handle_are_ignored_quietly(empty_state: Path, name: str) -> None:
    before = sorted(p.relative_to(empty_state) for p in empty_state.rglob("*"))
    result = hook(empty_state, {"session_id": SESSION, "transcript_path": str(REWIND), "hook_event_name": name,
                                "tool_name": "Bash", "tool_input": {"command": "ls"}})
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    time.sleep(0.5)  # a background process, had one started, would have left files by now
    assert sorted(p.relative_to(empty_state) for p in empty_state.rglob("*")) == before
    assert status_warnings(empty_state) == []


def test_a_missing_transcript_is_one_hook_problem_and_no_write_failure(empty_state: Path, tmp_path: Path) -> None:
    missing = tmp_path / "gone.jsonl"
    result = hook(empty_state, {"session_id": SESSION, "transcript_path": str(missing), "hook_event_name": "Stop",
                                "stop_hook_active": False})
    assert (result.returncode, result.stdout) == (0, b"")
    wait_for(lambda: events(empty_state))
    wait_for(lambda: not _workers())
    assert [(e["event"], e["code"], e.get("stage")) for e in events(empty_state)] == [
        ("memory.hook_failed", "INVALID_ARGUMENT", "import")]
    assert writer_status(empty_state)["last_failure"] is None
    [warning] = status_warnings(empty_state)
    assert "(Stop, import)" in warning and str(missing) in warning and warning.endswith("hook.log")
    # the next hook call that works ends the warning (events.jsonl keeps the problem)
    hook(empty_state, {"session_id": SESSION, "transcript_path": str(REWIND), "hook_event_name": "Stop",
                       "stop_hook_active": False})
    wait_for(lambda: writer_status(empty_state).get("session") == SESSION)
    wait_for(lambda: not _workers())
    assert status_warnings(empty_state) == []


@pytest.mark.parametrize("transcript", [None, str(REWIND)])
def test_an_unsafe_session_id_is_one_hook_problem_and_no_worker_crash(empty_state: Path, transcript) -> None:
    result = hook(empty_state, {"hook_event_name": "Stop", "session_id": "../../etc", "transcript_path": transcript})
    assert (result.returncode, result.stdout) == (0, b"")
    wait_for(lambda: not _workers())  # had a background write started, its failure would be on record by now
    assert [(e["event"], e["code"]) for e in events(empty_state)] == [("memory.hook_failed", "INVALID_ARGUMENT")]
    assert "hook worker failed" not in hook_log(empty_state) and "Traceback" not in hook_log(empty_state)
    [warning] = status_warnings(empty_state)
    assert "invalid session_id '../../etc'" in warning and warning.endswith("hook.log")
    assert writer_status(empty_state)["last_failure"] is None
    assert not (empty_state / "sessions").exists() or not any((empty_state / "sessions").iterdir())


def test_a_worker_that_fails_unexpectedly_is_a_hook_problem_status_shows(empty_state: Path, caplog) -> None:
    from openprogram_memory.agents import hook_worker

    assert hook_worker.main(["--state", str(empty_state), "--session", "../../etc", "--event", "Stop"]) == 0
    assert [(e["event"], e["code"]) for e in events(empty_state)] == [("memory.hook_failed", "INVALID_ARGUMENT")]
    [warning] = status_warnings(empty_state)
    assert "(Stop)" in warning and "invalid session id '../../etc'" in warning
    # a failure with a code is one line in the log, not a traceback
    assert [(r.levelname, r.exc_info) for r in caplog.records if "hook worker failed" in r.message] == [
        ("WARNING", None)]


@pytest.mark.parametrize("transcript,said", [
    (FIXTURES.parent / "codex" / "crud.jsonl", "looks like a codex rollout, not a Claude Code transcript"),
    (None, "is not a Claude Code transcript: none of its 1 line(s)"),
])
def test_a_transcript_of_another_format_is_a_hook_problem_naming_it(empty_state: Path, tmp_path: Path, transcript,
                                                                    said: str) -> None:
    if transcript is None:
        transcript = tmp_path / "settings.json"
        transcript.write_text('{"theme": "dark"}\n')
    # an earlier problem is still on record: a transcript that imports nothing must not clear it
    hook(empty_state, {"hook_event_name": "Stop", "session_id": SESSION, "transcript_path": str(tmp_path / "gone")})
    wait_for(lambda: events(empty_state))
    assert len(status_warnings(empty_state)) == 1
    result = hook(empty_state, {"hook_event_name": "Stop", "session_id": SESSION, "transcript_path": str(transcript)})
    assert (result.returncode, result.stdout) == (0, b"")
    wait_for(lambda: len(events(empty_state)) == 2 or "imported" in hook_log(empty_state))  # refused, or read
    wait_for(lambda: not _workers())
    assert [(e["event"], e["code"], e["stage"]) for e in events(empty_state)] == [
        ("memory.hook_failed", "INVALID_ARGUMENT", "import")] * 2
    [warning] = status_warnings(empty_state)
    assert said in warning and str(transcript) in warning
    assert "imported" not in hook_log(empty_state)
    assert not SessionStore(load_settings(empty_state).sessions_dir).list_sessions()


@pytest.mark.parametrize("event", ["PreCompact", "Stop"])
def test_a_payload_naming_another_session_writes_the_transcripts_own(empty_state: Path, event: str) -> None:
    """After --resume/--continue Claude Code may send a session_id the transcript does not carry."""
    payload = {"session_id": "other-id-123", "transcript_path": str(REWIND), "hook_event_name": event}
    assert hook(empty_state, payload).returncode == 0
    wait_for(lambda: writer_status(empty_state).get("last_outcome") == "success")
    assert writer_status(empty_state)["session"] == SESSION
    assert "FastAPI" in FilesMemory(load_settings(empty_state)).search("billing web framework")
    wait_for(lambda: not _workers())
    # SessionEnd after that: nothing new in the transcript, and still the transcript's session is written
    assert hook(empty_state, {**payload, "hook_event_name": "SessionEnd", "reason": "exit"}).returncode == 0
    wait_for(lambda: not _workers())
    forced = hook_log(empty_state).count(f"write of {SESSION} (force=True): ok")
    assert forced == (2 if event == "PreCompact" else 1)
    assert not [e for e in events(empty_state) if e["event"] in ("memory.write_failed", "memory.hook_failed")]


@pytest.mark.parametrize("event", ["Stop", "SessionEnd"])
def test_a_payload_without_session_id_writes_the_transcripts_session(empty_state: Path, event: str) -> None:
    """The transcript's own sessionId decides what is written: a payload that names no session is no problem."""
    assert hook(empty_state, {"transcript_path": str(REWIND), "hook_event_name": event}).returncode == 0
    wait_for(lambda: writer_status(empty_state).get("last_outcome") == "success")
    assert writer_status(empty_state)["session"] == SESSION
    assert "FastAPI" in FilesMemory(load_settings(empty_state)).search("billing web framework")
    wait_for(lambda: not _workers())
    assert not [e for e in events(empty_state) if e["event"] in ("memory.write_failed", "memory.hook_failed")]
    assert status_warnings(empty_state) == []


def test_a_missing_workspace_is_not_created(tmp_path: Path) -> None:
    state = tmp_path / "nothing-here"
    for event in ({"hook_event_name": "SessionStart", "session_id": "s"},
                  {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "billing"},
                  {"hook_event_name": "SessionEnd", "session_id": "s", "transcript_path": str(REWIND)},
                  "{broken"):
        result = hook(state, event)
        assert (result.returncode, result.stdout) == (0, b"")
    time.sleep(0.5)  # a background process, had one started, would have created it by now
    assert not state.exists()


def test_memory_disabled_does_nothing(empty_state: Path) -> None:
    before = sorted(p.relative_to(empty_state) for p in empty_state.rglob("*"))
    result = hook(empty_state, {"hook_event_name": "SessionEnd", "session_id": SESSION,
                                "transcript_path": str(REWIND)}, OPENPROGRAM_MEMORY_BACKEND="none")
    assert (result.returncode, result.stdout) == (0, b"")
    time.sleep(0.5)
    assert sorted(p.relative_to(empty_state) for p in empty_state.rglob("*")) == before


def test_a_held_write_lock_exits_0_and_the_write_waits_for_it(empty_state: Path) -> None:
    ws = MemoryWorkspace.open(load_settings(empty_state))
    with write_lock(ws.layout, 5):
        result = hook(empty_state, {"session_id": SESSION, "transcript_path": str(REWIND),
                                    "hook_event_name": "PreCompact", "trigger": "auto"})
        assert (result.returncode, result.stdout) == (0, b"")  # at once, while the write waits: the agent never does
        wait_for(lambda: "lock busy (attempt 1 of" in hook_log(empty_state))
        assert SessionStore(load_settings(empty_state).sessions_dir).exists(SESSION)  # imported all the same
    wait_for(lambda: writer_status(empty_state).get("last_outcome") == "success")
    # a busy workspace is no writer failure, not even while the write waits for it
    assert writer_status(empty_state)["last_failure"] is None
    assert not [e for e in events(empty_state) if e["event"] == "memory.write_failed"]


def test_help_still_goes_through_typer() -> None:
    result = subprocess.run([OPENPROGRAM, "memory", "hook", "claude-code", "--help"], capture_output=True,
                            timeout=60, text=True)
    assert result.returncode == 0 and "SessionStart" in result.stdout


def test_the_hook_path_does_not_load_the_cli_libraries(written_state: Path) -> None:
    code = ("import sys, io; sys.argv = ['openprogram', 'memory', 'hook', 'claude-code', '--state', sys.argv[1]];"
            "sys.stdin = io.TextIOWrapper(io.BytesIO(b'{\"hook_event_name\": \"UserPromptSubmit\", "
            "\"session_id\": \"s\", \"prompt\": \"billing framework\"}'));"
            "from openprogram_memory.cli.entry import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "assert not {'typer', 'rich', 'click'} & set(sys.modules), sorted(sys.modules)")
    result = subprocess.run([sys.executable, "-c", code, str(written_state)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert "FastAPI" in result.stdout


def test_a_write_that_found_the_lock_busy_is_retried_once_it_is_free(empty_state: Path) -> None:
    ws = MemoryWorkspace.open(load_settings(empty_state))
    with write_lock(ws.layout, 5):
        hook(empty_state, {"session_id": SESSION, "transcript_path": str(REWIND), "hook_event_name": "SessionEnd",
                           "reason": "logout"})
        wait_for(lambda: "lock busy (attempt 1 of" in hook_log(empty_state))
    wait_for(lambda: writer_status(empty_state).get("last_outcome") == "success")
    assert "FastAPI" in FilesMemory(load_settings(empty_state)).search("billing web framework")


@pytest.fixture
def quick_retries(monkeypatch):
    """The worker's retries and the writer's wait for the lock, shortened: the hold outlasts them all."""
    from openprogram_memory.agents import hook_worker
    from openprogram_memory.writer import pipeline

    monkeypatch.setattr(hook_worker, "LOCK_RETRY_SECONDS", 0.05)
    monkeypatch.setattr(pipeline, "WRITER_LOCK_TIMEOUT", 0.1)
    return hook_worker


def held_elsewhere(state: Path):
    """The workspace write lock, held by another thread (a long SessionEnd write) until the event is set."""
    layout = MemoryWorkspace.open(load_settings(state)).layout
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with write_lock(layout, 5):
            held.set()
            done.wait(60)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(10)
    return done, thread


def status_cli(state: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([OPENPROGRAM, "memory", "status", "--state", str(state), *args], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "COLUMNS": "400"})


def test_a_stop_write_still_busy_after_its_retries_is_deferred_not_a_failure(empty_state: Path, quick_retries,
                                                                             caplog) -> None:
    caplog.set_level("INFO", logger="openprogram_memory.hook")
    done, thread = held_elsewhere(empty_state)
    try:
        quick_retries.run(str(empty_state), SESSION, [str(REWIND)], False, "Stop")
    finally:
        done.set()
        thread.join()
    status = writer_status(empty_state)
    assert status["last_failure"] is None and status["last_outcome"] is None
    assert status["last_deferred"]["session"] == SESSION and status["last_deferred"]["hook_event"] == "Stop"
    assert [e["event"] for e in events(empty_state)] == ["memory.write_deferred"]
    assert f"write of {SESSION} (force=False) deferred" in caplog.text and "turns stay pending" in caplog.text
    shown = json.loads(status_cli(empty_state, "--json").stdout)
    assert shown["warnings"] == [] and shown["writer"]["last_failure"] is None
    assert shown["writer"]["last_deferred"]["session"] == SESSION and shown["writer"]["pending"] > 0
    human = status_cli(empty_state).stdout
    human = " ".join(human.split())
    assert "warning" not in human and "found the workspace busy: its turns wait for the next write" in human
    # the next write of the session (the lock free again) writes the turns that waited, and ends the note
    quick_retries.run(str(empty_state), SESSION, [str(REWIND)], True, "SessionEnd")
    status = writer_status(empty_state)
    assert status["last_outcome"] == "success" and "last_deferred" not in status
    assert json.loads(status_cli(empty_state, "--json").stdout)["writer"]["last_deferred"] is None


def test_a_real_write_failure_of_a_hook_is_still_a_failure_shown_with_what_to_do(empty_state: Path,
                                                                                 quick_retries, monkeypatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_MEMORY_WRITER_MODEL", "anthropic:claude-sonnet-4-5")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    quick_retries.run(str(empty_state), SESSION, [str(REWIND)], True, "SessionEnd")
    status = writer_status(empty_state)
    assert status["last_outcome"] == "failure" and status["last_failure"]["reason_code"] == "MODEL_AUTHENTICATION"
    assert "last_deferred" not in status
    shown = json.loads(status_cli(empty_state, "--json").stdout)
    failure = shown["writer"]["last_failure"]
    assert (failure["code"], failure["session"]) == ("MODEL_AUTHENTICATION", SESSION)
    assert failure["message"].startswith("No Anthropic API key") and failure["at"] == status["last_failure"]["at"]
    [warning] = shown["warnings"]
    assert warning.startswith(f"the last write failed at {failure['at']} (session {SESSION}): MODEL_AUTHENTICATION: "
                              "No Anthropic API key: set ANTHROPIC_API_KEY")
    assert warning.endswith(f"— its log: {failure['log']}") and failure["log"].endswith("events.jsonl")
    assert f"warning: {warning}" in " ".join(status_cli(empty_state).stdout.split())


def test_subagent_stop_imports_the_sub_agents_transcript_too(empty_state: Path) -> None:
    subagent = FIXTURES / "subagent.jsonl"
    sub_session = import_paths(SessionStore(empty_state.parent / "probe"), "claude-code", [subagent]).sessions[0]
    result = hook(empty_state, {"session_id": SESSION, "transcript_path": str(REWIND), "hook_event_name": "SubagentStop",
                                "agent_transcript_path": str(subagent), "stop_hook_active": False})
    assert (result.returncode, result.stdout) == (0, b"")
    store = SessionStore(load_settings(empty_state).sessions_dir)
    wait_for(lambda: store.exists(SESSION) and store.exists(sub_session))


def test_an_import_that_finds_another_one_running_waits_for_it(empty_state: Path, monkeypatch) -> None:
    """SessionEnd's import often starts while Stop's is still reading a long transcript: it must not give up."""
    from openprogram_memory.agents import hook_worker
    from openprogram_memory.fsutil import FileLock, ensure_dir
    from openprogram_memory.sessions.importers import tail

    monkeypatch.setattr(tail, "LOCK_TIMEOUT", 0.2)
    monkeypatch.setattr(hook_worker, "LOCK_RETRY_SECONDS", 0.1)
    state_dir = MemoryWorkspace.open(load_settings(empty_state)).layout.state(tail.STATE_DIR)
    ensure_dir(state_dir)
    running = FileLock(str(tail.state_path(state_dir, REWIND.resolve())) + ".lock")
    running.acquire(1)
    releaser = threading.Timer(0.5, running.release)  # the other import ends after this one's first attempts
    releaser.start()
    hook_worker.run(str(empty_state), SESSION, [str(REWIND)], True, "SessionEnd")
    releaser.join()
    assert writer_status(empty_state)["last_outcome"] == "success"
    assert "FastAPI" in FilesMemory(load_settings(empty_state)).search("billing web framework")
    assert not [e for e in events(empty_state) if e["event"] == "memory.hook_failed"]


def test_a_hook_that_parsed_the_whole_tree_saves_it_so_the_next_cold_write_reads_only_what_it_needs(
        empty_state: Path) -> None:
    """A hook's worker often is the first process after a large change (a pull, an upgrade, edits in an editor)
    and parses the whole tree: the parse it saves carries the writer's per-file keys (the token index, the
    slotted records), so the next cold `memory write` reads from them the few files it needs, not every record."""
    from engine.helpers import MESSAGES, record
    from openprogram_memory.workspace import caches

    ws = MemoryWorkspace.open(load_settings(empty_state))
    ws.archive(MESSAGES)
    ws.update(changes=[{"path": f"topics/t{n:02d}.md", "content": record(f"Fact number {n} about tea.",
                                                                         "openprogram/s1/u3")} for n in range(60)])
    (ws.layout.state("tree-cache.pickle")).unlink(missing_ok=True)  # no process has parsed this tree yet
    edited = ws.root / "topics" / "t05.md"
    edited.write_text(edited.read_text().replace("about tea", "about green tea"))  # adopted by the hook's worker
    result = hook(empty_state, {"hook_event_name": "Stop", "session_id": SESSION, "transcript_path": str(REWIND)})
    assert (result.returncode, result.stdout) == (0, b"")
    wait_for(lambda: f"write of {SESSION} (force=False): ok" in hook_log(empty_state))
    wait_for(lambda: not _workers())
    caches._CACHES.clear()  # the next write is a cold process: it reads what the hook's worker saved
    # (the recent view reads the files of the newest records: two of them here, as 50 of 10,000 would be)
    cold = MemoryWorkspace.open(load_settings(empty_state, {"memory.recent.limit": 2}))
    write(cold, "s2", force=True, messages=[{"role": "user", "content": "I brew oolong at 85 degrees."}])
    unpacked = {rel for rel, (_sig, summary) in cold.cache._files.items() if "records" in summary.__dict__}
    assert cold.cache.parsed <= 3 and len(unpacked) <= 5, (cold.cache.parsed, len(unpacked), sorted(unpacked))
    assert any("oolong" in r.content for r in cold.records())  # and it was written


# A SessionEnd hook's worker whose writer holds the workspace until the test lets it go (a long forced write: a
# model answering slowly); its later passes run at once.
SLOW_SESSION_END = '''
import sys, time
from pathlib import Path
from openprogram_memory.writer import backends
from openprogram_memory.writer.rules_backend import RulesWriter

state, holding, release, transcript = sys.argv[1:5]

class Slow(RulesWriter):
    def run(self, request, staging, ws):
        if not Path(holding).exists():
            Path(holding).touch()
            deadline = time.monotonic() + 120
            while not Path(release).exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return super().run(request, staging, ws)

backends.register_backend("rules", lambda model: Slow())
from openprogram_memory.agents import hook_worker
sys.exit(hook_worker.main(["--state", state, "--event", "SessionEnd", "--force", "--transcript", transcript]))
'''


@pytest.mark.parametrize("held", ["a few seconds", "past the stop hook's retries"])
def test_a_stop_write_overlapping_a_long_session_end_write_is_no_failure_and_loses_nothing(
        empty_state: Path, tmp_path: Path, held: str) -> None:
    """Two real processes: SessionEnd's write holds the workspace while the next Stop hook's write wants it. The
    Stop write waits for it (short hold) or defers quietly (long hold): its turns stay pending and SessionEnd's
    forced write, still running, writes them. No writer failure either way, and every turn ends up written."""
    lines = REWIND.read_text().splitlines(keepends=True)
    transcript = tmp_path / "conversation.jsonl"
    transcript.write_text("".join(lines[:21]))  # up to the FastAPI turns
    holding, release = tmp_path / "holding", tmp_path / "release"
    log_path = empty_state / "memory" / ".scriptorium" / "hook.log"
    with open(log_path, "ab") as log:
        session_end = subprocess.Popen([sys.executable, "-c", SLOW_SESSION_END, str(empty_state), str(holding),
                                        str(release), str(transcript)], stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=log)
    try:
        wait_for(holding.exists)
        with transcript.open("a") as conversation:  # the conversation went on: Postgres in Frankfurt
            conversation.write("".join(lines[21:]))
        result = hook(empty_state, {"hook_event_name": "Stop", "session_id": SESSION,
                                    "transcript_path": str(transcript), "stop_hook_active": False})
        assert (result.returncode, result.stdout) == (0, b"")
        if held == "a few seconds":
            wait_for(lambda: f"write of {SESSION}: lock busy (attempt 1 of" in hook_log(empty_state))
            release.touch()
            wait_for(lambda: f"write of {SESSION} (force=False): ok" in hook_log(empty_state))
        else:
            wait_for(lambda: "memory.write_deferred" in [e["event"] for e in events(empty_state)])
            assert f"write of {SESSION} (force=False) deferred" in hook_log(empty_state)
            release.touch()
        assert session_end.wait(60) == 0
    finally:
        release.touch()
        session_end.wait(60)
    assert f"write of {SESSION} (force=True): ok" in hook_log(empty_state)
    status = writer_status(empty_state)
    assert (status["last_outcome"], status["last_failure"], status.get("last_deferred")) == ("success", None, None)
    assert not [e for e in events(empty_state) if e["event"] == "memory.write_failed"]
    shown = json.loads(status_cli(empty_state, "--json").stdout)
    assert shown["warnings"] == [] and shown["writer"]["last_failure"] is None and shown["writer"]["pending"] == 0
    memory = FilesMemory(load_settings(empty_state))
    assert "Frankfurt" in memory.search("Postgres cluster Frankfurt")  # the Stop hook's turns: written
    assert "FastAPI" in memory.search("billing web framework")
