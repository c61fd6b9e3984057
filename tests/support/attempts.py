"""Schedules made due now and the attempts a test waits for, read fresh from the database:
what a test beside real ``run_cadence`` workers (or the engine's clock) looks at."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from benchmarks.fleet import wait_until


def make_due(schedule, *, ago: timedelta = timedelta(seconds=1)) -> None:
    """Rewind an interval schedule so that its next occurrence was ``ago`` ago.

    Creation time is rewound with ``next_run_at``: the engine never catches up occurrences
    from before a schedule existed.
    """
    from django.utils import timezone

    from django_cadence.models import Schedule

    occurrence = timezone.now() - ago
    anchor = occurrence - schedule.interval
    Schedule.objects.filter(pk=schedule.pk).update(
        created_at=anchor, enabled_at=anchor, next_run_at=occurrence
    )
    schedule.refresh_from_db()


def attempt_of(schedule):
    """The one attempt of ``schedule`` (asserting there is exactly one), fresh from the DB."""
    from django_cadence.models import Attempt

    attempts = list(Attempt.objects.filter(schedule=schedule))
    assert len(attempts) == 1, [(a.occurrence_at, a.status) for a in attempts]
    return attempts[0]


def wait_for_status(schedule, *statuses: str, timeout: float = 15.0, **extra: Any):
    """Wait until ``schedule`` has an attempt in one of ``statuses`` (and ``extra`` fields)."""
    from django_cadence.models import Attempt

    return wait_until(
        lambda: Attempt.objects.filter(schedule=schedule, status__in=statuses, **extra).first(),
        timeout=timeout,
        message=f"an attempt of {schedule.name} in {statuses} {extra or ''}",
    )


def failed_on_time(schedule):
    """Record that the engine planned ``schedule``'s first occurrence on its instant and
    that it was dead-lettered: the schedule had its chance (overdue counts from there)."""
    from datetime import timedelta

    from django_cadence.models import Attempt, Schedule
    from django_cadence.schedule import specs

    first = specs.next_occurrence(schedule.spec(), schedule.enabled_at or schedule.created_at)
    Attempt.objects.create(
        schedule=schedule,
        occurrence_at=first,
        status="dead_letter",
        tries=3,
        finished_at=first + timedelta(seconds=1),
        created_at=first,
        error="RuntimeError: down",
    )
    Schedule.objects.filter(pk=schedule.pk).update(last_run_at=first)
    schedule.refresh_from_db()
