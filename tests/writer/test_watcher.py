"""The idle watcher acts on the failure contract (architecture §6)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from filelock import FileLock

from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.writer.watcher import watch, watch_once

from .helpers import LATER, T0, chain, marked


def _state(ws):
    return json.loads(ws.layout.state("session-end.json").read_text())


def _ended(ws):
    path = ws.layout.state("events.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [e for e in lines if e["event"] == "memory.ingest_ended"]


def test_an_idle_session_is_written_recorded_and_announced(cfg, ws, store, fake):
    chain(store, "s", ["m1", "m2"])
    outcomes = watch_once(cfg, now=LATER)
    assert [(o.session, o.ok, o.recorded) for o in outcomes] == [("s", True, True)]
    assert marked(store, "s", ws) == {"m1", "m2"}
    assert _state(ws) == {"s": store.updated_at("s")}
    assert _ended(ws) == [{"event": "memory.ingest_ended", "at": LATER.isoformat(timespec="seconds"),
                           "session": "s", "ok": True, "retryable": False, "reason": None}]
    assert watch_once(cfg, now=LATER) == []  # processed at this updated_at: not looked at again


def test_a_session_that_is_not_idle_yet_is_left_alone(cfg, ws, store, fake):
    chain(store, "s", ["m1"])
    assert watch_once(cfg, now=T0 + timedelta(minutes=29)) == []
    assert fake.requests == [] and not ws.layout.state("session-end.json").exists()


def test_new_activity_makes_a_processed_session_due_again(cfg, ws, store, fake):
    chain(store, "s", ["m1"])
    watch_once(cfg, now=LATER)
    chain(store, "s", ["m2"], start=LATER)
    assert watch_once(cfg, now=LATER) == []  # not idle yet
    outcomes = watch_once(cfg, now=LATER + timedelta(hours=2))
    assert [o.session for o in outcomes] == ["s"] and marked(store, "s", ws) == {"m1", "m2"}


def test_a_retryable_failure_is_not_recorded_and_the_next_poll_retries(cfg, ws, store, fake):
    chain(store, "s", ["m1"])
    with FileLock(str(ws.layout.lock_file)):
        outcomes = watch_once(cfg, now=LATER)
    assert [(o.ok, o.retryable, o.reason, o.recorded) for o in outcomes] == [
        (False, True, "CONCURRENT_UPDATE", False)]
    assert not ws.layout.state("session-end.json").exists() and _ended(ws) == []
    outcomes = watch_once(cfg, now=LATER)
    assert [(o.ok, o.recorded) for o in outcomes] == [(True, True)]


def test_a_terminal_failure_is_recorded_and_announced(cfg, ws, store, fake):
    chain(store, "s", ["m1"])
    fake.queue.extend(["invalid", "invalid"])
    outcomes = watch_once(cfg, now=LATER)
    assert [(o.ok, o.retryable, o.reason, o.recorded) for o in outcomes] == [
        (False, False, "COMMIT_REJECTED", True)]
    assert _state(ws) == {"s": store.updated_at("s")}
    assert _ended(ws)[-1] | {"at": None} == {"event": "memory.ingest_ended", "at": None, "session": "s",
                                             "ok": False, "retryable": False, "reason": "COMMIT_REJECTED"}
    assert marked(store, "s", ws) == set()  # recorded as processed, but the turns stay pending
    assert watch_once(cfg, now=LATER) == []  # the same input would fail the same way: not retried


def test_a_session_held_by_an_invalid_hand_edit_is_not_settled_and_is_written_once_fixed(cfg, ws, store, fake):
    chain(store, "s", ["m1"])
    watch_once(cfg, now=LATER)
    notes = ws.root / "topics/notes.md"
    committed = notes.read_text()
    notes.write_text(committed + "\nThe user likes Vim.\n")  # no citation, no ^id: breaks a record rule
    chain(store, "s", ["m2"], parent="m1", start=LATER)
    later = LATER + timedelta(hours=2)
    outcomes = watch_once(cfg, now=later)
    # not retryable (the poll exits 65: only the person can fix it), yet not settled: the turns are not what fails
    assert [(o.ok, o.retryable, o.reason, o.recorded) for o in outcomes] == [
        (False, False, "WRITER_PRECONDITION_FAILED", False)]
    assert "topics/notes.md" in outcomes[0].message and marked(store, "s", ws) == {"m1"}
    assert all(e["ok"] for e in _ended(ws))  # nothing settled as failed
    notes.write_text(committed)
    outcomes = watch_once(cfg, now=later)
    assert [(o.ok, o.recorded) for o in outcomes] == [(True, True)] and marked(store, "s", ws) == {"m1", "m2"}


def test_a_corrupt_state_file_is_reported_and_left_untouched(cfg, ws, store, fake, capsys):
    chain(store, "s", ["m1"])
    path = ws.layout.state("session-end.json")
    path.write_bytes(b'{"s": "2026-08-09T10:00:00.000Z", oops')
    outcomes = watch_once(cfg, now=LATER)
    assert path.read_bytes() == b'{"s": "2026-08-09T10:00:00.000Z", oops'
    assert [(o.ok, o.recorded) for o in outcomes] == [(True, False)]
    assert "session-end.json" in capsys.readouterr().err
    events = [json.loads(line)["event"] for line in ws.layout.state("events.jsonl").read_text().splitlines()]
    assert "memory.watcher_state_corrupt" in events
    path.write_text(json.dumps(["not", "a", "map"]))
    watch_once(cfg, now=LATER)
    assert json.loads(path.read_text()) == ["not", "a", "map"]


def test_a_crash_mid_poll_retries_only_the_unfinished_session(cfg, ws, store, fake):
    chain(store, "a", ["a1"], start=T0)
    chain(store, "b", ["b1"], start=T0.replace(minute=5))
    calls = []

    def crashing_write(ws_, session, **kwargs):
        calls.append(session)
        if session == "b":
            raise KeyboardInterrupt  # the process dies mid-poll
        from openprogram_memory.writer.pipeline import write_report

        return write_report(ws_, session, **kwargs)

    with pytest.raises(KeyboardInterrupt):
        watch_once(cfg, now=LATER, write_fn=crashing_write)
    assert _state(ws) == {"a": store.updated_at("a")}
    calls.clear()
    outcomes = watch_once(cfg, now=LATER)
    assert [o.session for o in outcomes] == ["b"]


def test_an_unexpected_exception_counts_as_terminal(cfg, ws, store, fake):
    chain(store, "s", ["m1"])

    def broken(*args, **kwargs):
        raise ValueError("bug")

    outcomes = watch_once(cfg, now=LATER, write_fn=broken)
    assert [(o.ok, o.retryable, o.reason, o.recorded) for o in outcomes] == [
        (False, False, "WRITER_FAILURE_UNKNOWN", True)]


def test_the_writer_switch_turns_the_watcher_off(_isolated_state, store, fake):
    from .helpers import settings

    chain(store, "s", ["m1"])
    assert watch_once(settings(enabled=False), now=LATER) == []


def test_watch_polls_and_sleeps_between_polls(cfg, ws, store, fake):
    chain(store, "s", ["m1"])
    slept, seen = [], []
    watch(cfg, max_polls=2, sleep=slept.append, on_poll=seen.append)
    assert slept == [float(cfg["memory.watcher.poll_seconds"])]
    assert [[o.session for o in poll] for poll in seen] == [["s"], []]


def test_retryable_write_failures_from_the_pipeline_are_classified(cfg, ws, store, fake):
    chain(store, "s", ["m1"])
    fake.queue.append(MemoryFailure(FailureCode.MODEL_TRANSPORT, "connection reset", retryable=True))
    outcomes = watch_once(cfg, now=LATER)
    assert [(o.retryable, o.recorded) for o in outcomes] == [(True, False)]


@pytest.mark.parametrize("damage", [
    lambda meta: meta.pop("created_at"),
    lambda meta: meta.update(updated_at=12),
    lambda meta: meta.update(metadata=None),
])
def test_one_damaged_session_is_reported_and_the_others_are_still_written(cfg, ws, store, fake, damage):
    chain(store, "good", ["m1", "m2"])
    chain(store, "bad", ["b1"])
    meta_path = store.root / "bad" / "meta.json"
    meta = json.loads(meta_path.read_text())
    damage(meta)
    meta_path.write_text(json.dumps(meta))
    outcomes = watch_once(cfg, now=LATER)
    by_session = {o.session: o for o in outcomes}
    assert by_session["good"].ok and marked(store, "good", ws) == {"m1", "m2"}
    bad = by_session["bad"]
    assert not bad.ok and not bad.retryable and bad.reason == "SESSION_NODES_UNAVAILABLE"
    assert "meta.json" in bad.message
    assert any(e["session"] == "bad" and e["ok"] is False for e in _ended(ws))
