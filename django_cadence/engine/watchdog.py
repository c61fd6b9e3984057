"""The watchdog: a try stops once its worker can no longer prove that its claim is its own.

A claim is proven by the last statement that wrote its lease and was answered (the claim, a
renewal, a re-assertion): the server counted that lease from no earlier than the moment the
worker read the engine clock for it, so no other worker recovers the try before then plus
``CADENCE_LEASE`` plus ``CADENCE_RECOVERY_GRACE``. The watchdog counts from that moment on
this worker's monotonic clock and waits on nothing else: not the database, whose socket may
hold the engine's thread for as long as a network cut lasts (docs/design.md, "A worker cut
off from its database").

At a try's deadline (:func:`claim_deadline`) it stops the try through ``HeldTries.expire``:
the cancel event is set (a child process is killed, a thread's job sees
``context.cancelled``), ``attempt lost`` is logged once, and the try neither starts nor has
its result recorded. A thread still in its job once half the gap between its deadline and
the earliest recovery has passed (:func:`exit_at`) cannot be stopped from outside: the worker
exits with status 4, as a client whose ZooKeeper session expired does, so that no execution
outlives its claim. The same holds for a try whose claim another worker took over.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..clock import DatabaseClock
from ..conf import cadence_settings
from ..executors.log_text import log_value
from ..store import bounds
from .tuning import LEASE_MARGIN, WATCHDOG_IDLE

if TYPE_CHECKING:
    from .connection import EngineConnection
    from .held import Held
    from .tries import HeldTries

logger = logging.getLogger("django_cadence.engine")

# run_cadence's exit status when a try it could not stop outlived its claim.
CLAIM_LOST_EXIT = 4


def claim_deadline(confirmed_at: float, lease: float) -> float:
    """The monotonic instant until which a claim confirmed at ``confirmed_at`` is surely this
    worker's: the lease, less what the monotonic and the server's clocks may differ by over
    it (``DatabaseClock.MAX_DRIFT``, both ways) and ``LEASE_MARGIN``."""
    return confirmed_at + lease * (1 - 2 * DatabaseClock.MAX_DRIFT) - LEASE_MARGIN


def stop_window(grace: float) -> float:
    """How long a try's job has to heed its cancel event: half the gap between the deadline
    and the earliest moment another worker may recover the try."""
    return (LEASE_MARGIN + grace) / 2


def exit_at(told_at: float, grace: float) -> float:
    """When a worker whose try was told to stop at ``told_at`` exits if it still runs."""
    return told_at + stop_window(grace)


def nudge_at(told_at: float, grace: float) -> float:
    """When the database connection of a stopped try that still runs is closed under it."""
    return told_at + stop_window(grace) / 2


def exit_now(why: str) -> None:
    """Leave at once: no try of this process may outlive its claim. Child processes of
    process-isolated tries go first (``os._exit`` skips the handlers that would end them)."""
    logger.critical(why)
    for child in multiprocessing.active_children():
        child.kill()
    logging.shutdown()
    os._exit(CLAIM_LOST_EXIT)


class ClaimWatchdog:
    """A thread that stops each held try at its claim's deadline, ends the worker when a
    stopped try's thread runs on (see the module's docstring), and cuts the engine's own
    connection under a statement that waits on a silent network (``cut_if_stuck``)."""

    def __init__(
        self,
        tries: HeldTries,
        *,
        worker_id: str,
        connection: EngineConnection | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        on_exit: Callable[[str], None] = exit_now,
    ) -> None:
        self.tries = tries
        self.connection = connection  # the engine's, whose stuck statements are cut
        self.worker_id = worker_id
        self.monotonic = monotonic
        self.on_exit = on_exit
        self._wake = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="cadence-watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def poke(self) -> None:
        """A try was claimed while the watchdog may be waiting for its idle period."""
        with self._wake:
            self._wake.notify()

    def _run(self) -> None:
        with self._wake:
            while not self._stopping:
                self._wake.wait(self.check())

    def check(self) -> float:
        """Stop the tries past their deadline and end the worker if a stopped one runs on;
        returns how long to wait before the next check."""
        lease = cadence_settings.LEASE.total_seconds()
        grace = cadence_settings.RECOVERY_GRACE.total_seconds()
        now = self.monotonic()
        next_at = now + WATCHDOG_IDLE
        if self.connection is not None:
            next_at = min(next_at, self.connection.cut_if_stuck(now) or next_at)
        for held in self.tries.watched():
            if held.told_at is None:
                deadline = claim_deadline(held.confirmed_at, lease)
                if now < deadline:
                    next_at = min(next_at, deadline)
                    continue
                if not self.tries.expire(held, now):
                    continue
            if not self.tries.still_in_job(held):
                continue
            told_at = held.told_at if held.told_at is not None else now
            if not held.nudged:
                if now < nudge_at(told_at, grace):
                    next_at = min(next_at, nudge_at(told_at, grace))
                    continue
                held.nudged = True
                _interrupt(held)
            leave_at = exit_at(told_at, grace)
            if now >= leave_at:
                self.on_exit(self._why(held, now - told_at))
                return WATCHDOG_IDLE
            next_at = min(next_at, leave_at)
        return max(0.0, next_at - now)

    def _why(self, held: Held, seconds: float) -> str:
        claim = held.claim
        frame = sys._current_frames().get(held.thread_id or -1)
        where = "".join(traceback.format_stack(frame)) if frame is not None else "unknown\n"
        return (
            f"worker exiting worker={self.worker_id} status={CLAIM_LOST_EXIT}: attempt "
            f"id={claim.attempt_id} schedule={log_value(claim.schedule_name)} still runs "
            f"{seconds:.1f} s after it was told to stop (its job ignores context.cancelled), "
            "and its claim is no longer this worker's; exiting so that it does not run "
            f"beside its re-run. Its thread was at:\n{where.rstrip()}"
        )


def _interrupt(held: Held) -> None:
    """Close the socket of the database connection a stopped try's thread uses: a job, or the
    engine's own write of an atomic job, waiting on a network that went silent gets an error
    at once instead of waiting for it to come back."""
    if held.db_socket is not None:
        bounds.shut_down(held.db_socket)
