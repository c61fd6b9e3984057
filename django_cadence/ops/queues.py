"""Queues as the fleet serves them: which the live workers serve, and the due work waiting in
each, for the health reasons (``unserved_queue``) and the metrics.

A live worker registered with no queues serves every queue. A queue nobody serves is one with
ready attempts of enabled schedules and no live worker serving it: they wait until one starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Min

from ..models import Attempt, Schedule
from ..schedule.queues import InvalidQueue, parse_queues
from .status import live_workers

QUEUES_NAMED = 10  # the most unserved queues a reason names


def names_of(registered: str) -> set[str] | None:
    """The queue names of a worker's ``queues`` column; None for every queue."""
    if not registered:
        return None
    try:
        return {share.name for share in parse_queues(registered)}
    except InvalidQueue:
        return set()  # not written by run_cadence: it serves nothing known


def live_serving(now: datetime) -> list[set[str] | None]:
    """The queues of each live worker (None: every queue)."""
    return [names_of(q) for q in live_workers(now).values_list("queues", flat=True)]


def unserved(now: datetime, serving: list[set[str] | None]) -> list[str]:
    """The queues (sorted, at most ``QUEUES_NAMED``) with ready attempts of enabled schedules
    that none of the live workers (``serving``: the queues of each) serves; none while no worker
    is live (``no_worker`` says that) or while one serves every queue."""
    if not serving or any(names is None for names in serving):
        return []
    served = set().union(*(names for names in serving if names is not None))
    waiting = (
        Attempt.objects.ready(now)
        .filter(schedule__enabled=True)
        .exclude(schedule__queue__in=served)
        .values_list("schedule__queue", flat=True)
        .order_by("schedule__queue")
        .distinct()
    )
    return list(waiting[:QUEUES_NAMED])


@dataclass(frozen=True)
class QueueState:
    """One queue as the metrics show it."""

    name: str
    ready: int  # ready attempts of enabled schedules
    oldest_wait: timedelta | None  # how long the oldest of them has waited
    workers: int  # live workers serving it


def queue_states(now: datetime) -> list[QueueState]:
    """Every queue a schedule names, with its ready work and the live workers serving it."""
    names = set(Schedule.objects.values_list("queue", flat=True).distinct())
    ready = {
        row["schedule__queue"]: row
        for row in Attempt.objects.ready(now)
        .filter(schedule__enabled=True)
        .values("schedule__queue")
        .annotate(count=Count("id"), oldest=Min("retry_at"))
        .order_by()
    }
    serving = live_serving(now)
    states = []
    for name in sorted(names | set(ready)):
        row = ready.get(name)
        oldest = row["oldest"] if row else None
        states.append(
            QueueState(
                name=name,
                ready=row["count"] if row else 0,
                oldest_wait=max(now - oldest, timedelta(0)) if oldest else None,
                workers=sum(1 for names in serving if names is None or name in names),
            )
        )
    return states
