"""A worker claims only the attempts of the queues it serves; its queues are on its row."""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

import pytest

from django_cadence.engine import leases, next_event, planner
from django_cadence.engine.loop import Engine
from django_cadence.models import Attempt, Schedule, Worker
from django_cadence.schedule.queues import parse_queues

pytestmark = pytest.mark.django_db

MINUTE = timedelta(minutes=1)


def _due(schedule_at, clock, **queues):
    """One due attempt per schedule named here, in the queue given."""
    for name, queue in queues.items():
        schedule_at(name=name, interval=MINUTE, queue=queue)
    planner.plan_due(clock.advance(MINUTE))


def test_a_worker_claims_only_the_attempts_of_its_queues(schedule_at, clock):
    _due(schedule_at, clock, invoices="billing", totals="reports", other="default")
    claims = leases.claim(clock.now(), worker="w1", slots=10, queues=("billing",))
    assert [c.schedule_name for c in claims] == ["invoices"]
    claims = leases.claim(clock.now(), worker="w2", slots=10, queues=("default", "reports"))
    assert sorted(c.schedule_name for c in claims) == ["other", "totals"]


def test_a_worker_without_queues_serves_every_queue(schedule_at, clock):
    _due(schedule_at, clock, invoices="billing", totals="reports")
    claims = leases.claim(clock.now(), worker="w1", slots=10, queues=None)
    assert sorted(c.schedule_name for c in claims) == ["invoices", "totals"]


def test_changing_a_schedules_queue_moves_its_waiting_attempts(schedule_at, clock):
    _due(schedule_at, clock, totals="reports")
    assert leases.claim(clock.now(), worker="w1", slots=10, queues=("billing",)) == []
    Schedule.objects.filter(name="totals").update(queue="billing")
    (claim,) = leases.claim(clock.now(), worker="w1", slots=10, queues=("billing",))
    assert claim.schedule_name == "totals"


def test_the_next_ready_attempt_is_read_in_the_queues_served(schedule_at, clock):
    """A worker does not wake for another queue's waiting attempt (it would spin on it)."""
    _due(schedule_at, clock, totals="reports")
    assert next_event.next_ready(("billing",)) is None
    assert next_event.next_ready(("reports",)) is not None
    assert next_event.next_ready() is not None


def test_an_engine_runs_only_its_queues_and_records_them(schedule_at, clock, caplog):
    _due(schedule_at, clock, invoices="billing", totals="reports")
    engine = Engine(clock=clock, worker_id="w-billing", inline=True, queues=parse_queues("billing"))
    with caplog.at_level(logging.INFO, logger="django_cadence"):
        engine.run(threading.Event(), once=True, shutdown_grace=0)
    statuses = dict(Attempt.objects.values_list("schedule__name", "status"))
    assert statuses == {"invoices": "succeeded", "totals": "pending"}
    assert Worker.objects.get(worker_id="w-billing").queues == "billing"
    assert "queues=billing" in caplog.text


def test_an_engine_serving_every_queue_records_none(schedule_at, clock):
    schedule_at(interval=timedelta(hours=1))
    engine = Engine(clock=clock, worker_id="w-all", inline=True)
    engine.run(threading.Event(), once=True, shutdown_grace=0)
    assert Worker.objects.get(worker_id="w-all").queues == ""


def test_a_lost_try_is_recovered_by_any_worker_and_re_run_only_in_its_queue(
    schedule_at, clock, settings
):
    """Recovery is not a run: it makes the try pending again; only its queue's worker runs it."""
    settings.CADENCE_LEASE = 10
    settings.CADENCE_RECOVERY_GRACE = 5
    _due(schedule_at, clock, totals="reports")
    (claim,) = leases.claim(clock.now(), worker="w-reports", slots=1, queues=("reports",))
    # The reports worker is gone; a billing engine ticks past the lease and the grace.
    clock.advance(seconds=16)
    billing = Engine(
        clock=clock, worker_id="w-billing", inline=True, queues=parse_queues("billing")
    )
    billing.tick()
    attempt = Attempt.objects.get(pk=claim.attempt_id)
    assert (attempt.status, attempt.recoveries) == ("pending", 1)
    billing.tick()
    assert Attempt.objects.get(pk=claim.attempt_id).status == "pending"
    assert leases.claim(clock.now(), worker="w-billing", slots=5, queues=("billing",)) == []
    (again,) = leases.claim(clock.now(), worker="w-reports-2", slots=5, queues=("reports",))
    assert again.attempt_id == claim.attempt_id
