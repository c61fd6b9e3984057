"""Operations on an object's own page: a POST with CSRF, its permission, the history, a message."""

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from django_cadence.models import Attempt, Schedule
from tests.admin.test_admin_actions import VIEW, attempt


@dataclass(frozen=True)
class Case:
    page: str
    action: str
    codename: str
    setup: Any  # (make_schedule) -> the object whose page it is
    done: Any  # (object) -> bool, read from the database
    message: str  # in the message on success
    log_flag: int = CHANGE


CASES = {
    "run": Case(
        "schedule",
        "run",
        "run_schedule",
        lambda make: make(),
        lambda s: s.attempts.filter(trigger="manual", status="pending").count() == 1,
        "runs now",
    ),
    "force-run": Case(
        "schedule",
        "force-run",
        "force_run_schedule",
        lambda make: make(),
        lambda s: s.attempts.filter(trigger="manual").count() == 1,
        "runs now",
    ),
    "run-paused": Case(
        "schedule",
        "run-paused",
        "run_schedule",
        lambda make: make(enabled=False),
        lambda s: (
            s.attempts.filter(trigger="manual", even_if_paused=True).count() == 1
            and not Schedule.objects.get(pk=s.pk).enabled
        ),
        "It stays paused: nothing else runs until it is resumed.",
    ),
    "pause": Case(
        "schedule",
        "pause",
        "pause_schedule",
        lambda make: make(),
        lambda s: not Schedule.objects.get(pk=s.pk).enabled,
        "is paused",
    ),
    "resume": Case(
        "schedule",
        "resume",
        "resume_schedule",
        lambda make: make(enabled=False),
        lambda s: Schedule.objects.get(pk=s.pk).enabled,
        "is resumed; its next run is",
    ),
    "retry": Case(
        "attempt",
        "retry",
        "retry_deadletter",
        lambda make: attempt(make(), "dead_letter"),
        lambda a: Attempt.objects.get(pk=a.pk).status == "pending",
        "sent back to pending",
    ),
    "discard": Case(
        "deadletter",
        "discard",
        "discard_deadletter",
        lambda make: attempt(make(), "dead_letter"),
        lambda a: not Attempt.objects.filter(pk=a.pk).exists(),
        "is discarded",
        DELETION,
    ),
    "cancel": Case(
        "attempt",
        "cancel",
        "cancel_attempt",
        lambda make: attempt(make(), "pending"),
        lambda a: Attempt.objects.get(pk=a.pk).status == "cancelled",
        "is cancelled",
    ),
    "cancel-running": Case(
        "attempt",
        "cancel",
        "cancel_attempt",
        lambda make: attempt(make(), "running"),
        lambda a: Attempt.objects.get(pk=a.pk).cancel_requested,
        "is asked to stop",
    ),
}


def page_url(page, pk):
    return reverse(f"admin:django_cadence_{page}_change", args=[pk])


def do_url(page, pk, action):
    return reverse(f"admin:django_cadence_{page}_do", args=[pk, action])


def post_with_csrf(client, url, **data):
    """POST as the page's form does: with the CSRF token the page set in its cookie."""
    token = client.cookies["csrftoken"].value
    return client.post(url, {"csrfmiddlewaretoken": token, **data})


@pytest.mark.parametrize("granted", [True, False], ids=["granted", "refused"])
@pytest.mark.parametrize("name", CASES)
def test_object_page_operation_needs_its_permission_is_logged_and_says_what_happened(
    operator, make_schedule, name, granted
):
    case = CASES[name]
    obj = case.setup(make_schedule)
    others = {c.codename for c in CASES.values()} - {case.codename}
    granted_codenames = [VIEW[case.page], *others, *([case.codename] if granted else [])]
    client = operator(*granted_codenames, csrf=True)
    page = client.get(page_url(case.page, obj.pk))
    assert page.status_code == 200
    url = do_url(case.page, obj.pk, case.action)
    assert (f'action="{url}"' in page.content.decode()) is granted
    data = {"post": "yes"} if case.action in ("discard", "run-paused") else {}
    response = post_with_csrf(client, url, **data)
    if not granted:
        assert response.status_code == 403
        assert not case.done(obj)
        assert not LogEntry.objects.exists()
        return
    assert response.status_code == 302
    assert case.done(obj)
    assert LogEntry.objects.filter(object_id=str(obj.pk), action_flag=case.log_flag).exists()
    text = " ".join(str(m) for m in get_messages(response.wsgi_request))
    assert case.message in text


def test_object_page_operation_refuses_get_and_a_missing_csrf_token(admin_user, make_schedule):
    schedule = make_schedule()
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    url = do_url("schedule", schedule.pk, "run")
    assert client.get(url).status_code == 405
    assert client.post(url).status_code == 403
    assert not schedule.attempts.exists()


def test_object_page_shows_only_the_operations_of_the_state(admin_client, make_schedule):
    paused = make_schedule(name="paused", enabled=False)
    html = admin_client.get(page_url("schedule", paused.pk)).content.decode()
    assert do_url("schedule", paused.pk, "resume") in html
    assert do_url("schedule", paused.pk, "run-paused") in html
    for action in ("run", "force-run", "pause"):
        assert do_url("schedule", paused.pk, action) not in html
    done = attempt(make_schedule(name="done"), "succeeded")
    html = admin_client.get(page_url("attempt", done.pk)).content.decode()
    assert "/do/" not in html


def test_object_page_operation_that_no_longer_applies_says_so(admin_client, make_schedule):
    dead = attempt(make_schedule(), "dead_letter")
    Attempt.objects.filter(pk=dead.pk).update(status="succeeded")
    response = admin_client.post(do_url("attempt", dead.pk, "retry"))
    assert response.status_code == 302
    text = " ".join(str(m) for m in get_messages(response.wsgi_request))
    assert "does not apply now" in text
    assert Attempt.objects.get(pk=dead.pk).status == "succeeded"


def test_discard_on_the_page_asks_for_confirmation_first(admin_client, make_schedule):
    dead = attempt(make_schedule(), "dead_letter")
    response = admin_client.post(do_url("deadletter", dead.pk, "discard"))
    assert response.status_code == 200
    assert "Yes, discard" in response.content.decode()
    assert Attempt.objects.filter(pk=dead.pk).exists()


def test_run_now_skipped_by_the_overlap_policy_is_a_warning(admin_client, make_schedule):
    schedule = make_schedule(overlap="skip_if_running")
    attempt(schedule, "running")
    response = admin_client.post(do_url("schedule", schedule.pk, "run"))
    text = " ".join(str(m) for m in get_messages(response.wsgi_request))
    assert "was not run: its overlap policy (skip if running) skipped it" in text


def test_run_now_on_a_paused_schedule_asks_first_saying_it_stays_paused(
    admin_client, make_schedule
):
    paused = make_schedule(name="paused", enabled=False)
    response = admin_client.post(do_url("schedule", paused.pk, "run-paused"))
    assert response.status_code == 200
    page = " ".join(response.content.decode().split())
    assert "This schedule is paused. Run now makes one manual attempt of it now" in page
    assert "the schedule stays paused: nothing else runs until it is resumed." in page
    assert "Yes, run now" in page
    assert not paused.attempts.exists()

    response = admin_client.post(do_url("schedule", paused.pk, "run-paused"), {"post": "yes"})
    manual = paused.attempts.get()
    assert manual.even_if_paused
    page = " ".join(admin_client.get(response.url).content.decode().split())
    assert "It stays paused: nothing else runs until it is resumed." in page
    attempt_page = admin_client.get(page_url("attempt", manual.pk)).content.decode()
    assert "run now while paused" in attempt_page
    assert not Schedule.objects.get(pk=paused.pk).enabled
