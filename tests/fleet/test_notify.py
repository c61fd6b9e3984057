"""Notifications across a fleet (docs/design.md, "Notifications"): three real ``run_cadence``
workers see the same schedule dead-letter every 2 s, and the webhook receiver gets exactly one
message for the episode and one resolution after the job is fixed, through a ``kill -9`` of
the worker that sent the first; a sender killed while its receiver holds the request leaves
the message to another worker, under the same id; a worker that exits unhealthy is told of.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from benchmarks.fleet import child_env, database_env, wait_until
from django_cadence.models import Delivery, DeliveryStatus, Event, Notice, Schedule, Status
from tests.support.attempts import make_due
from tests.support.commands import run_django
from tests.support.receivers import webhook

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

servers_only = pytest.mark.servers("a fleet: one engine per SQLite file")


def _breaking() -> Schedule:
    """Every 2 s, a try that fails and is dead-lettered at once."""
    schedule = Schedule.objects.create(
        name="breaking",
        kind="interval",
        interval=timedelta(seconds=2),
        executor="tests.jobs.raise_error",
        max_attempts=1,
    )
    make_due(schedule)
    return schedule


def _dead_letters(schedule: Schedule) -> int:
    return schedule.attempts.filter(status=Status.DEAD_LETTER).count()


def _fleet(worker, hook, **channel):
    settings = {"CADENCE_NOTIFY": {"channels": {"hook": webhook(hook, **channel)}}}
    return [worker(name, settings=settings).wait_started() for name in ("A", "B", "C")]


@servers_only
def test_one_message_per_episode_and_one_resolution_across_a_fleet_and_a_kill(worker, hook):
    schedule = _breaking()
    workers = {w.name: w for w in _fleet(worker, hook, events=["dead_letter"])}

    opened = wait_until(lambda: hook.bodies(state="open"), timeout=30, message="the message")
    sender = Delivery.objects.get(state="open").sender
    workers[sender].kill()  # the worker that was sending
    seen = _dead_letters(schedule)
    wait_until(lambda: _dead_letters(schedule) >= seen + 3, timeout=30, message="more failures")

    Schedule.objects.filter(pk=schedule.pk).update(executor="tests.jobs.noop")
    wait_until(lambda: hook.bodies(state="resolved"), timeout=40, message="the resolution")
    # Time for any repeat to show: the survivors send and probe every second.
    done = schedule.attempts.filter(status=Status.SUCCEEDED).count()
    wait_until(
        lambda: schedule.attempts.filter(status=Status.SUCCEEDED).count() >= done + 3,
        timeout=30,
        message="more successes",
    )

    messages = Counter((b["event"], b["episode"], b["state"]) for b in hook.bodies())
    episode = opened[0]["episode"]
    assert messages == {
        ("dead_letter", episode, "open"): 1,
        ("dead_letter", episode, "resolved"): 1,
    }
    notice = Notice.objects.get(pk=episode)
    assert notice.is_open is None
    assert notice.count >= seen + 3  # every dead letter counted into the one episode
    resolved = Delivery.objects.get(state="resolved")
    assert resolved.sender != sender
    assert not hook.refused


@servers_only
def test_a_sender_killed_mid_send_leaves_the_message_to_another_under_the_same_id(worker, hook):
    _breaking()
    hook.answers, hook.hang_for = ["hang"], 30.0  # the first request is never answered
    workers = {w.name: w for w in _fleet(worker, hook, events=["dead_letter"], timeout=20)}

    wait_until(lambda: hook.bodies(), timeout=30, message="the first request")
    delivery = Delivery.objects.get(state="open")
    assert delivery.status == DeliveryStatus.SENDING
    workers[delivery.sender].kill()

    # Its claim lapses (the channel's timeout and 5 s): another worker sends it.
    sent = wait_until(
        lambda: Delivery.objects.filter(pk=delivery.pk, status=DeliveryStatus.SENT).first(),
        timeout=60,
        message="another worker to send it",
    )
    assert sent.sender != delivery.sender
    first, second = hook.bodies()
    assert first["id"] == second["id"]  # a receiver that dedupes on the id sees it once


def test_a_worker_that_exits_unhealthy_is_told_of(worker, hook):
    """The worker records the episode before it exits with status 3; the watchdog command
    (as cron runs it) sends it."""
    hung = Schedule.objects.create(
        name="hung",
        kind="interval",
        interval=timedelta(seconds=1),
        executor="tests.jobs.hang",
        max_runtime=timedelta(seconds=0.5),
        max_attempts=1,
    )
    make_due(hung)
    settings = {
        "CADENCE_STUCK_THREADS_LIMIT": 2,
        "CADENCE_NOTIFY": {"channels": {"hook": webhook(hook, events=["worker_unhealthy"])}},
    }
    first = worker("first", concurrency=2, settings=settings)
    assert first.wait(60) == 3

    notice = Notice.objects.get(event=Event.WORKER_UNHEALTHY)
    assert "worker first exited with status 3" in notice.detail
    env = child_env(database_env(), settings)
    done = run_django("cadence_notify", "--settings=tests.settings", env=env)
    assert done.returncode == 0, done.stderr
    (body,) = hook.bodies()
    assert (body["event"], body["state"], body["host"]) == ("worker_unhealthy", "open", notice.name)
