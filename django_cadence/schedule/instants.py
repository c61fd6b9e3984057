"""Instants: aware datetimes in UTC, the only kind the schedule math takes."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["as_utc"]


def as_utc(value: datetime, name: str) -> datetime:
    """Refuse naive datetimes (no guessing a zone, ever) and return the instant in UTC."""
    if type(value) is datetime and value.tzinfo is UTC:
        return value  # what the database and the clock give: nothing to check or convert
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime, not {type(value).__name__}.")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime, got naive {value!r}.")
    return value.astimezone(UTC)
