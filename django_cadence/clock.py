"""Where the engine's *now* comes from.

Only the engine reads a clock; every decision takes ``now`` as an argument. On PostgreSQL and
MariaDB the database server is the clock, so workers on hosts with skewed clocks agree on
what is due; on SQLite (one engine, one host) the local clock is the clock.
"""

from __future__ import annotations

import contextlib
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

from django.db import DatabaseError

from . import store

logger = logging.getLogger("django_cadence.engine")


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, aware, in UTC."""
        ...


class SystemClock:
    """The local clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class DatabaseClock:
    """The database server's clock, read once every ``resync`` seconds.

    Between readings the local monotonic clock measures the time elapsed since the last one:
    a busy engine asks for *now* several times a tick, and a round trip for each would cost
    more than the tick's real work. Monotonic time never jumps with the host's wall clock,
    and its drift over a few seconds is microseconds, so hosts still agree on *now* through
    the database. The elapsed time is counted from the end of the reading's round trip,
    so an estimate is never ahead of the server (invariant 6: never early).
    """

    def __init__(self, using: str | None = None, resync: float = 5.0) -> None:
        self.using = using or store.alias()
        self.resync = resync
        self._synced: tuple[float, datetime] | None = None  # (monotonic, server instant)

    def now(self) -> datetime:
        synced = self._synced
        if synced is None:
            return self.sync()
        elapsed = time.monotonic() - synced[0]
        if not 0 <= elapsed < self.resync:
            return self.sync()
        return synced[1] + timedelta(seconds=elapsed)

    def sync(self) -> datetime:
        """Read the server's clock now (one query) and measure from this reading."""
        value = self.read()
        self._synced = (time.monotonic(), value)
        return value

    def read(self) -> datetime:
        """One reading of the server's clock; the local clock where the server has none."""
        return store.of(self.using).read_now()


def default_clock(using: str | None = None) -> Clock:
    """The database clock where the server has one worth trusting over ours, else the local;
    of Cadence's database (``store.alias()``) unless ``using`` names it."""
    using = using or store.alias()
    if store.of(using).has_server_clock:
        return DatabaseClock(using)
    return SystemClock()


def log_clock_skew(clock: Clock, worker_id: str) -> None:
    """Say how far this host's clock is from the engine clock (the database server's).

    Decisions use the engine clock only, so skew does no harm; it is logged because a large
    one usually means a host without time synchronisation.
    """
    if not isinstance(clock, DatabaseClock):
        return
    with contextlib.suppress(DatabaseError):
        before = datetime.now(UTC)
        engine_now = clock.now()
        after = datetime.now(UTC)
        skew = (before + (after - before) / 2 - engine_now).total_seconds()
        log = logger.warning if abs(skew) >= 1 else logger.info
        log("clock skew local_minus_database=%.3fs worker=%s", skew, worker_id)
