"""How many tries a worker holds: its threads' share, and more while its tries are short.

Pure arithmetic over the worker's thread count and its tries' average run time, which the
try threads report (``note_runtime``); the engine asks it how many to claim (``slots``).
"""

from __future__ import annotations

from typing import NamedTuple

from .tuning import (
    AHEAD_ROUNDS,
    AHEAD_TRIES,
    QUEUE_MAX_ROUNDS,
    QUEUE_MAX_RUNTIME,
    QUEUE_MAX_WAIT,
    QUEUE_TIME,
)


class Slots(NamedTuple):
    """How many tries to claim: due now, and ahead of their instant."""

    due: int
    ahead: int

    @property
    def total(self) -> int:
        return self.due + self.ahead


class TryBudget:
    """The tries one worker may hold, due and claimed ahead."""

    def __init__(self, concurrency: int, *, inline: bool) -> None:
        self.concurrency = concurrency
        self.inline = inline  # each try runs on the engine's thread: no queue
        self.runtime_avg: float | None = None  # moving average of the tries' run time

    def note_runtime(self, seconds: float) -> None:
        """A try ran for ``seconds`` (from its thread)."""
        average = self.runtime_avg
        self.runtime_avg = seconds if average is None else 0.8 * average + 0.2 * seconds

    def count_as_long(self) -> None:
        """Tries waited too long for a thread: count them as long (no queue, and ahead only
        what the threads start within ``QUEUE_MAX_WAIT``) until finished tries say otherwise."""
        self.runtime_avg = max(self.runtime_avg or 0.0, QUEUE_MAX_RUNTIME)

    def slots(self, *, due: int, ahead: int, claim_ahead: bool) -> Slots:
        """How many to claim while ``due`` tries are held whose instant came and ``ahead``
        wait for theirs; none ahead unless ``claim_ahead``."""
        now = max(0, self.capacity() - due)
        later = max(0, self.ahead_budget() - ahead) if claim_ahead else 0
        return Slots(now, later)

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
