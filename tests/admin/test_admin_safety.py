"""Job-provided text is escaped and secrets are redacted on every admin page that shows them."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from django_cadence.admin import display
from django_cadence.executors.redaction import REDACTED, redact_text
from django_cadence.models import Attempt, Schedule

XSS = "<img src=x onerror=alert(1)>"
ESCAPED = "&lt;img src=x onerror=alert(1)&gt;"
SECRET = "hunter2"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def hostile(make_schedule):
    """A schedule and attempts whose every job-provided string is hostile or secret."""
    schedule = make_schedule(
        name=f"evil {XSS}",
        executor="tests.jobs.echo",
        payload={"note": XSS, "password": SECRET, "nested": [{"api_key": SECRET}]},
    )
    Schedule.objects.filter(pk=schedule.pk).update(pause_reason=f"{XSS} token={SECRET}")
    text = f"RuntimeError: {XSS} password={SECRET}\nTraceback: 'api_key': '{SECRET}'"
    common = {
        "schedule": schedule,
        "error": text,
        "outcome": {"html": XSS, "token": SECRET},
        "worker": f"worker {XSS}",
        "tries": 1,
        "history": [
            {
                "try": 1,
                "worker": XSS,
                "started_at": "2026-01-01T00:00:00+00:00",
                "finished_at": XSS,
                "result": XSS,
                "error": text,
            },
            XSS,  # not even a dict: shown, escaped
        ],
    }
    rows = {
        "dead": Attempt.objects.create(occurrence_at=T0, status="dead_letter", **common),
        "retry": Attempt.objects.create(
            occurrence_at=T0.replace(hour=1), status="pending", retry_at=T0, **common
        ),
        "done": Attempt.objects.create(
            occurrence_at=T0.replace(hour=2), status="succeeded", **common
        ),
    }
    return schedule, rows


def pages(schedule, rows):
    def url(name, *args):
        return reverse(f"admin:django_cadence_{name}", args=args)

    return {
        "schedule-list": url("schedule_changelist"),
        "schedule-change": url("schedule_change", schedule.pk),
        "attempt-list": url("attempt_changelist"),
        "attempt-dead": url("attempt_change", rows["dead"].pk),
        "attempt-done": url("attempt_change", rows["done"].pk),
        "deadletter-list": url("deadletter_changelist"),
        "deadletter-change": url("deadletter_change", rows["dead"].pk),
        "retry-list": url("retry_changelist"),
        "retry-change": url("retry_change", rows["retry"].pk),
        "attempts-of-schedule": url("attempt_changelist") + f"?schedule__id__exact={schedule.pk}",
    }


PAGES = [
    "schedule-list",
    "schedule-change",
    "attempt-list",
    "attempt-dead",
    "attempt-done",
    "deadletter-list",
    "deadletter-change",
    "retry-list",
    "retry-change",
    "attempts-of-schedule",
]


@pytest.mark.parametrize("page", PAGES)
def test_admin_page_escapes_job_text_and_hides_secrets(admin_client, hostile, page):
    schedule, rows = hostile
    response = admin_client.get(pages(schedule, rows)[page])
    assert response.status_code == 200
    html = response.content.decode()
    assert XSS not in html
    assert "onerror=alert(1)>" not in html
    assert ESCAPED in html
    assert SECRET not in html


def test_admin_discard_confirmation_escapes_and_redacts(admin_client, hostile):
    _schedule, rows = hostile
    response = admin_client.post(
        reverse("admin:django_cadence_deadletter_changelist"),
        {"action": "discard", "_selected_action": [str(rows["dead"].pk)], "index": "0"},
    )
    html = response.content.decode()
    assert XSS not in html
    assert ESCAPED in html
    assert SECRET not in html


def test_admin_help_text_escapes_a_stored_executor(admin_client, make_schedule):
    """The admin renders help texts unescaped; a stored path is escaped before it gets there."""
    schedule = make_schedule()
    Schedule.objects.filter(pk=schedule.pk).update(executor=f"x.{XSS}")
    html = admin_client.get(reverse("admin:django_cadence_schedule_change", args=[schedule.pk]))
    html = html.content.decode()
    assert XSS not in html
    assert "is not allowed any more" in html


# --- excerpts: only what is shown is redacted, and a secret cut short stays hidden -------------

LONG = "x" * 5_000  # a long traceback's worth of text between the start and the secret
TOKEN = SECRET * 100  # a secret longer than the redaction margin: the cut falls inside it


def _shown_near_the_end(secret_text: str, length: int) -> str:
    """Text whose ``length`` shown characters end with the start of ``secret_text``."""
    return "y" * (length - 30) + secret_text


@pytest.mark.parametrize(
    "secret_text",
    [f"password={TOKEN} more", f"{{'token': '{TOKEN}'}}", f'{{"secret": "{TOKEN}"}}'],
    ids=["key-value", "quoted", "json"],
)
@pytest.mark.parametrize("where", ["headline", "tooltip"])
def test_admin_excerpt_hides_a_secret_cut_short(secret_text, where):
    if where == "headline":  # the exception line, after a long traceback
        head = "RuntimeError: "
        line = head + _shown_near_the_end(secret_text, display.EXCERPT_CHARS - len(head))
        text = f"Traceback (most recent call last):\n  {LONG}\n{line}"
    else:
        text = _shown_near_the_end(secret_text, display.TOOLTIP_CHARS) + "\n" + LONG
    html = str(display.excerpt(text))
    assert REDACTED in html
    assert SECRET[:3] not in html


def test_admin_excerpt_redacts_only_what_it_shows(monkeypatch):
    """A 10,000-character traceback is not redacted whole for a changelist's excerpt."""
    redacted = []

    def spy(text):
        redacted.append(len(text))
        return redact_text(text)

    monkeypatch.setattr(display, "redact_text", spy)
    text = f"Traceback (most recent call last):\n  {LONG}{LONG}\nRuntimeError: token={SECRET}"
    html = str(display.excerpt(text))
    assert "RuntimeError: token=" in html
    assert SECRET not in html
    assert max(redacted) <= display.TOOLTIP_CHARS + display.REDACT_MARGIN
    display.text_block(text)  # the detail page: the whole text
    assert max(redacted) == len(text)


def test_admin_detail_page_redacts_a_secret_at_the_end_of_a_long_error(admin_client, make_schedule):
    schedule = make_schedule()
    error = f"Traceback (most recent call last):\n  {LONG}{LONG}\nRuntimeError: api_key={SECRET}"
    attempt = Attempt.objects.create(
        schedule=schedule, occurrence_at=T0, status="dead_letter", error=error
    )
    for url in (
        reverse("admin:django_cadence_attempt_change", args=[attempt.pk]),
        reverse("admin:django_cadence_deadletter_changelist"),
    ):
        html = admin_client.get(url).content.decode()
        assert "RuntimeError: api_key=" in html
        assert SECRET not in html
