"""When an organize is due (architecture §5 step 4)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from openprogram_memory.organizer.due import organize_due
from openprogram_memory.workspace.state import RuntimeState

NOW = datetime(2026, 8, 20, 3, 0, tzinfo=timezone.utc)


def state(**values) -> RuntimeState:
    runtime = RuntimeState()
    for key, value in values.items():
        setattr(runtime, key, value)
    return runtime


def test_nothing_written_nothing_due():
    assert not organize_due(state(), NOW)
    assert not organize_due(state(last_global_at="2026-01-01T00:00:00+00:00"), NOW)


def test_batches_or_tokens_since_last_organize():
    assert not organize_due(state(batches_since_organize=4, last_global_at=NOW.isoformat()), NOW)
    assert organize_due(state(batches_since_organize=5, last_global_at=NOW.isoformat()), NOW)
    assert not organize_due(state(tokens_since_organize=39_999, last_global_at=NOW.isoformat()), NOW)
    assert organize_due(state(tokens_since_organize=40_000, last_global_at=NOW.isoformat()), NOW)


def test_a_write_and_a_full_day():
    recent = (NOW - timedelta(hours=23)).isoformat()
    old = (NOW - timedelta(days=1)).isoformat()
    assert organize_due(state(writes_since_global=1), NOW)  # never ran
    assert not organize_due(state(writes_since_global=1, last_global_at=recent), NOW)
    assert organize_due(state(writes_since_global=1, last_global_at=old), NOW)
    assert not organize_due(state(writes_since_global=0, last_global_at=old), NOW)


def test_last_write_after_last_global_counts_as_a_write():
    old = "2026-08-18T03:00:00Z"
    assert organize_due(state(last_global_at=old, last_write_at="2026-08-19T10:00:00Z"), NOW)
    assert not organize_due(state(last_global_at=old, last_write_at="2026-08-17T10:00:00Z"), NOW)
    assert organize_due(state(last_global_at="2026-08-18T03:00:00", last_write_at="2026-08-19T10:00:00"),
                        NOW.replace(tzinfo=None))
