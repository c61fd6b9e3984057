"""The engine: composes clock, planner, claims, held tries and recovery into ticks.

``tick()`` does one pass (record finished tries, enforce timeouts, beat and renew leases,
recover lost attempts, plan due schedules, claim and start ready attempts) and returns how
long the engine may sleep: until the next due occurrence or ready retry (less the claim-ahead
horizon: what is due within ``CADENCE_CLAIM_AHEAD`` is planned and claimed before its instant
and started on it by a timer), lease renewal or running deadline, bounded by the maximum tick.
``run()`` (:mod:`.lifecycle`) loops over ticks until asked to stop, survives a database
outage by backing off and reconnecting, and drains on shutdown.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from django.db import reset_queries

from .. import store
from ..clock import Clock, DatabaseClock, default_clock
from ..conf import cadence_settings
from ..schedule.queues import QueueShare
from . import leases, lifecycle, next_event, planner, recovery, unhealthy, wake_up, workers
from .connection import EngineConnection
from .lost_workers import LostWorkerWatch
from .overdue import OverdueWatch
from .shares import QueueShares
from .tries import HeldTries
from .tuning import CLOCK_REFRESH
from .watchdog import ClaimWatchdog


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Engine:
    """One worker: ticks that plan, claim and record, and the threads that run the tries."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        worker_id: str | None = None,
        concurrency: int | None = None,
        max_tick: float | None = None,
        inline: bool = False,
        using: str | None = None,
        queues: tuple[QueueShare, ...] | None = None,
    ) -> None:
        # Cadence lives in one database, the routers' choice: naming another is refused.
        using = store.alias_or_refuse(using)
        self.clock = clock or default_clock(using)
        self.worker_id = workers.check_worker_id(worker_id) if worker_id else default_worker_id()
        self.queues = queues  # None: every queue (docs/design.md, "Queues")
        self.shares = QueueShares(queues)
        self.concurrency = (
            concurrency
            or self.shares.concurrency()
            or cadence_settings.CONCURRENCY
            or store.of(using).default_concurrency
        )
        self.shares.check(self.concurrency)
        self.max_tick = (
            max_tick if max_tick is not None else cadence_settings.MAX_TICK.total_seconds()
        )
        self.inline = inline
        self.using = using
        # Plan and claim what is due this far ahead, and start it on its instant from a timer
        # (docs/design.md, "Starting on the instant"); an inline engine runs tries as it
        # claims them, so it never claims ahead.
        self.ahead = timedelta(0) if inline else cadence_settings.CLAIM_AHEAD
        self.claiming = True
        self.due_by: datetime | None = None  # --once: only what was due when it started
        # How far ahead the last tick planned and claimed; None when it does not (``_ahead_of``).
        self._horizon: datetime | None = None
        self.claimed_last_tick = 0
        self._wake = threading.Event()  # a try finished, or a notice came: tick now
        self._lost_workers = LostWorkerWatch(self.worker_id, using, now=self.clock.now)
        self.tries = HeldTries(
            self.clock,
            self.concurrency,
            inline=inline,
            wake=self._wake,
            on_lost=self._lost_workers.check_soon,
            may_start=self._lost_workers.own.may_start,
        )
        self.connection = EngineConnection(using)
        # Stops a try once this worker can no longer prove its claim (a network cut): an
        # inline engine's tries run on its own thread, between its statements.
        self.watchdog = (
            None
            if inline
            else ClaimWatchdog(self.tries, worker_id=self.worker_id, connection=self.connection)
        )
        # Monotonic, taken just before this tick read the engine clock: a lease the tick
        # writes counts from that reading, so the watchdog counts from here.
        self._now_read_at = time.monotonic()
        self._next_heartbeat: datetime | None = None
        self._renewed_at = time.monotonic()  # the last lease renewal, on the monotonic clock
        self._due = next_event.DueWatch()
        self.overdue = OverdueWatch(inline=inline)
        self._registered = False
        self.unhealthy: str | None = None  # why this worker must be replaced (:mod:`.unhealthy`)
        self._stuck_reported = 0  # the stuck threads last logged

    # --- one pass ------------------------------------------------------------------------

    def tick(self) -> float:
        """One pass of the engine; returns the seconds it may sleep before the next."""
        reset_queries()
        if isinstance(self.clock, DatabaseClock):
            self.clock.refresh(within=CLOCK_REFRESH)
        self._now_read_at = time.monotonic()
        now = self.clock.now()
        self._renew_after_a_pause()
        self._give_up_expired(now)
        self._record_finished_tries()
        self._enforce_timeouts(now)
        if self._renewal_due(now):
            self._beat(now)
            self._renew(now)
        self._recover_lost_workers(now)
        self.claimed_last_tick = 0
        if self.claiming:
            self._plan_and_claim(now)
        return wake_up.sleep_seconds(self, self.clock.now())

    # --- the steps of a tick ---------------------------------------------------------------

    def _give_up_expired(self, now: datetime) -> None:
        """Write the loss of the tries the watchdog stopped (their claims could no longer be
        proven: docs/design.md, "A worker cut off from its database") once their threads are
        done, fenced: pending again or dead-lettered, as another worker's recovery would."""
        self.tries.take_expired()
        claims = self.tries.ready_to_give_up()
        if claims:
            recovery.give_up([(c.attempt_id, c.token) for c in claims], now)
            self.tries.mark_given_up(claims)

    def _record_finished_tries(self) -> None:
        """Write the outcomes of the tries that ended; hand back those that waited too long
        for a thread."""
        self.tries.record_finished()
        self.tries.release_waited_too_long()

    def _enforce_timeouts(self, now: datetime) -> None:
        """Fail the tries past their deadline, count the threads that never gave theirs back,
        and see that the tries due could be given threads at all (:mod:`.unhealthy`)."""
        self.tries.enforce_timeouts(now)
        unhealthy.check(self, now)

    def _plan_and_claim(self, now: datetime) -> None:
        """Plan what is due, or due within the claim-ahead horizon (in batches on a
        backlog), claim and start what is ready, then look for overdue schedules (at a quiet
        moment: ``OverdueWatch``)."""
        due_by = min(now, self.due_by) if self.due_by else now
        # --once runs only what was due when it started: nothing ahead.
        ahead_until = due_by + self.ahead if self.ahead and self.due_by is None else None
        self._horizon = ahead_until
        plan = self._due.must_plan(due_by, ahead_until or due_by)
        deferred: datetime | None = None
        while True:
            more = False
            if plan:
                result = planner.plan_due(due_by, ahead_until=ahead_until)
                more = result.more
                if result.deferred and (deferred is None or result.deferred < deferred):
                    deferred = result.deferred
            # Start what is planned before planning the next batch of a large backlog.
            self._claim_and_start(due_by, ahead_until)
            if not more:
                break
        if plan:
            self._due.planned(deferred)
        now = self.clock.now()
        self.overdue.probe(now, self.tries.idle_until(now))
        if self.inline:
            self.tries.record_finished()

    def _claim_and_start(self, due_by: datetime, ahead_until: datetime | None) -> None:
        """Claim and start batches while slots are free and attempts are ready (or will be
        by ``ahead_until``: those wait on the start timer)."""
        if not self._lost_workers.may_claim():
            return
        while True:
            slots = self.tries.slots(claim_ahead=ahead_until is not None)
            if slots.total <= 0:
                return
            open_queues = self.shares.open(self.tries.claims())
            if open_queues.names == ():
                return  # every queue served holds its whole share
            # The clock, not an instant: a try's started_at, lease and deadline count from
            # the moment its row is locked, after ``sent``.
            sent = time.monotonic()
            claims = leases.claim(
                self.clock.now,
                worker=self.worker_id,
                slots=slots.due,
                due_by=due_by,
                busy=self.tries.running_here(),
                ahead_until=ahead_until,
                ahead_slots=slots.ahead,
                queues=open_queues.names,
                queue_limits=open_queues.limits,
            )
            self.claimed_last_tick += len(claims)
            for claim in claims:
                self.tries.start(claim, confirmed_at=sent)
            if claims:
                self._lost_workers.started_tries(self.clock.now(), self.ahead.total_seconds())
                if self.watchdog is not None:
                    self.watchdog.poke()
            if self.inline:
                self.tries.record_finished()
            if len(claims) < slots.total:
                return

    def _renew_after_a_pause(self) -> None:
        """A pause longer than the renewal period (a frozen process, a stop-the-world
        collection) may have cost this worker its tries: renew now to learn which."""
        paused = time.monotonic() - self._renewed_at > self._renewal_period()
        if paused and self.tries:
            self._next_heartbeat = None

    def _renewal_period(self) -> float:
        return cadence_settings.LEASE.total_seconds() / 3

    def _renewal_due(self, now: datetime) -> bool:
        """Every third of the lease (sooner after a pause or a change of stuck threads)."""
        if self._next_heartbeat and now < self._next_heartbeat:
            return False
        self._next_heartbeat = now + cadence_settings.LEASE / 3
        return True

    def _beat(self, now: datetime) -> None:
        """The worker's heartbeat row: alive, how many tries it holds, its stuck threads."""
        if self._registered:
            workers.beat(
                self.worker_id,
                now,
                in_flight=len(self.tries),
                stuck_threads=self.tries.stuck.count(now),
                stuck_since=self.tries.stuck.since(now),
            )

    def _renew(self, now: datetime) -> None:
        """Renew (and so re-assert) every lease held; stop the tries it no longer holds. The
        renewed leases count from this tick's reading of the clock (``_now_read_at``)."""
        claims = self.tries.claims()
        renewal = leases.renew(claims, now, worker=self.worker_id)
        self._renewed_at = time.monotonic()
        self.tries.confirm(
            (c.token for c in claims if c.token not in renewal.lost), self._now_read_at
        )
        self.tries.cancel_revoked(renewal.revoked)
        self.tries.lose(renewal.lost, "its lease was taken over")

    def _recover_lost_workers(self, now: datetime) -> None:
        """Recover lost workers' attempts; re-assert this worker's tries when it has just
        taken its session lock again."""
        if self._lost_workers.probe(now, has_tries=bool(self.tries)):
            self._renew(now)
            self._lost_workers.reasserted()

    # --- the loop ------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the try threads that are idle (and close their database connections), and
        let an overdue probe under way finish."""
        self.tries.close()
        self.overdue.close()

    @property
    def in_flight(self) -> int:
        return len(self.tries)

    def run(
        self,
        stop: threading.Event,
        *,
        once: bool = False,
        shutdown_grace: float | None = None,
        on_start: Callable[[Engine], None] | None = None,
    ) -> None:
        """Tick until ``stop`` is set (or, with ``once``, until what was due has run).

        ``on_start`` is called with the engine once it holds the engine lock, before it
        registers and ticks: ``run_cadence`` applies the declared schedules there and logs
        what is enabled.
        """
        lifecycle.run(self, stop, once=once, shutdown_grace=shutdown_grace, on_start=on_start)

    def _notice(self) -> None:
        """A change notice (PostgreSQL): plan and claim at once, whatever was read before."""
        self._due.notice()
        self._wake.set()

    def _loop(self, stop: threading.Event, *, once: bool) -> None:
        lifecycle.loop(self, stop, once=once)

    def _drain(self, grace: float) -> None:
        """Stop claiming, let running tries finish within ``grace``, release the rest."""
        lifecycle.drain(self, grace)
