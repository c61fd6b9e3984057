"""``Schedule.save()`` keeps ``next_run_at`` right; ``upcoming()`` previews the spec."""

from datetime import UTC, datetime, timedelta

import pytest

from django_cadence.models import Schedule

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
pytestmark = pytest.mark.django_db


def test_schedule_interval_first_run_one_interval_after_creation(make_schedule):
    schedule = make_schedule(interval=timedelta(minutes=5), created_at=T0)
    assert schedule.next_run_at == T0 + timedelta(minutes=5)


def test_schedule_interval_with_future_start_runs_at_start(make_schedule):
    start = T0 + timedelta(hours=1)
    schedule = make_schedule(interval=timedelta(minutes=5), start_at=start, created_at=T0)
    assert schedule.next_run_at == start


def test_schedule_interval_with_past_start_keeps_its_grid_and_catches_nothing_up(make_schedule):
    start = T0 - timedelta(minutes=12)
    schedule = make_schedule(interval=timedelta(minutes=5), start_at=start, created_at=T0)
    assert schedule.next_run_at == start + timedelta(minutes=15)


def test_schedule_cron_next_run_in_its_time_zone(make_schedule):
    schedule = make_schedule(
        kind="cron", cron="30 2 * * *", interval=None, timezone="America/New_York", created_at=T0
    )
    # 02:30 EST on 2026-03-02 is 07:30 UTC.
    assert schedule.next_run_at == datetime(2026, 3, 2, 7, 30, tzinfo=UTC)


def test_schedule_once_in_the_future(make_schedule):
    run_at = T0 + timedelta(days=1)
    schedule = make_schedule(kind="once", interval=None, run_at=run_at, created_at=T0)
    assert schedule.next_run_at == run_at
    assert not schedule.is_finished


def test_schedule_once_already_past_still_comes_due(make_schedule):
    run_at = T0 - timedelta(seconds=2)
    schedule = make_schedule(kind="once", interval=None, run_at=run_at, created_at=T0)
    assert schedule.next_run_at == run_at


def test_schedule_once_after_it_fired_is_finished(make_schedule):
    run_at = T0 + timedelta(minutes=1)
    schedule = make_schedule(kind="once", interval=None, run_at=run_at, created_at=T0)
    schedule.last_run_at = run_at
    schedule.occurrence_count = 1
    schedule.save()
    assert schedule.next_run_at is None
    assert schedule.is_finished


def test_schedule_edit_continues_from_last_planned_occurrence(make_schedule):
    schedule = make_schedule(interval=timedelta(minutes=5), created_at=T0)
    schedule.last_run_at = T0 + timedelta(minutes=10)
    schedule.save()
    schedule.payload = {}
    schedule.save()
    assert schedule.next_run_at == T0 + timedelta(minutes=15)


def test_schedule_update_fields_still_refreshes_next_run_at(make_schedule):
    schedule = make_schedule(interval=timedelta(minutes=5), created_at=T0)
    schedule.interval = timedelta(minutes=7)
    schedule.save(update_fields=["interval"])
    schedule.refresh_from_db()
    assert schedule.next_run_at == T0 + timedelta(minutes=7)


def test_schedule_reenabled_catches_nothing_up_from_the_pause(make_schedule):
    schedule = make_schedule(interval=timedelta(minutes=5), created_at=T0)
    schedule.enabled = False
    schedule.save()
    paused = Schedule.objects.get(pk=schedule.pk)
    paused.enabled = True
    paused.save()
    assert paused.enabled_at > T0
    assert paused.next_run_at > paused.enabled_at
    assert paused.next_run_at - paused.enabled_at <= timedelta(minutes=5)
    assert (paused.next_run_at - T0) % timedelta(minutes=5) == timedelta(0)


def test_schedule_max_occurrences_reached_is_finished(make_schedule):
    schedule = make_schedule(interval=timedelta(minutes=5), created_at=T0, max_occurrences=2)
    schedule.occurrence_count = 2
    schedule.last_run_at = T0 + timedelta(minutes=10)
    schedule.save()
    assert schedule.next_run_at is None


def test_schedule_end_at_passed_is_finished(make_schedule):
    schedule = make_schedule(
        interval=timedelta(minutes=5), created_at=T0, end_at=T0 + timedelta(minutes=4)
    )
    assert schedule.next_run_at is None


def test_upcoming_unsaved_interval_is_anchored_at_after():
    schedule = Schedule(kind="interval", interval=timedelta(minutes=10), executor="tests.jobs.noop")
    assert schedule.upcoming(3, after=T0) == [
        T0 + timedelta(minutes=10),
        T0 + timedelta(minutes=20),
        T0 + timedelta(minutes=30),
    ]


def test_upcoming_honours_bounds_and_remaining_occurrences(make_schedule):
    schedule = make_schedule(
        interval=timedelta(minutes=5),
        start_at=T0,
        end_at=T0 + timedelta(minutes=30),
        max_occurrences=5,
        created_at=T0 - timedelta(days=1),
    )
    assert schedule.upcoming(10, after=T0 - timedelta(seconds=1)) == [
        T0 + timedelta(minutes=5 * k) for k in range(5)
    ]
    schedule.occurrence_count = 3
    assert len(schedule.upcoming(10, after=T0 - timedelta(seconds=1))) == 2


def test_upcoming_returns_aware_utc_for_cron():
    schedule = Schedule(kind="cron", cron="0 9 * * mon", timezone="Europe/Dublin")
    instants = schedule.upcoming(3, after=T0)
    assert all(i.tzinfo is not None and i.utcoffset() == timedelta(0) for i in instants)
    assert instants[0] == datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
