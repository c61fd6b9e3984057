"""The tries a worker holds, from their claim until their outcome is written: how many it
may hold (:mod:`.budget`), those on its threads (:mod:`.running`), those taken from it (lost,
or stopped by the watchdog), hand-backs (:mod:`.handbacks`) and outcomes (:mod:`.recording`).

Each try's place in its life is its ``Phase`` (:mod:`.held`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from ..clock import Clock
from ..executors.log_text import log_value
from . import leases
from .budget import Slots, TryBudget
from .claims import Claim
from .handbacks import HandBacks
from .held import STOPPED, Held, Phase
from .recording import Recorder
from .running import RunningTries
from .stuck import StuckThreads
from .tuning import QUEUE_MAX_WAIT

logger = logging.getLogger("django_cadence.engine")


class HeldTries:
    """The tries this worker holds, and what the engine and the watchdog ask of them."""

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
        self.inline = inline
        self.wake = wake  # set when a try finishes, or the watchdog stops one
        self.on_lost = on_lost  # a fenced write of a try matched nothing
        # By claim token, not attempt: a try whose attempt was recovered from under it (its
        # session cut) may still be running here when this worker claims the attempt again.
        self.held: dict[str, Held] = {}
        # Tries taken from this worker (``lose``) whose threads may still run: never recorded,
        # and their attempts (and serial schedules) not claimed again here until they end.
        self.lost: dict[str, Held] = {}
        # Tries the watchdog stopped (``expire``), taken out by the engine's thread, whose
        # loss it still has to write once their threads are done (``ready_to_give_up``).
        self._given_up: list[Held] = []
        self.budget = TryBudget(concurrency, inline=inline)
        self.running = RunningTries(clock, self.budget, wake=wake, may_start=may_start)
        self.handbacks = HandBacks(self)
        self.recorder = Recorder(self)

    # --- what the engine reads -----------------------------------------------------------

    def __len__(self) -> int:
        return len(self.held)

    def claims(self) -> list[Claim]:
        """The claims held and still provable (not expired: ``expire``)."""
        return [held.claim for held in self.held.values() if not held.expired]

    def deadlines(self) -> list[datetime]:
        """When the tries held and still provable reach their run-time limit."""
        return [claim.deadline for claim in self.claims()]

    def has_unrecorded(self) -> bool:
        """True while a finished try's outcome is not yet written."""
        return self.running.unrecorded() > 0

    def still_running(self) -> int:
        """Tries started and not yet finished (queued and waiting ones not counted)."""
        waiting = self.running.waiting()
        unrecorded = self.running.unrecorded()
        return len(self.held) - unrecorded - len(self.running.queued) - waiting

    def queued_count(self) -> int:
        """Tries whose instant has come, waiting for a thread."""
        return len(self.running.queued)

    def waiting(self) -> int:
        """Tries claimed ahead of their instant, not started yet."""
        return self.running.waiting()

    def due(self) -> int:
        """Tries held whose instant has come: running, queued for a thread, or unrecorded."""
        return len(self.held) - self.running.waiting()

    def slots(self, *, claim_ahead: bool) -> Slots:
        """How many tries to claim now: due, and (``claim_ahead``) ahead of their instant."""
        return self.budget.slots(due=self.due(), ahead=self.waiting(), claim_ahead=claim_ahead)

    def idle_until(self, now: datetime) -> datetime | None:
        """Until when this worker has no try to run: ``now`` while one is due, else the
        instant of the first claimed ahead (None: it holds none)."""
        if self.due():
            return now
        return self.running.timer.next_start()

    def next_handback(self, now: datetime) -> datetime | None:
        """When a try queued now would be handed back, if any is queued."""
        return now + timedelta(seconds=QUEUE_MAX_WAIT) if self.running.queued else None

    @property
    def stuck(self) -> StuckThreads:
        """Threads whose try timed out and never returned."""
        return self.running.stuck

    @property
    def launch_failure(self) -> str | None:
        """Why tries whose instant came could not be started here (None: they all could)."""
        return self.running.launch_failure

    def running_here(self) -> leases.Busy:
        """The attempts, and schedules, that this worker's threads may still be running."""
        for token, held in list(self.lost.items()):
            if held.done.is_set():
                del self.lost[token]
        running = [held.claim for held in (*self.held.values(), *self.lost.values())]
        return leases.Busy({c.attempt_id for c in running}, {c.schedule_id for c in running})

    # --- what the engine does ------------------------------------------------------------

    def start(self, claim: Claim, confirmed_at: float = float("-inf")) -> None:
        """Hold a claimed try and start it (``RunningTries.start``). ``confirmed_at``: the
        monotonic instant the claim's lease counts from, at the latest (the watchdog's)."""
        held = Held(claim, confirmed_at=confirmed_at)
        self.held[claim.token] = held
        self.running.start(held)

    def record_finished(self) -> None:
        """Write the outcome of every finished try (``Recorder.record_finished``)."""
        self.recorder.record_finished()

    def enforce_timeouts(self, now: datetime) -> None:
        """Fail the tries past their deadline (``Recorder.enforce_timeouts``)."""
        self.recorder.enforce_timeouts(now)

    def release_waited_too_long(self) -> None:
        self.handbacks.release_waited_too_long()

    def release_unstarted(self) -> None:
        self.handbacks.release_unstarted()

    def release_all(self) -> None:
        self.handbacks.release_all()

    def cancel_revoked(self, attempt_ids: Iterable[int]) -> None:
        """Tell the tries whose attempts were cancelled (or replaced) to stop."""
        revoked = set(attempt_ids)
        for held in self.held.values():
            claim = held.claim
            if claim.attempt_id in revoked and not claim.cancel_event.is_set():
                logger.info("attempt cancelling id=%s", claim.attempt_id)
                claim.cancel_event.set()

    def close(self) -> None:
        """Stop the try threads that are idle (and close their database connections)."""
        self.running.close()

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
            held.stop(Phase.LOST, unless=STOPPED)  # an expired one stays so
            self.running.take_back(held)
            if not held.done.is_set():
                self.lost[token] = held
            if held.expired:
                continue  # logged when it expired
            log_lost(claim, why)
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
        with self.running.done_lock:
            if self.held.get(held.claim.token) is not held:
                return False
            if not held.stop(Phase.EXPIRED, unless=STOPPED | {Phase.FINISHED}):
                return False
            held.told_at = now
        held.claim.cancel_event.set()
        log_lost(
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

    def ready_to_give_up(self) -> list[Claim]:
        """The claims of stopped tries whose threads are done (or never started them): the
        engine writes their loss, fenced, as another worker's recovery would
        (``mark_given_up``). One whose thread runs on is left to end, or to end the worker."""
        return [h.claim for h in self._given_up if h.done.is_set()]

    def mark_given_up(self, claims: Iterable[Claim]) -> None:
        """Their loss is written: nothing is left to do for them here."""
        written = {claim.token for claim in claims}
        for held in self._given_up:
            if held.claim.token in written:
                held.move(Phase.GIVEN_UP)
        self._given_up = [h for h in self._given_up if h.claim.token not in written]


def log_lost(claim: Claim, why: str) -> None:
    logger.warning(
        "attempt lost id=%s schedule=%s try=%s: %s; stopping it, its result will not be recorded",
        claim.attempt_id,
        log_value(claim.schedule_name),
        claim.tries,
        why,
    )
