"""Shared by the browser tests: one Chromium, a fresh logged-out page, screenshots, logging in.

Chromium is Debian's (``apt-get install chromium``, done by ``.ci/run``), launched through
``executable_path``: Playwright may not download a browser of its own here. A missing browser
fails these tests, it never skips them. Pages are 1280x800 with Django's navigation sidebar
open, as an operator first sees the admin. ``shoot(NAME)`` saves a screenshot in the test's
``tmp_path``, and with ``CADENCE_SCREENSHOTS=1`` in ``docs/screenshots/`` (the admin tour,
``docs/admin-tour.md``; ``make screenshots`` refreshes them all).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

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
    # Django's default layout: the navigation sidebar open (the admin keeps it in localStorage).
    context.add_init_script("localStorage.setItem('django.admin.navSidebarIsOpen', 'true')")
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
