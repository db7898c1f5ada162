"""Session timestamps: one UTC ISO-8601 form so strings sort as times.

Every ``created_at``/``updated_at`` the store writes looks like
``2025-10-10T21:54:58.634Z`` (UTC, milliseconds). Comparing two of them as
strings is comparing them as instants, which keeps "newest" cheap.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ..failures import FailureCode, MemoryFailure


def format_time(moment: datetime) -> str:
    """``moment`` as the store's UTC millisecond ISO form (naive = UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    text = moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def now_iso() -> str:
    """The current time in the store's form."""
    return format_time(datetime.now(timezone.utc))


def normalize_time(value: str | int | float | datetime) -> str:
    """Parse an ISO-8601 string, a datetime or epoch seconds/milliseconds.

    Raises ``INVALID_ARGUMENT`` naming the value when it is not a time.
    """
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value  # epoch ms vs s
        return format_time(datetime.fromtimestamp(seconds, tz=timezone.utc))
    if isinstance(value, str):
        try:
            return format_time(datetime.fromisoformat(value.strip()))
        except ValueError:
            pass
    raise MemoryFailure(
        FailureCode.INVALID_ARGUMENT,
        f"not an ISO-8601 time: {value!r} (expected e.g. 2025-01-31T09:30:00Z)",
    )
