"""trigger(), retry() and retry_now() stamp rows with the engine clock, not the calling host's.

On PostgreSQL and MariaDB the engine clock is the database server's (docs/design.md, Time),
so a web host whose clock is five minutes off neither runs a manual attempt early nor late.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from django_cadence import services
from django_cadence.clock import default_clock
from django_cadence.models import Attempt

pytestmark = pytest.mark.django_db

SKEW = timedelta(minutes=5)


@pytest.fixture
def skewed_host(monkeypatch):
    """The host's clock, as Django reads it, runs five minutes ahead."""
    real_now = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: real_now() + SKEW)


def close_to_engine_clock(instant):
    engine_now = default_clock().now()
    return abs(instant - engine_now) < timedelta(seconds=30)


@pytest.mark.usefixtures("skewed_host")
def test_trigger_stamps_the_manual_attempt_with_the_engine_clock(make_schedule):
    schedule = make_schedule(interval=timedelta(hours=1))
    attempt = services.trigger(schedule)
    assert close_to_engine_clock(attempt.retry_at)
    assert close_to_engine_clock(attempt.occurrence_at)


@pytest.mark.usefixtures("skewed_host")
def test_retry_stamps_the_dead_letter_with_the_engine_clock(make_schedule):
    schedule = make_schedule(interval=timedelta(hours=1))
    now = default_clock().now()
    dead = Attempt.objects.create(
        schedule=schedule, occurrence_at=now, status="dead_letter", finished_at=now, tries=3
    )
    assert close_to_engine_clock(services.retry(dead).retry_at)


@pytest.mark.usefixtures("skewed_host")
def test_cancel_stamps_the_pending_attempt_with_the_engine_clock(make_schedule):
    schedule = make_schedule(interval=timedelta(hours=1))
    now = default_clock().now()
    waiting = Attempt.objects.create(schedule=schedule, occurrence_at=now, retry_at=now)
    assert close_to_engine_clock(services.cancel(waiting).finished_at)


@pytest.mark.usefixtures("skewed_host")
def test_retry_now_brings_a_retry_forward_to_the_engine_clock(make_schedule):
    schedule = make_schedule(interval=timedelta(hours=1))
    now = default_clock().now()
    waiting = Attempt.objects.create(
        schedule=schedule, occurrence_at=now, retry_at=now + timedelta(hours=1), tries=1
    )
    [moved] = services.retry_now([waiting.pk])
    moved.refresh_from_db()
    assert close_to_engine_clock(moved.retry_at)
