"""The server sessions a real ``run_cadence`` worker holds, counted by the server, against the
budget docs/reference/settings.md states ("Connections per worker"): one per busy try
thread, whether or not its job uses the database, plus the engine's own, the session lock's
and, on PostgreSQL, the ``LISTEN`` one; one more while the overdue probe reads. No notifier
(``CADENCE_NOTIFY`` unset) and no metrics scrape here: each would add one.
"""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path

import pytest
from django.db import connection

from benchmarks.fleet import wait_until
from django_cadence.models import Attempt, Status

pytestmark = [
    pytest.mark.process,
    pytest.mark.servers("session locks"),
    pytest.mark.django_db(transaction=True),
]

CONCURRENCY = 3
SAMPLES = 30
SETTINGS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "settings.md"
STATED = re.compile(
    r"N \+ (\d+) on PostgreSQL, N \+ (\d+) while its overdue probe reads; "
    r"N \+ (\d+) and N \+ (\d+) on MariaDB/MySQL"
)


def stated_budget(vendor: str) -> tuple[int, int]:
    """What the settings reference states for a worker whose N threads are busy: the
    sessions besides the threads', and one more while the overdue probe reads."""
    match = STATED.search(" ".join(SETTINGS_PAGE.read_text().split()))
    assert match, "the settings reference no longer states the budget in the words expected"
    pg, pg_probe, maria, maria_probe = (int(n) for n in match.groups())
    return {"postgresql": (pg, pg_probe), "mysql": (maria, maria_probe)}[vendor]


def worker_sessions() -> int:
    """Client sessions on the test database, but this test's own."""
    sql = {
        "postgresql": "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
        "mysql": "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
        "WHERE DB = DATABASE() AND ID <> CONNECTION_ID()",
    }[connection.vendor]
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return int(cursor.fetchone()[0])


def sampled() -> list[int]:
    counts = []
    for _ in range(SAMPLES):
        counts.append(worker_sessions())
        time.sleep(0.1)
    return counts


def test_a_worker_holds_the_sessions_the_budget_states(worker, due_schedule):
    besides, with_probe = stated_budget(connection.vendor)
    child = worker("budget", concurrency=CONCURRENCY).wait_started()
    wait_until(lambda: worker_sessions() == besides, timeout=20, message="an idle worker")
    # The count most samples show: a sample taken while the server lists a session being
    # set up or torn down may miss one; none may show more than the budget.
    idle = sampled()
    assert statistics.mode(idle) == besides, idle
    assert max(idle) <= with_probe, idle

    # Jobs that never touch the database: their threads hold a session all the same.
    for _ in range(CONCURRENCY):
        due_schedule(executor="tests.jobs.sleep_for", payload={"seconds": 60})
    wait_until(
        lambda: Attempt.objects.filter(status=Status.RUNNING).count() == CONCURRENCY,
        timeout=20,
        message="every try thread busy",
    )
    busy = sampled()
    assert statistics.mode(busy) == CONCURRENCY + besides, busy
    assert max(busy) <= CONCURRENCY + with_probe, busy
    assert child.alive
