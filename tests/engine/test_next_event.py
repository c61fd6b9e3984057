"""The reads behind the engine's sleep: what they find, and what they pass over."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Min
from django.test.utils import CaptureQueriesContext

from django_cadence.engine import leases, next_event, planner, recovery
from django_cadence.models import Attempt, Schedule

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)


def test_nothing_scheduled_means_nothing_next(clock):
    assert next_event.next_due() is None
    assert next_event.next_ready() is None
    assert next_event.next_lease_end() is None


def test_next_due_is_the_earliest_slot_of_an_enabled_schedule(schedule_at, clock):
    schedule_at(interval=MINUTE * 3)
    schedule_at(interval=MINUTE * 2, enabled=False)  # paused: its slot is not a reason to wake
    finished = schedule_at(kind="once", interval=None, run_at=clock.now() + MINUTE)
    planner.plan_due(clock.advance(MINUTE))  # the one-shot fires and has no next run
    finished.refresh_from_db()
    assert finished.next_run_at is None
    assert next_event.next_due() == clock.now() + MINUTE * 2
    assert next_event.next_due() == Schedule.objects.enabled().aggregate(m=Min("next_run_at"))["m"]


def test_next_ready_passes_over_paused_schedules_and_running_attempts(schedule_at, clock):
    first = schedule_at(interval=MINUTE, overlap="allow")
    paused = schedule_at(interval=MINUTE, overlap="allow")
    planner.plan_due(clock.advance(MINUTE * 2))  # two pending occurrences of each
    Schedule.objects.filter(pk=paused.pk).update(enabled=False)
    Attempt.objects.filter(schedule=paused).update(retry_at=clock.now() - MINUTE * 5)
    assert next_event.next_ready() == clock.now() - MINUTE  # first's earliest occurrence
    leases.claim(clock.now(), worker="w1", slots=1)  # claims that one: no longer pending
    assert next_event.next_ready() == clock.now()
    assert Attempt.objects.get(schedule=first, status="running")


def test_next_lease_end_is_the_earliest_lease_of_a_running_try(schedule_at, clock, settings):
    settings.CADENCE_LEASE = timedelta(seconds=30)
    schedule_at(interval=MINUTE, overlap="allow")
    planner.plan_due(clock.advance(MINUTE))
    leases.claim(clock.now(), worker="w1", slots=1)
    started = clock.now()
    planner.plan_due(clock.advance(MINUTE))
    leases.claim(clock.now(), worker="w1", slots=1)
    assert next_event.next_lease_end() == started + timedelta(seconds=30)


def test_recovery_with_nothing_expired_is_one_plain_read(schedule_at, clock):
    schedule_at(interval=MINUTE, overlap="allow")
    planner.plan_due(clock.advance(MINUTE))
    leases.claim(clock.now(), worker="w1", slots=1)
    with CaptureQueriesContext(connection) as queries:
        assert recovery.recover_expired(clock.now()) == 0
    assert len(queries) == 1
    assert "FOR UPDATE" not in queries[0]["sql"].upper()
    # Past the lease and the grace, the same call recovers the attempt.
    assert recovery.recover_expired(clock.advance(hours=1)) == 1
    assert Attempt.objects.get().status == "pending"
