"""The database itself refuses rows that break each rule.

``bulk_create`` and ``update`` bypass ``save()`` and ``full_clean()``, so these tests show the
constraints, not the Python validation, doing the refusing.
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, transaction

from django_cadence.models import Attempt, Schedule

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def raw_schedule(**fields):
    values = {
        "name": "raw",
        "kind": "interval",
        "interval": timedelta(minutes=1),
        "executor": "tests.jobs.noop",
        "payload": {},
        "timezone": "UTC",
    }
    values.update(fields)
    return Schedule(**values)


def assert_refused(**fields):
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.bulk_create([raw_schedule(**fields)])


@pytest.mark.django_db
def test_constraints_a_valid_raw_row_is_accepted():
    Schedule.objects.bulk_create([raw_schedule()])
    assert Schedule.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "weekly"},
        {"overlap": "sometimes"},
        {"misfire": "never"},
        {"kind": "cron", "cron": "", "interval": None},
        {"kind": "cron", "cron": "* * * * *", "interval": timedelta(minutes=1)},
        {"kind": "cron", "cron": "* * * * *", "interval": None, "run_at": T0},
        {"kind": "interval", "interval": None},
        {"kind": "interval", "interval": timedelta(0)},
        {"kind": "interval", "interval": timedelta(seconds=-5)},
        {"kind": "interval", "cron": "* * * * *"},
        {"kind": "interval", "run_at": T0},
        {"kind": "once", "interval": None, "run_at": None},
        {"kind": "once", "interval": timedelta(minutes=1), "run_at": T0},
        {"kind": "once", "interval": None, "run_at": T0, "cron": "* * * * *"},
        {"executor": ""},
        {"misfire_grace": timedelta(seconds=-1)},
        {"retry_base": timedelta(0)},
        {"retry_cap": timedelta(seconds=-1)},
        {"max_runtime": timedelta(0)},
        {"jitter": timedelta(seconds=-1)},
        {"max_attempts": 0},
        {"max_occurrences": 0},
        {"pause_after_failures": 0},
        {"start_at": T0, "end_at": T0},
        {"start_at": T0, "end_at": T0 - timedelta(days=1)},
    ],
    ids=[
        "unknown-kind",
        "unknown-overlap",
        "unknown-misfire",
        "cron-without-expression",
        "cron-with-interval",
        "cron-with-run-at",
        "interval-without-interval",
        "interval-zero",
        "interval-negative",
        "interval-with-cron",
        "interval-with-run-at",
        "once-without-run-at",
        "once-with-interval",
        "once-with-cron",
        "empty-executor",
        "negative-misfire-grace",
        "zero-retry-base",
        "negative-retry-cap",
        "zero-max-runtime",
        "negative-jitter",
        "zero-max-attempts",
        "zero-max-occurrences",
        "zero-pause-after-failures",
        "end-equals-start",
        "end-before-start",
    ],
)
def test_constraints_schedule_row_refused(fields):
    assert_refused(**fields)
    assert Schedule.objects.count() == 0


@pytest.fixture
def schedule(db):
    Schedule.objects.bulk_create([raw_schedule()])
    return Schedule.objects.get()


def raw_attempt(schedule, **fields):
    values = {
        "schedule": schedule,
        "occurrence_at": T0,
        "trigger": "schedule",
        "status": "pending",
        "retry_at": T0,
    }
    values.update(fields)
    return Attempt(**values)


@pytest.mark.django_db
def test_constraints_one_attempt_per_occurrence_and_trigger(schedule):
    Attempt.objects.bulk_create([raw_attempt(schedule)])
    with pytest.raises(IntegrityError), transaction.atomic():
        Attempt.objects.bulk_create([raw_attempt(schedule)])
    # A manual run of the same instant is a different attempt.
    Attempt.objects.bulk_create([raw_attempt(schedule, trigger="manual")])
    assert Attempt.objects.count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    "fields",
    [
        {"status": "exploded"},
        {"trigger": "cosmic-ray"},
        {"status": "running", "claim_token": None, "lease_until": T0},
        {"status": "running", "claim_token": "abc", "lease_until": None},
        {"status": "pending", "retry_at": None},
    ],
    ids=[
        "unknown-status",
        "unknown-trigger",
        "running-without-token",
        "running-without-lease",
        "pending-without-retry-at",
    ],
)
def test_constraints_attempt_row_refused(schedule, fields):
    with pytest.raises(IntegrityError), transaction.atomic():
        Attempt.objects.bulk_create([raw_attempt(schedule, **fields)])
    assert Attempt.objects.count() == 0


@pytest.mark.django_db
def test_constraints_update_cannot_break_a_rule(schedule):
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.filter(pk=schedule.pk).update(interval=timedelta(0))
    schedule.refresh_from_db()
    assert schedule.interval == timedelta(minutes=1)
