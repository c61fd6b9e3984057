"""When the engine ticks next: the earliest thing it must do (a due occurrence or ready
retry, less the claim-ahead horizon; a lease to renew or recover; a deadline; a hand-back),
bounded by the maximum tick.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..conf import cadence_settings
from . import next_event

if TYPE_CHECKING:
    from .loop import Engine


def sleep_seconds(engine: Engine, now: datetime) -> float:
    """Until the earliest thing this engine must do, bounded by the maximum tick."""
    candidates = [now + timedelta(seconds=engine.max_tick)]
    # While work flows (this tick claimed some), the tries' ends wake the engine and the
    # next tick claims and recovers anyway: up to three queries fewer on the busy path.
    flowing = engine.claimed_last_tick > 0 and bool(engine.tries)
    next_due = engine._due.next_due(now, flowing=flowing)
    next_ready = next_lease = None
    open_queues = engine.shares.open(engine.tries.claims()).names
    if not flowing and engine.tries.due() < engine.concurrency and open_queues != ():
        next_ready = next_event.next_ready(open_queues)
    if not flowing:
        next_lease = next_event.next_lease_end()
    if next_due:  # a slot left to plan on its instant is not worth waking for earlier
        deferred = engine._due.deferred(next_due)
        candidates.append(next_due if deferred else _ahead_of(engine, next_due, now))
    if next_ready:
        candidates.append(_ahead_of(engine, next_ready, now))
    if next_lease:
        candidates.append(next_lease + cadence_settings.RECOVERY_GRACE)
    wake_at = engine._lost_workers.wake_at()
    if wake_at:
        candidates.append(wake_at)  # a dead worker's tries start at once
    if engine.tries:
        candidates.append(engine._next_heartbeat or now)
        candidates += engine.tries.deadlines()
    stuck_at = engine.tries.stuck.next_change(now)  # a timed-out job stuck, or back, by then
    if stuck_at:
        candidates.append(stuck_at)
    handback = engine.tries.next_handback(now)
    if handback:
        candidates.append(handback)
    earliest = min(candidates)
    # From the clock read now, after this method's queries: counted from ``now`` the
    # engine would wake as late as those queries took.
    return max(0.0, (earliest - engine.clock.now()).total_seconds())


def _ahead_of(engine: Engine, at: datetime, now: datetime) -> datetime:
    """When to plan or claim what is due at ``at``: the claim-ahead horizon before it;
    once that is past, now if the last tick's horizon fell short of ``at`` (it woke a
    moment before the horizon reached it, and took longer than that moment), else at
    ``at`` itself (what that tick left, beyond a budget, waits for its instant)."""
    early = at - engine.ahead
    if early > now:
        return early
    missed = engine.claiming and engine._horizon is not None and at > engine._horizon
    return now if missed else at
