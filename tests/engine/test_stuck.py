"""Stuck threads with the fake clock: a timed-out try whose job does not return gives its
slot back, is counted stuck one ``STUCK_AFTER`` later, and past the limit makes the worker
unhealthy (docs/design.md, "Stuck threads")."""

import logging
from datetime import timedelta

import pytest

from django_cadence.engine.tuning import STUCK_AFTER
from django_cadence.models import Attempt
from tests import jobs
from tests.support.polling import poll_until

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)


def test_a_try_that_ignores_its_timeout_gives_its_slot_back_and_is_counted_stuck(
    schedule_at, clock, threaded_engine, gate, caplog
):
    caplog.set_level(logging.WARNING, logger="django_cadence.engine")
    engine = threaded_engine(concurrency=1)
    schedule_at(
        executor="tests.jobs.wait_at_gate",  # ignores its cancel event
        payload={"label": "hung"},
        interval=timedelta(hours=1),
        max_runtime=timedelta(seconds=5),
        max_attempts=1,
    )
    clock.advance(hours=1)
    engine.tick()
    poll_until(lambda: jobs.CALLS)
    later = schedule_at(executor="tests.jobs.noop", interval=MINUTE)
    clock.advance(seconds=6)
    engine.tick()  # timed out: recorded as failed, its thread set apart, its slot free
    assert engine.tries.stuck.count(clock.now()) == 0  # not yet: it may still return
    assert engine.tries.stuck.next_change(clock.now()) == clock.now() + STUCK_AFTER
    clock.advance(STUCK_AFTER)
    engine.tick()
    assert engine.tries.stuck.count(clock.now()) == 1
    assert engine.tries.stuck.since(clock.now()) == clock.now() - STUCK_AFTER
    assert "stuck threads worker=worker-t count=1" in caplog.text

    clock.advance(seconds=54)  # the other schedule is due
    engine.tick()  # it runs on a new thread beside the stuck one
    poll_until(lambda: engine.tries.has_unrecorded())
    engine.tick()
    assert Attempt.objects.get(schedule=later).status == "succeeded"

    gate.set()  # the job returns at last: its thread is no longer stuck
    poll_until(lambda: len(engine.tries.stuck) == 0)
    assert engine.unhealthy is None


def test_a_job_that_heeds_its_cancel_event_is_never_counted_stuck(
    schedule_at, clock, threaded_engine, caplog
):
    caplog.set_level(logging.WARNING, logger="django_cadence.engine")
    engine = threaded_engine(concurrency=1)
    schedule_at(
        executor="tests.jobs.sleep_for",
        payload={"seconds": 60},
        interval=MINUTE,
        max_runtime=timedelta(seconds=5),
    )
    clock.advance(MINUTE)
    engine.tick()
    clock.advance(seconds=6)
    engine.tick()
    poll_until(lambda: len(engine.tries.stuck) == 0)  # it saw the cancel event and returned
    clock.advance(STUCK_AFTER)
    engine.tick()
    assert engine.tries.stuck.count(clock.now()) == 0
    assert "stuck threads" not in caplog.text


def test_at_the_limit_the_worker_is_unhealthy_and_stops_claiming(
    schedule_at, clock, threaded_engine, gate, settings, caplog
):
    settings.CADENCE_STUCK_THREADS_LIMIT = 1
    engine = threaded_engine(concurrency=2)
    schedule_at(
        executor="tests.jobs.wait_at_gate",
        payload={"label": "hung"},
        interval=MINUTE,
        max_runtime=timedelta(seconds=5),
    )
    clock.advance(MINUTE)
    engine.tick()
    poll_until(lambda: jobs.CALLS)
    clock.advance(seconds=6)
    engine.tick()
    assert engine.unhealthy is None
    clock.advance(STUCK_AFTER)
    engine.tick()
    assert engine.unhealthy.startswith("worker unhealthy worker=worker-t: 1 stuck thread(s)")
    assert not engine.claiming
    assert engine.unhealthy in caplog.text
