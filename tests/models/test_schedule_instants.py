"""Instants near the ends of the calendar (``run_at``, ``start_at``, ``end_at``) are field
errors, never an ``OverflowError`` at save: a schedule's instants must leave room to be shown
in every time zone and to have a microsecond taken off or added (years 2 to 9998, UTC)."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ValidationError

from django_cadence.models import Schedule

FIRST = datetime(1, 1, 1, tzinfo=UTC)
LAST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
TOKYO_YEAR_ONE = datetime(1, 1, 1, 0, 30, tzinfo=ZoneInfo("Asia/Tokyo"))  # before year 1 in UTC

EDGES = [
    ("run_at", FIRST, {"kind": "once"}),
    ("run_at", LAST, {"kind": "once"}),
    ("run_at", TOKYO_YEAR_ONE, {"kind": "once"}),
    ("run_at", datetime(1, 12, 31, 23, 59, tzinfo=UTC), {"kind": "once"}),
    ("run_at", datetime(9999, 1, 1, tzinfo=UTC), {"kind": "once"}),
    ("start_at", FIRST, {"interval": timedelta(minutes=1)}),
    ("start_at", LAST, {"interval": timedelta(minutes=1)}),
    ("end_at", LAST, {"cron": "* * * * *"}),
    ("end_at", FIRST, {"cron": "* * * * *"}),
]


def shown(value):
    return value.isoformat()


@pytest.mark.parametrize(("field", "value", "spec"), EDGES)
def test_an_instant_at_the_ends_of_the_calendar_is_a_field_error_at_full_clean(
    db, field, value, spec
):
    schedule = Schedule(name="edge", executor="tests.jobs.noop", **spec, **{field: value})
    with pytest.raises(ValidationError) as refused:
        schedule.full_clean()
    assert refused.value.message_dict == {
        field: [f"{field} must fall within the years 2 to 9998 (UTC), not {shown(value)}."]
    }


@pytest.mark.parametrize(("field", "value", "spec"), EDGES)
def test_an_instant_at_the_ends_of_the_calendar_is_refused_by_save_and_nothing_is_written(
    db, field, value, spec
):
    with pytest.raises(ValidationError) as refused:
        Schedule.objects.create(name="edge", executor="tests.jobs.noop", **spec, **{field: value})
    assert list(refused.value.message_dict) == [field]
    assert not Schedule.objects.exists()


@pytest.mark.parametrize(
    ("field", "value", "spec"),
    [
        ("run_at", datetime(2, 1, 1, tzinfo=UTC), {"kind": "once"}),
        ("run_at", datetime(9998, 12, 31, 23, 59, 59, tzinfo=UTC), {"kind": "once"}),
        ("start_at", datetime(2, 1, 1, tzinfo=UTC), {"interval": timedelta(minutes=1)}),
        ("end_at", datetime(9998, 12, 31, tzinfo=UTC), {"cron": "* * * * *"}),
    ],
)
def test_the_first_and_last_instants_allowed_are_saved(db, field, value, spec):
    schedule = Schedule.objects.create(
        name="edge", executor="tests.jobs.noop", **spec, **{field: value}
    )
    schedule.refresh_from_db()
    assert getattr(schedule, field) == value
