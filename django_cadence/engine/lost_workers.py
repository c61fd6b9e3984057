"""One engine's part in recovering lost workers' attempts, and in proving its own liveness.

Dead, not merely disconnected (docs/design.md, "Lost workers"): a worker whose lock session
ended may live on (its connection was cut, the server restarted), so a lock seen gone once
proves nothing. This engine recovers another worker's running attempts only when it has seen
that worker's lock gone for ``LIVENESS_WINDOW`` (two probes at least) while it was itself
connected; after its own reconnect, or the loss of its own lock (a server restart ends every
session), it trusts no such sighting, nor any expired lease, for ``RESTART_WINDOW``. A live
worker that lost its lock takes it again at its next probe and re-asserts the tries it holds
(the engine renews their leases by claim token), well within those windows. Its tries start
only on a recent sighting of its own lock held (:mod:`.own_lock`), which its probes keep.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from django.db import DatabaseError

from .. import store
from ..conf import cadence_settings
from . import liveness, recovery
from .own_lock import OwnLock
from .tuning import (
    LIVENESS_PROBE,
    LIVENESS_WINDOW,
    RECONNECT_BACKOFF_HOLDING,
    RECONNECT_BACKOFF_IDLE,
    RECOVERY_PROBE,
    RESTART_WINDOW,
    SIGHTING_SLACK,
    START_CONFIRMED,
)

logger = logging.getLogger("django_cadence.engine")


class LostWorkerWatch:
    def __init__(
        self,
        worker_id: str,
        using: str | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.worker_id = worker_id
        self.using = using
        # Read after a look that saw a lock gone: a slow tick's sighting counts from no
        # earlier than ``SIGHTING_SLACK`` before it (None: the probe's ``now``, as the fake
        # clock's tests pass it).
        self._now = now
        self.session_lock: liveness.SessionLock | None = None  # None: leases alone
        self.own = OwnLock(worker_id, using)  # when its own lock was last seen held
        self.next_probe: datetime | None = None
        self.watching = False  # probing every half second (see ``RECOVERY_PROBE``)
        self.gone_since: dict[str, datetime] = {}  # other workers seen without their lock
        self.trusted_from: datetime | None = None  # no sighting counts before it
        self._reconnected = False  # the engine's connection broke: distrust at next probe
        self._lock_lost = False  # this worker's own lock is gone and not yet taken again
        self._verify = False  # look at its own lock before it claims (after a reconnect)
        self._unasserted: float | None = None  # held again since then, tries not re-asserted

    def start(self, now: datetime) -> None:
        """Before the first claim: hold this worker's session lock where the database has
        them; on SQLite, where this engine alone runs attempts now, recover every running
        one (its engine is dead: the single-engine lock proves it)."""
        if store.of(self.using).one_engine_per_file:
            with contextlib.suppress(DatabaseError):
                while recovery.recover(now, everything=True):
                    pass
            return
        if liveness.enabled(self.using):
            lock = liveness.SessionLock(self.worker_id, self.using)
            sent_at = time.monotonic()
            self.session_lock = lock if lock.acquire() else None
            if self.session_lock is not None:
                self.own.held_since(sent_at)

    def stop(self) -> None:
        self.own.released()
        if self.session_lock:
            self.session_lock.release()

    def disconnected(self) -> None:
        """The engine lost its connection (a server restart, a cut): see ``RESTART_WINDOW``.
        Its own lock may be gone too: it looks before it claims again."""
        self._reconnected = True
        self.check_soon()

    def check_soon(self) -> None:
        """Probe (its own lock too) at the next tick, and claim nothing before."""
        self.next_probe = None
        self._verify = self.session_lock is not None

    def started_tries(self, now: datetime, ahead: float) -> None:
        """Tries were claimed: from now on, watch this worker's own lock every half second
        (a lock cut while it was idle is found before the others take it for dead). Tries
        claimed up to ``ahead`` seconds before their instant start on a sighting of the lock
        no older than ``START_CONFIRMED`` (:mod:`.own_lock`): look now if the last is too
        old for that, so their threads need not look on the instant (and at most every
        quarter second while a longer horizon makes them look anyway)."""
        if self.session_lock is None:
            return
        fresh = max(START_CONFIRMED - ahead, LIVENESS_PROBE.total_seconds() / 2)
        if not self.own.may_start(fresh=fresh):
            self.check_soon()
        if not self.watching:
            self.watching = True
            soon = now + LIVENESS_PROBE
            self.next_probe = min(self.next_probe, soon) if self.next_probe else soon

    def wake_at(self) -> datetime | None:
        """When the engine must tick again for the next probe; None: no hurry."""
        return self.next_probe if self.watching else None

    def backoff_cap(self, *, has_tries: bool) -> float:
        """The longest reconnect backoff: short while tries are held, so that the worker
        is back, locked and re-asserted within the other workers' ``RESTART_WINDOW``."""
        return RECONNECT_BACKOFF_HOLDING if has_tries else RECONNECT_BACKOFF_IDLE

    def may_claim(self) -> bool:
        """False while this worker's own lock is gone and not yet taken again, or not yet
        looked at since a reconnect."""
        return not (self._lock_lost or self._verify)

    def probe(self, now: datetime, *, has_tries: bool) -> bool:
        """Recover the running attempts of lost workers (a lock gone for the liveness window,
        or a lease that ran out), and watch this worker's own lock. True when the engine must
        re-assert its tries now (it has just taken its lock again, or a re-assertion is
        owed), and then call ``reasserted``."""
        if self.next_probe and now < self.next_probe:
            return False
        if self._reconnected:
            self._distrust(now)
        running = recovery.running_by_worker()
        others = [worker for worker in running if worker != self.worker_id]
        mine = has_tries or self.worker_id in running or self._lock_lost or self._verify
        locked = self.session_lock is not None
        self.watching = locked and bool(others or mine)
        self.next_probe = now + (LIVENESS_PROBE if self.watching else RECOVERY_PROBE)
        reassert = False
        gone: set[str] = set()
        if self.watching:
            sent_at = time.monotonic()
            gone, held = liveness.look(others, self.worker_id, self.using)
            self._verify = False
            if not held or self._lock_lost:
                self.own.seen_gone()
                reassert = self._take_lock_again(now)
            elif self._unasserted is not None or self.own.gone:
                # Held again (a re-assertion failed, or a try thread saw it gone): re-assert.
                if self._unasserted is None:  # else: held since the earlier re-take
                    self._unasserted = sent_at
                reassert = True
            else:
                self.own.seen_held(sent_at)
        seen = now
        if self._now is not None and gone:
            seen = max(now, self._now() - timedelta(seconds=SIGHTING_SLACK))
        lost = self._lost(gone, now, seen)
        trusted = self.trusted_from is None or now >= self.trusted_from
        cutoff = now - cadence_settings.RECOVERY_GRACE
        expired = trusted and any(lease and lease < cutoff for lease in running.values())
        if lost or expired:
            recovery.recover(now, lost_workers=lost, confirm=self._still_lost)
        return reassert

    def reasserted(self) -> None:
        """The engine re-asserted its tries after taking its lock again: they may start."""
        if self._unasserted is not None:
            self.own.held_since(self._unasserted)
            self._unasserted = None

    def _lost(self, gone: set[str], now: datetime, seen: datetime) -> set[str]:
        """The workers seen without their lock for the liveness window, by trusted probes.
        A first sighting counts from ``seen``: the probe's ``now``, or ``SIGHTING_SLACK``
        before the look returned if that is later. A window counted from long before the
        look could end before the lock had been gone that long, and a worker's tries start
        on a sighting of its own lock (:mod:`.own_lock`)."""
        if self.trusted_from is not None and now < self.trusted_from:
            self.gone_since.clear()
            return set()
        self.gone_since = {w: self.gone_since.get(w, seen) for w in gone}
        return {w for w, since in self.gone_since.items() if now - since >= LIVENESS_WINDOW}

    def _still_lost(self, workers: set[str]) -> set[str]:
        return liveness.lost_workers(workers, self.using)

    def _distrust(self, now: datetime) -> None:
        self._reconnected = False
        self.gone_since.clear()
        self.trusted_from = now + RESTART_WINDOW

    def _take_lock_again(self, now: datetime) -> bool:
        """This worker's lock session ended while it lives on: take a new one. Its own end
        may have been a server restart, which ended every other worker's session too."""
        if not self._lock_lost:
            logger.warning(
                "session lock lost worker=%s: taking it again and re-asserting its tries",
                self.worker_id,
            )
            self._lock_lost = True
            self._distrust(now)
        sent_at = time.monotonic()
        if self.session_lock is None or not self.session_lock.acquire():
            return False
        self._lock_lost = False
        self._unasserted = sent_at
        logger.info("session lock taken again worker=%s", self.worker_id)
        return True
