"""``memory write|watch|backfill|import`` as scripts see them: JSON shapes and exit codes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from filelock import FileLock
from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from openprogram_memory.config import load_settings
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.memory import MemoryWorkspace

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
REWIND = FIXTURES / "claude-code" / "rewind.jsonl"
REWIND_SESSION = "5f0c7a8e-1d2b-4c3a-9e7f-2a6b8c9d0e1f"
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def say(session: str, role: str, text: str) -> None:
    result = run("session", "append", session, "--role", role, "--text", text, "--json")
    assert result.exit_code == 0, result.output


@pytest.fixture(autouse=True)
def _workspace(_isolated_state):
    """`memory init` first: no verb but init creates a workspace."""
    assert run("memory", "init", "--json").exit_code == 0


@pytest.fixture
def session():
    assert run("session", "new", "--id", "chat", "--json").exit_code == 0
    say("chat", "user", "Hi, I'm Dana. I prefer metric units. Is the build green?")
    say("chat", "assistant", "Hi Dana, the build is green.")
    say("chat", "user", "We decided to use FastAPI for the billing service.")
    say("chat", "assistant", "Great choice.")
    return "chat"


def ws() -> MemoryWorkspace:
    return MemoryWorkspace.open(load_settings())


def test_write_force_json_on_a_session_built_with_the_store(session):
    result = run("memory", "write", "--session", session, "--force", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) >= {"ok", "passes", "written", "pending", "revision", "changed_files"}
    assert data["ok"] is True and data["passes"] == 1 and len(data["written"]) == 4 and data["pending"] == 0
    assert data["changed_files"] == ["topics/core.md", "topics/projects/billing-service.md"]
    assert data["revision"] == ws().revision()
    contents = sorted(r.content for r in ws().records())
    assert contents == ["The user prefers metric units.", "The user's name is Dana.",
                        "We decided to use FastAPI for the billing service."]
    again = json.loads(run("memory", "write", "--session", session, "--force", "--json").stdout)
    assert again["passes"] == 0 and again["written"] == [] and again["revision"] == data["revision"]


def test_the_session_can_be_named_without_the_option_but_only_once(session):
    result = run("memory", "write", session, "--force", "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["written"]) == 4
    revision = ws().revision()
    both = run("memory", "write", session, "--session", "other", "--force", "--json")
    assert both.exit_code == 64 and json.loads(both.stdout)["code"] == "INVALID_ARGUMENT"
    assert "'other'" in json.loads(both.stdout)["message"] and ws().revision() == revision


def test_per_turn_write_below_threshold_writes_nothing(session):
    result = run("memory", "write", "--session", session, "--json")
    data = json.loads(result.stdout)
    assert result.exit_code == 0 and data["passes"] == 0 and data["pending"] == 4 and data["skipped"] == "not due"


def test_write_without_a_session_is_a_usage_error():
    result = run("memory", "write", "--json")
    assert result.exit_code == 64
    assert json.loads(result.stdout)["code"] == "MISSING_SESSION_ID"


def test_write_of_an_unknown_session_is_rejected():
    result = run("memory", "write", "--session", "nope", "--force", "--json")
    assert result.exit_code == 65
    assert json.loads(result.stdout) | {"message": None} == {
        "ok": False, "code": "SESSION_NODES_UNAVAILABLE", "retryable": False, "message": None,
        "details": {"session": "nope"}}


def test_a_held_write_lock_exits_75_with_concurrent_update(session):
    run("memory", "init")
    with FileLock(str(ws().layout.lock_file)):
        result = run("memory", "write", "--session", session, "--force", "--json")
    assert result.exit_code == 75
    body = json.loads(result.stdout)
    assert body["code"] == "CONCURRENT_UPDATE" and body["retryable"] is True


def test_import_claude_code_then_write_never_records_tool_results():
    result = run("memory", "import", "claude-code", str(REWIND), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # two summary lines, a file-history snapshot and a stop-hook system line carry no turn
    assert data["sessions"] == [REWIND_SESSION] and data["imported"] == 18 and data["skipped"] == {"not_a_turn": 4}
    again = json.loads(run("memory", "import", "claude-code", str(REWIND), "--json").stdout)
    assert (again["imported"], again["skipped"]) == (0, {"already_present": 18, "not_a_turn": 4})

    result = run("memory", "write", "--session", REWIND_SESSION, "--force", "--json")
    assert result.exit_code == 0, result.output
    records = ws().records()
    contents = {r.content for r in records}
    assert contents == {
        "The user's name is Dana.",
        "The user runs the data team.",
        "The user works at Acme.",
        "Always answer in metric units.",
        "We decided to use FastAPI for the billing service.",  # head's branch; the older Flask branch loses
        "Our Postgres cluster runs in Frankfurt.",
    }
    store = SessionStore(load_settings().sessions_dir)
    for record in records:
        for source in record.sources:
            node = store.get_node(REWIND_SESSION, source["source"].rsplit("/", 1)[1])
            assert node.role == "user" and "tool_uses" not in node.metadata
    text = " ".join(contents).lower()
    for tool_output in ("requirements.txt", "uvicorn", "file created", "tool result", "pydantic"):
        assert tool_output not in text
    pending = json.loads(run("memory", "status", "--json").stdout)["writer"]["pending"]
    assert pending == 0


def test_all_idle_and_watch_once_run_one_poll(session, monkeypatch):
    # the session was just created: not idle under the default 30 minutes
    result = run("memory", "write", "--all-idle", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == {"ok": True, "sessions": []}
    monkeypatch.setenv("OPENPROGRAM_MEMORY_WATCHER_IDLE_SECONDS", "0")
    result = run("memory", "watch", "--once", "--json")
    data = json.loads(result.stdout)
    assert result.exit_code == 0 and [(s["session"], s["ok"], s["recorded"]) for s in data["sessions"]] == [
        ("chat", True, True)]


def test_all_idle_says_what_it_wrote_in_each_session_as_write_session_does(session, monkeypatch):
    """It printed only 'chat: ok', with no pass or turn counts."""
    monkeypatch.setenv("OPENPROGRAM_MEMORY_WATCHER_IDLE_SECONDS", "0")
    result = run("memory", "write", "--all-idle")
    assert result.exit_code == 0, result.output
    assert "chat: ok — 1 pass(es): 4 turn(s) written, 0 reviewed with nothing durable; 0 pending." in (
        " ".join(result.stdout.split()))
    say(session, "user", "Our cache cluster runs in Dublin.")
    say(session, "assistant", "Noted.")
    result = run("memory", "write", "--all-idle", "--json")
    assert result.exit_code == 0, result.output
    (chat,) = json.loads(result.stdout)["sessions"]
    assert (chat["session"], chat["ok"], chat["passes"], len(chat["written"]), chat["pending"]) == ("chat", True, 1, 2, 0)
    assert chat["revision"] == ws().revision() and chat["changed_files"]


def test_a_hand_edit_that_breaks_a_rule_holds_the_session_until_it_is_fixed(session, monkeypatch, caplog):
    assert run("memory", "write", session, "--force").exit_code == 0
    core = ws().root / "topics/core.md"
    committed = core.read_text()
    core.write_text(committed + "\nThe user likes Vim.\n")  # typed in an editor: no citation, no ^id
    say(session, "user", "I prefer tabs. Our cache cluster runs in Dublin.")
    monkeypatch.setenv("OPENPROGRAM_MEMORY_WATCHER_IDLE_SECONDS", "0")
    # only the person can fix the file: not retryable (65), so a cron job does not retry it as it retries 75
    forced = run("memory", "write", "--session", session, "--force", "--json")
    refusal = json.loads(forced.stdout)
    assert forced.exit_code == 65 and (refusal["code"], refusal["retryable"]) == ("WRITER_PRECONDITION_FAILED", False)
    assert refusal["message"].startswith("topics/core.md line ")
    assert "`openprogram memory edit topics/core.md`" in refusal["message"]
    result = run("memory", "write", "--all-idle")
    said = " ".join(result.stdout.split())
    assert result.exit_code == 65, result.output
    assert "chat: WRITER_PRECONDITION_FAILED (held until you fix what is named below; the next poll writes it)" in said
    assert "topics/core.md line " in said and "not the writer's edit" in said and "`openprogram memory check`" in said
    assert "`openprogram memory edit topics/core.md`" in said
    # said once, above, not again as a warning on stderr (a cron job mails both)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "idle write of chat" in r.getMessage()]
    status = json.loads(run("memory", "status", "--json").stdout)
    assert status["writer"]["pending"] == 1
    # status names the command and what to fix until a later run succeeds
    assert status["scheduled"]["watch"]["ok"] is False
    assert status["scheduled"]["watch"]["code"] == "WRITER_PRECONDITION_FAILED"
    assert any(w.startswith("the last `memory write --all-idle` failed at ") and "topics/core.md line " in w
               for w in status["warnings"]), status["warnings"]
    from openprogram_memory.writer import watch_events, watcher

    # `memory watch` says the same on each poll, not only the code
    monkeypatch.setattr(watch_events, "watch_events",
                        lambda settings, on_poll, on_import: on_poll(watcher.watch_once(settings)))
    watched = " ".join(run("memory", "watch").stdout.split())
    assert "chat: WRITER_PRECONDITION_FAILED (held until you fix" in watched and "topics/core.md line " in watched
    core.write_text(committed)  # fixed by hand
    result = run("memory", "write", "--all-idle", "--json")
    assert result.exit_code == 0, result.output
    assert [(s["session"], s["ok"]) for s in json.loads(result.stdout)["sessions"]] == [("chat", True)]
    status = json.loads(run("memory", "status", "--json").stdout)
    assert status["writer"]["pending"] == 0 and status["scheduled"]["watch"]["ok"] is True
    assert not any("failed at" in w for w in status["warnings"]), status["warnings"]
    assert any("tabs" in r.content for r in ws().records())


def test_status_names_the_command_whose_poll_failed(session, monkeypatch):
    from openprogram_memory.failures import FailureCode, MemoryFailure
    from openprogram_memory.writer import pipeline

    def rejected(*_args, **_kwargs):
        raise MemoryFailure(FailureCode.COMMIT_REJECTED, "rejected twice", retryable=False)

    monkeypatch.setattr(pipeline, "write_session", rejected)
    monkeypatch.setenv("OPENPROGRAM_MEMORY_WATCHER_IDLE_SECONDS", "0")
    assert run("memory", "write", "--all-idle").exit_code == 65
    warnings = json.loads(run("memory", "status", "--json").stdout)["warnings"]
    assert any(w.startswith("the last `memory write --all-idle` failed at ") and "rejected twice" in w
               for w in warnings), warnings


def test_backfill_json_and_a_second_run_finds_nothing(session):
    from openprogram_memory.sources.archive import SourceMessage

    run("memory", "init")
    ws().archive([SourceMessage("legacy/t1/m1", "Dana", "dana", "2025-01-02T09:00:00Z", "I live in Lisbon."),
                  SourceMessage("legacy/t1/m2", "Dana", "dana", "2025-01-02T09:01:00Z", "Nice weather.")])
    result = run("memory", "backfill", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["considered"], data["written"], data["cited"], data["reviewed"], data["remaining"]) == (2, 2, 1, 1, 0)
    again = json.loads(run("memory", "backfill", "--json").stdout)
    assert again["considered"] == 0 and again["remaining"] == 0


def test_backfill_exits_65_with_the_count_when_sources_remain(session, monkeypatch):
    import openprogram_memory.writer.backfill as backfill_module
    from openprogram_memory.failures import FailureCode, MemoryFailure
    from openprogram_memory.sources.archive import SourceMessage

    from .helpers import reset_fake

    fake = reset_fake()
    fake.queue.append(MemoryFailure(FailureCode.MODEL_AUTHENTICATION, "bad key"))
    monkeypatch.setattr(backfill_module, "resolve_backend", lambda model: fake)
    run("memory", "init")
    ws().archive([SourceMessage("legacy/t1/m1", "Dana", "dana", "2025-01-02T09:00:00Z", "I live in Lisbon.")])
    result = run("memory", "backfill", "--json")
    assert result.exit_code == 65
    data = json.loads(result.stdout)
    assert data["remaining"] == 1 and data["failures"][0]["code"] == "MODEL_AUTHENTICATION"


def test_import_of_an_unknown_format_is_a_usage_error(tmp_path):
    result = run("memory", "import", "nope", str(tmp_path), "--json")
    assert result.exit_code == 64 and json.loads(result.stdout)["code"] == "INVALID_ARGUMENT"


def test_ctrl_c_stops_write_all_idle_between_sessions_and_a_rerun_continues(monkeypatch):
    """The first Ctrl-C lets the current session finish, then the poll stops: exit 130, what was done, what is left."""
    import os
    import signal

    from openprogram_memory.writer import watcher

    for name in ("a", "b", "c"):
        assert run("session", "new", "--id", name, "--json").exit_code == 0
        say(name, "user", f"I'm Dana and project {name} ships on Fridays.")
    calls: list[str] = []
    real_write_one = watcher._write_one

    def write_then_press_ctrl_c(ws, session, *args):
        calls.append(session)
        outcome = real_write_one(ws, session, *args)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # arrives while the first session is being written
        return outcome

    monkeypatch.setattr(watcher, "_write_one", write_then_press_ctrl_c)
    monkeypatch.setenv("OPENPROGRAM_MEMORY_WATCHER_IDLE_SECONDS", "0")
    first = run("memory", "write", "--all-idle", "--json")
    assert first.exit_code == 130
    data = json.loads(first.stdout)
    assert data["interrupted"] and data["remaining"] == 2 and len(data["sessions"]) == 1 and data["sessions"][0]["ok"]
    assert "stopping after the current pass" in first.stderr
    monkeypatch.setattr(watcher, "_write_one", real_write_one)
    second = run("memory", "write", "--all-idle", "--json")
    assert second.exit_code == 0 and len(json.loads(second.stdout)["sessions"]) == 2


def test_ctrl_c_before_the_first_idle_session_says_only_that_it_stopped(monkeypatch):
    """Not also "No idle session to write.": three were due, none was written."""
    import os
    import signal

    from openprogram_memory.writer import watcher

    for name in ("a", "b", "c"):
        assert run("session", "new", "--id", name, "--json").exit_code == 0
        say(name, "user", f"I'm Dana and project {name} ships on Fridays.")
    real_list = watcher.SessionStore.list_sessions

    def list_then_press_ctrl_c(self, *args):
        os.kill(os.getpid(), signal.SIGINT)  # arrives while the poll looks for idle sessions
        return real_list(self, *args)

    monkeypatch.setattr(watcher.SessionStore, "list_sessions", list_then_press_ctrl_c)
    monkeypatch.setenv("OPENPROGRAM_MEMORY_WATCHER_IDLE_SECONDS", "0")
    answer = run("memory", "write", "--all-idle")
    assert answer.exit_code == 130 and "No idle session" not in answer.stdout
    assert "stopped by Ctrl-C: 0 of 3 idle session(s) done" in answer.stderr


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_during_a_long_session_write_says_so_at_once_and_stops_after_the_pass(presses, session, monkeypatch):
    """The first Ctrl-C is answered right away and lets the running pass (one transaction) finish; a second one
    stops at once. Either way the person is told it stopped, and a rerun writes the rest."""
    import os
    import signal

    from openprogram_memory.writer import pipeline

    real = pipeline.write_session
    pressed: list[bool] = []

    def pass_with_ctrl_c(ctx, *args, **kwargs):
        if not pressed:
            pressed.append(True)
            for _ in range(presses):
                os.kill(os.getpid(), signal.SIGINT)  # arrives while the first pass runs
        return real(ctx, *args, **kwargs)

    monkeypatch.setattr(pipeline, "write_session", pass_with_ctrl_c)
    monkeypatch.setattr(pipeline, "cut_batch", lambda turns, size, threshold: turns[:1])  # a pass per turn
    first = run("memory", "write", "--session", session, "--force", "--json")
    assert first.exit_code == 130 and "stopping after the current pass" in first.stderr
    if presses == 1:
        data = json.loads(first.stdout)
        assert data["interrupted"] is True and data["passes"] == 1 and data["pending"] > 0
        assert "stopped by Ctrl-C after 1 pass(es)" in first.stderr and "again continues" in first.stderr
    else:
        assert first.stdout == "" and first.stderr.rstrip().endswith("stopped by Ctrl-C")
    second = run("memory", "write", "--session", session, "--force", "--json")
    assert second.exit_code == 0 and json.loads(second.stdout)["pending"] == 0


def test_ctrl_c_during_a_long_idle_session_stops_write_all_idle_after_the_pass(session, monkeypatch):
    """One long session: the first Ctrl-C stops --all-idle inside it, after the running pass (one transaction),
    not after all its turns; the rest stays pending (not recorded as processed) and a rerun writes it."""
    import os
    import signal

    from openprogram_memory.writer import pipeline

    real = pipeline.write_session
    pressed: list[bool] = []

    def pass_with_ctrl_c(ctx, *args, **kwargs):
        if not pressed:
            pressed.append(True)
            os.kill(os.getpid(), signal.SIGINT)  # arrives while the first pass runs
        return real(ctx, *args, **kwargs)

    monkeypatch.setattr(pipeline, "write_session", pass_with_ctrl_c)
    monkeypatch.setattr(pipeline, "cut_batch", lambda turns, size, threshold: turns[:1])  # a pass per turn
    monkeypatch.setenv("OPENPROGRAM_MEMORY_WATCHER_IDLE_SECONDS", "0")
    first = run("memory", "write", "--all-idle")
    assert first.exit_code == 130 and first.stdout == ""
    assert first.stderr.splitlines() == [
        "stopping after the current pass (one transaction) (Ctrl-C again to stop at once)",
        "stopped by Ctrl-C: 0 of 1 idle session(s) done; what was written stays written, and running the same "
        "command again continues"]
    assert json.loads(run("memory", "status", "--json").stdout)["writer"]["pending"] == 3  # one of 4 turns written
    second = run("memory", "write", "--all-idle", "--json")
    assert second.exit_code == 0, second.output
    assert [(s["session"], s["ok"], s["recorded"]) for s in json.loads(second.stdout)["sessions"]] == [
        ("chat", True, True)]
    assert json.loads(run("memory", "status", "--json").stdout)["writer"]["pending"] == 0


def test_ctrl_c_stops_an_import_between_files_and_a_rerun_finishes_it(monkeypatch):
    import os
    import signal
    from pathlib import Path

    from openprogram_memory.sessions import importers

    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "sessions" / "pi"
    files = sorted(fixtures.glob("*.jsonl"))
    assert len(files) >= 2
    assert run("memory", "init").exit_code == 0
    real = importers.pi.import_pi
    calls: list[int] = []

    def import_then_press_ctrl_c(store, transcripts, *args):
        calls.append(1)
        result = real(store, transcripts, *args)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # arrives while the first file is read in
        return result

    monkeypatch.setitem(importers.FORMATS, "pi", (importers.pi.FORMAT, import_then_press_ctrl_c))
    first = run("memory", "import", "pi", *map(str, files), "--json")
    assert first.exit_code == 130 and "stopping after the current file" in first.stderr
    data = json.loads(first.stdout)
    assert data["interrupted"] is True and data["remaining"] == len(files) - 1 and len(data["sessions"]) == 1
    monkeypatch.setitem(importers.FORMATS, "pi", (importers.pi.FORMAT, real))
    second = run("memory", "import", "pi", *map(str, files), "--json")
    assert second.exit_code == 0 and len(json.loads(second.stdout)["sessions"]) == len(files)


def test_ctrl_c_during_sleep_lets_its_one_transaction_finish(monkeypatch):
    import os
    import signal

    from openprogram_memory import organizer

    assert run("memory", "init").exit_code == 0
    real = organizer.reorganize

    def organize_then_press_ctrl_c(ws, model=None, **options):
        os.kill(os.getpid(), signal.SIGINT)
        return real(ws, model=model, **options)

    monkeypatch.setattr(organizer, "reorganize", organize_then_press_ctrl_c)
    answer = run("memory", "sleep", "--json")
    assert answer.exit_code == 130 and json.loads(answer.stdout)["ok"] is True
    assert "installed and committed" in answer.stderr


@pytest.mark.parametrize("mode", ["events", "poll"])
def test_ctrl_c_on_watch_ends_it_as_every_verb_exit_130(mode):
    """Was: Ctrl-C on `memory watch` exited 0 with "KeyboardInterrupt caught, stopping watch" (file events) or
    silently (--poll). Sent to the console script once it watches, as a person does."""
    import os
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    # file events: said once they are live, so the signal lands in the wait for events, not in Python code
    probe = ("import sys\nfrom openprogram_memory.writer import watch_events as events\nreal = events.watch_events\n"
             "def live(settings, **kw):\n"
             "    return real(settings, on_ready=lambda: print('live', file=sys.stderr, flush=True), **kw)\n"
             "events.watch_events = live\n"
             f"sys.argv = ['openprogram', 'memory', 'watch'{', ' + repr('--poll') if mode == 'poll' else ''}]\n"
             "from openprogram_memory.cli.entry import run\nrun()\n")
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "OPENPROGRAM_MEMORY_WATCHER_IDLE_SECONDS": "5"}  # a tick of 0.5 s: events are live at once
    child = subprocess.Popen([sys.executable, "-c", probe], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
    try:
        said = [child.stderr.readline()]
        assert said[0].startswith("watching ")
        if mode == "events":
            said.append(child.stderr.readline())
            assert said[1] == "live\n"
        time.sleep(1)  # past the printing: now it waits (for events, or the next poll), as it does all day
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert (child.returncode, err, out) == (130, "stopped by Ctrl-C\n", "")
