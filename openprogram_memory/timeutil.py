"""Time, in one place: the forms the project writes and the one way it reads them back.

- :func:`now_iso` / :func:`format_time`: the session store's form,
  ``2025-10-10T21:54:58.634Z`` (UTC, milliseconds) — comparing two of them as
  strings is comparing them as instants, which keeps "newest" cheap;
- :func:`utc_seconds`: ``2025-10-10T21:54:58+00:00``, the form of the
  memory's runtime state, events and ledgers;
- :func:`parse_instant`: any ISO 8601 text back to an aware datetime (None
  if unreadable); :func:`normalize_time`: a caller's time (text, datetime
  or epoch) to the store's form, or ``INVALID_ARGUMENT``.
"""

from __future__ import annotations

from datetime import datetime, timezone

from .failures import FailureCode, MemoryFailure


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


def utc_seconds(now: datetime | None = None) -> str:
    """``now`` (default: the current time) as a UTC ISO 8601 string, seconds precision."""
    moment = now or datetime.now(timezone.utc)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def parse_instant(value: str | None) -> datetime | None:
    """An ISO 8601 timestamp as an aware datetime (naive → UTC); None if unreadable."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
