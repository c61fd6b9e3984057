"""A schedule declared in code, on the admin: it says so, its declared fields are read-only,
and Pause, Resume, Run now and retries stay available (docs/design.md, "Schedules declared
in code")."""

from datetime import UTC, datetime

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from django_cadence.models import Attempt, Schedule
from django_cadence.ops import reconcile

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
DECLARED = {
    "cron": "0 3 * * *",
    "executor": "tests.jobs.echo",
    "payload": {"to": "ops", "password": "hunter2"},
}
CHANGELIST = reverse("admin:django_cadence_schedule_changelist")


@pytest.fixture
def declared(settings, db):
    settings.CADENCE_SCHEDULES = {"nightly": DECLARED}
    reconcile.reconcile(NOW)
    return Schedule.objects.get(name="nightly")


def change_url(schedule):
    return reverse("admin:django_cadence_schedule_change", args=[schedule.pk])


def text(response):
    return " ".join(response.content.decode().split())


def test_code_owned_page_names_the_setting_and_what_a_deploy_does(admin_client, declared):
    page = text(admin_client.get(change_url(declared)))
    assert "Declared in code: <code>CADENCE_SCHEDULES[&#x27;nightly&#x27;]</code>." in page
    assert "read-only here: change them there" in page
    assert "Each deploy (<code>cadence_sync</code>, or <code>run_cadence</code> as it starts)" in (
        page
    )
    assert "a deploy keeps a pause and its reason" in page


def test_code_owned_declared_fields_are_read_only_and_the_payload_redacted(admin_client, declared):
    response = admin_client.get(change_url(declared))
    form = response.context["adminform"].form
    assert form.fields == {}  # nothing to type: every declared field is read-only
    page = text(response)
    for name in ("cron", "executor", "kind", "max_attempts"):
        assert f'name="{name}"' not in page
    assert "hunter2" not in page
    assert 'name="_save"' not in page
    assert "0 3 * * *" in page  # shown, not editable
    assert "Cron (kind: cron)" in page
    assert "Interval (kind: interval)" not in page  # only its own kind's fields


def test_code_owned_post_cannot_change_a_declared_field(admin_client, declared):
    admin_client.post(
        change_url(declared),
        {"name": "renamed", "cron": "* * * * *", "executor": "tests.jobs.noop", "enabled": ""},
    )
    schedule = Schedule.objects.get(pk=declared.pk)
    assert (schedule.name, schedule.cron, schedule.executor) == (
        "nightly",
        "0 3 * * *",
        "tests.jobs.echo",
    )
    assert schedule.enabled


def test_code_owned_schedule_cannot_be_deleted_while_declared(admin_client, declared):
    url = reverse("admin:django_cadence_schedule_delete", args=[declared.pk])
    assert admin_client.post(url, {"post": "yes"}).status_code == 403
    assert Schedule.objects.filter(pk=declared.pk).exists()


def test_code_owned_schedule_cannot_be_deleted_from_the_list_either(
    admin_client, declared, make_schedule
):
    other = make_schedule(name="typed-in-admin")
    response = admin_client.post(
        CHANGELIST, {"action": "delete_selected", "_selected_action": [declared.pk, other.pk]}
    )
    assert "Schedule: nightly (declared in code: remove its declaration and deploy first)" in (
        text(response)
    )
    response = admin_client.post(
        CHANGELIST,
        {"action": "delete_selected", "_selected_action": [declared.pk], "post": "yes"},
    )
    assert Schedule.objects.filter(pk=declared.pk).exists()


def test_code_owned_operations_stay_available(admin_client, declared):
    page = text(admin_client.get(change_url(declared)))
    for action in ("run", "pause"):
        assert reverse("admin:django_cadence_schedule_do", args=[declared.pk, action]) in page
    pause = reverse("admin:django_cadence_schedule_do", args=[declared.pk, "pause"])
    response = admin_client.post(pause)
    assert "is paused" in " ".join(str(m) for m in get_messages(response.wsgi_request))
    dead = Attempt.objects.create(schedule=declared, occurrence_at=NOW, status="dead_letter")
    retry = reverse("admin:django_cadence_attempt_do", args=[dead.pk, "retry"])
    admin_client.post(retry)
    assert Attempt.objects.get(pk=dead.pk).status == "pending"


def test_code_owned_list_has_a_badge_and_a_filter(admin_client, declared, make_schedule):
    make_schedule(name="typed-in-admin")
    page = text(admin_client.get(CHANGELIST))
    assert 'class="cadence-badge cadence-code"' in page
    assert page.count('class="cadence-badge cadence-code"') == 1
    assert "By declared in" in page
    code = admin_client.get(CHANGELIST, {"declared_in": "code"})
    assert [s.name for s in code.context["cl"].result_list] == ["nightly"]
    admin = admin_client.get(CHANGELIST, {"declared_in": "admin"})
    assert [s.name for s in admin.context["cl"].result_list] == ["typed-in-admin"]


def test_admin_made_schedule_stays_editable(admin_client, make_schedule):
    schedule = make_schedule(name="typed-in-admin")
    response = admin_client.get(change_url(schedule))
    assert "cron" in response.context["adminform"].form.fields
    assert "Declared in code" not in text(response)


def test_a_deploy_restores_declared_fields_and_keeps_the_pause_and_its_reason(settings, declared):
    from django_cadence import services

    services.pause(declared, reason="comparing with beat")
    Schedule.objects.filter(pk=declared.pk).update(cron="*/5 * * * *", max_attempts=9)

    result = reconcile.reconcile(NOW)

    assert sorted(c.field for c in result.changes) == ["cron", "max_attempts"]
    schedule = Schedule.objects.get(pk=declared.pk)
    assert (schedule.cron, schedule.max_attempts) == ("0 3 * * *", None)
    assert (schedule.enabled, schedule.pause_reason) == (False, "comparing with beat")
