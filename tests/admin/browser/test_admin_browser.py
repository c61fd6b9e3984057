"""The admin in a real browser: Playwright drives Debian's Chromium against a live server.

The live server (pytest-django's ``live_server``) serves the admin, its CSS and its JavaScript
with the test settings; each test creates the example project's demo schedules (pointing at
``tests.jobs`` look-alikes of the demo jobs) with a little past history for the strips, and
logs in through the login form as a superuser it creates. The engine runs as a real
``run_cadence --once`` child against the test database, as an operator's worker would.

Chromium is Debian's (``apt-get install chromium``, done by ``.ci/run``), launched through
``executable_path``: Playwright may not download a browser of its own here. A missing browser
fails these tests, it never skips them. Each page visited is saved as a 1280x800 screenshot in
the test's ``tmp_path``, and with ``CADENCE_SCREENSHOTS=1`` in ``docs/screenshots/`` (the
admin tour, ``docs/admin-tour.md``).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import Browser, Page, expect, sync_playwright

from benchmarks.fleet import Worker, database_env
from django_cadence.models import Attempt, Schedule, Status
from tests.fleet.conftest import make_due

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[3]
SCREENSHOTS = ROOT / "docs" / "screenshots"
CHROMIUM = os.environ.get("CADENCE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 800}
USERNAME, PASSWORD = "operator", "a-browser-test-password"
ADMIN = "/admin/django_cadence"


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module; fails (never skips) when it is not installed.

    Playwright's sync API runs an asyncio event loop in this thread (in a greenlet) from
    ``start`` to ``stop``, so ``asyncio.get_running_loop()`` finds a running loop in the test
    code between two Playwright calls, and Django refuses every ORM call made here with
    ``SynchronousOnlyOperation``. The loop never runs Django code: the ORM calls are plain
    blocking calls in the test's own thread, so telling Django so is safe. The variable is set
    for exactly as long as the loop exists, which covers the function-scoped fixtures'
    database work (creating users, the flush at teardown) too.
    """
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (as .ci/run does)")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            yield chromium
            chromium.close()


@pytest.fixture
def page(browser: Browser, live_server, django_user_model, tmp_path):
    """A fresh browser context on the live server, and a superuser to log in with."""
    django_user_model.objects.create_superuser(USERNAME, "operator@example.com", PASSWORD)
    context = browser.new_context(
        base_url=live_server.url, viewport=VIEWPORT, locale="en-US", timezone_id="UTC"
    )
    context.set_default_timeout(10_000)
    # The admin's navigation sidebar starts collapsed (it keeps that in localStorage), leaving
    # the changelists the room they need at 1280 px.
    context.add_init_script("localStorage.setItem('django.admin.navSidebarIsOpen', 'false')")
    yield context.new_page()
    context.close()


@pytest.fixture
def shoot(page: Page, tmp_path):
    """``shoot(NAME)``: save the visible page as NAME.png in tmp_path.

    With ``CADENCE_SCREENSHOTS=1`` it also refreshes ``docs/screenshots/`` (the admin tour),
    so an ordinary test run leaves the committed pictures alone.
    """
    refresh_docs = os.environ.get("CADENCE_SCREENSHOTS") == "1"

    def save(name: str) -> None:
        path = tmp_path / f"{name}.png"
        page.screenshot(path=path)
        assert path.stat().st_size > 0
        if refresh_docs:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, SCREENSHOTS / path.name)

    return save


def log_in(page: Page, shoot=None) -> None:
    """Log in through the login form (``shoot``: take a screenshot of it, filled in)."""
    page.goto("/admin/")
    expect(page).to_have_url(re.compile(r"/admin/login/"))
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    if shoot:
        shoot("login")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#site-name")).to_have_text("Django administration")
    expect(page.locator("#user-tools strong")).to_have_text(USERNAME)


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
    expect(nightly.locator("td.field-timezone")).to_have_text("America/New_York")
    expect(nightly.locator("td.field-next_run")).to_contain_text(re.compile(r"02:30 E[SD]T"))
    shoot("schedules")

    run_action(page, "hello-every-10s", "pause")
    expect(page.locator(".messagelist .success")).to_have_text("1 schedule paused.")
    expect(hello.locator("td.field-enabled img")).to_have_attribute("alt", "False")
    schedule = Schedule.objects.get(name="hello-every-10s")
    assert not schedule.enabled
    assert schedule.pause_reason == f"paused in the admin by {USERNAME}"
    shoot("schedules-paused")

    run_action(page, "hello-every-10s", "resume")
    expect(page.locator(".messagelist .success")).to_have_text("1 schedule resumed.")
    expect(hello.locator("td.field-enabled img")).to_have_attribute("alt", "True")
    assert Schedule.objects.get(name="hello-every-10s").enabled


def test_the_preview_follows_the_cron_expression(page, shoot):
    log_in(page)
    page.goto(f"{ADMIN}/schedule/add/")
    preview = page.locator(".cadence-preview")
    items = preview.locator("ol li")

    page.select_option("#id_kind", "cron")
    page.fill("#id_timezone", "America/New_York")
    page.fill("#id_cron", "30 2 * * *")
    expect(preview.locator(".cadence-description")).to_have_text("At 02:30 (America/New_York)")
    expect(items).to_have_count(10)
    expect(items.first).to_contain_text(re.compile(r" 02:30 E[SD]T"))
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
    minutes = [re.search(r":(\d\d) E[SD]T", text)[1] for text in items.all_inner_texts()]
    assert set(minutes) <= {"00", "15", "30", "45"}

    page.fill("#id_cron", "61 * * * *")
    expect(preview.locator(".errorlist")).to_contain_text("cron")
    expect(items).to_have_count(0)


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
    expect(page.locator(".cadence-history tbody tr")).to_have_count(2)  # failed, then succeeded
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
