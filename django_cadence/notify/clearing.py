"""What resolves an open episode, judged by a worker's probe (``sender``) from the database:

- ``dead_letter``: the schedule succeeded since, or none of its dead letters is left
  (retried or discarded);
- ``failing``: the schedule succeeded since;
- ``overdue``: the schedule is no longer overdue (it succeeded, or was paused);
- ``paused``: the schedule was resumed;
- ``no_worker``: a worker is live;
- ``worker_unhealthy``: a worker on that host, started since, has run ``UNHEALTHY_SETTLED``;
- ``unserved_queue``: a live worker serves the queue, or no due work waits in it;
- any schedule's episode: the schedule was deleted.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ..models import Attempt, Event, Notice, Schedule, Status, Worker
from ..models.overdue import silence_of, with_last_success
from ..models.worker import worker_timeout
from ..schedule.queues import InvalidQueue, parse_queues
from . import episodes

UNHEALTHY_SETTLED = timedelta(minutes=1)


def resolve_cleared(now: datetime) -> int:
    """Resolve every open episode that has cleared as of ``now``; returns how many."""
    resolved = 0
    for notice in Notice.objects.open().order_by("opened_at"):
        why = cleared(notice, now, worker_timeout())
        if why and episodes.resolve(notice, now, why):
            resolved += 1
    return resolved


def cleared(notice: Notice, now: datetime, timeout: timedelta) -> str:
    """Why ``notice`` has cleared, or "" while it has not."""
    if notice.event == Event.NO_WORKER:
        live = Worker.objects.live(now, timeout).exists()
        return "a worker is live" if live else ""
    if notice.event == Event.WORKER_UNHEALTHY:
        return _replaced(notice, now, timeout)
    if notice.event == Event.UNSERVED_QUEUE:
        return _served(notice.name, now, timeout)
    schedule: Any = (
        with_last_success(Schedule.objects.filter(pk=notice.schedule_id)).first()
        if notice.schedule_id is not None
        else None
    )
    if schedule is None:
        return "the schedule was deleted"
    succeeded = schedule.last_success_at is not None and schedule.last_success_at > notice.opened_at
    if notice.event == Event.PAUSED:
        return "resumed" if schedule.enabled else ""
    if notice.event == Event.OVERDUE:
        silence = silence_of(schedule, schedule.last_success_at, now)
        if silence.overdue:
            return ""
        return "succeeded again" if succeeded else "no longer overdue"
    if succeeded:
        return "succeeded again"
    if notice.event == Event.DEAD_LETTER:
        left = Attempt.objects.filter(schedule_id=schedule.pk, status=Status.DEAD_LETTER)
        return "" if left.exists() else "its dead letters were retried or discarded"
    return ""


def _served(queue: str, now: datetime, timeout: timedelta) -> str:
    """Why the queue's episode cleared: a live worker serves it, or nothing waits in it."""
    for registered in Worker.objects.live(now, timeout).values_list("queues", flat=True):
        try:
            if not registered or queue in {s.name for s in parse_queues(registered)}:
                return "a live worker serves it"
        except InvalidQueue:
            continue
    waiting = Attempt.objects.ready(now).filter(schedule__enabled=True, schedule__queue=queue)
    return "" if waiting.exists() else "no due work waits in it"


def _replaced(notice: Notice, now: datetime, timeout: timedelta) -> str:
    settled = Worker.objects.live(now, timeout).filter(
        host=notice.name,
        started_at__gt=notice.opened_at,
        started_at__lte=now - UNHEALTHY_SETTLED,
    )
    return "a worker started since on the host runs" if settled.exists() else ""
