"""``memory.sync.auto``: the idle watcher syncs after a poll that changed memory; a failure never stops it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from openprogram_memory.config import load_settings
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.sync import sync
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.writer.watcher import watch_once

from .helpers import bare_remote, machine

LATER = datetime.now(timezone.utc) + timedelta(days=1)


def _laptop(tmp_path: Path, **values):
    state = tmp_path / "laptop"
    settings = load_settings(state, {"memory.watcher.idle_seconds": 0, **values})
    MemoryWorkspace.open(settings, create=True)  # `memory init`
    store = SessionStore(settings.sessions_dir)
    store.create_session("chat")
    store.append("chat", "user", "I'm Dana Whitfield. Always answer in metric units.")
    store.append("chat", "assistant", "Noted.")
    return settings


def test_a_poll_that_wrote_memory_pushes_it_and_another_machine_gets_it(tmp_path):
    remote = bare_remote(tmp_path)
    settings = _laptop(tmp_path, **{"memory.sync.auto": True, "memory.sync.remote": remote})
    report = watch_once(settings, now=LATER)
    assert [o.ok for o in report] == [True]
    assert report.sync is not None and report.sync["ok"] and report.sync["pushed"]
    desktop = machine(tmp_path, "desktop", archive=False)
    sync(desktop, remote)
    assert any("metric units" in r.content for r in desktop.records())
    again = watch_once(settings, now=LATER)  # nothing new: no sync at all
    assert again.sync is None


def test_without_auto_or_with_an_unreachable_remote_the_poll_still_writes(tmp_path):
    settings = _laptop(tmp_path, **{"memory.sync.remote": str(tmp_path / "no-such-remote.git")})
    report = watch_once(settings, now=LATER)
    assert report.sync is None and [o.ok for o in report] == [True]  # auto is off by default

    settings = _laptop(tmp_path / "second", **{"memory.sync.auto": True,  # nothing listens there
                                               "memory.sync.remote": "git://127.0.0.1:1/no-such-remote.git"})
    report = watch_once(settings, now=LATER)
    assert [o.ok for o in report] == [True]
    assert report.sync == {"ok": False, "code": "REMOTE_UNAVAILABLE", "retryable": True,
                           "message": report.sync["message"]}
