"""The watcher runs the organizer once a day at ``memory.organize.at`` local time (clock injected)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

import openprogram_memory.organizer as organizer
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.organizer.due import last_slot
from openprogram_memory.workspace.state import RuntimeState
from openprogram_memory.writer.watcher import watch_once

from .helpers import LATER, chain

PLUS2 = timezone(timedelta(hours=2))  # the zone memory.organize.at ("03:00") is read in
NIGHT = datetime(2026, 8, 10, 1, 5, tzinfo=timezone.utc)  # 03:05 at +02:00


def _last_global(ws):
    return RuntimeState.load(ws.layout).last_global_at


def test_last_slot_is_the_latest_local_time_at_or_before_now():
    assert last_slot(NIGHT, "03:00", PLUS2) == datetime(2026, 8, 10, 3, 0, tzinfo=PLUS2)
    assert last_slot(NIGHT - timedelta(minutes=10), "03:00", PLUS2) == datetime(2026, 8, 9, 3, 0, tzinfo=PLUS2)
    assert last_slot(NIGHT, "03:00", timezone.utc) == datetime(2026, 8, 9, 3, 0, tzinfo=timezone.utc)


def test_the_watcher_organizes_once_a_night_after_a_write(cfg, ws, store, fake):
    chain(store, "s1", ["m1", "m2"])
    first = watch_once(cfg, now=LATER, tz=PLUS2)
    assert [o.ok for o in first] == [True]
    assert first.organize is None  # the write's own organize (the first ever) already ran
    assert _last_global(ws) == LATER.isoformat(timespec="seconds")

    chain(store, "s2", ["n1"], start=LATER)
    second = watch_once(cfg, now=LATER + timedelta(hours=2), tz=PLUS2)
    assert [o.session for o in second] == ["s2"] and second.organize is None
    assert RuntimeState.load(ws.layout).writes_since_global == 1

    # 02:55 local: not yet; 03:05 local: the nightly run
    assert watch_once(cfg, now=NIGHT - timedelta(minutes=10), tz=PLUS2).organize is None
    night = watch_once(cfg, now=NIGHT, tz=PLUS2)
    assert night == [] and night.organize is not None and night.organize["ok"] is True
    assert _last_global(ws) == NIGHT.isoformat(timespec="seconds")
    assert RuntimeState.load(ws.layout).writes_since_global == 0

    # once per night, and only when something was written since
    assert watch_once(cfg, now=NIGHT + timedelta(minutes=30), tz=PLUS2).organize is None
    assert watch_once(cfg, now=NIGHT + timedelta(days=1), tz=PLUS2).organize is None
    history = [json.loads(line) for line in ws.layout.state("agent-history.jsonl").read_text().splitlines()]
    assert [h["stage"] for h in history].count("organize") == 2  # after the first write, and the night


def test_the_time_is_read_in_the_local_zone(cfg, ws, store, fake):
    chain(store, "s1", ["m1"])
    watch_once(cfg, now=LATER, tz=PLUS2)
    chain(store, "s2", ["n1"], start=LATER)
    watch_once(cfg, now=LATER + timedelta(hours=2), tz=PLUS2)
    # 01:05 UTC is 03:05 at +02:00 but not yet 03:00 in UTC
    assert watch_once(cfg, now=NIGHT, tz=timezone.utc).organize is None
    assert watch_once(cfg, now=NIGHT + timedelta(hours=2), tz=timezone.utc).organize["ok"] is True


def test_a_failed_nightly_organize_is_reported_not_raised(cfg, ws, store, fake, monkeypatch):
    chain(store, "s1", ["m1"])
    watch_once(cfg, now=LATER, tz=PLUS2)
    chain(store, "s2", ["n1"], start=LATER)
    watch_once(cfg, now=LATER + timedelta(hours=2), tz=PLUS2)

    def broken(ws_, model=None, **kwargs):
        raise MemoryFailure(FailureCode.MODEL_RATE_LIMIT, "slow down", retryable=True)

    monkeypatch.setattr(organizer, "reorganize", broken)
    night = watch_once(cfg, now=NIGHT, tz=PLUS2)
    assert night.organize == {"ok": False, "code": "MODEL_RATE_LIMIT", "message": "slow down"}
    events = [json.loads(line) for line in ws.layout.state("events.jsonl").read_text().splitlines()]
    assert events[-1]["event"] == "memory.organize_failed"
    monkeypatch.undo()
    # still due: the next poll tries again
    assert watch_once(cfg, now=NIGHT + timedelta(minutes=5), tz=PLUS2).organize["ok"] is True


@pytest.mark.parametrize("at", ["03:00", "23:59"])
def test_the_setting_is_validated(at, tmp_path):
    from openprogram_memory.config import load_settings

    assert load_settings(tmp_path, environ={"OPENPROGRAM_MEMORY_ORGANIZE_AT": at})["memory.organize.at"] == at
    bad = load_settings(tmp_path, environ={"OPENPROGRAM_MEMORY_ORGANIZE_AT": "3am"})
    assert bad["memory.organize.at"] == "03:00" and bad.warnings
