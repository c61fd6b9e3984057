"""One engine's part in recovering lost workers' attempts, and in proving its own liveness.

The engine holds its session lock from start to stop (where the database has session
locks), probes for lost workers on every tick that is due for it (every half second while
another worker runs attempts, else every second), and stops claiming while its own lock
session is gone, until the tries that ran under it have ended and a new lock is held.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime, timedelta

from django.db import DatabaseError

from .. import store
from ..conf import cadence_settings
from . import liveness, recovery

logger = logging.getLogger("django_cadence.engine")

# How often the recovery read runs; every half second while another worker with a session
# lock runs attempts, so that its death is seen within a second.
RECOVERY_PROBE = timedelta(seconds=1)
LIVENESS_PROBE = timedelta(seconds=0.5)


class LostWorkerWatch:
    def __init__(self, worker_id: str, using: str = "default") -> None:
        self.worker_id = worker_id
        self.using = using
        self.session_lock: liveness.SessionLock | None = None  # None: leases alone
        self.next_probe: datetime | None = None
        self.others_running = False  # another worker with a session lock runs attempts
        self._lock_lost = False  # the server cut the lock's session: claim nothing for now

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
            self.session_lock = lock if lock.acquire() else None

    def stop(self) -> None:
        if self.session_lock:
            self.session_lock.release()

    def wake_at(self) -> datetime | None:
        """When the engine must tick again for the next probe; None: no hurry."""
        return self.next_probe if self.others_running else None

    def probe(self, now: datetime, *, has_tries: bool) -> None:
        """Recover the running attempts of lost workers: a session lock the server no longer
        sees, or a lease that ran out. One read when nothing runs anywhere."""
        if self.next_probe and now < self.next_probe:
            return
        running = recovery.running_by_worker()
        others = [worker for worker in running if worker != self.worker_id]
        self.others_running = bool(others) and self.session_lock is not None
        self.next_probe = now + (LIVENESS_PROBE if self.others_running else RECOVERY_PROBE)
        lost: set[str] = set()
        if self.session_lock is not None:
            lost = liveness.lost_workers(others, self.using) if others else set()
            if self.worker_id in running or has_tries:
                self.check_own_lock()  # its tries may have been recovered already
        cutoff = now - cadence_settings.RECOVERY_GRACE
        if lost or any(lease and lease < cutoff for lease in running.values()):
            recovery.recover(now, lost_workers=lost)

    def check_own_lock(self) -> None:
        """The server may have cut this worker's lock session while the worker lives on: its
        tries are then recovered by others and their writes here refused (fenced). Say so,
        and claim nothing until those tries have ended and a new lock is held, so that its
        next tries are not taken for a dead worker's."""
        if self.session_lock is None or self._lock_lost:
            return
        if liveness.still_held(self.worker_id, self.using):
            return
        logger.warning(
            "session lock lost worker=%s: its running tries may be recovered by other "
            "workers and their results refused; taking a new lock once they end",
            self.worker_id,
        )
        self._lock_lost = True

    def may_claim(self, *, has_tries: bool) -> bool:
        """True unless this worker's lock was lost and is not yet taken again (it is, once
        the tries that ran under the lost one have ended)."""
        if not self._lock_lost:
            return True
        if has_tries or self.session_lock is None or not self.session_lock.acquire():
            return False
        self._lock_lost = False
        logger.info("session lock taken again worker=%s", self.worker_id)
        return True
