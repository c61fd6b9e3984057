"""A schedule declared in code, in a real browser: the notice, nothing to type, Pause works."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from django_cadence.models import Schedule
from django_cadence.ops import reconcile
from tests.admin.browser.conftest import ADMIN, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_code_owned_schedule_page_in_a_browser(page: Page, shoot, settings, tmp_path):
    settings.CADENCE_SCHEDULES = {
        "nightly": {"cron": "0 3 * * *", "executor": "tests.jobs.echo", "payload": {"to": "ops"}}
    }
    reconcile.reconcile()
    schedule = Schedule.objects.get(name="nightly")
    log_in(page)

    page.goto(f"{ADMIN}/schedule/")
    row = page.locator("#result_list tbody tr", has_text="nightly")
    expect(row.locator(".cadence-code")).to_have_text("code")

    page.goto(f"{ADMIN}/schedule/{schedule.pk}/change/")
    expect(page.locator(".cadence-code-notice")).to_contain_text(
        "Declared in code: CADENCE_SCHEDULES['nightly']."
    )
    typed = page.locator("#schedule_form input[type=text], #schedule_form textarea")
    expect(typed).to_have_count(0)
    expect(page.locator("input[name=_save]")).to_have_count(0)
    expect(page.locator(".field-upcoming li")).to_have_count(10)
    shoot("schedule-code-owned")

    page.locator(".object-tools").get_by_role("button", name="Pause").click()
    expect(page.locator(".messagelist .success")).to_contain_text("is paused")
    assert not Schedule.objects.get(pk=schedule.pk).enabled
