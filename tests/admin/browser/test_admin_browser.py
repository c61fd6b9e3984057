"""The admin in a real browser: Playwright drives Debian's Chromium against a live server.

The live server (pytest-django's ``live_server``) serves the admin, its CSS and its JavaScript
with the test settings; each test creates the example project's demo schedules (pointing at
``tests.jobs`` look-alikes of the demo jobs) with a little past history for the strips, and
logs in through the login form as a superuser it creates. The engine runs as a real
``run_cadence --once`` child against the test database, as an operator's worker would.

The browser, the page and screenshots are ``conftest.py``'s.
"""

from __future__ import annotations

import os
import re
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from benchmarks.fleet import Worker, database_env
from django_cadence.models import Attempt, Schedule, Status
from tests.admin.browser.conftest import ADMIN, USERNAME, log_in
from tests.support.attempts import make_due

# The object's title under the page heading (Django 6 wraps the headings in .titles).
SUBTITLE = "#content > h2, #content .titles > h2"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

KIND_NAMES = ("cron", "interval", "once")


def run_action(page: Page, row_text: str, action: str) -> None:
    """Tick the changelist row containing ``row_text``, pick ``action`` and run it."""
    row = page.locator("#result_list tbody tr", has_text=row_text)
    row.locator("input.action-select").check()
    page.select_option("select[name=action]", action)
    page.click(".actions button[name=index]")  # "Go" (Django 5.2), "Run" (Django 6.1)


def run_engine_once(tmp_path: Path, name: str) -> None:
    """One real ``run_cadence --once`` pass over what is due, against the test database."""
    args = [sys.executable, "-m", "django", "run_cadence", "--settings=tests.settings", "--once"]
    env = {**os.environ, **database_env(), "PYTHONUNBUFFERED": "1"}
    child = Worker(name, [*args, "--worker-id", name], env, tmp_path)
    assert child.wait(60) == 0, child.output()


# --- the example project's schedules -------------------------------------------------------


def seed_history(schedule: Schedule, statuses: list[str], *, error: str = "") -> None:
    """Finished attempts before the schedule's next run, oldest first: the strip's past."""
    step = schedule.interval or timedelta(days=1)
    last = (schedule.next_run_at or timezone.now()) - step
    for back, status in enumerate(reversed(statuses)):
        at = last - back * step
        Attempt.objects.create(
            schedule=schedule,
            occurrence_at=at,
            status=status,
            tries={Status.SKIPPED: 0, Status.DEAD_LETTER: schedule.max_attempts or 1}.get(
                status, 1
            ),
            worker="" if status == Status.SKIPPED else "worker-1",
            started_at=None if status == Status.SKIPPED else at,
            finished_at=at + timedelta(seconds=1),
            error=error if status == Status.DEAD_LETTER else "",
        )


@pytest.fixture
def demo(transactional_db, tmp_path):
    """The example project's demo schedules (``cadence_demo``), on ``tests.jobs`` look-alikes.

    ``hello``, ``flaky`` and ``long`` are due now; ``import-invoices`` is due too and fails
    permanently until ``invoices.csv`` exists in ``tmp_path``.
    """
    hello = Schedule.objects.create(
        name="hello-every-10s",
        kind="interval",
        interval=timedelta(seconds=10),
        executor="tests.jobs.echo",
        payload={"name": "cadence"},
    )
    flaky = Schedule.objects.create(
        name="flaky-every-15s",
        kind="interval",
        interval=timedelta(seconds=15),
        executor="tests.jobs.fail_n_times",
        payload={"n": 1, "key": "flaky"},
        overlap="queue",
        max_attempts=3,
        retry_base=timedelta(hours=1),  # the retry waits: this pass leaves it pending
    )
    long = Schedule.objects.create(
        name="long-every-minute",
        kind="interval",
        interval=timedelta(minutes=1),
        executor="tests.jobs.sleep_for",
        payload={"seconds": 0.2},
    )
    nightly = Schedule.objects.create(
        name="nightly-new-york",
        kind="cron",
        cron="30 2 * * *",
        timezone="America/New_York",
        executor="tests.jobs.echo",
        payload={"name": "night owl"},
    )
    invoices = Schedule.objects.create(
        name="import-invoices",
        kind="interval",
        interval=timedelta(hours=1),
        executor="tests.jobs.fails_until_file",
        payload={"path": str(tmp_path / "invoices.csv")},
    )
    for schedule in (hello, flaky, long, invoices):
        make_due(schedule)
    seed_history(hello, [Status.SUCCEEDED] * 16)
    seed_history(
        flaky,
        [Status.SUCCEEDED] * 5 + [Status.DEAD_LETTER] + [Status.SUCCEEDED] * 6,
        error="RuntimeError: flaky job failed (failure_rate=0.4)",
    )
    seed_history(long, [Status.SUCCEEDED, Status.SKIPPED] * 4)
    seed_history(nightly, [Status.SUCCEEDED] * 7)
    return {s.name: s for s in (hello, flaky, long, nightly, invoices)}


# --- the tests -----------------------------------------------------------------------------


def test_log_in_then_pause_and_resume_a_schedule(page, shoot, demo):
    log_in(page, shoot)
    page.goto(f"{ADMIN}/schedule/")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(len(demo))
    hello = rows.filter(has_text="hello-every-10s")
    expect(hello.locator("td.field-rule")).to_have_text(re.compile("every 10 seconds", re.I))
    expect(hello.locator(".cadence-strip .cadence-cell")).to_have_count(16)
    nightly = rows.filter(has_text="nightly-new-york")
    expect(nightly.locator("td.field-rule")).to_contain_text("America/New_York")
    expect(nightly.locator("td.field-next_run")).to_contain_text(re.compile(r"02:30:00 E[SD]T"))
    shoot("schedules")

    run_action(page, "hello-every-10s", "pause")
    expect(page.locator(".messagelist .success")).to_have_text("1 schedule paused.")
    expect(hello.locator("td.field-next_run")).to_have_text("paused")
    schedule = Schedule.objects.get(name="hello-every-10s")
    assert not schedule.enabled
    assert schedule.pause_reason == f"paused in the admin by {USERNAME}"
    shoot("schedules-paused")

    run_action(page, "hello-every-10s", "resume")
    expect(page.locator(".messagelist .success")).to_have_text("1 schedule resumed.")
    expect(hello.locator("td.field-next_run .cadence-time")).to_be_visible()
    assert Schedule.objects.get(name="hello-every-10s").enabled


def test_the_preview_follows_the_cron_expression(page, shoot):
    log_in(page)
    page.goto(f"{ADMIN}/schedule/add/")
    preview = page.locator(".cadence-preview")
    items = preview.locator("ol li")
    # A new form is not wrong yet: a hint, no red error.
    expect(preview.locator(".cadence-hint")).to_have_text(
        "Fill in cron to see the next occurrences."
    )
    expect(page.locator(".errorlist")).to_have_count(0)

    page.select_option("#id_kind", "cron")
    page.fill("#id_timezone", "America/New_York")
    page.fill("#id_cron", "30 2 * * *")
    expect(preview.locator(".cadence-description")).to_have_text("At 02:30 (America/New_York)")
    expect(items).to_have_count(10)
    expect(items.first).to_contain_text(re.compile(r" 02:30:00 E[SD]T"))
    nightly = preview.inner_text()
    # The whole preview at the bottom of the screen, the spec fields above it.
    preview.evaluate("box => box.scrollIntoView({block: 'end'})")
    shoot("schedule-preview")

    page.fill("#id_cron", "*/15 * * * *")
    expect(preview.locator(".cadence-description")).to_have_text(
        "Every 15 minutes (America/New_York)"
    )
    expect(items).to_have_count(10)
    assert preview.inner_text() != nightly
    minutes = [re.search(r":(\d\d):00 E[SD]T", text)[1] for text in items.all_inner_texts()]
    assert set(minutes) <= {"00", "15", "30", "45"}

    page.fill("#id_cron", "61 * * * *")
    expect(preview.locator(".errorlist")).to_contain_text("cron")
    expect(items).to_have_count(0)


@pytest.mark.process
def test_retry_a_dead_letter_and_see_it_succeed(page, shoot, demo, tmp_path):
    run_engine_once(tmp_path, "engine-1")
    dead = Attempt.objects.get(schedule=demo["import-invoices"])
    assert dead.status == Status.DEAD_LETTER

    log_in(page)
    page.goto(f"{ADMIN}/deadletter/")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(2)  # this one and the flaky job's old one
    row = rows.filter(has_text="import-invoices")
    expect(row.locator("td.field-error_excerpt")).to_have_text(
        "django_cadence.exceptions.Permanent: invoices.csv is not there yet"
    )
    shoot("dead-letters")

    (tmp_path / "invoices.csv").write_text("number,amount\n1,100\n")
    run_action(page, "import-invoices", "retry_dead_letters")
    expect(page.locator(".messagelist .success")).to_have_text(
        "1 dead letter sent back to pending."
    )
    expect(rows).to_have_count(1)
    dead.refresh_from_db()
    assert (dead.status, dead.tries) == (Status.PENDING, 0)

    run_engine_once(tmp_path, "engine-2")
    page.goto(f"{ADMIN}/attempt/{dead.pk}/change/")
    expect(page.locator(".field-status_badge .cadence-badge")).to_have_text("succeeded")
    expect(page.locator(".field-outcome_block pre")).to_have_text('"imported invoices.csv"')
    expect(page.locator(".field-worker .readonly")).to_have_text("engine-2")
    # Failed (its error on a row beneath), then succeeded.
    expect(page.locator(".cadence-history tbody tr:not(.cadence-try-error)")).to_have_count(2)
    expect(page.locator(".cadence-history .cadence-try-error")).to_have_count(1)
    # The result and the tries, one by one: the failed first try and the retried one.
    page.locator(".field-outcome_block").evaluate(
        "field => { field.closest('fieldset').scrollIntoView(); window.scrollBy(0, -40); }"
    )
    shoot("attempt-succeeded")
    dead.refresh_from_db()
    assert (dead.status, dead.tries, dead.outcome) == (
        Status.SUCCEEDED,
        1,
        "imported invoices.csv",
    )

    page.goto(f"{ADMIN}/attempt/")
    attempts = page.locator("#result_list tbody tr")
    expect(attempts.filter(has_text="import-invoices").first).to_contain_text("succeeded")
    expect(attempts.filter(has_text="flaky-every-15s").first).to_contain_text("pending")
    shoot("attempts")


def test_operations_on_the_object_pages(page, shoot, demo):
    """Run now, pause and resume from a schedule's page; retry and discard from an attempt's."""
    log_in(page)
    hello = demo["hello-every-10s"]
    page.goto(f"{ADMIN}/schedule/{hello.pk}/change/")
    tools = page.locator(".object-tools")
    expect(tools.get_by_role("button", name="Resume")).to_have_count(0)
    shoot("schedule-operations")

    tools.get_by_role("button", name="Run now", exact=True).click()
    expect(page.locator(".messagelist .success")).to_contain_text("“hello-every-10s” runs now")
    # The new attempt's page.
    expect(page.locator(SUBTITLE)).to_contain_text("hello-every-10s · ")
    assert hello.attempts.filter(trigger="manual").count() == 1

    page.goto(f"{ADMIN}/schedule/{hello.pk}/change/")
    tools.get_by_role("button", name="Pause").click()
    expect(page.locator(".messagelist .success")).to_contain_text("is paused")
    # Run now on a paused schedule asks first, and says the schedule stays paused.
    tools.get_by_role("button", name="Run now", exact=True).click()
    expect(page.locator("#content")).to_contain_text("the schedule stays paused")
    page.get_by_role("button", name="Yes, run now").click()
    expect(page.locator(".messagelist .success")).to_contain_text("It stays paused")
    assert hello.attempts.filter(trigger="manual", even_if_paused=True).count() == 1
    page.goto(f"{ADMIN}/schedule/{hello.pk}/change/")
    tools.get_by_role("button", name="Resume").click()
    expect(page.locator(".messagelist .success")).to_contain_text("is resumed; its next run is")
    assert Schedule.objects.get(pk=hello.pk).enabled

    dead = Attempt.objects.get(schedule=demo["flaky-every-15s"], status=Status.DEAD_LETTER)
    page.goto(f"{ADMIN}/attempt/{dead.pk}/change/")
    expect(page.locator(SUBTITLE)).to_contain_text("flaky-every-15s · ")
    expect(page.locator(SUBTITLE)).to_contain_text(" · dead letter")
    expect(page.locator(".field-retry_when")).to_have_count(0)  # not on a dead letter
    expect(page.locator(".cadence-headline")).to_have_text(
        "RuntimeError: flaky job failed (failure_rate=0.4)"
    )
    tools.get_by_role("button", name="Discard").click()
    expect(page.locator("#content")).to_contain_text("Discarding deletes this dead letter")
    page.get_by_role("link", name="No, take me back").click()
    tools.get_by_role("button", name="Retry").click()
    expect(page.locator(".messagelist .success")).to_contain_text("sent back to pending")
    expect(page.locator(".field-status_badge .cadence-badge")).to_have_text("pending")
    expect(page.locator(".field-retry_when")).to_be_visible()
    tools.get_by_role("button", name="Cancel").click()
    expect(page.locator(".messagelist .success")).to_contain_text("is cancelled")
    assert Attempt.objects.get(pk=dead.pk).status == Status.CANCELLED


def test_the_form_shows_only_the_fields_of_the_chosen_kind(page, shoot):
    log_in(page)
    page.goto(f"{ADMIN}/schedule/add/")
    cron, interval, once = (page.locator(f"fieldset.cadence-kind-{k}") for k in KIND_NAMES)
    page.select_option("#id_kind", "interval")
    expect(interval).to_be_visible()
    expect(cron).to_be_hidden()
    expect(once).to_be_hidden()
    page.select_option("#id_kind", "once")
    expect(once).to_be_visible()
    expect(interval).to_be_hidden()
    expect(once).to_contain_text("Wall time in the schedule's time zone")
    expect(page.locator(".timezonewarning")).to_have_count(0)

    page.select_option("#id_kind", "cron")
    page.fill("#id_cron", "30 2 * * *")
    page.select_option("#id_kind", "interval")  # the cron typed above is dropped, not refused
    page.fill("#id_name", "every-five-minutes")
    page.select_option("#id_executor", "tests.jobs.atomic_noop")
    page.fill("#id_interval", "00:05:00")
    shoot("schedule-add-interval")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist .success")).to_contain_text("every-five-minutes")
    schedule = Schedule.objects.get(name="every-five-minutes")
    assert (schedule.kind, schedule.interval, schedule.cron) == (
        "interval",
        timedelta(minutes=5),
        "",
    )
