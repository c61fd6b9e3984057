"""Writing the outcomes of a worker's tries, on the engine's thread: what its threads handed
back, in batches (the successes in one statement), and the failure of tries past their
deadline. The fenced writes themselves are :mod:`.outcomes`.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from ..executors.log_text import log_value
from . import outcomes
from .claims import Claim
from .execution import TryResult
from .held import Phase

if TYPE_CHECKING:
    from .tries import HeldTries

logger = logging.getLogger("django_cadence.engine")

# The phases a try past its deadline is timed out from (one claimed ahead, queued, or
# unstarted has not started: it is handed back before long; an expired one is given up).
_TIMED_OUT_FROM = frozenset({Phase.HANDED, Phase.RUNNING, Phase.FINISHED})


class Recorder:
    """The outcomes of one worker's held tries."""

    def __init__(self, tries: HeldTries) -> None:
        self.tries = tries

    def record_finished(self) -> None:
        """Write the outcome of every finished try: the successes in one statement.

        A write that fails (the database went away) raises before the batch is forgotten, and
        the next tick writes what is still in flight; fenced writes make that harmless.
        Starts not yet announced are announced first, so a try's start precedes its end.
        """
        tries = self.tries
        tries.running.announce_starts()
        batch = tries.running.take_finished()
        if not batch:
            return
        now = tries.clock.now()  # one reading for the whole batch
        successes = []
        for claim, result in batch:
            held = tries.held.get(claim.token)
            if held is None or held.expired:
                # Timed out meanwhile (recorded as failed), recorded already, lost, or stopped
                # by the watchdog (given up instead).
                tries.lost.pop(claim.token, None)
                continue
            if result.kind == "ok" and not result.committed and not claim.cancel_event.is_set():
                successes.append((claim, result.value))
            else:
                self._record(claim, result, now)
                self._recorded(claim)
        landed = outcomes.record_successes(successes, now)
        if len(landed) < len(successes):
            tries.on_lost()  # fenced out: its lock may be gone too
        for claim, _ in successes:
            self._recorded(claim)
        tries.running.forget(len(batch))

    def _recorded(self, claim: Claim) -> None:
        held = self.tries.held.pop(claim.token, None)
        if held is not None:
            held.stop(Phase.RECORDED)

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
            self.tries.on_lost()
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
            self.tries.on_lost()  # fenced out: its lock may be gone too

    def enforce_timeouts(self, now: datetime) -> None:
        """Fail the tries past their deadline; their threads are told to stop.

        A thread still in its job gives its slot back at once and is kept apart as stuck
        until the job returns (:mod:`.stuck`): a job that ignores the cancel event cannot
        hold a slot for ever.
        """
        tries = self.tries
        expired = [
            (token, held)
            for token, held in tries.held.items()
            if now >= held.claim.deadline and held.phase in _TIMED_OUT_FROM
        ]
        for token, held in expired:
            claim = held.claim
            claim.cancel_event.set()
            tries.held.pop(token)
            tries.running.set_apart(held, now)
            outcomes.record_failure(
                claim,
                f"timed out after {claim.max_runtime.total_seconds():g} s",
                now,
                outcome_known=False,  # the try may still be running its step
            )
