"""A held try and its phase: one field for where it is in its life, moved only as ``MOVES``
allows (docs/design.md, "A try on its worker").

Any thread may move a try (the engine's, the start timer, the try's own, the watchdog), so
every move is made under the try's own lock; a move the table does not allow raises
``InvalidMove``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from enum import Enum

from .claims import Claim


class Phase(Enum):
    """Where a claimed try is in its life on this worker."""

    CLAIMED = "claimed"  # claimed, not yet placed
    AHEAD = "ahead"  # claimed ahead of its instant: on the start timer
    QUEUED = "queued"  # its instant came: waiting for a thread
    HANDED = "handed"  # taken by a thread, not started yet
    RUNNING = "running"  # its job runs
    FINISHED = "finished"  # its thread handed back a result, to record
    UNSTARTED = "unstarted"  # its thread would not start it (too late, lock unseen)
    EXPIRED = "expired"  # the watchdog stopped it: its claim can no longer be proven
    LOST = "lost"  # taken from this worker (recovered by another, fenced out)
    TIMED_OUT = "timed out"  # past its deadline, recorded as failed; its thread had returned
    SET_APART = "set apart"  # timed out while its thread was in it: that thread is stuck
    HANDED_BACK = "handed back"  # released for any worker to claim
    RECORDED = "recorded"  # its outcome written
    GIVEN_UP = "given up"  # its loss written, as another worker's recovery would


# Stopped: this worker no longer owns the try's outcome; its thread's moves leave it there.
STOPPED = frozenset(
    {
        Phase.EXPIRED,
        Phase.LOST,
        Phase.TIMED_OUT,
        Phase.SET_APART,
        Phase.HANDED_BACK,
        Phase.RECORDED,
        Phase.GIVEN_UP,
    }
)
_LIVE = frozenset(Phase) - STOPPED
_ON_THREAD = frozenset({Phase.HANDED, Phase.RUNNING, Phase.FINISHED})

MOVES: dict[Phase, frozenset[Phase]] = {
    Phase.CLAIMED: frozenset({Phase.AHEAD, Phase.QUEUED, Phase.HANDED, Phase.RUNNING}),
    Phase.AHEAD: frozenset({Phase.QUEUED, Phase.HANDED}),
    Phase.QUEUED: frozenset({Phase.HANDED}),
    Phase.HANDED: frozenset({Phase.QUEUED, Phase.RUNNING, Phase.FINISHED, Phase.UNSTARTED}),
    Phase.RUNNING: frozenset({Phase.FINISHED}),
    Phase.FINISHED: frozenset({Phase.RECORDED}),
    Phase.UNSTARTED: frozenset(),
    # Given up once its thread is done, or handed back; timed out if its deadline came first.
    Phase.EXPIRED: frozenset({Phase.HANDED_BACK, Phase.GIVEN_UP, Phase.TIMED_OUT, Phase.SET_APART}),
    Phase.LOST: frozenset(),
}
# Stops a live try may take: expired before it finished; lost, handed back at any time;
# timed out (or set apart) once a thread has it.
for _phase in _LIVE:
    MOVES[_phase] = MOVES[_phase] | {Phase.LOST, Phase.HANDED_BACK}
    if _phase is not Phase.FINISHED:
        MOVES[_phase] |= {Phase.EXPIRED}
    if _phase in _ON_THREAD:
        MOVES[_phase] |= {Phase.TIMED_OUT, Phase.SET_APART}
# A try the watchdog stopped is given up, never recorded; the others end where they are.
for _phase in STOPPED - {Phase.EXPIRED, Phase.LOST}:
    MOVES[_phase] = frozenset()


class InvalidMove(RuntimeError):
    """A try was asked to move where its phase does not allow."""


@dataclass(eq=False)
class Held:
    """One claimed try, from its claim until its outcome is written."""

    claim: Claim
    phase: Phase = Phase.CLAIMED
    # Set once nothing of it runs, or ever will, on this worker's threads: its thread has
    # returned, or it was taken back before a thread had it (made with the claim, so a burst
    # does not pay for it).
    done: threading.Event = field(default_factory=threading.Event)
    queued_at: float | None = None  # monotonic; set while it waits for a thread
    # Monotonic: a thread that takes it later than this does not start it (``START_LATE``).
    start_by: float = float("inf")
    # Why its thread did not start it (too late, its lock not seen held): handed back unrun.
    unstarted: str | None = None
    # Monotonic: when the engine clock was read for the lease its worker last saw written
    # (its claim, a renewal, a re-assertion): the watchdog counts its deadline from it.
    confirmed_at: float = float("-inf")
    # Monotonic: when it was told to stop because its claim is gone (expired, or lost).
    told_at: float | None = None
    # The socket of its thread's database connection, read on that thread as the try
    # starts: shut under a stopped try that runs on, which may be waiting on it (the
    # watchdog); None where there is none.
    db_socket: int | None = None
    nudged: bool = False
    thread_id: int | None = None  # the thread running it, for the watchdog's last word
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def move(self, to: Phase) -> None:
        """Move to ``to``; ``InvalidMove`` if its phase does not allow it."""
        with self._lock:
            self._move(to)

    def advance(self, to: Phase) -> bool:
        """A thread's move along the try's life: made unless the try was stopped meanwhile
        (False: it stays stopped); ``InvalidMove`` for a move its phase does not allow."""
        with self._lock:
            if self.phase in STOPPED:
                return False
            self._move(to)
            return True

    def stop(self, to: Phase, *, unless: frozenset[Phase] = frozenset()) -> bool:
        """Move to a stopped phase unless it is in one of ``unless`` (False: left there)."""
        with self._lock:
            if self.phase in unless:
                return False
            self._move(to)
            return True

    def _move(self, to: Phase) -> None:
        if to not in MOVES[self.phase]:
            raise InvalidMove(
                f"attempt id={self.claim.attempt_id}: a try {self.phase.value} cannot be {to.value}"
            )
        self.phase = to

    @property
    def expired(self) -> bool:
        return self.phase is Phase.EXPIRED
