"""Payroll on the last business day of the month: ``L`` shifted back, planned over 2027."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from django.test import override_settings

from django_cadence.engine import planner
from django_cadence.models import Attempt, Schedule
from django_cadence.ops.reconcile import reconcile

pytestmark = pytest.mark.django_db

LONDON = ZoneInfo("Europe/London")
# England and Wales, 2027: written out so the test does not need the holidays package.
BANK_HOLIDAYS_2027 = [
    "2027-01-01", "2027-03-26", "2027-03-29", "2027-05-03",
    "2027-05-31", "2027-08-30", "2027-12-27", "2027-12-28",
]  # fmt: skip
CALENDARS = {
    "weekends": {"rules": {"weekdays": ["sat", "sun"]}},
    "uk-bank-holidays": {
        "timezone": "Europe/London",
        "base": "weekends",
        "rules": {"yearly": ["12-25", "12-26"], "dates": BANK_HOLIDAYS_2027},
    },
}
SCHEDULES = {
    "payroll": {
        "cron": "0 18 L * *",
        "timezone": "Europe/London",
        "executor": "tests.jobs.noop",
        "calendars": ["uk-bank-holidays"],
        "calendar_shift": "previous",
    }
}
# Sunday 31 Jan, Sunday 28 Feb, the Spring bank holiday on Monday 31 May, Saturday 31 July
# and Sunday 31 October move back to the Friday before; the rest are weekdays.
PAYDAYS_2027 = [
    "2027-01-29", "2027-02-26", "2027-03-31", "2027-04-30", "2027-05-28", "2027-06-30",
    "2027-07-30", "2027-08-31", "2027-09-30", "2027-10-29", "2027-11-30", "2027-12-31",
]  # fmt: skip


@override_settings(CADENCE_CALENDARS=CALENDARS, CADENCE_SCHEDULES=SCHEDULES)
def test_payroll_runs_on_the_last_business_day_of_each_month_of_2027(clock):
    clock.set(datetime(2026, 12, 31, 19, 0, tzinfo=UTC))  # after December 2026's payday
    reconcile(clock.now())
    payroll = Schedule.objects.get(name="payroll")
    end = datetime(2028, 1, 1, tzinfo=UTC)
    while payroll.next_run_at is not None and payroll.next_run_at < end:
        clock.set(payroll.next_run_at)
        planner.plan_due(clock.now())
        payroll.refresh_from_db()
    attempts = Attempt.objects.filter(schedule=payroll).order_by("occurrence_at")
    pending = [a.occurrence_at.astimezone(LONDON) for a in attempts if a.status == "pending"]
    assert [p.date().isoformat() for p in pending] == PAYDAYS_2027
    assert {p.strftime("%H:%M") for p in pending} == {"18:00"}  # GMT and BST alike
    moved = [
        a.occurrence_at.astimezone(LONDON).date().isoformat()
        for a in attempts
        if a.status == "skipped"
    ]
    assert moved == ["2027-01-31", "2027-02-28", "2027-05-31", "2027-07-31", "2027-10-31"]
    assert all(
        a.error == "skipped: calendar uk-bank-holidays, moved to the previous included day"
        for a in attempts
        if a.status == "skipped"
    )
    assert payroll.occurrence_count == 12
