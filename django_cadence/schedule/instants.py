"""Instants: aware datetimes in UTC, the only kind the schedule math takes."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["EARLIEST", "LATEST", "RANGE", "as_utc", "in_range"]

# A schedule's instants keep a year from either end of ``datetime``: each can be shown in every
# time zone and have a microsecond or a grace added or taken off, and cron's scan ends in 9998.
EARLIEST = datetime(2, 1, 1, tzinfo=UTC)
LATEST = datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
RANGE = "the years 2 to 9998"  # in UTC


def as_utc(value: datetime, name: str) -> datetime:
    """Refuse naive datetimes (no guessing a zone, ever) and return the instant in UTC."""
    if type(value) is datetime and value.tzinfo is UTC:
        return value  # what the database and the clock give: nothing to check or convert
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime, not {type(value).__name__}.")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime, got naive {value!r}.")
    return value.astimezone(UTC)


def in_range(value: datetime) -> bool:
    """Whether ``value`` falls within :data:`RANGE`; a naive one is read as UTC (the year of
    margin covers any zone's offset)."""
    aware = value if value.utcoffset() is not None else value.replace(tzinfo=UTC)
    return EARLIEST <= aware <= LATEST
