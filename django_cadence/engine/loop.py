"""The engine: composes clock, planner, runner and recovery into ticks.

``tick()`` does one pass (record finished tries, enforce timeouts, renew leases, recover lost
attempts, plan due schedules, claim and start ready attempts) and returns how long the engine
may sleep: until the next due occurrence, ready retry, lease renewal or running deadline,
bounded by the maximum tick. ``run()`` loops over ticks until asked to stop, survives a
database outage by backing off and reconnecting, and drains on shutdown.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import DatabaseError, close_old_connections, connections, reset_queries

from .. import store
from ..conf import cadence_settings
from ..executors.payloads import escape_control
from ..ops import reconcile, status
from . import leases, next_event, outcomes, planner, workers
from .clock import Clock, DatabaseClock, default_clock
from .execution import TryResult, run_try
from .lost_workers import LostWorkerWatch
from .pool import TryPool

logger = logging.getLogger("django_cadence.engine")


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


# How old the reading of the next due instant may be while work flows and it is reused.
NEXT_DUE_MAX_AGE = timedelta(seconds=1)
# How long a finished try's wake-up waits for the other running tries (``_gather_finishes``).
FINISH_WINDOW = 0.002
# Claiming ahead (``_capacity``): while the tries' average run time is under this many
# seconds, a worker holds more tries than it has threads (the first run, the rest wait for
# threads): as many rounds of ``concurrency`` as its threads would start within
# CLAIM_AHEAD_QUEUE_TIME, up to CLAIM_AHEAD_MAX_ROUNDS.
CLAIM_AHEAD_MAX_RUNTIME = 0.05
CLAIM_AHEAD_QUEUE_TIME = 0.15
CLAIM_AHEAD_MAX_ROUNDS = 16
# A try claimed ahead that found no thread within this many seconds is handed back.
CLAIM_AHEAD_MAX_WAIT = 1.0


@dataclass
class _InFlight:
    claim: leases.Claim
    done: threading.Event | None = None  # set when its thread has returned
    queued_at: float | None = None  # monotonic; set while it waits for a thread


class Engine:
    def __init__(
        self,
        *,
        clock: Clock | None = None,
        worker_id: str | None = None,
        concurrency: int | None = None,
        max_tick: float | None = None,
        inline: bool = False,
        using: str = "default",
    ) -> None:
        self.clock = clock or default_clock(using)
        self.worker_id = worker_id or default_worker_id()
        self.concurrency = concurrency or cadence_settings.CONCURRENCY
        self.max_tick = (
            max_tick if max_tick is not None else cadence_settings.MAX_TICK.total_seconds()
        )
        self.inline = inline
        self.using = using
        self.claiming = True
        self.due_by: datetime | None = None  # --once: only what was due when it started
        self.claimed_last_tick = 0
        self._in_flight: dict[int, _InFlight] = {}
        self._done: list[tuple[leases.Claim, TryResult]] = []
        self._done_lock = threading.Lock()
        self._wake = threading.Event()
        self._pool = TryPool(self.concurrency)
        self._queued: deque[_InFlight] = deque()  # claimed ahead, waiting for a thread
        self._queue_lock = threading.Lock()
        self._busy = 0  # threads running a try (or about to take a queued one)
        self._runtime_avg: float | None = None  # moving average of the tries' run time
        self._next_heartbeat: datetime | None = None
        self._next_due: datetime | None = None  # None: no enabled schedule will fire
        self._next_due_read: datetime | None = None  # None: not read yet, so plan
        self._changed = False  # a notice said schedules or attempts changed: plan now
        self._next_due_stale = False  # the last tick planned: read the next due instant
        self._lost_workers = LostWorkerWatch(self.worker_id, using)
        self._registered = False
        self._session: object | None = None  # the database session last set up for reads

    # --- one pass ------------------------------------------------------------------------

    def tick(self) -> float:
        """One pass of the engine; returns the seconds it may sleep before the next."""
        reset_queries()
        now = self.clock.now()
        self._record_finished()
        self._release_queued(older_than=CLAIM_AHEAD_MAX_WAIT)
        self._enforce_timeouts(now)
        self._heartbeat(now)
        self._lost_workers.probe(now, has_tries=bool(self._in_flight))
        self.claimed_last_tick = 0
        if self.claiming:
            due_by = min(now, self.due_by) if self.due_by else now
            # An earlier tick read when the next schedule is due: until then there is nothing
            # to plan, and the locking read is skipped. A schedule saved since then wakes the
            # engine on PostgreSQL (``_changed``); elsewhere the next reading (at most
            # NEXT_DUE_MAX_AGE later) sees it, and the next tick plans it.
            changed, self._changed = self._changed, False
            due = self._next_due is not None and self._next_due <= due_by
            plan = changed or due or self._next_due_read is None
            while True:
                more = plan and planner.plan_due(due_by).more
                # Start what is planned before planning the next batch of a large backlog.
                self._claim_and_start(due_by)
                if not more:
                    break
            # What was due is planned: the next due instant is read again before sleeping,
            # not assumed from the reading that made this tick plan (that would plan again,
            # for nothing, at the next tick).
            self._next_due_stale = plan
            if self.inline:
                self._record_finished()
        return self._sleep_seconds(self.clock.now())

    def _claim_and_start(self, due_by: datetime) -> None:
        """Claim and start batches while slots are free and attempts are ready."""
        if not self._lost_workers.may_claim(has_tries=bool(self._in_flight)):
            return
        while True:
            slots = self._capacity() - len(self._in_flight)
            if slots <= 0:
                return
            # The clock, not an instant: a try's started_at, lease and deadline count from
            # the moment its row is locked.
            claims = leases.claim(self.clock.now, worker=self.worker_id, slots=slots, due_by=due_by)
            self.claimed_last_tick += len(claims)
            for claim in claims:
                self._start(claim)
            if self.inline:
                self._record_finished()
            if len(claims) < slots:
                return

    def _capacity(self) -> int:
        """How many tries this worker may hold: one per thread, and more while its tries are
        short (``_rounds_ahead``).

        Claiming costs a round of statements whatever its size, and tries of a few
        milliseconds would leave their threads idle while the engine records and claims the
        next ones. Tries claimed ahead wait in a queue, and a thread that finishes one takes
        the next at once. Their lease and deadline count from their claim like any other's;
        one that waits longer than ``CLAIM_AHEAD_MAX_WAIT`` (a long try came along) is handed
        back for any worker to claim.
        """
        return self.concurrency * self._rounds_ahead()

    def _rounds_ahead(self) -> int:
        """Rounds of ``concurrency`` tries to hold: 1 (no queue) until tries are seen to be
        short, then as many as the threads would start within ``CLAIM_AHEAD_QUEUE_TIME`` at
        the tries' average run time.

        A burst of one-shots is planned in batches, and while the engine plans the next batch
        its threads run what is queued: a deeper queue keeps them busy through it.
        """
        average = self._runtime_avg
        if self.inline or average is None or average >= CLAIM_AHEAD_MAX_RUNTIME:
            return 1
        return min(CLAIM_AHEAD_MAX_ROUNDS, 1 + int(CLAIM_AHEAD_QUEUE_TIME / max(average, 1e-6)))

    def _start(self, claim: leases.Claim) -> None:
        flight = _InFlight(claim)
        self._in_flight[claim.attempt_id] = flight
        if self.inline:
            self._finish(claim, run_try(claim, self.clock.now))
            return
        flight.done = threading.Event()
        with self._queue_lock:
            start_now = self._busy < self.concurrency
            if start_now:
                self._busy += 1
            else:
                flight.queued_at = time.monotonic()
                self._queued.append(flight)
        if start_now:
            self._pool.submit(lambda: self._run_in_thread(flight))

    def _run_in_thread(self, flight: _InFlight) -> None:
        """Run a try, then every queued one while there are any (``_capacity``)."""
        next_flight: _InFlight | None = flight
        while next_flight is not None:
            self._run_one(next_flight)
            with self._queue_lock:
                next_flight = self._queued.popleft() if self._queued else None
                if next_flight is None:
                    self._busy -= 1
                else:
                    next_flight.queued_at = None

    def _run_one(self, flight: _InFlight) -> None:
        claim = flight.claim
        try:
            if claim.cancel_event.is_set():
                # Replaced or timed out while it waited for a thread: it never started.
                result = TryResult("error", error="cancelled before it started")
            else:
                started = time.monotonic()
                result = run_try(claim, self.clock.now)
                self._note_runtime(time.monotonic() - started)
            self._finish(claim, result)
        finally:
            if flight.done:
                flight.done.set()

    def _note_runtime(self, seconds: float) -> None:
        average = self._runtime_avg
        self._runtime_avg = seconds if average is None else 0.8 * average + 0.2 * seconds

    def _release_queued(self, older_than: float = 0.0) -> None:
        """Hand back tries claimed ahead that waited ``older_than`` seconds for a thread."""
        if not self._queued:
            return
        limit = time.monotonic() - older_than
        with self._queue_lock:
            stale = [f for f in self._queued if f.queued_at is not None and f.queued_at <= limit]
            for flight in stale:
                self._queued.remove(flight)
        if not stale:
            return
        self._runtime_avg = None  # claim ahead again once tries are seen to be short
        for flight in stale:
            self._in_flight.pop(flight.claim.attempt_id, None)
        leases.release([f.claim for f in stale], self.clock.now())

    def _finish(self, claim: leases.Claim, result: TryResult) -> None:
        with self._done_lock:
            self._done.append((claim, result))
        self._wake.set()

    def _record_finished(self) -> None:
        """Write the outcome of every finished try: the successes in one statement.

        A write that fails (the database went away) raises before the batch is forgotten, and
        the next tick writes what is still in flight; fenced writes make that harmless.
        """
        with self._done_lock:
            batch = list(self._done)
        if not batch:
            return
        now = self.clock.now()  # one reading for the whole batch
        successes = []
        for claim, result in batch:
            if claim.attempt_id not in self._in_flight:
                continue  # timed out meanwhile (recorded as failed), or recorded already
            if result.kind == "ok" and not result.committed and not claim.cancel_event.is_set():
                successes.append((claim, result.value))
            else:
                self._record(claim, result, now)
                self._in_flight.pop(claim.attempt_id, None)
        outcomes.record_successes(successes, now)
        for claim, _ in successes:
            self._in_flight.pop(claim.attempt_id, None)
        with self._done_lock:
            del self._done[: len(batch)]

    def _record(self, claim: leases.Claim, result: TryResult, now: datetime) -> None:
        """Every outcome but a plain success (those are written together, by the batch)."""
        if result.committed:
            return  # atomic: recorded inside the job's own transaction
        if result.kind == "lost":
            logger.warning(
                "attempt lost id=%s schedule=%s: lease taken over, effects rolled back",
                claim.attempt_id,
                escape_control(claim.schedule_name),
            )
            self._lost_workers.check_own_lock()
            return
        if claim.cancel_event.is_set():
            outcomes.record_cancelled(claim, now, "cancelled: replaced by a newer occurrence")
        else:
            outcomes.record_failure(claim, result.error, now, permanent=result.kind == "permanent")

    def _enforce_timeouts(self, now: datetime) -> None:
        for attempt_id, flight in list(self._in_flight.items()):
            claim = flight.claim
            if now < claim.deadline or flight.queued_at is not None:
                continue  # a queued try has not started; it is handed back before long
            claim.cancel_event.set()
            self._in_flight.pop(attempt_id)
            outcomes.record_failure(
                claim, f"timed out after {claim.max_runtime.total_seconds():g} s", now
            )

    def _heartbeat(self, now: datetime) -> None:
        if self._next_heartbeat and now < self._next_heartbeat:
            return
        self._next_heartbeat = now + cadence_settings.LEASE / 3
        if self._registered:
            workers.beat(self.worker_id, now, in_flight=len(self._in_flight))
        claims = [f.claim for f in self._in_flight.values()]
        for attempt_id in leases.renew(claims, now, worker=self.worker_id):
            flight = self._in_flight.get(attempt_id)
            if flight and not flight.claim.cancel_event.is_set():
                logger.info("attempt cancelling id=%s", attempt_id)
                flight.claim.cancel_event.set()

    def _sleep_seconds(self, now: datetime) -> float:
        """Until the earliest thing this engine must do, bounded by the maximum tick."""
        candidates = [now + timedelta(seconds=self.max_tick)]
        # While work flows (this tick claimed some), the tries' ends wake the engine and the
        # next tick claims and recovers anyway: up to three queries fewer on the busy path.
        flowing = self.claimed_last_tick > 0 and bool(self._in_flight)
        fresh = self._next_due_read and now - self._next_due_read < NEXT_DUE_MAX_AGE
        if not (flowing and fresh) or self._next_due_stale:
            self._next_due = next_event.next_due()
            self._next_due_read = now
            self._next_due_stale = False
        next_due = self._next_due
        next_ready = next_lease = None
        if not flowing and len(self._in_flight) < self.concurrency:
            next_ready = next_event.next_ready()
        if not flowing:
            next_lease = next_event.next_lease_end()
        candidates += [at for at in (next_due, next_ready) if at]
        if next_lease:
            candidates.append(next_lease + cadence_settings.RECOVERY_GRACE)
        wake_at = self._lost_workers.wake_at()
        if wake_at:
            candidates.append(wake_at)  # a dead worker's tries start at once
        if self._in_flight:
            candidates.append(self._next_heartbeat or now)
            candidates += [f.claim.deadline for f in self._in_flight.values()]
        if self._queued:
            candidates.append(now + timedelta(seconds=CLAIM_AHEAD_MAX_WAIT))
        earliest = min(candidates)
        # From the clock read now, after this method's queries: counted from ``now`` the
        # engine would wake as late as those queries took.
        return max(0.0, (earliest - self.clock.now()).total_seconds())

    # --- the loop ------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the try threads that are idle (and close their database connections)."""
        self._pool.shutdown()

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def run(
        self,
        stop: threading.Event,
        *,
        once: bool = False,
        shutdown_grace: float | None = None,
    ) -> None:
        """Tick until ``stop`` is set (or, with ``once``, until what was due has run)."""
        lock = store.of(self.using).engine_lock()
        lock.acquire()
        logger.info(
            "engine started worker=%s concurrency=%s max_tick=%s",
            self.worker_id,
            self.concurrency,
            self.max_tick,
        )
        self._log_clock_skew()
        reconcile.reconcile_on_start(self.clock, holder=self.worker_id, using=self.using)
        with contextlib.suppress(DatabaseError):
            logger.info(status.schedules_summary())
        self._lost_workers.start(self.clock.now())
        self._registered = False
        with contextlib.suppress(DatabaseError):
            workers.register(
                self.worker_id,
                self.clock.now(),
                concurrency=self.concurrency,
                session_lock=self._lost_workers.session_lock is not None,
            )
            self._registered = True
        listener = None if once else store.of(self.using).start_listener(self._notice)
        try:
            self._loop(stop, once=once)
            self._drain(
                cadence_settings.SHUTDOWN_GRACE.total_seconds()
                if shutdown_grace is None
                else shutdown_grace
            )
        finally:
            self.close()
            if self._registered:
                with contextlib.suppress(DatabaseError):
                    workers.stopped(self.worker_id, self.clock.now())
            if listener:
                listener.stop()
            self._lost_workers.stop()
            lock.release()
            logger.info("engine stopped worker=%s", self.worker_id)

    def _notice(self) -> None:
        """A change notice (PostgreSQL): plan and claim at once, whatever was read before."""
        self._changed = True
        self._wake.set()

    def _log_clock_skew(self) -> None:
        """Say how far this host's clock is from the engine clock (the database server's).

        Decisions use the engine clock only, so skew does no harm; it is logged because a
        large one usually means a host without time synchronisation.
        """
        if not isinstance(self.clock, DatabaseClock):
            return
        with contextlib.suppress(DatabaseError):
            before = datetime.now(UTC)
            engine_now = self.clock.now()
            after = datetime.now(UTC)
            skew = (before + (after - before) / 2 - engine_now).total_seconds()
            log = logger.warning if abs(skew) >= 1 else logger.info
            log("clock skew local_minus_database=%.3fs worker=%s", skew, self.worker_id)

    def _loop(self, stop: threading.Event, *, once: bool) -> None:
        backoff = 0.5
        while not stop.is_set():
            # Cleared before the tick: a try that finishes during it wakes the next wait.
            self._wake.clear()
            try:
                self._refresh_connection()
                self._set_up_session()
                if once and self.due_by is None:
                    self.due_by = self.clock.now()
                delay = self.tick()
                backoff = 0.5
            except DatabaseError as exc:
                logger.error("database unavailable: %s; retrying in %.1f s", exc, backoff)
                self._close_connection()
                delay, backoff = backoff, min(backoff * 2, 10.0)
                # A real back-off: wake-ups (a finished try, the listener's reconnects) need
                # the database too, so they do not cut it short; only a stop signal does.
                stop.wait(delay)
                delay = 0
            if once and not (self._in_flight or self._done or self.claimed_last_tick):
                return  # everything due at the start has run (retries come later)
            if once:
                delay = min(delay, 0.05)
            if delay > 0:
                self._wait(stop, delay)

    def _wait(self, stop: threading.Event, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not stop.is_set() and not self._wake.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._wake.wait(min(remaining, 0.25))
        if self._wake.is_set():
            self._gather_finishes(stop)

    def _gather_finishes(self, stop: threading.Event) -> None:
        """Woken by a finished try, give the others a moment (``FINISH_WINDOW``) to finish too.

        Short tries started together end together, but the first to end wakes the engine,
        which would then record and refill only its slot and run a round of statements per
        try. Waiting this briefly lets one round record and refill most of them.
        """
        deadline = time.monotonic() + FINISH_WINDOW
        while not stop.is_set():
            with self._done_lock:
                running = len(self._in_flight) - len(self._done) - len(self._queued)
            remaining = deadline - time.monotonic()
            if running <= 0 or remaining <= 0:
                return
            self._wake.clear()  # the loop clears it before the tick anyway
            self._wake.wait(remaining)

    def _refresh_connection(self) -> None:
        """Drop a connection that broke or outlived ``CONN_MAX_AGE``; keep a healthy one.

        Django's ``close_old_connections()`` would close the engine's connection on every
        tick under the default ``CONN_MAX_AGE = 0`` (it is meant for requests); a long-lived
        engine keeps its connection unless it errored or a positive max age has passed.
        """
        connection = connections[self.using]
        if connection.connection is None:
            return
        if connection.settings_dict.get("CONN_MAX_AGE"):
            close_old_connections()
        elif connection.errors_occurred and not connection.is_usable():
            connection.close()

    def _set_up_session(self) -> None:
        """Open the engine's connection now, and once per session set up its fast reads."""
        connection = connections[self.using]
        connection.ensure_connection()
        if connection.connection is not self._session:
            self._session = connection.connection
            store.of(self.using).set_up_engine_session()

    def _close_connection(self) -> None:
        with contextlib.suppress(DatabaseError):
            connections[self.using].close()

    def _drain(self, grace: float) -> None:
        """Stop claiming, let running tries finish within ``grace``, release the rest."""
        self.claiming = False
        try:
            self._release_queued()  # claimed ahead, never started: any worker may take them
        except DatabaseError as exc:
            logger.error("could not release attempts (%s); their leases will expire", exc)
        deadline = time.monotonic() + grace
        while (self._in_flight or self._done) and time.monotonic() < deadline:
            self._wake.clear()
            try:
                self.tick()
            except DatabaseError as exc:
                logger.error("database unavailable while draining: %s", exc)
                self._close_connection()
            self._wake.wait(0.1)
        if self._in_flight:
            claims = [f.claim for f in self._in_flight.values()]
            for claim in claims:
                claim.cancel_event.set()
            try:
                leases.release(claims, self.clock.now())
            except DatabaseError as exc:
                logger.error("could not release attempts (%s); their leases will expire", exc)
            self._in_flight.clear()
