"""The planner's plain-SQL insert writes what the ORM would, on every database."""

from datetime import timedelta

import pytest
from django.db import connection
from django.forms.models import model_to_dict

from django_cadence.models import Attempt
from django_cadence.store import batch_writes, postgresql

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


def test_a_burst_of_pending_rows_reads_back_as_the_orm_writes_it(schedule_at, clock):
    # Status, trigger, error and outcome are the same in every row of a burst, and each
    # schedule's rows share an instant: the statement sends those as one value, not arrays.
    ours = [schedule_at() for _ in range(3)]
    theirs = [schedule_at() for _ in range(3)]

    def burst(schedules):
        at = clock.now() + SECOND
        return [Attempt(schedule=s, occurrence_at=at, retry_at=at) for s in schedules]

    batch_writes.insert_planned(connection.alias, burst(ours), now=clock.now())
    Attempt.objects.bulk_create(burst(theirs))
    for mine, orm in zip(ours, theirs, strict=True):
        assert stored(mine) == stored(orm)
        assert len(stored(mine)) == 1


def test_a_single_planned_row_reads_back_as_the_orm_writes_it(schedule_at, clock):
    ours, theirs = schedule_at(), schedule_at()
    batch_writes.insert_planned(
        connection.alias, planned_rows(ours, clock, start=2, count=1), now=clock.now()
    )
    Attempt.objects.bulk_create(planned_rows(theirs, clock, start=2, count=1))
    assert stored(ours) == stored(theirs)
    assert stored(ours)[0]["outcome"]["last"] == "é\n"


def test_an_array_literal_holds_integers_instants_and_nulls(clock):
    at = clock.now()
    text = postgresql.array_literal([7, None, at])
    assert text == "{7,NULL," + at.isoformat() + "}"
    assert not set(at.isoformat()) & set('{}",\\ ')  # nothing the literal must escape


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


def test_open_attempt_counts_are_pending_and_running_per_schedule(schedule_at, clock):
    from django_cadence.engine import planner

    busy = schedule_at(interval=SECOND * 60, overlap="allow")
    other = schedule_at(interval=SECOND * 60, overlap="allow")
    idle = schedule_at(interval=SECOND * 60, overlap="allow")
    planner.plan_due(clock.advance(minutes=3))  # three pending occurrences each
    oldest = Attempt.objects.filter(schedule=busy).order_by("occurrence_at").first()
    Attempt.objects.filter(pk=oldest.pk).update(
        status="running", claim_token="t", lease_until=clock.now() + SECOND * 30
    )
    Attempt.objects.filter(schedule=idle).update(status="skipped", retry_at=None)
    newest = Attempt.objects.filter(schedule=busy).order_by("occurrence_at").last()
    Attempt.objects.filter(pk=newest.pk).update(tries=1)  # failed once, waits for its retry
    got = batch_writes.open_attempt_counts("default", [busy.pk, idle.pk])
    assert sorted(got) == [(busy.pk, "pending", 2, 1), (busy.pk, "running", 1, 0)]
    assert batch_writes.open_attempt_counts("default", []) == []
    assert other.pk not in {row[0] for row in got}


def test_advancing_schedules_moves_their_slot_and_adds_to_their_counters(schedule_at, clock):
    from django_cadence.models import Schedule

    moved = [schedule_at(interval=SECOND * 60) for _ in range(2)]
    untouched = schedule_at(interval=SECOND * 60)
    Schedule.objects.update(occurrence_count=5, missed_count=1)
    later = clock.now() + SECOND * 600
    batch_writes.advance_schedules(
        "default",
        [s.pk for s in moved],
        next_run_at=later,
        last_run_at=clock.now(),
        fired=2,
        missed=3,
    )
    for schedule in moved:
        schedule.refresh_from_db()
        assert (schedule.next_run_at, schedule.last_run_at) == (later, clock.now())
        assert (schedule.occurrence_count, schedule.missed_count) == (7, 4)
    untouched.refresh_from_db()
    assert (untouched.occurrence_count, untouched.missed_count) == (5, 1)
    assert untouched.next_run_at == clock.now() + SECOND * 60


def test_a_success_is_written_only_to_a_try_still_running_under_its_token(schedule_at, clock):
    """The batch move running -> succeeded: fenced by the token and guarded by the status."""
    at = clock.now()
    rows = [
        Attempt.objects.create(
            schedule=schedule_at(),
            occurrence_at=at,
            status=status,
            claim_token=f"t{n}",
            lease_until=at + SECOND,
            retry_at=at,
            tries=1,
        )
        for n, status in enumerate(("running", "running", "pending"))
    ]
    held, taken, moved = rows
    tokens = {held.pk: "t0", taken.pk: "another", moved.pk: "t2"}
    history = [{"try": 1, "result": "succeeded"}]
    written = batch_writes.end_in_success(
        "default",
        tokens,
        now=at,
        outcomes={pk: {"ok": True} for pk in tokens},
        histories={pk: list(history) for pk in tokens},
    )
    assert written == 1
    held.refresh_from_db()
    assert (held.status, held.outcome, held.history, held.finished_at) == (
        "succeeded",
        {"ok": True},
        history,
        at,
    )
    for row in (taken, moved):
        assert stored(row.schedule) == [
            model_to_dict(row, exclude=("id", "schedule", "created_at"))
        ]
