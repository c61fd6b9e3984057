"""Fixtures for tests with real ``run_cadence`` processes.

The tests use ``transaction=True`` so what they write is committed and visible to the
children, and the children use the test database pytest-django created (its name is passed
in the environment). Settings a test shrinks (lease, recovery grace, ...) reach the child as
``CADENCE_TEST_OVERRIDES`` JSON, applied at the end of ``tests/settings.py``. Children are
killed at teardown, before the database is flushed; their logs are attached to failed tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")

DB_NAME_ENV = {
    "sqlite": "CADENCE_SQLITE_NAME",
    "postgresql": "CADENCE_PG_NAME",
    "mysql": "CADENCE_MYSQL_NAME",
}


def wait_until(
    predicate: Callable[[], T], *, timeout: float = 15.0, message: str = "condition"
) -> T:
    """Poll ``predicate`` every 0.1 s until it returns something truthy; return that."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {message}")
        time.sleep(0.1)


class Worker:
    """One ``run_cadence`` child process, with its output in files."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.args = args
        self.log_path = log_dir / f"{name}.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.poll()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def send(self, signum: int) -> None:
        self.process.send_signal(signum)

    def kill(self) -> None:
        """``kill -9``: no drain, no release; leases are left to expire."""
        if self.alive:
            self.process.kill()
        self.process.wait(10)

    def wait(self, timeout: float) -> int:
        """The exit code, waiting up to ``timeout`` seconds for it."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"worker {self.name} still running after {timeout:g} s") from None

    def wait_for_log(self, text: str, timeout: float = 15.0) -> None:
        def seen() -> bool:
            if text in self.output():
                return True
            if not self.alive:
                raise AssertionError(
                    f"worker {self.name} exited ({self.returncode}) before logging {text!r}"
                )
            return False

        wait_until(seen, timeout=timeout, message=f"{text!r} in the log of worker {self.name}")

    def wait_started(self, timeout: float = 20.0) -> Worker:
        self.wait_for_log("engine started", timeout)
        return self


def _database_env() -> dict[str, str]:
    """Point a child at the test database this test process uses."""
    from django.db import connection

    vendor = connection.vendor
    name = str(connection.settings_dict["NAME"])
    if vendor == "sqlite":
        name = str(Path(name).resolve())
    return {"CADENCE_TEST_DB": vendor, DB_NAME_ENV[vendor]: name}


@pytest.fixture
def worker(transactional_db, tmp_path, request):
    """Start ``run_cadence`` children: ``worker("A", settings={"CADENCE_LEASE": 2})``.

    Requesting ``transactional_db`` orders the teardown: every child is killed before the
    database is flushed.
    """
    started: list[Worker] = []
    request.node.cadence_workers = started
    db_env = _database_env()

    def start(
        name: str,
        *,
        once: bool = False,
        concurrency: int | None = None,
        max_tick: float | None = 0.25,
        settings: dict[str, Any] | None = None,
    ) -> Worker:
        args = [
            sys.executable,
            "-m",
            "django",
            "run_cadence",
            "--settings=tests.settings",
            "--worker-id",
            name,
        ]
        if once:
            args.append("--once")
        if concurrency is not None:
            args += ["--concurrency", str(concurrency)]
        if max_tick is not None:
            args += ["--max-tick", str(max_tick)]
        env = {
            **os.environ,
            **db_env,
            "PYTHONUNBUFFERED": "1",
            "CADENCE_TEST_OVERRIDES": json.dumps(settings or {}),
        }
        child = Worker(name, args, env, tmp_path)
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
