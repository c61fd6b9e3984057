"""Every Cadence admin page fits the screen an operator has: 1280x800, navigation sidebar open.

The data is what a bad night leaves: long dotted exception paths, a traceback of many
frames with long lines, long schedule names, workers that came and went. A page "fits" when
the document is no wider than the window (no horizontal scroll bar).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page

from django_cadence.models import Attempt, Schedule, Status, Worker
from tests.admin.browser.conftest import ADMIN, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def long_traceback(message: str) -> str:
    """A traceback as the engine records it: library frames first, the job's own last."""
    frames = [
        ("/srv/app/.venv/lib/python3.12/site-packages/django_cadence/execution.py", 212, "run"),
        ("/srv/app/.venv/lib/python3.12/site-packages/django_cadence/executors.py", 140, "call"),
        ("/srv/app/.venv/lib/python3.12/site-packages/requests/sessions.py", 589, "request"),
        ("/srv/app/.venv/lib/python3.12/site-packages/requests/adapters.py", 700, "send"),
        ("/srv/app/invoices/jobs/import_from_the_accounting_system.py", 88, "import_invoices"),
    ]
    lines = ["Traceback (most recent call last):"]
    for path, line, func in frames:
        lines.append(f'  File "{path}", line {line}, in {func}')
        lines.append(
            f"    response = session.get(url, params=params, timeout=(3.05, 27)){'#' * 40}"
        )
    lines.append(message)
    return "\n".join(lines)


LONG_ERROR = (
    "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='accounting.internal."
    "example.com', port=443): Max retries exceeded with url: /api/v2/invoices/export?since="
    "2026-12-04T00:00:00Z&format=csv&include=lines,customers,taxes,payments (Caused by "
    "NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f3a2c1b5e50>: "
    "Failed to establish a new connection: [Errno 111] Connection refused'))"
)


@pytest.fixture
def bad_night(transactional_db):
    """Schedules with long names, attempts in every state with long errors, workers."""
    now = timezone.now().replace(microsecond=0)
    schedule = Schedule.objects.create(
        name="import-invoices-from-the-accounting-system-every-hour",
        kind="interval",
        interval=timedelta(hours=1),
        executor="tests.jobs.echo",
        payload={"url": "https://accounting.internal.example.com/api", "api_key": "s3cr3t"},
    )
    Schedule.objects.create(
        name="nightly-report-for-the-finance-team-in-new-york",
        kind="cron",
        cron="30 2 * * 1-5",
        timezone="America/Argentina/ComodRivadavia",
        executor="tests.jobs.echo",
    )
    error = long_traceback(LONG_ERROR)
    attempts = {}
    for n, status in enumerate(
        [Status.DEAD_LETTER, Status.PENDING, Status.RUNNING, Status.SUCCEEDED, Status.CANCELLED]
    ):
        at = now - timedelta(hours=n + 1)
        attempts[status] = Attempt.objects.create(
            schedule=schedule,
            occurrence_at=at,
            status=status,
            tries=3 if status == Status.DEAD_LETTER else 1,
            retry_at=at + timedelta(hours=2) if status == Status.PENDING else None,
            claim_token="token" if status == Status.RUNNING else None,
            lease_until=now + timedelta(minutes=5) if status == Status.RUNNING else None,
            worker="worker-on-a-very-long-host-name.eu-west-1.compute.internal-12345",
            started_at=at,
            finished_at=at + timedelta(seconds=3),
            error=error if status in (Status.DEAD_LETTER, Status.PENDING) else "",
            history=[
                {
                    "try": 1,
                    "worker": "worker-on-a-very-long-host-name.eu-west-1.compute.internal-12345",
                    "started_at": at.isoformat(),
                    "finished_at": (at + timedelta(seconds=3)).isoformat(),
                    "result": "failed",
                    "error": error,
                }
            ],
        )
    for n in range(3):
        Worker.objects.create(
            worker_id=f"worker-on-a-very-long-host-name.eu-west-1.compute.internal-{n}",
            host="ip-10-0-12-34.eu-west-1.compute.internal",
            pid=1000 + n,
            started_at=now - timedelta(hours=3),
            heartbeat_at=now - timedelta(seconds=n * 1000),
            stopped_at=now if n == 2 else None,
        )
    return schedule, attempts


HOOK = {
    "type": "webhook",
    "url": "https://alerts.example.com/django-cadence/notifications",
    "secret": "a-shared-secret-of-some-length",
}


def pages(schedule: Schedule, attempts: dict[str, Attempt]) -> list[str]:
    dead, pending = attempts[Status.DEAD_LETTER], attempts[Status.PENDING]
    return [
        f"{ADMIN}/schedule/",
        f"{ADMIN}/schedule/add/",
        f"{ADMIN}/schedule/{schedule.pk}/change/",
        f"{ADMIN}/attempt/",
        f"{ADMIN}/attempt/{dead.pk}/change/",
        f"{ADMIN}/attempt/{attempts[Status.SUCCEEDED].pk}/change/",
        f"{ADMIN}/deadletter/",
        f"{ADMIN}/deadletter/{dead.pk}/change/",
        f"{ADMIN}/retry/",
        f"{ADMIN}/retry/{pending.pk}/change/",
        f"{ADMIN}/worker/",
        f"{ADMIN}/notice/",
        f"{ADMIN}/notice/test/",
        f"{ADMIN}/overview/",
        "/admin/",
    ]


# How far the widest thing reaches past its box: the document past the window, or any
# scrollable box (Django wraps a changelist's table in one) past its own width.
OVERFLOW = """() => {
    const root = document.documentElement;
    const found = {page: root.scrollWidth - root.clientWidth};
    for (const el of document.querySelectorAll("body *")) {
        const style = getComputedStyle(el);
        if (!["auto", "scroll"].includes(style.overflowX)) continue;
        const extra = el.scrollWidth - el.clientWidth;
        if (extra > 0) found[el.id || el.className || el.tagName] = extra;
    }
    return Object.fromEntries(Object.entries(found).filter(([, v]) => v > 0));
}"""


def overflow(page: Page) -> dict[str, int]:
    """What does not fit, by element, in px; empty when the page fits."""
    return page.evaluate(OVERFLOW)


@pytest.mark.parametrize("width", [1280, 1024])
def test_every_page_fits_with_the_sidebar_open(page, bad_night, width, tmp_path, shoot, settings):
    settings.CADENCE_NOTIFY = {"channels": {"ops-mail": {"type": "mail"}, "ops-hook": HOOK}}
    page.set_viewport_size({"width": width, "height": 800})
    log_in(page)
    wide = {}
    for url in pages(*bad_night):
        page.goto(url)
        if url.startswith(ADMIN):  # the index has no sidebar
            assert page.locator("#nav-sidebar").is_visible()
        if width == 1280 and url.endswith("/overview/"):
            shoot("overview")
        if width == 1280 and url.endswith("/notice/test/"):
            shoot("notifications-test")
        if extra := overflow(page):
            wide[url] = extra
            page.screenshot(path=tmp_path / f"{width}-{len(wide)}.png")
        if url.endswith("/overview/"):  # and with each chart's table open
            for summary in page.locator(".cadence-figures summary").all():
                summary.click()
            if extra := overflow(page):
                wide[f"{url} with its tables open"] = extra
                page.screenshot(path=tmp_path / f"{width}-{len(wide)}.png", full_page=True)
    assert wide == {}, wide
