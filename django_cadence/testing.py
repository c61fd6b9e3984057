"""Helpers for projects that test their own schedules: a clock that moves only when told.

clock = FakeClock(datetime(2026, 3, 8, 6, 0, tzinfo=UTC))
engine = Engine(clock=clock, inline=True)
clock.advance(minutes=30)
engine.tick()
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class FakeClock:
    """A thread-safe clock set and advanced by the test."""

    def __init__(self, start: datetime | None = None) -> None:
        start = start or datetime(2026, 1, 1, tzinfo=UTC)
        if start.tzinfo is None:
            raise ValueError("FakeClock needs an aware datetime")
        self._now = start.astimezone(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def set(self, instant: datetime) -> None:
        if instant.tzinfo is None:
            raise ValueError("FakeClock needs an aware datetime")
        with self._lock:
            self._now = instant.astimezone(UTC)

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        """Move forward by ``delta`` or by ``timedelta(**kwargs)``; return the new now."""
        step = delta if delta is not None else timedelta(**kwargs)
        with self._lock:
            self._now += step
            return self._now
