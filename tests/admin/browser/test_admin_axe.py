"""axe-core (WCAG 2.1 A and AA) on every Cadence admin page, in Chromium at 1280 px.

The data is what an operator on call meets: the fleet's warning banner (a lost worker, due
work waiting past its grace), a live worker holding stuck threads, a paused schedule, an
overdue one, a schedule declared in code, one under a business calendar (its preview marking
excluded and shifted occurrences), calendars (one in use, so its delete page refuses), a dead
letter and attempts in every state. Each
page is checked in Django's light and dark themes; a serious or critical violation fails the
test unless Django's own user change page, checked in the same run and theme, has the same
rule: what Django's own pages share (its split date-time widget, its colours) is Django's to
fix, and everything else is ours.

The axe-core script is the one ``axe-playwright-python`` bundles: nothing is fetched.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.db import connection
from django.utils import timezone
from playwright.sync_api import Page, expect

from django_cadence import services
from django_cadence.models import (
    Attempt,
    Calendar,
    Delivery,
    DeliveryStatus,
    Event,
    Notice,
    Schedule,
    Status,
    Worker,
)
from django_cadence.ops import reconcile
from tests.admin.browser.conftest import ADMIN, USERNAME, log_in

# The pages' markup and styles do not depend on the database: checked once, on SQLite, which
# keeps two minutes per server out of the suite.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="markup: checked on SQLite"),
]

WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
SEVERE = ("serious", "critical")
AXE = Axe()


def severe(page: Page) -> dict[str, list[str]]:
    """The page's serious and critical violations: rule id -> where (one line per node)."""
    options = {"runOnly": {"type": "tag", "values": WCAG_21_AA}, "resultTypes": ["violations"]}
    found = AXE.run(page, options=options).response["violations"]
    return {
        rule["id"]: [
            f"{' '.join(map(str, node['target']))}: {node['failureSummary'].splitlines()[-1]}"
            for node in rule["nodes"]
        ]
        for rule in found
        if rule["impact"] in SEVERE
    }


@pytest.fixture
def night(transactional_db, settings):
    """Schedules of every kind and state, attempts of every status, workers live and lost."""
    now = timezone.now().replace(microsecond=0)
    settings.CADENCE_SCHEDULES = {
        "declared-nightly": {"cron": "0 3 * * *", "executor": "tests.jobs.echo"}
    }
    reconcile.reconcile()
    weekends = Calendar.objects.create(name="weekends", rules={"weekdays": ["sat", "sun"]})
    Calendar.objects.create(
        name="uk-bank-holidays",
        base=weekends,
        rules={"yearly": ["01-01", "12-25"], "freezes": [["2026-12-20T18:00", "2027-01-04T08:00"]]},
    )
    nightly = Schedule.objects.create(
        name="nightly-report",
        kind="cron",
        cron="30 2 * * *",
        timezone="America/New_York",
        executor="tests.jobs.echo",
        payload={"to": "finance"},
    )
    # Under a calendar, moved to the next business day: its preview marks excluded and shifted.
    Schedule.objects.create(
        name="supplier-payments",
        kind="cron",
        cron="0 9 1 * *",
        executor="tests.jobs.noop",
        calendars=["uk-bank-holidays"],
        calendar_shift="next",
    )
    digests = Schedule.objects.create(
        name="send-digests",
        kind="interval",
        interval=timedelta(hours=1),
        executor="tests.jobs.noop",
    )
    # Due ten minutes ago and never started: the banner's "due work has waited".
    Schedule.objects.filter(pk=digests.pk).update(
        created_at=now - timedelta(hours=2), next_run_at=now - timedelta(minutes=10)
    )
    Schedule.objects.create(
        name="launch-mail",
        kind="once",
        run_at=now + timedelta(days=2),
        executor="tests.jobs.noop",
    )
    paused = Schedule.objects.create(
        name="hello-every-10s",
        kind="interval",
        interval=timedelta(seconds=10),
        executor="tests.jobs.echo",
    )
    services.pause(paused, reason=f"paused in the admin by {USERNAME}")
    # Three dead letters in three hours and no success: overdue.
    invoices = Schedule.objects.create(
        name="export-invoices",
        kind="interval",
        interval=timedelta(hours=1),
        executor="tests.jobs.noop",
        created_at=now - timedelta(hours=5),
    )
    Schedule.objects.filter(pk=invoices.pk).update(next_run_at=now + timedelta(minutes=20))
    attempts = {}
    for hours in (3, 2, 1):
        attempts["dead"] = Attempt.objects.create(
            schedule=invoices,
            occurrence_at=now - timedelta(hours=hours),
            status=Status.DEAD_LETTER,
            tries=3,
            worker="web-1:4242:a1b2c3",
            started_at=now - timedelta(hours=hours),
            finished_at=now - timedelta(hours=hours) + timedelta(minutes=1),
            error="ConnectionError: billing API refused",
        )
    for n, status in enumerate(Status.values):
        at = now - timedelta(hours=n + 1, minutes=30)
        attempts[status] = Attempt.objects.create(
            schedule=nightly,
            occurrence_at=at,
            status=status,
            tries=0 if status in (Status.SKIPPED, Status.MISSED) else 1,
            retry_at=at + timedelta(hours=3) if status == Status.PENDING else None,
            claim_token="token" if status == Status.RUNNING else None,
            lease_until=now + timedelta(minutes=5) if status == Status.RUNNING else None,
            worker="web-1:4242:a1b2c3",
            started_at=at + timedelta(seconds=n + 1),
            finished_at=None if status in (Status.PENDING, Status.RUNNING) else at + timedelta(1),
            error="RuntimeError: the report timed out" if status == Status.PENDING else "",
        )
    Worker.objects.create(
        worker_id="web-1:4242:a1b2c3",
        host="web-1",
        pid=4242,
        started_at=now - timedelta(hours=2),
        heartbeat_at=now - timedelta(seconds=2),
        in_flight=3,
        concurrency=4,
        stuck_threads=2,
        stuck_since=now - timedelta(minutes=7),
    )
    Worker.objects.create(
        worker_id="web-2:5151:d4e5f6",
        host="web-2",
        pid=5151,
        started_at=now - timedelta(hours=3),
        heartbeat_at=now - timedelta(minutes=20),
    )
    _notices(settings, now)
    schedules = {s.name: s for s in Schedule.objects.all()}
    return schedules, attempts


def _notices(settings, now) -> None:
    """A notification channel, an open episode with its message sent, and one resolved."""
    settings.CADENCE_NOTIFY = {
        "channels": {
            "ops-hook": {
                "type": "webhook",
                "url": "http://127.0.0.1:9/cadence",
                "secret": "a-shared-secret-of-some-length",
            }
        }
    }
    export = Schedule.objects.get(name="export-invoices")
    for is_open, event in ((True, Event.DEAD_LETTER), (None, Event.FAILING)):
        notice = Notice.objects.create(
            event=event,
            subject=f"schedule:{export.pk}",
            schedule=export,
            name=export.name,
            is_open=is_open,
            opened_at=now - timedelta(hours=1),
            last_seen_at=now - timedelta(minutes=5),
            resolved_at=None if is_open else now - timedelta(minutes=30),
            count=3,
            detail="RuntimeError: the report timed out",
        )
        Delivery.objects.create(
            notice=notice,
            state="open",
            channel="ops-hook",
            body={"summary": f"{export.name}: an attempt was dead-lettered"},
            status=DeliveryStatus.SENT,
            created_at=now - timedelta(hours=1),
            next_try_at=now - timedelta(hours=1),
            tries=1,
            sent_at=now - timedelta(hours=1),
            sender="web-1:4242:a1b2c3",
        )


def pages_by_address(schedules, attempts) -> list[str]:
    """Every Cadence page reached by a link or a typed address."""
    dead, pending = attempts["dead"], attempts[Status.PENDING]
    nightly = schedules["nightly-report"]
    return [
        f"{ADMIN}/",
        f"{ADMIN}/overview/",
        f"{ADMIN}/schedule/",
        f"{ADMIN}/schedule/?silence=overdue",
        f"{ADMIN}/schedule/add/",
        *(f"{ADMIN}/schedule/add/?kind={kind}" for kind in ("cron", "interval", "once")),
        *(f"{ADMIN}/schedule/{s.pk}/change/" for s in schedules.values()),
        f"{ADMIN}/schedule/{nightly.pk}/history/",
        f"{ADMIN}/schedule/{nightly.pk}/delete/",
        f"{ADMIN}/attempt/",
        f"{ADMIN}/attempt/?schedule__id__exact={nightly.pk}",
        *(f"{ADMIN}/attempt/{a.pk}/change/" for a in attempts.values()),
        f"{ADMIN}/attempt/{dead.pk}/history/",
        f"{ADMIN}/deadletter/",
        f"{ADMIN}/deadletter/{dead.pk}/change/",
        f"{ADMIN}/retry/",
        f"{ADMIN}/retry/{pending.pk}/change/",
        f"{ADMIN}/worker/",
        f"{ADMIN}/worker/?state=all",
        f"{ADMIN}/worker/{Worker.objects.get(host='web-1').pk}/change/",
        f"{ADMIN}/notice/",
        f"{ADMIN}/notice/?is_open__exact=1",
        *(f"{ADMIN}/notice/{n.pk}/change/" for n in Notice.objects.all()),
        f"{ADMIN}/notice/test/",
        f"{ADMIN}/calendar/",
        f"{ADMIN}/calendar/add/",
        *(f"{ADMIN}/calendar/{c.pk}/change/" for c in Calendar.objects.all()),
        f"{ADMIN}/calendar/{Calendar.objects.get(name='weekends').pk}/delete/",
    ]


def confirmation_pages(page: Page, schedules, attempts):
    """The pages a button or an action opens (each asks before it acts), and a page showing
    what an action did: yields after reaching each."""
    paused, dead = schedules["hello-every-10s"], attempts["dead"]
    page.goto(f"{ADMIN}/schedule/{paused.pk}/change/")
    page.locator(".object-tools").get_by_role("button", name="Run now").click()
    expect(page.locator("#content")).to_contain_text("the schedule stays paused")
    yield "run a paused schedule: confirmation"
    page.goto(f"{ADMIN}/attempt/{dead.pk}/change/")
    page.locator(".object-tools").get_by_role("button", name="Discard").click()
    expect(page.locator("#content")).to_contain_text("Discarding deletes this dead letter")
    yield "discard a dead letter: confirmation"
    for url, row, action, sign in (
        (f"{ADMIN}/deadletter/", "export-invoices", "discard", "Discarding deletes"),
        (f"{ADMIN}/schedule/", "launch-mail", "delete_selected", "Are you sure"),
        (f"{ADMIN}/schedule/", "declared-nightly", "delete_selected", "Cannot delete"),
    ):
        page.goto(url)
        page.locator("#result_list tbody tr", has_text=row).first.locator(".action-select").check()
        page.select_option("select[name=action]", action)
        page.click(".actions button[name=index]")
        expect(page.locator("#content")).to_contain_text(sign)
        yield f"{url} {action} {row}: confirmation"
    page.goto(f"{ADMIN}/schedule/{paused.pk}/change/")
    page.locator(".object-tools").get_by_role("button", name="Resume").click()
    expect(page.locator(".messagelist .success")).to_contain_text("is resumed")
    yield "a schedule resumed: its page with the message"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_page_has_no_severe_violation_beyond_djangos_own(
    page, night, theme, django_user_model
):
    page.emulate_media(color_scheme=theme)
    log_in(page)
    page.goto(f"/admin/auth/user/{django_user_model.objects.get(username=USERNAME).pk}/change/")
    django = severe(page)

    found: dict[str, dict[str, list[str]]] = {}

    def check(where: str) -> None:
        expect(page.locator("#content")).to_be_visible()
        page.wait_for_load_state("networkidle")
        if own := {rule: nodes for rule, nodes in severe(page).items() if rule not in django}:
            found[where] = own

    for url in pages_by_address(*night):
        page.goto(url)
        expect(page.locator(".cadence-pulse")).to_be_visible()  # the banner is on every page
        check(url)
    page.goto(f"{ADMIN}/overview/")
    for summary in page.locator(".cadence-figures summary").all():
        summary.click()
    expect(page.locator(".cadence-figures table").last).to_be_visible()
    check("the overview with its tables open")
    for where in confirmation_pages(page, *night):
        check(where)
    report = [
        f"{where}\n  {rule}: {node}"
        for where, rules in found.items()
        for rule, nodes in rules.items()
        for node in nodes
    ]
    assert not report, f"beyond Django's own {sorted(django)}:\n" + "\n".join(report)
