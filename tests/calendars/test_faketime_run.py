"""A real engine under a faked clock across a holiday and a weekend: what ran, what was skipped.

Each day from Thursday 25 to Tuesday 30 March 2027, one real ``run_cadence --once`` child
runs with libfaketime preloaded (``LD_PRELOAD``, ``FAKETIME="@<day> 09:00:05"``), so the
engine, the planner and the job all read that day's clock. The schedule fires daily at 09:00
UTC under a calendar that excludes Friday 26 March (a holiday) on top of weekends. What ran is
what the job itself recorded (``tests.jobs.noop`` writes each execution's occurrence and
start); what was skipped, and why, is read from the attempts.

On SQLite the engine's *now* is the process's own clock (one engine per database file, on its
host), which libfaketime moves. On PostgreSQL and MariaDB it is the server's clock, which a
faked child cannot move: the test runs on SQLite only. libfaketime is a test dependency
(``scripts/test-machine.sh`` installs it): a missing library fails the test, never skips it.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection

from benchmarks.chaos_app.jobs import EXECUTIONS_ENV
from benchmarks.chaos_checks import read_execution_lines
from benchmarks.fleet import Worker, database_env
from django_cadence.models import Attempt, Calendar, Schedule, Status

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "sqlite",
        reason="the engine's now is the database server's clock, which libfaketime cannot move",
    ),
]

LIBFAKETIME = Path(
    os.environ.get("CADENCE_LIBFAKETIME", "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
)
DAYS = [datetime(2027, 3, day, 9, 0, tzinfo=UTC) for day in range(25, 31)]  # Thu 25 .. Tue 30


def run_engine_on(day: datetime, tmp_path: Path, executions: Path) -> None:
    """One real ``run_cadence --once`` pass whose clock reads ``day`` plus five seconds."""
    name = f"engine-{day:%a-%d}"
    fake_now = day + timedelta(seconds=5)
    env = {
        **os.environ,
        **database_env(),
        "PYTHONUNBUFFERED": "1",
        EXECUTIONS_ENV: str(executions),
        "LD_PRELOAD": str(LIBFAKETIME),
        "FAKETIME": f"@{fake_now:%Y-%m-%d %H:%M:%S}",
        "TZ": "UTC",
        # Timeouts and the engine's intervals keep measuring real time.
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }
    args = [sys.executable, "-m", "django", "run_cadence", "--settings=tests.settings", "--once"]
    child = Worker(name, [*args, "--worker-id", name], env, tmp_path)
    assert child.wait(60) == 0, child.output()


def test_a_real_engine_across_a_holiday_and_a_weekend(tmp_path):
    if not LIBFAKETIME.exists():
        pytest.fail(f"{LIBFAKETIME} is missing: apt-get install libfaketime (make system does)")
    weekends = Calendar.objects.create(name="weekends", rules={"weekdays": ["sat", "sun"]})
    holidays = Calendar.objects.create(
        name="company-holidays", base=weekends, rules={"dates": ["2027-03-26"]}
    )
    schedule = Schedule.objects.create(
        name="daily-close",
        kind="cron",
        cron="0 9 * * *",
        timezone="UTC",
        executor="tests.jobs.noop",
        calendars=[holidays.name],
        created_at=DAYS[0] - timedelta(hours=1),
    )
    assert schedule.next_run_at == DAYS[0]
    executions = tmp_path / "executions"
    executions.mkdir()

    for day in DAYS:
        run_engine_on(day, tmp_path, executions)

    started = [line for line in read_execution_lines(executions) if "start" in line]
    ran = [datetime.fromtimestamp(line["occurrence"], UTC) for line in started]
    assert sorted(ran) == [DAYS[0], DAYS[4], DAYS[5]]  # Thursday, Monday, Tuesday
    for line in started:  # each ran on its own day, by the job's own (faked) clock
        occurrence = datetime.fromtimestamp(line["occurrence"], UTC)
        start = datetime.fromtimestamp(line["start"], UTC)
        assert occurrence <= start < occurrence + timedelta(minutes=1)

    history = [
        (a.occurrence_at, a.status, a.error)
        for a in Attempt.objects.filter(schedule=schedule).order_by("occurrence_at")
    ]
    assert history == [
        (DAYS[0], Status.SUCCEEDED, ""),
        # The holiday and the weekend after it: one record for the three days in a row.
        (
            DAYS[1],
            Status.SKIPPED,
            (
                "skipped: calendar company-holidays (3 occurrences from "
                "2027-03-26T09:00:00+00:00 to 2027-03-28T09:00:00+00:00)"
            ),
        ),
        (DAYS[4], Status.SUCCEEDED, ""),
        (DAYS[5], Status.SUCCEEDED, ""),
    ]
    schedule.refresh_from_db()
    assert schedule.occurrence_count == 3  # the excluded days do not count
    assert schedule.next_run_at == datetime(2027, 3, 31, 9, 0, tzinfo=UTC)
