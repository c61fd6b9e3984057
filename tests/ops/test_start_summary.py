"""At start the engine says how many schedules are enabled and when the next is due."""

from datetime import UTC, datetime, timedelta

from django_cadence.models import Schedule
from django_cadence.ops.status import schedules_summary


def test_no_schedule_says_none_is_due(db):
    assert schedules_summary() == "0 schedule(s) enabled; none is due"


def test_the_summary_counts_enabled_schedules_and_names_the_earliest_next_run(make_schedule):
    for at in (datetime(2026, 12, 5, 7, 30, tzinfo=UTC), datetime(2026, 12, 5, 9, tzinfo=UTC)):
        Schedule.objects.filter(pk=make_schedule().pk).update(next_run_at=at)
    paused = make_schedule(enabled=False, interval=timedelta(minutes=1))
    Schedule.objects.filter(pk=paused.pk).update(next_run_at=datetime(2026, 1, 1, tzinfo=UTC))

    assert schedules_summary() == (
        "2 schedule(s) enabled; the next is due at 2026-12-05 07:30:00 UTC"
    )
