"""Queues in a real browser at 1280 px: the schedules list's queue column and filter, the
queues each worker serves, and the banner when ready work waits in a queue no live worker
serves (screenshots for the admin tour and docs/howto/queues.md)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from django_cadence.models import Attempt, Schedule, Worker
from tests.admin.browser.conftest import ADMIN, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUEUES = {
    "charge-cards": "billing",
    "export-invoices": "billing",
    "monthly-totals": "reports",
    "refresh-dashboards": "reports",
    "send-digests": "default",
}


def _schedules() -> dict[str, Schedule]:
    return {
        name: Schedule.objects.create(
            name=name,
            kind="interval",
            interval=timedelta(hours=1),
            executor="tests.jobs.noop",
            queue=queue,
        )
        for name, queue in QUEUES.items()
    }


def _worker(worker_id: str, queues: str) -> None:
    now = timezone.now()
    Worker.objects.create(
        worker_id=worker_id,
        host=worker_id.split(":")[0],
        pid=int(worker_id.split(":")[1]),
        started_at=now - timedelta(hours=2),
        heartbeat_at=now - timedelta(seconds=3),
        concurrency=8,
        queues=queues,
    )


def test_the_schedules_list_by_queue_and_the_queues_each_worker_serves(page, shoot):
    _schedules()
    _worker("web-1:4242:a1b2c3", "billing")
    _worker("web-2:5151:d4e5f6", "reports:2,default:6")
    _worker("web-3:6161:0a0b0c", "")
    log_in(page)
    page.goto(f"{ADMIN}/schedule/")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(len(QUEUES))
    for name, queue in QUEUES.items():
        expect(rows.filter(has_text=name).locator("td.field-queue")).to_have_text(queue)
    expect(page.locator(".cadence-pulse")).to_have_count(0)  # every queue is served
    shoot("schedules-queues")
    page.locator("#changelist-filter").get_by_role("link", name="billing").click()
    expect(rows).to_have_count(2)
    expect(rows.locator("td.field-queue")).to_have_text(["billing", "billing"])

    page.goto(f"{ADMIN}/worker/")
    workers = page.locator("#result_list tbody tr")
    expect(workers.filter(has_text="web-1").locator("td.field-served")).to_have_text("billing")
    expect(workers.filter(has_text="web-2").locator("td.field-served")).to_contain_text("reports")
    expect(workers.filter(has_text="web-2").locator("td.field-served")).to_contain_text("default")
    expect(workers.filter(has_text="web-3").locator("td.field-served")).to_have_text("every queue")
    shoot("workers-queues")


def test_the_banner_names_a_queue_no_live_worker_serves(page, shoot):
    schedules = _schedules()
    _worker("web-1:4242:a1b2c3", "billing")
    now = timezone.now()
    Attempt.objects.create(  # ready for six minutes in "reports", which nobody serves
        schedule=schedules["monthly-totals"],
        occurrence_at=now - timedelta(minutes=6),
        status="pending",
        retry_at=now - timedelta(minutes=6),
    )
    log_in(page)
    page.goto(f"{ADMIN}/worker/")
    banner = page.locator(".cadence-pulse")
    expect(banner.locator('[data-check="unserved_queue"]')).to_contain_text(
        "Due work waits in queue(s) reports that no live worker serves "
        "(start run_cadence --queues reports)"
    )
    shoot("pulse-unserved-queue")
