"""The tries a worker holds: waiting for their instant (claimed ahead of it), running on the
pool's threads or queued for one, and their outcomes, written in batches by the engine's thread.

Threads only run tries and hand back results (``finished``); every database write of an
outcome happens on the engine's thread, in ``record_finished``, so successes that end
together are written in one statement.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import DatabaseError, connections

from .. import signals, store
from ..clock import Clock, estimate_of
from ..executors.log_text import log_value
from ..models import Attempt
from . import leases, outcomes
from .claims import Claim
from .execution import TryResult, run_try
from .pool import TryPool
from .start_timer import StartTimer
from .stuck import StuckThread, StuckThreads
from .tuning import (
    AHEAD_ROUNDS,
    AHEAD_TRIES,
    QUEUE_MAX_ROUNDS,
    QUEUE_MAX_RUNTIME,
    QUEUE_MAX_WAIT,
    QUEUE_TIME,
    START_CONFIRMED,
    START_LATE,
)

logger = logging.getLogger("django_cadence.engine")

# Why a thread did not start a try it took (``HeldTries._unstarted``), as logged.
LATE = f"its start came more than {START_LATE:g} s late (was the process paused?)"
UNCONFIRMED = (
    f"its worker's session lock was not seen held within {START_CONFIRMED:g} s "
    "(was the process paused, or its session cut?)"
)


@dataclass
class Held:
    """One claimed try, from its claim until its outcome is written."""

    claim: Claim
    # Set when its thread has returned; made with the claim, so a burst does not pay for it.
    done: threading.Event = field(default_factory=threading.Event)
    launched: bool = False  # handed to a thread, or queued for one (its instant has come)
    queued_at: float | None = None  # monotonic; set while it waits for a thread
    returned: bool = False  # its thread is done with it (set under the queue lock)
    abandoned: bool = False  # timed out on its thread, which is now stuck (``stuck``)
    waiting: bool = False  # claimed ahead: on the start timer until its instant
    # Monotonic: a thread that takes it later than this does not start it (``START_LATE``).
    start_by: float = float("inf")
    # Why its thread did not start it (too late, its lock not seen held): handed back unrun.
    unstarted: str | None = None
    # Monotonic: when the engine clock was read for the lease its worker last saw written
    # (its claim, a renewal, a re-assertion): the watchdog counts its deadline from it.
    confirmed_at: float = float("-inf")
    # Set by the watchdog once its claim can no longer be proven (``expire``): it never
    # starts, and its result is never recorded; the engine gives it up (``take_expired``).
    expired: bool = False
    # Monotonic: when it was told to stop because its claim is gone (expired, or lost).
    told_at: float | None = None
    # Its thread handed back a result (``_finished``): an outcome to record, not to expire.
    has_result: bool = False
    # The socket of its thread's database connection, read on that thread as the try
    # starts: shut under a stopped try that runs on, which may be waiting on it (the
    # watchdog); None where there is none.
    db_socket: int | None = None
    nudged: bool = False
    thread_id: int | None = None  # the thread running it, for the watchdog's last word


class HeldTries:
    """Start claimed tries, queue those claimed ahead, and write their outcomes."""

    def __init__(
        self,
        clock: Clock,
        concurrency: int,
        *,
        inline: bool,
        wake: threading.Event,
        on_lost: Callable[[], None],
        may_start: Callable[[], bool] = lambda: True,
    ) -> None:
        self.clock = clock
        # How the timer and the try threads read it: never waiting on the server, so a
        # server that hangs holds only the engine's thread (``DatabaseClock.estimate``).
        self.now = estimate_of(clock)
        self.concurrency = concurrency
        self.inline = inline  # run each try on the engine's thread as it is started
        self.wake = wake  # set when a try finishes
        self.on_lost = on_lost  # a fenced write of a try matched nothing
        # Whether a try may start now, asked by its thread: its worker's session lock was
        # seen held moments ago (``OwnLock.may_start``).
        self.may_start = may_start
        # By claim token, not attempt: a try whose attempt was recovered from under it (its
        # session cut) may still be running here when this worker claims the attempt again.
        self.held: dict[str, Held] = {}
        # Tries taken from this worker (``lose``) whose threads may still run: never recorded,
        # and their attempts (and serial schedules) not claimed again here until they end.
        self.lost: dict[str, Held] = {}
        # Tries the watchdog stopped (``expire``), taken out by the engine's thread, whose
        # loss it still has to write once their threads are done (``giving_up``).
        self._given_up: list[Held] = []
        self.queued: deque[Held] = deque()  # claimed ahead, waiting for a thread
        self.busy = 0  # threads running a try (or about to take a queued one)
        self.runtime_avg: float | None = None  # moving average of the tries' run time
        self._done: list[tuple[Claim, TryResult]] = []
        self._done_lock = threading.Lock()
        # Tries whose thread did not start them (``_unstarted``), to hand back.
        self._late: list[Held] = []
        # Starts of a burst, announced by the engine's thread (``announce_starts``).
        self._unannounced: list[tuple[Claim, datetime]] = []
        self._queue_lock = threading.Lock()
        self._pool = TryPool(concurrency)
        self.stuck = StuckThreads()  # threads whose try timed out and never returned
        # Claimed ahead of their instant: started by this timer when it comes.
        self.timer: StartTimer[Held] = StartTimer(
            self.now, self._launch_all, on_error=self._launch_failed
        )
        # Why tries whose instant came could not be started here (None: they all could).
        self.launch_failure: str | None = None

    def __len__(self) -> int:
        return len(self.held)

    def claims(self) -> list[Claim]:
        """The claims held and still provable (not expired: ``expire``)."""
        return [held.claim for held in self.held.values() if not held.expired]

    def has_unrecorded(self) -> bool:
        """True while a finished try's outcome is not yet written."""
        with self._done_lock:
            return bool(self._done)

    def still_running(self) -> int:
        """Tries started and not yet finished (queued and waiting ones not counted)."""
        waiting = len(self.timer)
        with self._done_lock:
            return len(self.held) - len(self._done) - len(self.queued) - waiting

    def queued_count(self) -> int:
        """Tries whose instant has come, waiting for a thread."""
        return len(self.queued)

    def waiting(self) -> int:
        """Tries claimed ahead of their instant, not started yet."""
        return len(self.timer)

    def due(self) -> int:
        """Tries held whose instant has come: running, queued for a thread, or unrecorded."""
        return len(self.held) - len(self.timer)

    def idle_until(self, now: datetime) -> datetime | None:
        """Until when this worker has no try to run: ``now`` while one is due, else the
        instant of the first claimed ahead (None: it holds none)."""
        if self.due():
            return now
        return self.timer.next_start()

    def close(self) -> None:
        """Stop the try threads that are idle (and close their database connections).

        Stuck threads are not waited for: they would hold the exit of a worker that must go.
        """
        self.timer.close()
        self._pool.shutdown(timeout=0.5 if len(self.stuck) else 5.0)
        self.announce_starts()

    # --- how many to hold ---------------------------------------------------------------

    def capacity(self) -> int:
        """How many tries this worker may hold: one per thread, and more while its tries are
        short (``rounds_ahead``).

        Claiming costs a round of statements whatever its size, and tries of a few
        milliseconds would leave their threads idle while the engine records and claims the
        next ones. Tries claimed ahead wait in a queue, and a thread that finishes one takes
        the next at once. Their lease and deadline count from their claim like any other's;
        one that waits longer than ``QUEUE_MAX_WAIT`` (a long try came along) is handed
        back for any worker to claim.
        """
        return self.concurrency * self.rounds_ahead()

    def rounds_ahead(self) -> int:
        """Rounds of ``concurrency`` tries to hold: 1 (no queue) until tries are seen to be
        short, then as many as the threads would start within ``QUEUE_TIME`` at
        the tries' average run time.

        A burst of one-shots is planned in batches, and while the engine plans the next batch
        its threads run what is queued: a deeper queue keeps them busy through it.
        """
        average = self.runtime_avg
        if self.inline or average is None or average >= QUEUE_MAX_RUNTIME:
            return 1
        return min(QUEUE_MAX_ROUNDS, 1 + int(QUEUE_TIME / max(average, 1e-6)))

    def ahead_budget(self) -> int:
        """How many tries this worker may hold claimed ahead of their instant.

        While its tries are not seen yet, or are short, a burst of a thousand
        (``AHEAD_TRIES``, or ``AHEAD_ROUNDS`` rounds of a bigger pool): claimed before its
        instant, it starts on it. Once they are seen to take longer, as many as its threads
        would start within ``QUEUE_MAX_WAIT`` (one round at least): the rest would only wait
        for a thread and be handed back, while other workers of a fleet could start them.
        """
        burst = max(AHEAD_TRIES, self.concurrency * AHEAD_ROUNDS)
        average = self.runtime_avg
        if average is None:
            return burst
        startable = int(self.concurrency * QUEUE_MAX_WAIT / max(average, 1e-6))
        return max(self.concurrency, min(burst, startable))

    # --- running -------------------------------------------------------------------------

    def start(self, claim: Claim, confirmed_at: float = float("-inf")) -> None:
        """Run the try on a free thread, or queue it for the next one to come free; a try
        claimed ahead of its instant waits for it on the start timer. ``confirmed_at``: the
        monotonic instant the claim's lease counts from, at the latest (the watchdog's)."""
        held = Held(claim, confirmed_at=confirmed_at)
        self.held[claim.token] = held
        if self.inline:
            _send_started(claim, self.clock.now())
            self._finished(claim, run_try(claim, self.clock.now), held)
            return
        ahead = (claim.started_at - self.clock.now()).total_seconds()
        held.start_by = time.monotonic() + max(ahead, 0.0) + START_LATE
        if ahead > 0:
            claim.context()  # built now rather than on the instant
            held.waiting = True
            self.timer.add(claim.started_at, held)
            self._pool.warm(len(self.timer), _connect)
            return
        self._launch_all([held])

    def _launch_all(self, due: list[Held]) -> None:
        """Run tries whose instant has come on the free threads and queue the rest for them,
        in one step: a burst's first try does not wait while the others are handed out (the
        thread handing them out holds the interpreter until it is done)."""
        for held in due:
            held.waiting = False
            held.launched = True
        with self._queue_lock:
            free = max(0, self.concurrency - self.busy)
            starting, waiting = due[:free], due[free:]
            self.busy += len(starting)
            if waiting:
                queued_at = time.monotonic()
                for held in waiting:
                    held.queued_at = queued_at
                self.queued.extend(waiting)
        for index, held in enumerate(starting):
            try:
                self._pool.submit(functools.partial(self._run_in_thread, held))
            except Exception:
                # No thread for it: it and the rest wait in the queue, where a thread that
                # comes free takes them, and a drain or ``QUEUE_MAX_WAIT`` hands them back.
                self._queue_unstarted(starting[index:])
                raise

    def _queue_unstarted(self, unstarted: list[Held]) -> None:
        with self._queue_lock:
            self.busy -= len(unstarted)
            queued_at = time.monotonic()
            for held in unstarted:
                held.queued_at = queued_at
            self.queued.extendleft(reversed(unstarted))

    def _launch_failed(self, error: Exception) -> None:
        """The start timer could not hand tries to threads (the process could make none):
        the engine drains this worker and exits for a fresh one (``Engine._check_launches``)."""
        logger.error("could not start tries claimed ahead: %r", error, exc_info=error)
        self.launch_failure = f"{type(error).__name__}: {error}"

    def _run_in_thread(self, held: Held) -> None:
        """Run a try, then every queued one while there are any (``capacity``)."""
        next_held: Held | None = held
        while next_held is not None:
            self._run_one(next_held)
            with self._queue_lock:
                if next_held.abandoned:
                    # Its slot was given back when it timed out; the thread is free again.
                    self.stuck.discard(next_held.claim.token)
                    return
                next_held.returned = True
                next_held = self.queued.popleft() if self.queued else None
                if next_held is None:
                    self.busy -= 1
                else:
                    next_held.queued_at = None

    def _run_one(self, held: Held) -> None:
        claim = held.claim
        try:
            if held.expired:
                return  # its claim can no longer be proven: never started (``expire``)
            if claim.cancel_event.is_set():
                # Replaced or timed out while it waited for a thread: it never started.
                result = TryResult("error", error="cancelled before it started")
            elif time.monotonic() > held.start_by:
                self._unstarted(held, LATE)
                return
            elif not self.may_start():
                self._unstarted(held, UNCONFIRMED)
                return
            elif held.expired or time.monotonic() > held.start_by:
                # The look at its lock waited on the server (a cut network) past its claim's
                # deadline or its start's: never started.
                if not held.expired:
                    self._unstarted(held, LATE)
                return
            else:
                held.db_socket = _socket_of_this_thread()
                held.thread_id = threading.get_ident()
                self._started(claim)
                started = time.monotonic()
                result = run_try(claim, self.now)
                self._note_runtime(time.monotonic() - started)
            self._finished(claim, result, held)
        finally:
            held.done.set()

    def _unstarted(self, held: Held, why: str) -> None:
        """Leave a try unstarted that may have been recovered and run elsewhere: its start
        came ``START_LATE`` past its instant (or its claim, if later), or its worker's lock
        was not seen held lately (``START_CONFIRMED``); the process was paused, or starved,
        or its session cut. The engine hands it back, fenced by its token, at once."""
        with self._queue_lock:
            held.unstarted = why
            self._late.append(held)
        self.wake.set()

    def _started(self, claim: Claim) -> None:
        """Announce a try's start (``attempt_started``, "attempt started"), from its thread;
        in a burst (tries queued for threads), the engine's thread announces it a moment
        later, with the instant it started: the threads start the burst first."""
        at = self.now()
        if self.queued:
            with self._done_lock:
                self._unannounced.append((claim, at))
            return
        _send_started(claim, at)

    def announce_starts(self) -> None:
        """Send the starts a burst left to the engine's thread, in the order they happened."""
        with self._done_lock:
            starts, self._unannounced = self._unannounced, []
        for claim, at in starts:
            _send_started(claim, at)

    def _note_runtime(self, seconds: float) -> None:
        average = self.runtime_avg
        self.runtime_avg = seconds if average is None else 0.8 * average + 0.2 * seconds

    def _finished(self, claim: Claim, result: TryResult, held: Held | None = None) -> None:
        with self._done_lock:
            if held is not None:
                held.has_result = True
            self._done.append((claim, result))
        self.wake.set()

    # --- lost tries -----------------------------------------------------------------------

    def lose(self, tokens: Iterable[str], why: str) -> list[Held]:
        """These tries are no longer this worker's (recovered by another, fenced out, or
        expired: ``expire``): stop them at once (a process-isolated try is killed, a thread's
        try sees ``context.cancelled``), log it once each, and never record their result.
        Returns them."""
        taken = []
        for token in tokens:
            held = self.held.pop(token, None)
            if held is None:
                continue
            taken.append(held)
            claim = held.claim
            claim.cancel_event.set()
            if held.told_at is None:
                held.told_at = time.monotonic()  # the watchdog's exit counts from here
            self.timer.discard(held)  # claimed ahead and not started: it never will
            with self._queue_lock:
                if any(waiting is held for waiting in self.queued):
                    self.queued = deque(w for w in self.queued if w is not held)
                    held.launched = False  # never started: nothing runs
            if held.launched and not held.done.is_set():
                self.lost[token] = held
            if held.expired:
                continue  # logged when it expired
            _log_lost(claim, why)
        return taken

    # --- claims that can no longer be proven (the watchdog) -------------------------------

    def watched(self) -> list[Held]:
        """The tries the watchdog looks after: held, and lost but maybe still running. A
        copy, read from its thread (copying a dict is one step under the interpreter lock)."""
        return [*self.held.copy().values(), *self.lost.copy().values()]

    def confirm(self, tokens: Iterable[str], read_at: float) -> None:
        """These claims' leases were written from an engine clock reading taken at
        ``read_at`` (monotonic), and the server answered: their deadlines move on. A claim
        already expired stays so: its try was told to stop."""
        for token in tokens:
            held = self.held.get(token)
            if held is not None and not held.expired:
                held.confirmed_at = max(held.confirmed_at, read_at)

    def expire(self, held: Held, now: float) -> bool:
        """From the watchdog's thread: ``held``'s claim can no longer be proven. Stop it (it
        never starts, a running one is cancelled), log it, and leave it to the engine's
        thread to give up (``take_expired``). False when it already handed back its result,
        which the engine records, fenced, as any other: it ended while its claim held."""
        with self._done_lock:
            if held.expired or held.has_result or self.held.get(held.claim.token) is not held:
                return False
            held.expired = True
            held.told_at = now
        held.claim.cancel_event.set()
        _log_lost(
            held.claim,
            f"its lease was last written {now - held.confirmed_at:.1f} s ago and the database "
            "has not confirmed it since (a network cut?)",
        )
        self.wake.set()
        return True

    def still_in_job(self, held: Held) -> bool:
        """Whether ``held``'s job is running now: its own code in its thread, or its child
        process alive (``Claim.in_job``); not one waiting, queued, done, or in the engine's
        fenced writes after its job."""
        return held.claim.in_job and not held.done.is_set()

    def take_expired(self) -> None:
        """On the engine's thread: take the tries the watchdog stopped out of those held
        (their leases are no longer renewed), to be given up once their threads are done."""
        tokens = [token for token, held in self.held.items() if held.expired]
        if tokens:
            self._given_up += self.lose(tokens, "its claim expired")

    def giving_up(self) -> list[Claim]:
        """The claims of stopped tries whose threads are done (or never started them): the
        engine writes their loss, fenced, as another worker's recovery would
        (``given_up``). One whose thread runs on is left to end, or to end the worker."""
        return [h.claim for h in self._given_up if not h.launched or h.done.is_set()]

    def given_up(self, claims: Iterable[Claim]) -> None:
        written = {claim.token for claim in claims}
        self._given_up = [h for h in self._given_up if h.claim.token not in written]

    def running_here(self) -> leases.Busy:
        """The attempts, and schedules, that this worker's threads may still be running."""
        for token, held in list(self.lost.items()):
            if not held.launched or held.done.is_set():
                del self.lost[token]
        running = [held.claim for held in (*self.held.values(), *self.lost.values())]
        return leases.Busy({c.attempt_id for c in running}, {c.schedule_id for c in running})

    # --- handing back and writing outcomes ----------------------------------------------

    def release_waited_too_long(self) -> None:
        """Hand back tries claimed ahead that found no thread within ``QUEUE_MAX_WAIT``,
        and those whose thread found them too late to start."""
        self.release_queued(older_than=QUEUE_MAX_WAIT)
        self.release_late()

    def release_late(self) -> None:
        """Hand back, unrun, the tries their threads did not start (``_unstarted``); they
        stay held until the hand-back is written, to be handed back again if it failed."""
        with self._queue_lock:
            late, self._late = self._late, []
        mine = [held for held in late if self.held.get(held.claim.token) is held]
        if not mine:
            return
        try:
            leases.release([held.claim for held in mine], self.clock.now())
        except Exception:
            with self._queue_lock:
                self._late[:0] = mine
            raise
        for held in mine:
            self.held.pop(held.claim.token, None)
            claim = held.claim
            logger.warning(
                "attempt handed back id=%s schedule=%s: %s; not started here",
                claim.attempt_id,
                log_value(claim.schedule_name),
                held.unstarted,
            )
        if any(held.unstarted == UNCONFIRMED for held in mine):
            self.on_lost()  # its lock may be gone: look at it before claiming again

    def next_handback(self, now: datetime) -> datetime | None:
        """When a try queued now would be handed back, if any is queued."""
        return now + timedelta(seconds=QUEUE_MAX_WAIT) if self.queued else None

    def release_unstarted(self) -> None:
        """Hand back every try not started yet: waiting for its instant or for a thread."""
        waiting = self.timer.take_all()
        for held in waiting:
            self.held.pop(held.claim.token, None)
        if waiting:
            leases.release([h.claim for h in waiting], self.clock.now())
        self.release_queued()
        self.release_late()

    def release_queued(self, older_than: float = 0.0) -> None:
        """Hand back tries claimed ahead that waited ``older_than`` seconds for a thread."""
        if not self.queued:
            return
        limit = time.monotonic() - older_than
        with self._queue_lock:
            stale = [h for h in self.queued if h.queued_at is not None and h.queued_at <= limit]
            for held in stale:
                self.queued.remove(held)
        if not stale:
            return
        # Its tries are not short enough to queue: count them as long (no queue, and ahead
        # only what the threads start within QUEUE_MAX_WAIT) until finished tries say otherwise.
        self.runtime_avg = max(self.runtime_avg or 0.0, QUEUE_MAX_RUNTIME)
        for held in stale:
            self.held.pop(held.claim.token, None)
        leases.release([h.claim for h in stale], self.clock.now())

    def release_all(self) -> None:
        """Cancel what still runs and hand every held try back (a shutdown past its grace)."""
        self.timer.take_all()
        claims = self.claims()
        for claim in claims:
            claim.cancel_event.set()
        self.held.clear()
        leases.release(claims, self.clock.now())

    def record_finished(self) -> None:
        """Write the outcome of every finished try: the successes in one statement.

        A write that fails (the database went away) raises before the batch is forgotten, and
        the next tick writes what is still in flight; fenced writes make that harmless.
        Starts not yet announced are announced first, so a try's start precedes its end.
        """
        self.announce_starts()
        with self._done_lock:
            batch = list(self._done)
        if not batch:
            return
        now = self.clock.now()  # one reading for the whole batch
        successes = []
        for claim, result in batch:
            held = self.held.get(claim.token)
            if held is None or held.expired:
                # Timed out meanwhile (recorded as failed), recorded already, lost, or stopped
                # by the watchdog (given up instead).
                self.lost.pop(claim.token, None)
                continue
            if result.kind == "ok" and not result.committed and not claim.cancel_event.is_set():
                successes.append((claim, result.value))
            else:
                self._record(claim, result, now)
                self.held.pop(claim.token, None)
        landed = outcomes.record_successes(successes, now)
        if len(landed) < len(successes):
            self.on_lost()  # fenced out: its lock may be gone too
        for claim, _ in successes:
            self.held.pop(claim.token, None)
        with self._done_lock:
            del self._done[: len(batch)]

    def _record(self, claim: Claim, result: TryResult, now: datetime) -> None:
        """Every outcome but a plain success (those are written together, by the batch)."""
        if result.committed:
            return  # atomic: recorded inside the job's own transaction
        if result.kind == "lost":
            logger.warning(
                "attempt lost id=%s schedule=%s: lease taken over, effects rolled back",
                claim.attempt_id,
                log_value(claim.schedule_name),
            )
            self.on_lost()
            return
        if claim.cancel_event.is_set():
            written = outcomes.record_cancelled(
                claim, now, "cancelled: replaced by a newer occurrence"
            )
        else:
            status = outcomes.record_failure(
                claim,
                result.error,
                now,
                permanent=result.kind == "permanent",
                reason=result.reason,
                outcome_known=result.outcome_known,
            )
            written = status is not None
        if not written:
            self.on_lost()  # fenced out: its lock may be gone too

    def enforce_timeouts(self, now: datetime) -> None:
        """Fail the tries past their deadline; their threads are told to stop.

        A thread still in its job gives its slot back at once and is kept apart as stuck
        until the job returns (:mod:`.stuck`): a job that ignores the cancel event cannot
        hold a slot for ever.
        """
        expired = [  # a queued try has not started; it is handed back before long
            (token, held)
            for token, held in self.held.items()
            if now >= held.claim.deadline
            and held.queued_at is None
            and not (held.waiting or held.unstarted or held.expired)
        ]
        for token, held in expired:
            claim = held.claim
            claim.cancel_event.set()
            self.held.pop(token)
            if not self.inline:
                self._set_apart(held, now)
            outcomes.record_failure(
                claim,
                f"timed out after {claim.max_runtime.total_seconds():g} s",
                now,
                outcome_known=False,  # the try may still be running its step
            )

    def _set_apart(self, held: Held, now: datetime) -> None:
        """Count a timed-out try's thread as stuck and give its slot to the next queued try
        (on a new thread), or back to the worker."""
        with self._queue_lock:
            if held.returned:
                return  # its thread has moved on (its result is ignored: timed out)
            held.abandoned = True
            self.stuck.add(
                held.claim.token,
                StuckThread(held.claim.attempt_id, held.claim.schedule_name, now),
            )
            next_held = self.queued.popleft() if self.queued else None
            if next_held is None:
                self.busy -= 1
            else:
                next_held.queued_at = None
        if next_held is not None:
            self._pool.submit(lambda: self._run_in_thread(next_held))

    def cancel_revoked(self, attempt_ids: Iterable[int]) -> None:
        """Tell the tries whose attempts were cancelled (or replaced) to stop."""
        revoked = set(attempt_ids)
        for held in self.held.values():
            claim = held.claim
            if claim.attempt_id in revoked and not claim.cancel_event.is_set():
                logger.info("attempt cancelling id=%s", claim.attempt_id)
                claim.cancel_event.set()


def _log_lost(claim: Claim, why: str) -> None:
    logger.warning(
        "attempt lost id=%s schedule=%s try=%s: %s; stopping it, its result will not be recorded",
        claim.attempt_id,
        log_value(claim.schedule_name),
        claim.tries,
        why,
    )


def _socket_of_this_thread() -> int | None:
    """The socket of this thread's connection to a database server, opened if need be (a
    try's thread holds one for its life: ``pool``); None on SQLite, or if it cannot open."""
    st = store.of()
    if not st.has_server_clock:
        return None
    try:
        connection = connections[st.using]
        connection.ensure_connection()
        return st.socket_of(connection.connection)
    except DatabaseError:
        return None


def _connect() -> None:
    """Open this thread's connection to Cadence's database before its first try."""
    with contextlib.suppress(DatabaseError):
        connections[store.alias()].ensure_connection()


def _send_started(claim: Claim, at: datetime) -> None:
    """``attempt_started``, once the try runs: a try claimed ahead may be handed back unrun."""
    signals.send(signals.attempt_started, Attempt, started_at=at, **claim.event())
