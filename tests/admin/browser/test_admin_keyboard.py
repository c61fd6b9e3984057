"""The admin from the keyboard alone, in Chromium: Tab reaches each operation's button and
each chart's table, the focus shows where it is, and Enter does what a click does.

"The focus shows" is measured on the screen: the button's surroundings (its focus ring
included) look different focused from keyboard than before it had the focus, and it matches
``:focus-visible``.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Locator, Page, expect

from django_cadence.models import Attempt, Schedule, Status
from tests.admin.browser.conftest import ADMIN, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TABS = 100  # more than a Cadence page has focusable things before its last button


def around(page: Page, target: Locator) -> bytes:
    """A picture of ``target`` and 4 px around it, where a focus ring is drawn."""
    box = target.bounding_box()
    assert box is not None
    clip = {
        "x": box["x"] - 4,
        "y": box["y"] - 4,
        "width": box["width"] + 8,
        "height": box["height"] + 8,
    }
    return page.screenshot(clip=clip)


def tab_to(page: Page, target: Locator, name: str) -> None:
    """Press Tab from where the focus is until ``target`` (``name`` in a failure) has it, and
    check that its focus shows."""
    target.scroll_into_view_if_needed()
    unfocused = around(page, target)
    for _ in range(TABS):
        page.keyboard.press("Tab")
        if target.evaluate("el => el === document.activeElement"):
            break
    else:
        pytest.fail(f"{TABS} presses of Tab never reached {name!r} on {page.url}")
    assert target.evaluate("el => el.matches(':focus-visible')"), name
    if around(page, target) == unfocused:
        pytest.fail(f"the focus on {name!r} does not show on {page.url}")


def press_enter_on(page: Page, name: str, where: str = ".object-tools") -> None:
    """Tab to the button ``name`` inside ``where`` and press Enter."""
    tab_to(page, page.locator(where).get_by_role("button", name=name, exact=True), name)
    page.keyboard.press("Enter")


@pytest.fixture
def hello(transactional_db):
    """An interval schedule with a dead letter."""
    schedule = Schedule.objects.create(
        name="hello-every-10s",
        kind="interval",
        interval=timedelta(seconds=10),
        executor="tests.jobs.echo",
    )
    now = timezone.now()
    Attempt.objects.create(
        schedule=schedule,
        occurrence_at=now - timedelta(minutes=5),
        status=Status.DEAD_LETTER,
        tries=3,
        started_at=now - timedelta(minutes=5),
        finished_at=now - timedelta(minutes=4),
        error="RuntimeError: the mail server refused",
    )
    return schedule


def test_the_schedule_buttons_from_the_keyboard(page, hello):
    log_in(page)
    success = page.locator(".messagelist .success")
    schedule_page = f"{ADMIN}/schedule/{hello.pk}/change/"

    for name in ("Run now", "Run now, bypassing overlap"):
        page.goto(schedule_page)
        press_enter_on(page, name)
        expect(success).to_contain_text("“hello-every-10s” runs now")
    assert hello.attempts.filter(trigger="manual").count() == 2

    page.goto(schedule_page)
    press_enter_on(page, "Pause")
    expect(success).to_contain_text("is paused")
    assert not Schedule.objects.get(pk=hello.pk).enabled

    page.goto(schedule_page)
    press_enter_on(page, "Run now")
    expect(page.locator("#content")).to_contain_text("the schedule stays paused")
    tab_to(page, page.get_by_role("button", name="Yes, run now"), "Yes, run now")
    page.keyboard.press("Enter")
    expect(success).to_contain_text("It stays paused")
    assert hello.attempts.filter(even_if_paused=True).count() == 1

    page.goto(schedule_page)
    press_enter_on(page, "Resume")
    expect(success).to_contain_text("is resumed")
    assert Schedule.objects.get(pk=hello.pk).enabled


def test_the_attempt_buttons_from_the_keyboard(page, hello):
    log_in(page)
    success = page.locator(".messagelist .success")
    dead = hello.attempts.get(status=Status.DEAD_LETTER)
    page.goto(f"{ADMIN}/attempt/{dead.pk}/change/")

    press_enter_on(page, "Discard")
    expect(page.locator("#content")).to_contain_text("Discarding deletes this dead letter")
    back = page.get_by_role("link", name="No, take me back")
    tab_to(page, back, "No, take me back")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{page.url.split('/admin/')[0]}{ADMIN}/attempt/{dead.pk}/change/")

    press_enter_on(page, "Retry")
    expect(success).to_contain_text("sent back to pending")
    press_enter_on(page, "Cancel")
    expect(success).to_contain_text("is cancelled")
    assert Attempt.objects.get(pk=dead.pk).status == Status.CANCELLED


def test_each_chart_of_the_overview_opens_its_table_from_the_keyboard(page, hello):
    log_in(page)
    page.goto(f"{ADMIN}/overview/")
    figures = page.locator(".cadence-figures")
    expect(figures).to_have_count(5)  # three bar charts, the start lags, the timeline
    for n in range(5):
        summary = figures.nth(n).locator("summary")
        name = summary.text_content().strip()
        tab_to(page, summary, name)
        table = figures.nth(n).get_by_role("table", name=name.removesuffix(", as a table"))
        expect(table).to_be_hidden()
        page.keyboard.press("Enter")
        expect(table).to_be_visible()
        page.goto(f"{ADMIN}/overview/")


def test_the_schedule_filter_is_named_and_works_from_the_keyboard(page, hello):
    Schedule.objects.create(
        name="nightly-report", kind="cron", cron="30 2 * * *", executor="tests.jobs.noop"
    )
    log_in(page)
    page.goto(f"{ADMIN}/attempt/")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(1)  # the dead letter of hello-every-10s
    # select2 named its combobox by the value shown ("All") and left its textbox unnamed.
    by_schedule = page.get_by_role("combobox", name="By schedule", exact=True)
    expect(page.get_by_role("textbox", name="By schedule", exact=True)).to_have_text("All")
    tab_to(page, by_schedule, "By schedule")
    page.keyboard.press("Enter")
    page.keyboard.type("nightly")
    expect(page.get_by_role("option", name="nightly-report")).to_be_visible()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"schedule__id__exact="))
    expect(rows).to_have_count(0)
    expect(by_schedule).to_contain_text("nightly-report")
