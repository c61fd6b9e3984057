"""One engine per SQLite file; on PostgreSQL and MariaDB engines run side by side."""

from __future__ import annotations

import pytest
from django.db import connection

from django_cadence.models import Status
from tests.support.attempts import wait_for_status

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_second_engine_refused_on_sqlite_and_side_by_side_elsewhere(worker, due_schedule):
    first = worker("first", concurrency=1).wait_started()
    second = worker("second", concurrency=1)

    if connection.vendor == "sqlite":
        assert second.wait(20) == 1
        refusal = second.output()
        assert "SQLite supports one engine per database file" in refusal
        assert f"pid {first.pid}" in refusal  # names the engine holding the file
        assert "Traceback" not in refusal  # a clear message, not a crash
        assert "engine started" not in refusal
        # The first engine is unaffected and still runs what comes due.
        schedule = due_schedule(executor="tests.jobs.noop")
        assert wait_for_status(schedule, Status.SUCCEEDED).worker == "first"
        assert first.alive
    else:
        second.wait_started()
        # Two slow jobs and one slot each: both engines must work at the same time.
        schedules = [
            due_schedule(executor="tests.jobs.sleep_for", payload={"seconds": 1.5})
            for _ in range(2)
        ]
        attempts = [wait_for_status(s, Status.SUCCEEDED, timeout=20) for s in schedules]
        assert {a.worker for a in attempts} == {"first", "second"}
        assert first.alive
        assert second.alive
        for child in (first, second):
            assert " ERROR " not in child.output()
            assert "attempt lost" not in child.output()
