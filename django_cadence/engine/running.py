"""The tries on this worker's threads: started on their instant, queued for a free thread,
run, and their results handed back to the engine's thread (``take_finished``).

Threads only run tries and hand back results; every database write of an outcome happens
on the engine's thread (:mod:`.recording`), so successes that end together are written in
one statement.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime

from django.db import DatabaseError, connections

from .. import signals, store
from ..clock import Clock, estimate_of
from ..models import Attempt
from .budget import TryBudget
from .claims import Claim
from .execution import TryResult, run_try
from .held import Held, Phase
from .pool import TryPool
from .start_timer import StartTimer
from .stuck import StuckThread, StuckThreads
from .tuning import START_CONFIRMED, START_LATE

logger = logging.getLogger("django_cadence.engine")

# Why a thread did not start a try it took (``RunningTries._unstarted``), as logged.
LATE = f"its start came more than {START_LATE:g} s late (was the process paused?)"
UNCONFIRMED = (
    f"its worker's session lock was not seen held within {START_CONFIRMED:g} s "
    "(was the process paused, or its session cut?)"
)


class RunningTries:
    """Start held tries on the pool's threads, queue those that find none free, and collect
    what they hand back: results, and tries they would not start."""

    def __init__(
        self,
        clock: Clock,
        budget: TryBudget,
        *,
        wake: threading.Event,
        may_start: Callable[[], bool],
    ) -> None:
        self.clock = clock
        # The clock as the timer and the try threads read it: never waiting on the server, so a
        # server that hangs holds only the engine's thread (``DatabaseClock.estimate``).
        self.estimate = estimate_of(clock)
        self.budget = budget
        self.concurrency = budget.concurrency
        self.inline = budget.inline  # run each try on the engine's thread as it is started
        self.wake = wake  # set when a try finishes
        # Whether a try may start now, asked by its thread: its worker's session lock was
        # seen held moments ago (``OwnLock.may_start``).
        self.may_start = may_start
        self.queued: deque[Held] = deque()  # claimed ahead, waiting for a thread
        self.busy = 0  # threads running a try (or about to take a queued one)
        self._done: list[tuple[Claim, TryResult]] = []
        self.done_lock = threading.Lock()
        # Tries whose thread did not start them (``_unstarted``), to hand back.
        self._late: list[Held] = []
        # Starts of a burst, announced by the engine's thread (``announce_starts``).
        self._unannounced: list[tuple[Claim, datetime]] = []
        self.queue_lock = threading.Lock()
        self._pool = TryPool(self.concurrency)
        self.stuck = StuckThreads()  # threads whose try timed out and never returned
        # Claimed ahead of their instant: started by this timer when it comes.
        self.timer: StartTimer[Held] = StartTimer(
            self.estimate, self._launch_all, on_error=self._launch_failed
        )
        # Why tries whose instant came could not be started here (None: they all could).
        self.launch_failure: str | None = None

    # --- snapshots ------------------------------------------------------------------------

    def unrecorded(self) -> int:
        """Results handed back and not yet taken by the engine's thread."""
        with self.done_lock:
            return len(self._done)

    def waiting(self) -> int:
        """Tries claimed ahead of their instant, not started yet."""
        return len(self.timer)

    def take_finished(self) -> list[tuple[Claim, TryResult]]:
        """The results handed back so far, in order (left in place until ``forget``)."""
        with self.done_lock:
            return list(self._done)

    def forget(self, count: int) -> None:
        """The first ``count`` results are written (or dropped): let them go."""
        with self.done_lock:
            del self._done[:count]

    def take_late(self) -> list[Held]:
        """The tries their threads would not start, to hand back."""
        with self.queue_lock:
            late, self._late = self._late, []
        return late

    def put_back_late(self, late: list[Held]) -> None:
        """Their hand-back failed: hand them back again next time."""
        with self.queue_lock:
            self._late[:0] = late

    def take_queued(self, older_than: float = 0.0) -> list[Held]:
        """Take out of the queue the tries that waited ``older_than`` seconds for a thread."""
        if not self.queued:
            return []
        limit = time.monotonic() - older_than
        with self.queue_lock:
            stale = [h for h in self.queued if h.queued_at is not None and h.queued_at <= limit]
            for held in stale:
                self.queued.remove(held)
        return stale

    def take_back(self, held: Held) -> None:
        """``held`` is stopped: take it off the timer and out of the queue, and mark it done
        when no thread has it (nothing of it runs)."""
        taken = self.timer.discard(held)  # claimed ahead and not started: it never will
        with self.queue_lock:
            if any(waiting is held for waiting in self.queued):
                self.queued = deque(w for w in self.queued if w is not held)
                taken = True
        if taken:
            held.done.set()

    # --- starting ------------------------------------------------------------------------

    def start(self, held: Held) -> None:
        """Run the try on a free thread, or queue it for the next one to come free; a try
        claimed ahead of its instant waits for it on the start timer."""
        claim = held.claim
        if self.inline:
            held.move(Phase.RUNNING)
            send_started(claim, self.clock.now())
            self._finished(held, run_try(claim, self.clock.now))
            held.done.set()
            return
        ahead = (claim.started_at - self.clock.now()).total_seconds()
        held.start_by = time.monotonic() + max(ahead, 0.0) + START_LATE
        if ahead > 0:
            claim.context()  # built now rather than on the instant
            if not held.advance(Phase.AHEAD):
                held.done.set()  # stopped as it was claimed (the watchdog): never placed
                return
            self.timer.add(claim.started_at, held)
            self._pool.warm(len(self.timer), _connect)
            return
        self._launch_all([held])

    def _launch_all(self, due: list[Held]) -> None:
        """Run tries whose instant has come on the free threads and queue the rest for them,
        in one step: a burst's first try does not wait while the others are handed out (the
        thread handing them out holds the interpreter until it is done)."""
        with self.queue_lock:
            free = max(0, self.concurrency - self.busy)
            starting: list[Held] = []
            waiting: list[Held] = []
            for held in due:
                to = Phase.HANDED if len(starting) < free else Phase.QUEUED
                if not held.advance(to):
                    held.done.set()  # stopped before its instant: no thread takes it
                    continue
                (starting if to is Phase.HANDED else waiting).append(held)
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
        with self.queue_lock:
            self.busy -= len(unstarted)
            queued_at = time.monotonic()
            for held in unstarted:
                held.queued_at = queued_at
                held.advance(Phase.QUEUED)
            self.queued.extendleft(reversed(unstarted))

    def _launch_failed(self, error: Exception) -> None:
        """The start timer could not hand tries to threads (the process could make none):
        the engine drains this worker and exits for a fresh one (``unhealthy.check_launches``)."""
        logger.error("could not start tries claimed ahead: %r", error, exc_info=error)
        self.launch_failure = f"{type(error).__name__}: {error}"

    # --- on a try's thread ------------------------------------------------------------------

    def _run_in_thread(self, held: Held) -> None:
        """Run a try, then every queued one while there are any (``TryBudget.capacity``)."""
        next_held: Held | None = held
        while next_held is not None:
            self._run_one(next_held)
            with self.queue_lock:
                if next_held.phase is Phase.SET_APART:
                    # Its slot was given back when it timed out; the thread is free again.
                    self.stuck.discard(next_held.claim.token)
                    return
                next_held = self._next_queued()
                if next_held is None:
                    self.busy -= 1

    def _next_queued(self) -> Held | None:
        """The next queued try, taken by a thread that comes free (call under the lock)."""
        next_held = self.queued.popleft() if self.queued else None
        if next_held is not None:
            next_held.queued_at = None
            next_held.advance(Phase.HANDED)
        return next_held

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
                held.advance(Phase.RUNNING)
                self._started(claim)
                started = time.monotonic()
                result = run_try(claim, self.estimate)
                self.budget.note_runtime(time.monotonic() - started)
            self._finished(held, result)
        finally:
            held.done.set()

    def _unstarted(self, held: Held, why: str) -> None:
        """Leave a try unstarted that may have been recovered and run elsewhere: its start
        came ``START_LATE`` past its instant (or its claim, if later), or its worker's lock
        was not seen held lately (``START_CONFIRMED``); the process was paused, or starved,
        or its session cut. The engine hands it back, fenced by its token, at once."""
        with self.queue_lock:
            held.unstarted = why
            held.advance(Phase.UNSTARTED)
            self._late.append(held)
        self.wake.set()

    def _started(self, claim: Claim) -> None:
        """Announce a try's start (``attempt_started``, "attempt started"), from its thread;
        in a burst (tries queued for threads), the engine's thread announces it a moment
        later, with the instant it started: the threads start the burst first."""
        at = self.estimate()
        if self.queued:
            with self.done_lock:
                self._unannounced.append((claim, at))
            return
        send_started(claim, at)

    def announce_starts(self) -> None:
        """Send the starts a burst left to the engine's thread, in the order they happened."""
        with self.done_lock:
            starts, self._unannounced = self._unannounced, []
        for claim, at in starts:
            send_started(claim, at)

    def _finished(self, held: Held, result: TryResult) -> None:
        with self.done_lock:
            held.advance(Phase.FINISHED)
            self._done.append((held.claim, result))
        self.wake.set()

    # --- timed out ----------------------------------------------------------------------

    def set_apart(self, held: Held, now: datetime) -> None:
        """A try timed out: count its thread as stuck and give its slot to the next queued
        try (on a new thread), or back to the worker."""
        if self.inline:
            held.stop(Phase.TIMED_OUT)
            return
        with self.queue_lock:
            if held.done.is_set():
                held.stop(Phase.TIMED_OUT)
                return  # its thread has moved on (its result is ignored: timed out)
            held.stop(Phase.SET_APART)
            self.stuck.add(
                held.claim.token,
                StuckThread(held.claim.attempt_id, held.claim.schedule_name, now),
            )
            next_held = self._next_queued()
            if next_held is None:
                self.busy -= 1
        if next_held is not None:
            self._pool.submit(functools.partial(self._run_in_thread, next_held))

    def close(self) -> None:
        """Stop the try threads that are idle (and close their database connections).

        Stuck threads are not waited for: they would hold the exit of a worker that must go.
        """
        self.timer.close()
        self._pool.shutdown(timeout=0.5 if len(self.stuck) else 5.0)
        self.announce_starts()


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


def send_started(claim: Claim, at: datetime) -> None:
    """``attempt_started``, once the try runs: a try claimed ahead may be handed back unrun."""
    signals.send(signals.attempt_started, Attempt, started_at=at, **claim.event())
