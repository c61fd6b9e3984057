"""A backlog of held-back serial attempts does not stall the claim of everything else.

Found by the chaos harness: a ``queue`` schedule whose head attempt is a retry (or was just
recovered from a killed worker) has its later occurrences ready *earlier* by ``retry_at``.
The claim used to read the ``4 x slots`` earliest ready attempts and then drop the ones held
back; a backlog larger than that window filled it with held-back rows, and the worker claimed
nothing at all, the head and every other schedule's attempts included, until the backlog
went away by itself (it could not).
"""

from datetime import timedelta

import pytest

from django_cadence.engine import leases, outcomes, planner
from django_cadence.models import Attempt, Schedule

pytestmark = pytest.mark.django_db
SECOND = timedelta(seconds=1)


def test_a_backlog_behind_a_retry_does_not_hide_ready_attempts(schedule_at, clock):
    queued = schedule_at(
        interval=SECOND,
        overlap="queue",
        misfire="fire_all",
        retry_base=timedelta(seconds=30),
        retry_cap=timedelta(seconds=30),
    )
    other = schedule_at(interval=timedelta(minutes=5), overlap="allow")
    planner.plan_due(clock.advance(SECOND))
    (head,) = leases.claim(clock.now(), worker="w1", slots=1)
    outcomes.record_failure(head, "boom", clock.now())  # retry in 24 to 30 s
    clock.advance(seconds=100)  # 100 later occurrences wait behind the head's retry
    while planner.plan_due(clock.now()).more:
        pass
    clock.advance(minutes=5)  # the other schedule is due; the head's retry is ready
    while planner.plan_due(clock.now()).more:
        pass
    waiting = Attempt.objects.filter(schedule=queued, status="pending").count()
    assert waiting > 4 * 2 + 1  # more than the claim's window for two slots

    claims = leases.claim(clock.now(), worker="w1", slots=2)

    assert sorted((c.schedule_id, c.occurrence_at) for c in claims) == sorted(
        [
            (queued.pk, head.occurrence_at),  # the head's retry, in occurrence order
            (other.pk, Attempt.objects.get(schedule=other).occurrence_at),
        ]
    )


def test_the_claim_reads_a_burst_in_index_order(clock):
    """A claim's cost does not grow with the backlog.

    Statistics gathered before a burst make a thousand ready attempts look like a few, and
    PostgreSQL may then join, filter and sort all of them to lock the first dozen, on every
    claim (a W5 drain of 3,000 one-shots spent 29 ms per claim so, 0.2 ms in index order).
    The claim turns sorting off for its transaction before its read, which leaves the
    planner the ready index's order.
    """
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    due = clock.now() + SECOND
    Schedule.objects.bulk_create(
        Schedule(
            name=f"burst-{n}",
            kind="once",
            run_at=due,
            executor="tests.jobs.noop",
            created_at=clock.now(),
            enabled_at=clock.now(),
            next_run_at=due,
        )
        for n in range(300)
    )
    while planner.plan_due(clock.advance(SECOND)).more:
        pass
    with CaptureQueriesContext(connection) as queries:
        assert len(leases.claim(clock.now(), worker="w1", slots=8)) == 8
    setup = "SET LOCAL enable_sort = off"
    statements = [q["sql"] for q in queries.captured_queries]
    if connection.vendor != "postgresql":  # MariaDB reads the index in order by itself
        assert not any(sql.startswith("SET") for sql in statements), statements
        return
    (read,) = [sql for sql in statements if "FOR UPDATE" in sql]
    assert read.startswith(f"{setup}; ")  # in the claim's transaction, before its read
    read = read.removeprefix(f"{setup}; ")

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(setup)
        cursor.execute(f"EXPLAIN {read}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Sort" not in plan, plan
    assert "Index Scan using cadence_attempt_ready_idx" in plan, plan
