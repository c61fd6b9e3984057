"""The planner's plain-SQL insert writes what the ORM would, on every database."""

from datetime import timedelta

import pytest
from django.db import connection
from django.forms.models import model_to_dict

from django_cadence import batch_writes
from django_cadence.models import Attempt

pytestmark = pytest.mark.django_db
SECOND = timedelta(seconds=1)


def planned_rows(schedule, clock, start=0, count=3):
    """Rows the planner makes: pending, skipped, and a missed record with its JSON outcome."""
    rows = []
    for n in range(start, start + count):
        at = clock.now() + n * SECOND
        kind = n % 3
        if kind == 0:
            rows.append(Attempt(schedule=schedule, occurrence_at=at, retry_at=at + SECOND))
        elif kind == 1:
            rows.append(
                Attempt(
                    schedule=schedule,
                    occurrence_at=at,
                    status="skipped",
                    finished_at=clock.now(),
                    error="skipped: running <b>",
                )
            )
        else:
            rows.append(
                Attempt(
                    schedule=schedule,
                    occurrence_at=at,
                    status="missed",
                    finished_at=clock.now(),
                    error="missed 2 occurrence(s)",
                    outcome={"missed": 2, "first": at.isoformat(), "last": "é\n"},
                )
            )
    return rows


def stored(schedule):
    return [
        model_to_dict(a, exclude=("id", "schedule", "created_at"))
        for a in Attempt.objects.filter(schedule=schedule).order_by("occurrence_at")
    ]


def test_planned_rows_read_back_as_the_orm_writes_them(schedule_at, clock):
    ours, theirs = schedule_at(), schedule_at()
    batch_writes.insert_planned(connection.alias, planned_rows(ours, clock), now=clock.now())
    Attempt.objects.bulk_create(planned_rows(theirs, clock))
    assert stored(ours) == stored(theirs)
    assert len(stored(ours)) == 3
    assert {a.created_at for a in Attempt.objects.filter(schedule=ours)} == {clock.now()}


def test_a_planned_row_that_exists_already_is_a_quiet_no_op(schedule_at, clock):
    schedule = schedule_at()
    batch_writes.insert_planned(connection.alias, planned_rows(schedule, clock), now=clock.now())
    before = stored(schedule)
    again = planned_rows(schedule, clock, count=4)  # three exist, one is new
    batch_writes.insert_planned(connection.alias, again, now=clock.now())
    after = stored(schedule)
    assert after[:3] == before
    assert len(after) == 4


def test_a_batch_larger_than_a_statement_allows_is_written_whole(schedule_at, clock):
    # SQLite takes 999 parameters a statement: 450 rows of 9 need several statements.
    schedule = schedule_at()
    rows = planned_rows(schedule, clock, count=450)
    batch_writes.insert_planned(connection.alias, rows, now=clock.now())
    assert Attempt.objects.filter(schedule=schedule).count() == 450
