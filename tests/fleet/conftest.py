"""Fixtures for tests with real ``run_cadence`` processes.

The tests use ``transaction=True`` so what they write is committed and visible to the
children, and the children use the test database pytest-django created (its name is passed
in the environment). Settings a test shrinks (lease, recovery grace, ...) reach the child as
``CADENCE_TEST_OVERRIDES`` JSON, applied at the end of ``tests/settings.py``. Children are
killed at teardown, before the database is flushed; their logs are attached to failed tests.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from benchmarks.fleet import (
    Worker,
    child_env,
    database_env,
    run_cadence_args,
    wait_until,
)


@pytest.fixture
def worker(transactional_db, tmp_path, request):
    """Start ``run_cadence`` children: ``worker("A", settings={"CADENCE_LEASE": 2})``
    (``env``: more environment variables for the child).

    Requesting ``transactional_db`` orders the teardown: every child is killed before the
    database is flushed.
    """
    started: list[Worker] = []
    request.node.cadence_workers = started
    db_env = database_env()

    def start(
        name: str,
        *,
        once: bool = False,
        concurrency: int | None = None,
        max_tick: float | None = 0.25,
        settings: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
    ) -> Worker:
        args = run_cadence_args(
            "tests.settings", name, once=once, concurrency=concurrency, max_tick=max_tick
        )
        child = Worker(name, args, {**child_env(db_env, settings), **(env or {})}, tmp_path)
        started.append(child)
        return child

    yield start
    for child in started:
        child.kill()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach every child's log to a failed test's report."""
    report = yield
    if report.failed:
        for child in getattr(item, "cadence_workers", ()):
            report.sections.append(
                (f"run_cadence {child.name} (exit {child.returncode})", child.output())
            )
    return report


@pytest.fixture
def due_schedule(transactional_db):
    """Create hourly interval schedules whose next occurrence was ``ago`` ago (so: due now).

    Creation time is rewound with ``next_run_at`` (the engine never catches up occurrences from
    before a schedule existed). ``due_schedule(executor=..., payload=..., due=False)`` creates
    one that is not due yet; ``make_due(schedule)`` makes it due later.
    """
    from django_cadence.models import Schedule

    counter = iter(range(1, 1_000_000))

    def create(*, due: bool = True, **fields: Any) -> Schedule:
        defaults: dict[str, Any] = {
            "name": f"process-{next(counter)}",
            "kind": "interval",
            "interval": timedelta(hours=1),
            "executor": "tests.jobs.noop",
            "payload": {},
        }
        schedule = Schedule.objects.create(**{**defaults, **fields})
        if due:
            make_due(schedule)
        return schedule

    return create


def make_due(schedule, *, ago: timedelta = timedelta(seconds=1)) -> None:
    """Rewind an interval schedule so that its next occurrence was ``ago`` ago."""
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
