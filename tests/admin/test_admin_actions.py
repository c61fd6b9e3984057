"""Admin actions: each calls its service, is recorded in the admin history, needs its permission."""

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from django_cadence.models import Attempt, Schedule


def changelist(page):
    return reverse(f"admin:django_cadence_{page}_changelist")


def run_action(client, page, action, pks, **extra):
    data = {"action": action, "_selected_action": [str(pk) for pk in pks], "index": "0", **extra}
    return client.post(changelist(page), data)


def attempt(schedule, status, **fields):
    now = timezone.now()
    defaults = {
        "occurrence_at": now - timedelta(minutes=Attempt.objects.count() + 1),
        "status": status,
        "tries": 1,
        "retry_at": now + timedelta(hours=1) if status == "pending" else None,
        "error": "RuntimeError: boom",
    }
    if status == "running":
        defaults.update(claim_token="t" * 32, lease_until=now + timedelta(minutes=5))
    defaults.update(fields)
    return Attempt.objects.create(schedule=schedule, **defaults)


@dataclass(frozen=True)
class Case:
    page: str
    action: str
    codename: str
    setup: Any  # (make_schedule) -> the selected object
    done: Any  # (selected object) -> bool, read from the database
    log_flag: int = CHANGE


CASES = {
    "run-now": Case(
        "schedule",
        "run_now",
        "run_schedule",
        lambda make: make(),
        lambda s: s.attempts.filter(trigger="manual", status="pending").count() == 1,
    ),
    "run-now-forced": Case(
        "schedule",
        "run_now_forced",
        "force_run_schedule",
        lambda make: make(),
        lambda s: s.attempts.filter(trigger="manual", status="pending").count() == 1,
    ),
    "pause": Case(
        "schedule",
        "pause",
        "pause_schedule",
        lambda make: make(),
        lambda s: not Schedule.objects.get(pk=s.pk).enabled,
    ),
    "resume": Case(
        "schedule",
        "resume",
        "resume_schedule",
        lambda make: make(enabled=False),
        lambda s: Schedule.objects.get(pk=s.pk).enabled,
    ),
    "attempt-retry": Case(
        "attempt",
        "retry_dead_letters",
        "retry_deadletter",
        lambda make: attempt(make(), "dead_letter"),
        lambda a: Attempt.objects.get(pk=a.pk).status == "pending",
    ),
    "attempt-cancel": Case(
        "attempt",
        "cancel",
        "cancel_attempt",
        lambda make: attempt(make(), "pending"),
        lambda a: Attempt.objects.get(pk=a.pk).status == "cancelled",
    ),
    "dead-letter-retry": Case(
        "deadletter",
        "retry_dead_letters",
        "retry_deadletter",
        lambda make: attempt(make(), "dead_letter"),
        lambda a: Attempt.objects.get(pk=a.pk).status == "pending",
    ),
    "dead-letter-discard": Case(
        "deadletter",
        "discard",
        "discard_deadletter",
        lambda make: attempt(make(), "dead_letter"),
        lambda a: not Attempt.objects.filter(pk=a.pk).exists(),
        DELETION,
    ),
    "retry-now": Case(
        "retry",
        "run_retries_now",
        "run_retry_now",
        lambda make: attempt(make(), "pending"),
        lambda a: Attempt.objects.get(pk=a.pk).retry_at <= timezone.now(),
    ),
    "retry-cancel": Case(
        "retry",
        "cancel",
        "cancel_attempt",
        lambda make: attempt(make(), "pending"),
        lambda a: Attempt.objects.get(pk=a.pk).status == "cancelled",
    ),
}

VIEW = {
    "schedule": "view_schedule",
    "attempt": "view_attempt",
    "deadletter": "view_deadletter",
    "retry": "view_retry",
}


@pytest.mark.parametrize("granted", [True, False], ids=["granted", "refused"])
@pytest.mark.parametrize("name", CASES)
def test_admin_action_needs_its_permission_and_is_logged(operator, make_schedule, name, granted):
    case = CASES[name]
    selected = case.setup(make_schedule)
    # Refused means: every other action of the page is allowed, just not this one.
    others = {c.codename for c in CASES.values() if c.page == case.page} - {case.codename}
    codenames = [VIEW[case.page], *others] + ([case.codename] if granted else [])
    client = operator(*codenames)
    page = client.get(changelist(case.page))
    assert page.status_code == 200
    assert (f'value="{case.action}"' in page.content.decode()) is granted
    extra = {"post": "yes"} if case.action == "discard" else {}
    response = run_action(client, case.page, case.action, [selected.pk], **extra)
    assert response.status_code == (302 if granted else 403)
    assert case.done(selected) is granted
    logged = LogEntry.objects.filter(object_id=str(selected.pk), action_flag=case.log_flag)
    assert logged.exists() is granted
    if granted:
        assert "1 " in " ".join(str(m) for m in get_messages(response.wsgi_request))


def test_admin_run_now_goes_through_the_overlap_policy(admin_client, make_schedule):
    schedule = make_schedule(overlap="skip_if_running")
    attempt(schedule, "running")
    response = run_action(admin_client, "schedule", "run_now", [schedule.pk])
    manual = schedule.attempts.get(trigger="manual")
    assert manual.status == "skipped"
    messages = [str(m) for m in get_messages(response.wsgi_request)]
    assert messages == ["0 runs queued. 1 was skipped by its overlap policy."]
    run_action(admin_client, "schedule", "run_now_forced", [schedule.pk])
    assert schedule.attempts.filter(trigger="manual", status="pending").count() == 1


def test_admin_run_now_counts_every_selected_schedule(admin_client, make_schedule):
    schedules = [make_schedule() for _ in range(3)]
    response = run_action(admin_client, "schedule", "run_now", [s.pk for s in schedules])
    assert Attempt.objects.filter(trigger="manual").count() == 3
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["3 runs queued."]
    entries = LogEntry.objects.filter(action_flag=CHANGE).values_list("change_message", flat=True)
    assert len(entries) == 3
    assert all(e.startswith("Ran now: attempt ") for e in entries)


def test_admin_run_now_on_a_selection_leaves_paused_schedules_saying_where_to_run_them(
    admin_client, make_schedule
):
    running, paused = make_schedule(name="running"), make_schedule(name="paused", enabled=False)
    response = run_action(admin_client, "schedule", "run_now", [running.pk, paused.pk])
    assert list(Attempt.objects.values_list("schedule__name", flat=True)) == ["running"]
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        (
            "1 run queued. 1 left alone: “paused” (paused: to run it once while it stays paused, "
            "use Run now on its page)."
        )
    ]


def test_admin_bulk_action_names_the_first_ten_left_alone_and_counts_the_rest(
    admin_client, make_schedule
):
    paused = [make_schedule(name=f"paused-{n:02}", enabled=False) for n in range(12)]
    response = run_action(admin_client, "schedule", "pause", [s.pk for s in paused])
    [message] = [str(m) for m in get_messages(response.wsgi_request)]
    assert message.startswith("0 schedules paused. 12 left alone: “paused-00” (paused); ")
    assert "“paused-09” (paused); and 2 more." in message
    assert "paused-10" not in message


def test_admin_pause_records_who_paused(admin_client, make_schedule):
    schedule = make_schedule()
    run_action(admin_client, "schedule", "pause", [schedule.pk])
    schedule.refresh_from_db()
    assert schedule.pause_reason == "paused in the admin by admin"


def test_admin_retry_leaves_other_statuses_alone(admin_client, make_schedule):
    schedule = make_schedule()
    dead, done = attempt(schedule, "dead_letter"), attempt(schedule, "succeeded")
    response = run_action(admin_client, "attempt", "retry_dead_letters", [dead.pk, done.pk])
    assert Attempt.objects.get(pk=dead.pk).status == "pending"
    assert Attempt.objects.get(pk=done.pk).status == "succeeded"
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "1 dead letter sent back to pending. 1 was not a dead letter and was left alone."
    ]


def test_admin_cancel_asks_a_running_attempt_to_stop(admin_client, make_schedule):
    running = attempt(make_schedule(), "running")
    run_action(admin_client, "attempt", "cancel", [running.pk])
    running.refresh_from_db()
    assert running.status == "running"
    assert running.cancel_requested
    assert LogEntry.objects.get(object_id=str(running.pk)).change_message == "Asked to stop."


def test_admin_discard_asks_for_confirmation_first(admin_client, make_schedule):
    dead = attempt(make_schedule(name="billing"), "dead_letter", error="bad card password=hunter2")
    response = run_action(admin_client, "deadletter", "discard", [dead.pk])
    assert response.status_code == 200
    html = response.content.decode()
    assert "Discard dead letters?" in html
    assert "billing" in html
    assert "hunter2" not in html
    assert 'name="post" value="yes"' in html
    assert Attempt.objects.filter(pk=dead.pk).exists()
    # Confirming posts the same selection without "index", as Django's delete does.
    response = admin_client.post(
        changelist("deadletter"),
        {"action": "discard", "_selected_action": [str(dead.pk)], "post": "yes"},
    )
    assert response.status_code == 302
    assert not Attempt.objects.filter(pk=dead.pk).exists()
    entry = LogEntry.objects.get(action_flag=DELETION)
    assert entry.change_message.startswith("Discarded the dead letter of billing at ")
    assert "hunter2" not in entry.change_message


def test_admin_retry_now_skips_retries_already_due(admin_client, make_schedule):
    schedule = make_schedule()
    waiting = attempt(schedule, "pending")
    due = attempt(schedule, "pending", retry_at=timezone.now() - timedelta(minutes=1))
    response = run_action(admin_client, "retry", "run_retries_now", [waiting.pk, due.pk])
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        f"1 retry brought forward to now. 1 left alone: “{due}” (already due or running)."
    ]
    assert LogEntry.objects.filter(object_id=str(waiting.pk)).exists()
    assert not LogEntry.objects.filter(object_id=str(due.pk)).exists()


def test_admin_pause_reports_a_schedule_that_cannot_be_saved(admin_client, make_schedule, settings):
    schedule = make_schedule(executor="tests.jobs.echo")
    settings.CADENCE_EXECUTORS = []
    response = run_action(admin_client, "schedule", "pause", [schedule.pk])
    [message] = [str(m) for m in get_messages(response.wsgi_request)]
    assert message.startswith(f"0 schedules paused. 1 left alone: “{schedule.name}” (")
    assert "not allowed" in message
    assert Schedule.objects.get(pk=schedule.pk).enabled


def test_admin_deleting_a_schedule_counts_its_attempts_and_needs_no_attempt_permission(
    operator, make_schedule
):
    """Attempts are listed as a count (there may be millions), and go with their schedule."""
    schedule = make_schedule(name="doomed")
    for status in ("succeeded", "dead_letter", "skipped"):
        attempt(schedule, status)
    client = operator("view_schedule", "delete_schedule")
    selection = {"action": "delete_selected", "_selected_action": [str(schedule.pk)]}
    confirm = client.post(changelist("schedule"), {**selection, "index": "0"})
    assert confirm.status_code == 200
    html = confirm.content.decode()
    assert "3 attempts" in html
    assert "doomed" in html
    response = client.post(changelist("schedule"), {**selection, "post": "yes"})
    assert response.status_code == 302
    assert not Schedule.objects.exists()
    assert not Attempt.objects.exists()
    single = make_schedule()
    attempt(single, "succeeded")
    delete = reverse("admin:django_cadence_schedule_delete", args=[single.pk])
    assert "1 attempt" in client.get(delete).content.decode()
    assert client.post(delete, {"post": "yes"}).status_code == 302
    assert not Schedule.objects.exists()
