"""The last sleep and watch outcomes show in `status`: a cron job that fails every night is seen."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.workspace.state import read_scheduled
from openprogram_memory.writer.watcher import watch_once

from .helpers import settings, workspace


def test_a_failed_sleep_and_a_failed_watch_poll_are_warnings_until_a_run_succeeds(_isolated_state, fake, monkeypatch):
    from openprogram_memory.cli import organize_cmds
    from openprogram_memory import organizer

    cfg = settings()
    ws = workspace(cfg)
    assert ws.status()["scheduled"] == {"sleep": None, "watch": None}

    def broken(*_args, **_kwargs):
        raise MemoryFailure(FailureCode.INVALID_TOPIC_FORMAT, "topics/core.md:3: citation removed by hand")

    monkeypatch.setattr(organizer, "reorganize", broken)
    try:
        organize_cmds.sleep(model=None, state=str(cfg.state_dir), json=True)
    except BaseException:  # the CLI exits 65
        pass
    status = ws.status()
    assert status["scheduled"]["sleep"]["ok"] is False
    assert status["scheduled"]["sleep"]["code"] == "INVALID_TOPIC_FORMAT"
    assert any(w.startswith("the last `memory sleep` failed at ") and "citation removed by hand" in w
               for w in status["warnings"])
    monkeypatch.undo()
    organize_cmds.sleep(model=None, state=str(cfg.state_dir), json=True)
    assert ws.status()["scheduled"]["sleep"]["ok"] is True
    assert not any("memory sleep" in w for w in ws.status()["warnings"])

    store = SessionStore(cfg.sessions_dir)
    store.create_session("chat")
    store.append("chat", "user", "I'm Dana.")
    fake.queue.extend(["invalid", "invalid"])  # rejected twice: a failure the poll records and does not retry
    report = watch_once(cfg, now=datetime.now(timezone.utc) + timedelta(days=1))
    assert [o.ok for o in report] == [False]
    watch = read_scheduled(ws.layout)["watch"]
    assert watch["ok"] is False and "chat" in watch["message"]
    assert any(w.startswith("the last `memory watch` failed") for w in ws.status()["warnings"])


def test_status_counts_the_turns_waiting_in_every_session(_isolated_state, fake, monkeypatch, capsys):
    """After an import of many sessions `pending` is their total (not the last written session's), per
    session with --verbose; a written session drops out."""
    import json
    import sys

    import pytest

    from openprogram_memory.cli import app as app_module
    from openprogram_memory.writer.pipeline import write

    cfg = settings()
    ws = workspace(cfg)
    store = SessionStore(cfg.sessions_dir)
    first_turn = {}
    for number in range(3):
        store.create_session(f"s{number}")
        for turn in range(number + 2):
            node = store.append(f"s{number}", "user" if turn % 2 == 0 else "assistant", f"turn {turn} of s{number}")
            first_turn.setdefault(f"s{number}", node.id)
    store.append("s2", "assistant", "a re-asked answer: a second branch", parent=first_turn["s2"])  # shared turn once

    def status(*extra: str) -> dict:
        monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "status", "--json", *extra])
        with pytest.raises(SystemExit):
            app_module.main()
        return json.loads(capsys.readouterr().out)["writer"]

    first = status("--verbose")
    assert first["pending_by_session"] == {"s0": 2, "s1": 3, "s2": 5}
    assert first["pending"] == 10 and "pending_by_session" not in status()
    write(ws, "s1", force=True)
    assert status("--verbose")["pending_by_session"] == {"s0": 2, "s2": 5}
