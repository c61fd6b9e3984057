"""Where the engine's *now* comes from.

The engine, the services, the admin and the commands read it here, and every decision takes
``now`` as an argument. On PostgreSQL and MariaDB the database server is the clock, so
workers and web hosts with skewed clocks agree on what is due; on SQLite (one engine, one
host) the local clock is the clock.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
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
    more than the tick's real work. Monotonic time never jumps with the host's wall clock.
    It may run faster than the server's clock, by at most ``MAX_DRIFT``, so the elapsed time
    is counted at that slowest rate (``CARRY_RATE``): a reading is a lower bound of the
    server's time, and so is every estimate carried from it (invariant 6: never early). It
    costs at most a millisecond by the end of a window.

    A reading is stale by up to its round trip, which a busy interpreter can stretch to
    milliseconds. The estimate kept is the tighter of two lower bounds: the new reading, or
    the previous estimate carried forward, so that carrying it from reading to reading never
    adds up drift, and one slow reading does not set every start behind by its delay until
    the next. A previous estimate beyond the new reading's round trip means the server's
    clock was set back: the reading is taken.

    A reading that fails (the server restarts, the connection was cut) leaves the estimate
    carried at that slowest rate, still never ahead of the server, and the next reading waits
    for another window: callers go on rather than die or wait on a connection for every
    *now*. A worker's start timer and try threads never read the server (``estimate``). The
    engine's own ``refresh`` reads at once and raises, so the engine learns of the outage
    from it.
    """

    # How much faster than the server's clock the monotonic clock may run, per second: well
    # above the drift of a crystal (tens of parts per million) and of a clock kept by NTP.
    MAX_DRIFT = 200e-6
    CARRY_RATE = 1 - MAX_DRIFT  # an estimate counts the seconds since its reading so

    def __init__(self, using: str | None = None, resync: float = 5.0) -> None:
        self.using = using or store.alias()
        self.resync = resync
        self._synced: tuple[float, datetime] | None = None  # (monotonic, server instant)
        self._syncing = threading.Lock()  # held while a thread reads the server's clock
        self._failed_at: float | None = None  # monotonic; the last reading that failed

    def now(self) -> datetime:
        synced = self._synced
        if synced is None:
            return self.sync()
        at = time.monotonic()
        elapsed = at - synced[0]
        # While another thread reads the server's clock, the others carry the estimate
        # (for one more window at most) rather than queue a round trip each behind it: a
        # burst of tries would otherwise all read it at once.
        syncing = elapsed < 2 * self.resync and self._syncing.locked()
        if elapsed >= 0 and (elapsed < self.resync or syncing):
            return self._carry(synced, at)
        failed = self._failed_at
        if failed is None or time.monotonic() - failed >= self.resync:
            with contextlib.suppress(DatabaseError):
                return self.sync()
        return self._carry(self._synced or synced, time.monotonic())

    def estimate(self) -> datetime:
        """*now* without a round trip: the last reading carried forward, as ``now`` would
        carry it, but never a reading of the server (but the first, when there is none yet).

        The engine's thread keeps the reading fresh (``refresh``, each tick); the start timer
        and the try threads read this, so a server that hangs (an unreachable host, a cut
        network) holds none of them on an instant: only the engine's thread waits on it.
        Past the window the estimate is carried on at the same slowest rate, never ahead of
        the server (invariant 6).
        """
        synced = self._synced
        if synced is None:
            return self.now()
        return self._carry(synced, time.monotonic())

    @classmethod
    def _carry(cls, reading: tuple[float, datetime], until: float) -> datetime:
        """``reading`` carried to the monotonic instant ``until`` at the slowest rate: a lower
        bound of the server's time then, however long ago it was read (or how recently)."""
        return reading[1] + timedelta(seconds=(until - reading[0]) * cls.CARRY_RATE)

    def refresh(self, within: float) -> None:
        """Read the server's clock now if the reading would expire within ``within`` seconds:
        the engine's thread calls it each tick, so the start timer and the try threads do
        not pay the round trip on an instant."""
        synced = self._synced
        if synced is None or time.monotonic() - synced[0] >= self.resync - within:
            self.sync()

    def sync(self) -> datetime:
        """Read the server's clock now (one query) and keep the tighter estimate."""
        with self._syncing:
            try:
                value = self._sync()
            except DatabaseError:
                self._failed_at = time.monotonic()
                raise
            self._failed_at = None
            return value

    def _sync(self) -> datetime:
        sent = time.monotonic()
        value = self.read()
        received = time.monotonic()
        previous = self._synced
        if previous is not None:
            carried = self._carry(previous, received)
            if value < carried <= value + timedelta(seconds=received - sent):
                value = carried
        self._synced = (received, value)
        return value

    def read(self) -> datetime:
        """One reading of the server's clock; the local clock where the server has none."""
        return store.of(self.using).read_now()


def estimate_of(clock: Clock) -> Callable[[], datetime]:
    """How a thread other than the engine's reads ``clock``: never waiting on the server
    (``DatabaseClock.estimate``); any other clock as it is."""
    return clock.estimate if isinstance(clock, DatabaseClock) else clock.now


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
