"""Notifications in the admin, as rendered pages: the episodes with their messages, each
schedule's notification state, and the page that sends a test notification per channel (to
the real webhook receiver), refused to a user without the permission."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from django_cadence.notify import outbox
from tests.support.receivers import webhook

pytestmark = pytest.mark.django_db

MINUTE = timedelta(minutes=1)
TEST_PAGE = "admin:django_cadence_notice_test"


@pytest.fixture
def broken(engine, schedule_at, clock, settings, hook):
    """A schedule whose dead letter opened an episode, and whose message was sent."""
    settings.CADENCE_NOTIFY = {"channels": {"ops-hook": webhook(hook, events=["dead_letter"])}}
    schedule = schedule_at(
        name="export-invoices",
        interval=MINUTE,
        executor="tests.jobs.raise_error",
        max_attempts=1,
    )
    clock.advance(MINUTE)
    engine.tick()
    outbox.deliver_due(clock.now, "worker-1")
    return schedule


def test_the_schedule_page_shows_its_open_episode_and_the_last_message(admin_client, broken):
    page = admin_client.get(reverse("admin:django_cadence_schedule_change", args=[broken.pk]))

    text = page.content.decode()
    assert "dead letter since" in text
    assert "last message: export-invoices: an attempt was dead-lettered (open) to ops-hook" in text


def test_the_episodes_page_lists_each_with_its_messages(admin_client, broken):
    page = admin_client.get(reverse("admin:django_cadence_notice_changelist"))

    text = page.content.decode()
    assert "export-invoices" in text
    assert "open to ops-hook: sent" in text
    assert "Send a test notification" in text


def test_a_test_notification_reaches_the_channel(admin_client, settings, hook):
    settings.CADENCE_NOTIFY = {"channels": {"ops-hook": webhook(hook)}}
    listed = admin_client.get(reverse(TEST_PAGE))
    assert 'aria-label="Send a test notification to ops-hook">Send a test</button>' in (
        listed.content.decode()
    )

    page = admin_client.post(reverse(TEST_PAGE), {"channel": "ops-hook"}, follow=True)

    assert "Test notification sent to ops-hook: HTTP 200." in page.content.decode()
    (body,) = hook.bodies()
    assert (body["event"], body["test"]) == ("test", True)


def test_a_failing_test_notification_says_why(admin_client, settings, hook):
    settings.CADENCE_NOTIFY = {"channels": {"ops-hook": webhook(hook)}}
    hook.answers = [500]

    page = admin_client.post(reverse(TEST_PAGE), {"channel": "ops-hook"}, follow=True)

    assert "The test notification to ops-hook failed: HTTP 500 from the webhook" in (
        page.content.decode()
    )


def test_a_user_without_the_permission_sees_no_test_page(operator, broken, hook):
    viewer = operator("view_notice")

    listed = viewer.get(reverse("admin:django_cadence_notice_changelist"))
    assert listed.status_code == 200
    assert "Send a test notification" not in listed.content.decode()
    assert viewer.get(reverse(TEST_PAGE)).status_code == 403
    assert viewer.post(reverse(TEST_PAGE), {"channel": "ops-hook"}).status_code == 403
    assert len(hook.bodies()) == 1  # the episode's message only


def test_the_notify_fields_are_edited_on_the_schedule_form(admin_client, make_schedule, settings):
    from django_cadence.models import Schedule
    from tests.admin.test_admin_schedules import form_data

    settings.CADENCE_NOTIFY = {
        "channels": {"ops": {"type": "callable", "path": "tests.jobs.notify_into_list"}}
    }
    schedule = make_schedule(name="nightly", kind="cron", cron="30 2 * * *", interval=None)
    url = reverse("admin:django_cadence_schedule_change", args=[schedule.pk])

    refused = admin_client.post(url, form_data(notify="pager"))
    assert "which CADENCE_NOTIFY does not configure (configured: ops)" in refused.content.decode()
    saved = admin_client.post(url, form_data(notify="ops", notify_after_failures="5"))
    assert saved.status_code == 302

    schedule = Schedule.objects.get(pk=schedule.pk)
    assert (schedule.notify, schedule.notify_after_failures) == ("ops", 5)
