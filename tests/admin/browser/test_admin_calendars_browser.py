"""Business calendars in a real browser at 1280 px: a calendar's page (its next excluded days
and the schedules under it) and the schedule form's preview marking excluded and shifted
occurrences (screenshots for the admin tour and docs/howto/business-calendars.md)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from django_cadence.models import Calendar, Schedule
from tests.admin.browser.conftest import ADMIN, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def uk(transactional_db):
    """A bank-holiday calendar on top of weekends, and two schedules under it."""
    weekends = Calendar.objects.create(
        name="weekends", rules={"weekdays": ["sat", "sun"]}, description="No work at weekends."
    )
    uk = Calendar.objects.create(
        name="uk-bank-holidays",
        timezone="Europe/London",
        base=weekends,
        rules={"yearly": ["01-01", "12-25", "12-26"], "dates": ["2027-03-26", "2027-03-29"]},
        description="England and Wales bank holidays, on top of weekends.",
    )
    Schedule.objects.create(
        name="daily-close",
        kind="cron",
        cron="0 18 * * *",
        timezone="Europe/London",
        executor="tests.jobs.noop",
        calendars=[uk.name],
    )
    Schedule.objects.create(
        name="supplier-payments",
        kind="cron",
        cron="0 9 1 * *",
        timezone="Europe/London",
        executor="tests.jobs.noop",
        calendars=[uk.name],
        calendar_shift="next",
    )
    Schedule.objects.create(
        name="hello-every-10s",
        kind="interval",
        interval=timedelta(seconds=10),
        executor="tests.jobs.noop",
    )
    return uk


def test_a_calendars_page_shows_its_next_excluded_days_and_its_schedules(page, shoot, uk):
    log_in(page)
    page.goto(f"{ADMIN}/calendar/")
    expect(page.locator("#result_list tbody tr", has_text="uk-bank-holidays")).to_be_visible()
    page.get_by_role("link", name="uk-bank-holidays", exact=True).click()
    days = page.locator("ol.cadence-excluded-days li")
    expect(days).to_have_count(10)
    expect(days.first).to_contain_text(re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-"))
    expect(days.filter(has_text="weekends").first).to_be_visible()  # excluded by the base
    under = page.locator(".field-schedules")
    expect(under.get_by_role("link")).to_have_text(["daily-close", "supplier-payments"])
    expect(under).not_to_contain_text("hello-every-10s")
    # The excluded days and the schedules under it, at the bottom of the screen.
    under.evaluate("row => row.scrollIntoView({block: 'end'})")
    shoot("calendar-page")


def test_the_preview_marks_excluded_and_shifted_occurrences(page, shoot, uk):
    log_in(page)
    payments = Schedule.objects.get(name="supplier-payments")
    page.goto(f"{ADMIN}/schedule/{payments.pk}/change/")
    preview = page.locator(".cadence-preview")
    excluded = preview.locator("li.cadence-excluded")
    shifted = preview.locator("li.cadence-shifted")
    expect(excluded.first).to_contain_text(
        "skipped: calendar uk-bank-holidays, moved to the next included day"
    )
    expect(shifted.first).to_contain_text("shifted: runs here in place of an excluded day")
    # A shifted occurrence follows each excluded one.
    assert shifted.count() == excluded.count() > 0
    preview.evaluate("box => box.scrollIntoView({block: 'end'})")
    shoot("schedule-preview-calendar")
