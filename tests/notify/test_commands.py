"""The commands a person runs, in a fresh interpreter: ``cadence_status`` lists the open
episodes, ``cadence_notify --test`` sends a test notification through a channel."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from benchmarks.fleet import child_env, database_env
from django_cadence.models import Event
from django_cadence.notify import episodes
from tests.support.commands import run_django
from tests.support.receivers import webhook

pytestmark = pytest.mark.django_db(transaction=True)


def test_cadence_status_lists_the_open_episodes(make_schedule, notify, hook):
    notify(channels={"hook": webhook(hook)})
    schedule = make_schedule(name="export-invoices")
    at = datetime(2026, 6, 1, 12, tzinfo=UTC)
    episodes.schedule_event(Event.DEAD_LETTER, schedule.pk, at, detail="RuntimeError: boom")

    done = run_django("cadence_status", "--settings=tests.settings", env=child_env(database_env()))

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "Open episodes: 1" in lines
    row = lines[lines.index("Open episodes: 1") + 2]
    assert row.split() == [
        "dead_letter",
        "export-invoices",
        "2026-06-01",
        "12:00:00",
        "UTC",
        "1",
        "RuntimeError:",
        "boom",
    ]


def test_cadence_notify_sends_a_test_notification(hook):
    settings = {"CADENCE_NOTIFY": {"channels": {"hook": webhook(hook)}}}
    env = child_env(database_env(), settings)

    done = run_django("cadence_notify", "--test", "hook", "--settings=tests.settings", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "test notification sent to hook: HTTP 200"
    (body,) = hook.bodies()
    assert body["test"] is True

    missing = run_django("cadence_notify", "--test", "pager", "--settings=tests.settings", env=env)
    assert missing.returncode == 1
    assert "CADENCE_NOTIFY has no channel called 'pager'" in missing.stderr


def test_cadence_prune_deletes_episodes_resolved_past_the_age_rule(notify, hook):
    from django_cadence.models import Delivery, DeliveryStatus, Notice

    notify(channels={"hook": webhook(hook)})
    old = datetime(2020, 1, 1, tzinfo=UTC)
    for subject in ("a", "b", "c"):
        episodes.open_or_count(Event.NO_WORKER, subject, subject, old)
    gone, waiting, _still_open = Notice.objects.order_by("subject")
    for notice in (gone, waiting):
        episodes.resolve(notice, old, "a worker is live")
    Delivery.objects.exclude(notice=waiting).update(status=DeliveryStatus.SENT)

    done = run_django(
        "cadence_prune",
        "--older-than",
        "30d",
        "--settings=tests.settings",
        env=child_env(database_env()),
    )

    assert done.returncode == 0, done.stderr
    assert "deleted 1 notification episode(s) resolved over 30 days ago" in done.stdout
    assert set(Notice.objects.values_list("subject", flat=True)) == {"b", "c"}
