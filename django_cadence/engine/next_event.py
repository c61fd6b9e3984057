"""When the engine next has something to do: the reads it makes before every sleep.

The earliest next run of an enabled schedule, the earliest ready time of a pending attempt,
and the earliest lease end of a running one. Each is the first row of an index range (the
due, ready and lease indexes), compiled once: the engine asks after every tick.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

from ..models import Attempt, Schedule
from ..store.prepared import PreparedRead
from .tuning import NEXT_DUE_MAX_AGE


def _next_due(_shape: None, _value: None) -> QuerySet[Any, Any]:
    return (
        Schedule.objects.enabled()
        .filter(next_run_at__isnull=False)
        .order_by("next_run_at")
        .values_list("next_run_at")[:1]
    )


def _next_ready(queues: tuple[str, ...] | None, _value: None) -> QuerySet[Any, Any]:
    # Pending rows always have a ``retry_at`` (a constraint); paused schedules' wait, but for
    # manual runs asked for even if paused. Only the queues served: another queue's waiting
    # attempt is not this worker's to wake for.
    queue = Q() if queues is None else Q(schedule__queue__in=queues)
    return (
        Attempt.objects.pending()
        .filter(Q(schedule__enabled=True) | Q(even_if_paused=True))
        .filter(queue)
        .order_by("retry_at")
        .values_list("retry_at")[:1]
    )


def _next_lease_end(_shape: None, _value: None) -> QuerySet[Any, Any]:
    # Running rows always have a lease (a constraint).
    return Attempt.objects.running().order_by("lease_until").values_list("lease_until")[:1]


_NEXT_DUE = PreparedRead(_next_due, ("next_run_at",), None)
_NEXT_READY = PreparedRead(_next_ready, ("retry_at",), None)
_NEXT_LEASE_END = PreparedRead(_next_lease_end, ("lease_until",), None)


def _first(read: PreparedRead, shape: tuple[str, ...] | None = None) -> datetime | None:
    rows = read.rows(Schedule.objects.db, shape)
    return rows[0][0] if rows else None


def next_due() -> datetime | None:
    """The earliest ``next_run_at`` of an enabled schedule; None if none will fire."""
    return _first(_NEXT_DUE)


def next_ready(queues: tuple[str, ...] | None = None) -> datetime | None:
    """When the first pending attempt of an enabled schedule in ``queues`` (None: any queue)
    may start."""
    return _first(_NEXT_READY, queues)


def next_lease_end() -> datetime | None:
    """When the first running attempt's lease runs out."""
    return _first(_NEXT_LEASE_END)


class DueWatch:
    """The next due instant as the engine last read it, and whether a tick must plan.

    Until the next schedule is due there is nothing to plan, and the planner's locking read
    is skipped. A schedule saved since the reading wakes the engine on PostgreSQL
    (``notice``); elsewhere the next reading (at most ``NEXT_DUE_MAX_AGE`` later) sees it.
    """

    def __init__(self) -> None:
        self.at: datetime | None = None  # None: no enabled schedule will fire
        self.read_at: datetime | None = None  # None: not read yet, so plan
        self._changed = False  # a notice said schedules or attempts changed: plan now
        self._stale = False  # the last tick planned: read the next due instant again
        # The earliest slot the last planning left for its instant (``planner.PlanResult``):
        # until then, slots due ahead from it on are not worth another planning read.
        self._deferred: datetime | None = None

    def notice(self) -> None:
        self._changed = True

    def must_plan(self, due_by: datetime, horizon: datetime) -> bool:
        """Whether a slot is due by ``due_by``, or by ``horizon`` (planned ahead) unless the
        last planning left it for its instant."""
        changed, self._changed = self._changed, False
        at = self.at
        due = at is not None and (at <= due_by or (at <= horizon and not self.deferred(at)))
        return changed or due or self.read_at is None

    def planned(self, deferred: datetime | None = None) -> None:
        """What was due is planned: read the next due instant again before sleeping, rather
        than plan again, for nothing, on the reading that made this tick plan."""
        self._stale = True
        self._deferred = deferred

    def deferred(self, at: datetime) -> bool:
        """Whether a slot due at ``at`` waits for its instant to be planned."""
        return self._deferred is not None and at >= self._deferred

    def next_due(self, now: datetime, *, flowing: bool) -> datetime | None:
        """The next due instant; while work flows a reading under ``NEXT_DUE_MAX_AGE`` old
        is reused."""
        fresh = self.read_at is not None and now - self.read_at < NEXT_DUE_MAX_AGE
        if not (flowing and fresh) or self._stale:
            self.at = next_due()
            self.read_at = now
            self._stale = False
        return self.at
