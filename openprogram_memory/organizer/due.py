"""When an organize is due (architecture §5 step 4, and the nightly ``memory.organize.at``).

Two triggers after a write: enough new material since the last
organize (:data:`BATCHES_DUE` batches or :data:`TOKENS_DUE` tokens), or a
write since the last global organize once a full day has passed since it
(or none ever ran). The writer pipeline counts batches, tokens and writes
in ``runtime.json``; :func:`openprogram_memory.organizer.reorganize` resets
them and records ``last_global_at``.

The idle watcher adds the nightly run: once the local time
``memory.organize.at`` (``"03:00"``) has passed since the last organize,
and memory was written since then, :func:`scheduled_organize_due` says so.
Every clock is passed in, so tests never sleep.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo

from ..workspace.state import RuntimeState
from ..timeutil import parse_instant

BATCHES_DUE = 5
TOKENS_DUE = 40_000
GLOBAL_INTERVAL = timedelta(days=1)


def organize_due(runtime_state: RuntimeState, now: datetime) -> bool:
    """Whether the writer should run the organizer now."""
    if runtime_state.batches_since_organize >= BATCHES_DUE or runtime_state.tokens_since_organize >= TOKENS_DUE:
        return True
    last_global = parse_instant(runtime_state.last_global_at)
    last_write = parse_instant(runtime_state.last_write_at)
    wrote = runtime_state.writes_since_global > 0 or (
        last_write is not None and (last_global is None or last_write > last_global))
    if not wrote:
        return False
    if last_global is None:
        return True
    now = now if now.tzinfo else now.replace(tzinfo=timezone.utc)
    return now - last_global >= GLOBAL_INTERVAL


def last_slot(now: datetime, at: str, tz: tzinfo | None = None) -> datetime:
    """The latest local ``HH:MM`` (``at``, in ``tz``; None → the system's zone) at or before ``now``."""
    now = now if now.tzinfo else now.replace(tzinfo=timezone.utc)
    local = now.astimezone(tz)
    hour, minute = (int(part) for part in at.split(":"))
    slot = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return slot if slot <= local else slot - timedelta(days=1)


def scheduled_organize_due(runtime_state: RuntimeState, now: datetime, at: str, tz: tzinfo | None = None) -> bool:
    """Whether the nightly organize is due: ``at`` passed since the last organize, and memory was written since."""
    last_global = parse_instant(runtime_state.last_global_at)
    if last_global is not None and last_global >= last_slot(now, at, tz):
        return False
    wrote = (runtime_state.writes_since_global > 0 or runtime_state.batches_since_organize > 0
             or (last_global is None and runtime_state.last_write_at is not None))
    return wrote
