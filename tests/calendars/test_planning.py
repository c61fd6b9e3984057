"""The planner under calendars, on a fake clock: what runs, and what is recorded as skipped."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError

from django_cadence.engine import planner
from django_cadence.models import Attempt, Calendar, Schedule

pytestmark = pytest.mark.django_db
DAY = timedelta(days=1)


@pytest.fixture
def uk(db):
    weekends = Calendar.objects.create(name="weekends", rules={"weekdays": ["sat", "sun"]})
    return Calendar.objects.create(
        name="uk-bank-holidays", base=weekends, rules={"dates": ["2026-06-03"]}
    )


def history(schedule):
    return [
        (a.occurrence_at.date().isoformat(), a.status, a.error)
        for a in Attempt.objects.filter(schedule=schedule).order_by("occurrence_at")
    ]


def at_nine(day):
    return datetime(2026, 6, day, 9, 0, tzinfo=UTC)


def test_a_week_across_a_holiday_and_a_weekend(uk, schedule_at, clock):
    # The clock starts on Monday 1 June 2026 at noon.
    schedule = schedule_at(
        kind="cron", interval=None, cron="0 9 * * *", timezone="UTC", calendars=[uk.name]
    )
    assert schedule.next_run_at == at_nine(2)
    for day in range(2, 10):
        clock.set(at_nine(day))
        planner.plan_due(clock.now())
    assert history(schedule) == [
        ("2026-06-02", "pending", ""),
        ("2026-06-03", "skipped", "skipped: calendar uk-bank-holidays"),
        ("2026-06-04", "pending", ""),
        ("2026-06-05", "pending", ""),
        (
            "2026-06-06",
            "skipped",
            (
                "skipped: calendar uk-bank-holidays (2 occurrences from "
                "2026-06-06T09:00:00+00:00 to 2026-06-07T09:00:00+00:00)"
            ),
        ),
        ("2026-06-08", "pending", ""),
        ("2026-06-09", "pending", ""),
    ]
    schedule.refresh_from_db()
    assert schedule.occurrence_count == 5  # the excluded ones do not count


def test_max_occurrences_counts_included_occurrences_only(uk, schedule_at, clock):
    schedule = schedule_at(
        kind="cron",
        interval=None,
        cron="0 9 * * *",
        timezone="UTC",
        calendars=[uk.name],
        max_occurrences=3,
        misfire="fire_all",
    )
    clock.set(at_nine(20))
    planner.plan_due(clock.now())
    schedule.refresh_from_db()
    assert schedule.is_finished
    assert schedule.occurrence_count == 3
    assert [a[0] for a in history(schedule) if a[1] == "pending"] == [
        "2026-06-02",
        "2026-06-04",
        "2026-06-05",
    ]


def test_catch_up_across_excluded_days_fires_only_included_ones(uk, schedule_at, clock):
    schedule = schedule_at(
        kind="cron",
        interval=None,
        cron="0 9 * * *",
        timezone="UTC",
        calendars=[uk.name],
        misfire="fire_all",
    )
    clock.set(at_nine(8) + timedelta(minutes=1))  # down from Monday noon to the next Monday
    planner.plan_due(clock.now())
    pending = [a for a in history(schedule) if a[1] == "pending"]
    assert [p[0] for p in pending] == ["2026-06-02", "2026-06-04", "2026-06-05", "2026-06-08"]
    skipped = [a[2] for a in history(schedule) if a[1] == "skipped"]
    assert len(skipped) == 2
    assert all(s.startswith("skipped: calendar uk-bank-holidays") for s in skipped)


def test_shift_next_runs_on_the_next_included_day(uk, schedule_at, clock):
    schedule = schedule_at(
        kind="cron",
        interval=None,
        cron="0 9 3 * *",
        timezone="UTC",
        calendars=[uk.name],
        calendar_shift="next",
    )
    assert schedule.next_run_at == at_nine(4)  # the 3rd is a holiday: Thursday the 4th
    clock.set(at_nine(4))
    planner.plan_due(clock.now())
    assert history(schedule) == [
        (
            "2026-06-03",
            "skipped",
            "skipped: calendar uk-bank-holidays, moved to the next included day",
        ),
        ("2026-06-04", "pending", ""),
    ]


def test_unknown_calendar_is_refused_naming_the_field(make_schedule):
    with pytest.raises(ValidationError) as caught:
        make_schedule(calendars=["nope"])
    assert caught.value.message_dict == {"calendars": ["Unknown calendar 'nope'."]}
    assert not Schedule.objects.exists()


def test_a_schedule_that_could_never_fire_again_is_refused(make_schedule):
    Calendar.objects.create(
        name="never", rules={"weekdays": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]}
    )
    with pytest.raises(ValidationError) as caught:
        make_schedule(calendars=["never"])
    (message,) = caught.value.message_dict["calendars"]
    assert "never run again" in message


def test_circular_bases_and_invalid_dates_are_refused(uk):
    weekends = Calendar.objects.get(name="weekends")
    weekends.base = uk
    with pytest.raises(ValidationError, match="circular bases"):
        weekends.save()
    with pytest.raises(ValidationError) as caught:
        Calendar.objects.create(name="bad", rules={"dates": ["2026-02-30"]})
    assert "rules" in caught.value.message_dict
    assert not Calendar.objects.filter(name="bad").exists()


def test_a_calendar_in_use_cannot_be_deleted(uk, make_schedule):
    make_schedule(name="payroll", calendars=[uk.name])
    with pytest.raises(ValidationError, match="used by payroll"):
        uk.delete()


def test_a_long_weekend_does_not_make_a_weekday_job_overdue(uk, make_schedule):
    from django_cadence.models.overdue import silence_of

    friday = at_nine(5)
    fields = {"kind": "cron", "interval": None, "cron": "0 9 * * *", "timezone": "UTC"}
    under = make_schedule(
        **fields, calendars=[uk.name], max_silence=timedelta(days=1), created_at=friday
    )
    plain = make_schedule(**fields, max_silence=timedelta(days=1), created_at=friday)
    for schedule in (under, plain):  # planned on time through Monday: no planning delay
        schedule.last_run_at = at_nine(8)
    sunday_noon = at_nine(7) + timedelta(hours=3)
    assert not silence_of(under, None, sunday_noon).overdue
    assert silence_of(plain, None, sunday_noon).overdue
    assert silence_of(under, None, at_nine(8) + timedelta(minutes=1)).overdue


def test_an_engine_run_across_a_holiday_and_a_weekend(uk, engine, schedule_at, clock):
    """The whole engine, ticking on the fake clock: what ran, and what was skipped and why."""
    schedule = schedule_at(
        kind="cron", interval=None, cron="0 9 * * *", timezone="UTC", calendars=[uk.name]
    )
    for day in range(2, 9):
        clock.set(at_nine(day))
        engine.tick()
        engine.tick()
    assert [(day, status) for day, status, _ in history(schedule)] == [
        ("2026-06-02", "succeeded"),
        ("2026-06-03", "skipped"),
        ("2026-06-04", "succeeded"),
        ("2026-06-05", "succeeded"),
        ("2026-06-06", "skipped"),
        ("2026-06-08", "succeeded"),
    ]


def test_a_taken_calendar_name_is_refused_on_name(uk):
    with pytest.raises(ValidationError) as caught:
        Calendar.objects.create(name=uk.name)
    assert list(caught.value.message_dict) == ["name"]


def test_excluded_days_while_paused_are_not_recorded(uk, schedule_at, clock):
    schedule = schedule_at(
        kind="cron", interval=None, cron="0 9 * * *", timezone="UTC", calendars=[uk.name]
    )
    clock.set(at_nine(2))
    planner.plan_due(clock.now())
    # Paused after Tuesday, resumed on Monday 08:00 (as a resume writes it): the holiday and
    # the weekend passed while it was paused.
    Schedule.objects.filter(pk=schedule.pk).update(
        enabled_at=at_nine(8) - timedelta(hours=1), next_run_at=at_nine(8)
    )
    clock.set(at_nine(8))
    planner.plan_due(clock.now())
    assert [(d, s) for d, s, _ in history(schedule)] == [
        ("2026-06-02", "pending"),
        ("2026-06-08", "pending"),
    ]
