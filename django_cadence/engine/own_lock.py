"""This worker's last sighting of its own session lock held, and whether a try may start on it.

Another worker recovers this one's tries once it has seen this worker's lock gone for the
liveness window (:mod:`.lost_workers`), and the lock can only have gone after it was last
seen held. So a try started within ``START_CONFIRMED`` of that sighting cannot have been
recovered yet, however long the process was paused before (docs/design.md, "Lost
workers"). The engine's probes keep the sighting fresh while it holds tries; a thread that
finds it older asks the server itself, one statement for every thread starting a try then.
"""

from __future__ import annotations

import logging
import threading
import time

from django.db import DatabaseError

from .. import store
from ..executors.log_text import log_value
from . import liveness
from .tuning import START_CONFIRMED

logger = logging.getLogger("django_cadence.engine")


class OwnLock:
    """When this worker last saw its session lock held (monotonic seconds), shared by the
    engine's thread, which looks at the lock in its probes, and the try threads."""

    def __init__(self, worker_id: str, using: str | None = None) -> None:
        self.worker_id = worker_id
        self.using = using
        self.watched = False  # False: no session lock (leases alone), every try may start
        self._seen_at = float("-inf")
        self._gone = False  # seen gone, not yet taken again and re-asserted
        self._generation = 0  # counts the sightings of the lock gone
        self._state = threading.Lock()
        self._looking = threading.Lock()  # one look at a time; the others wait for it

    def held_since(self, sent_at: float) -> None:
        """The lock was taken, or re-asserted with the tries, by a statement sent at
        ``sent_at``: tries start on this sighting."""
        with self._state:
            self.watched = True
            self._gone = False
            self._seen_at = sent_at

    def seen_held(self, sent_at: float) -> None:
        """A look sent at ``sent_at`` saw the lock held (ignored once it was seen gone)."""
        with self._state:
            if not self._gone:
                self._seen_at = max(self._seen_at, sent_at)

    def seen_gone(self) -> None:
        """The lock is gone: no try starts until it is held again and re-asserted."""
        with self._state:
            self._gone = True
            self._generation += 1

    def released(self) -> None:
        with self._state:
            self.watched = False

    @property
    def gone(self) -> bool:
        return self._gone

    def age(self) -> float:
        """Seconds since the lock was last seen held."""
        return time.monotonic() - self._seen_at

    def may_start(self, fresh: float = START_CONFIRMED) -> bool:
        """True when the lock was seen held within ``fresh`` seconds, looking at it now if it
        was not; False when it is gone, or the server cannot say."""
        if not self.watched:
            return True
        with self._looking:
            with self._state:
                if self._gone:
                    return False
                if time.monotonic() - self._seen_at <= fresh:
                    return True
                generation = self._generation
            sent_at = time.monotonic()
            try:
                held = liveness.still_held(self.worker_id, self.using)
            except DatabaseError as exc:
                logger.warning("session lock unknown worker=%s: %s", self.worker_id, log_value(exc))
                store.of(self.using).connection.close_if_unusable_or_obsolete()
                return False
            with self._state:
                if generation != self._generation:
                    return False  # seen gone meanwhile: the look may have seen a new lock
                if not held:
                    self._gone = True
                    self._generation += 1
                    return False
                self._seen_at = max(self._seen_at, sent_at)
                return True
