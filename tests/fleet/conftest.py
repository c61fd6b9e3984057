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

from benchmarks.fleet import Worker, child_env, database_env, run_cadence_args
from tests.support.attempts import make_due


@pytest.fixture
def worker(transactional_db, tmp_path, request):
    """Start ``run_cadence`` children: ``worker("A", settings={"CADENCE_LEASE": 2})``
    (``env``: more environment variables for the child; ``queues``: its ``--queues``).

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
        queues: str | None = None,
    ) -> Worker:
        args = run_cadence_args(
            "tests.settings", name, once=once, concurrency=concurrency, max_tick=max_tick
        )
        if queues is not None:
            args += ["--queues", queues]
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
def due_schedule(transactional_db, make_schedule):
    """Create hourly interval schedules whose next occurrence was a second ago (so: due now).

    ``due_schedule(executor=..., payload=..., due=False)`` creates one that is not due yet;
    ``tests.support.attempts.make_due(schedule)`` makes it due later.
    """

    def create(*, due: bool = True, **fields: Any) -> Any:
        schedule = make_schedule(**{"interval": timedelta(hours=1), **fields})
        if due:
            make_due(schedule)
        return schedule

    return create
