"""Handing tries back unrun, fenced by their tokens, for any worker to claim: those that
waited too long for a thread, those their threads would not start, and on a drain every
try not started yet (or, past its grace, every try held).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..executors.log_text import log_value
from . import leases
from .held import Held, Phase
from .running import UNCONFIRMED
from .tuning import QUEUE_MAX_WAIT

if TYPE_CHECKING:
    from .tries import HeldTries

logger = logging.getLogger("django_cadence.engine")


class HandBacks:
    """The hand-backs of one worker's held tries."""

    def __init__(self, tries: HeldTries) -> None:
        self.tries = tries

    def release_waited_too_long(self) -> None:
        """Hand back tries claimed ahead that found no thread within ``QUEUE_MAX_WAIT``,
        and those whose thread found them too late to start."""
        self.release_queued(older_than=QUEUE_MAX_WAIT)
        self.release_late()

    def release_late(self) -> None:
        """Hand back, unrun, the tries their threads did not start
        (``RunningTries._unstarted``); they stay held until the hand-back is written, to be
        handed back again if it failed."""
        tries = self.tries
        late = tries.running.take_late()
        mine = [held for held in late if tries.held.get(held.claim.token) is held]
        if not mine:
            return
        try:
            leases.release([held.claim for held in mine], tries.clock.now())
        except Exception:
            tries.running.put_back_late(mine)
            raise
        for held in mine:
            self._forget(held)
            claim = held.claim
            logger.warning(
                "attempt handed back id=%s schedule=%s: %s; not started here",
                claim.attempt_id,
                log_value(claim.schedule_name),
                held.unstarted,
            )
        if any(held.unstarted == UNCONFIRMED for held in mine):
            tries.on_lost()  # its lock may be gone: look at it before claiming again

    def release_unstarted(self) -> None:
        """Hand back every try not started yet: waiting for its instant or for a thread."""
        tries = self.tries
        waiting = tries.running.timer.take_all()
        for held in waiting:
            self._forget(held)
        if waiting:
            leases.release([h.claim for h in waiting], tries.clock.now())
        self.release_queued()
        self.release_late()

    def release_queued(self, older_than: float = 0.0) -> None:
        """Hand back tries claimed ahead that waited ``older_than`` seconds for a thread."""
        tries = self.tries
        stale = tries.running.take_queued(older_than)
        if not stale:
            return
        # Its tries are not short enough to queue (``TryBudget.count_as_long``).
        tries.budget.count_as_long()
        for held in stale:
            self._forget(held)
        leases.release([h.claim for h in stale], tries.clock.now())

    def release_all(self) -> None:
        """Cancel what still runs and hand every held try back (a shutdown past its grace)."""
        tries = self.tries
        tries.running.timer.take_all()
        claims = tries.claims()
        for claim in claims:
            claim.cancel_event.set()
        for held in tries.held.values():
            held.stop(Phase.HANDED_BACK)
        tries.held.clear()
        leases.release(claims, tries.clock.now())

    def _forget(self, held: Held) -> None:
        """No longer held: handed back (or about to be)."""
        if self.tries.held.get(held.claim.token) is held:
            del self.tries.held[held.claim.token]
            held.stop(Phase.HANDED_BACK)
