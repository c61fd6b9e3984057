"""The fleet's pulse in a real browser at 1280 px: the warning banner, the overdue badge and
filter, and the overview with a stuck worker (screenshots for docs/howto/alerting.md)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from django_cadence.models import Attempt, Schedule, Worker
from tests.admin.browser.conftest import ADMIN, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _schedule(name, *, next_in, created_ago=timedelta(0), interval=timedelta(hours=1), **extra):
    now = timezone.now()
    schedule = Schedule.objects.create(
        name=name,
        kind="interval",
        interval=interval,
        executor="tests.jobs.noop",
        created_at=now - created_ago,
        **extra,
    )
    next_run_at = now + next_in
    previous = next_run_at - interval
    last_run_at = previous if previous > schedule.created_at else None  # as the planner leaves it
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=next_run_at, last_run_at=last_run_at)
    return schedule


def _worker(worker_id, *, beat_ago=timedelta(seconds=3), in_flight=0, stuck=0):
    now = timezone.now()
    Worker.objects.create(
        worker_id=worker_id,
        host="web-1",
        pid=4242,
        started_at=now - timedelta(hours=2),
        heartbeat_at=now - beat_ago,
        in_flight=in_flight,
        concurrency=4,
        stuck_threads=stuck,
        stuck_since=now - timedelta(minutes=7) if stuck else None,
    )


def test_the_warning_banner_when_no_worker_runs_while_work_is_due(page, shoot):
    _worker("web-1:4242:a1b2c3", beat_ago=timedelta(minutes=20))  # lost
    _schedule("send-digests", next_in=-timedelta(minutes=4))
    _schedule("refresh-rates", next_in=timedelta(minutes=10))
    log_in(page)
    page.goto(f"{ADMIN}/schedule/")
    banner = page.locator(".cadence-pulse")
    expect(banner.locator('[data-check="no_worker"]')).to_contain_text(
        "No worker is running while work is due: the last heartbeat was"
    )
    expect(banner.locator('[data-check="backlog"]')).to_contain_text("Due work has waited")
    shoot("pulse-warning")
    page.goto(f"{ADMIN}/worker/")  # every Cadence page carries it
    expect(page.locator(".cadence-pulse")).to_be_visible()


def test_the_overdue_badge_and_filter(page, shoot):
    _worker("web-1:4242:a1b2c3")
    now = timezone.now()
    silent = _schedule(
        "export-invoices", next_in=timedelta(minutes=20), created_ago=timedelta(hours=5)
    )
    for hours in (3, 2, 1):
        Attempt.objects.create(
            schedule=silent,
            occurrence_at=now - timedelta(hours=hours),
            status="dead_letter",
            finished_at=now - timedelta(hours=hours) + timedelta(minutes=1),
            error="ConnectionError: billing API refused",
        )
    fine = _schedule("refresh-rates", next_in=timedelta(minutes=10), created_ago=timedelta(hours=5))
    Attempt.objects.create(
        schedule=fine, occurrence_at=now - timedelta(hours=1), status="succeeded", finished_at=now
    )
    _schedule("nightly-report", next_in=timedelta(hours=6), interval=timedelta(days=1))
    log_in(page)
    page.goto(f"{ADMIN}/schedule/")
    row = page.locator("#result_list tbody tr", has_text="export-invoices")
    expect(row.locator(".cadence-overdue")).to_have_text("overdue")
    expect(page.locator("#result_list .cadence-overdue")).to_have_count(1)
    expect(page.locator(".cadence-pulse")).to_have_count(0)  # overdue is not a fleet alarm
    shoot("schedules-overdue")
    page.get_by_role("link", name="overdue (no success for too long)").click()
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    expect(page.locator("#result_list tbody tr")).to_contain_text("export-invoices")


def test_the_overview_shows_a_stuck_worker(page, shoot):
    _worker("web-1:4242:a1b2c3", in_flight=3)
    _worker("web-2:5151:d4e5f6", in_flight=1, stuck=2)
    _schedule("send-digests", next_in=timedelta(minutes=5))
    log_in(page)
    page.goto(f"{ADMIN}/overview/")
    workers = page.locator("section", has_text="Workers: 2 live, 0 lost")
    expect(workers.locator("tr", has_text="web-2:5151:d4e5f6")).to_contain_text("2 stuck")
    expect(workers.locator("tr", has_text="web-1:4242:a1b2c3")).to_contain_text("load 3/4")
    workers.scroll_into_view_if_needed()
    shoot("overview-stuck-worker")
