"""Lost workers by session lock, on SQLite at start, and the crash-loop backoff, on the fake
clock (docs/design.md, "Lost workers")."""

from datetime import timedelta

import pytest
from django.db import connection

from django_cadence.engine import leases, liveness, outcomes, planner, recovery, workers
from django_cadence.executors.calling import idempotency_key
from django_cadence.models import Attempt
from django_cadence.schedule import policies

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)


def running_attempt(schedule_at, clock, worker="w1", **fields):
    schedule = schedule_at(interval=MINUTE, **fields)
    planner.plan_due(clock.advance(MINUTE))
    (claim,) = leases.claim(clock.now(), worker=worker, slots=1)
    return schedule, claim


@pytest.mark.skipif(connection.vendor == "sqlite", reason="session locks: the servers")
def test_a_worker_whose_session_lock_is_gone_is_lost_and_one_holding_it_is_not(clock):
    live = liveness.SessionLock("w-live")
    assert live.acquire()
    try:
        for name in ("w-live", "w-dead"):
            workers.register(name, clock.now(), concurrency=1, session_lock=True)
        workers.register("w-lease", clock.now(), concurrency=1)  # leases alone decide for it
        assert liveness.lost_workers(["w-live", "w-dead", "w-lease"]) == {"w-dead"}
        assert liveness.still_held("w-live")
        assert not liveness.SessionLock("w-live").acquire()  # one holder at a time
    finally:
        live.release()


def test_a_lost_workers_attempt_is_recovered_before_its_lease_ends(schedule_at, clock):
    _, claim = running_attempt(schedule_at, clock)
    assert recovery.recover(clock.now(), lost_workers={"other"}) == 0
    assert recovery.recover(clock.now(), lost_workers={"w1"}) == 1
    attempt = Attempt.objects.get(pk=claim.attempt_id)
    assert (attempt.status, attempt.claim_token, attempt.retry_at) == ("pending", None, clock.now())
    assert attempt.history[-1]["error"] == "worker w1 was lost on try 1: its database session ended"
    assert outcomes.record_success(claim, None, clock.now()) is False  # fenced out


def test_an_engine_starting_alone_recovers_every_running_attempt(schedule_at, clock):
    ids = [running_attempt(schedule_at, clock)[1].attempt_id for _ in range(2)]
    assert recovery.recover(clock.now(), everything=True) == 2
    assert not Attempt.objects.running().exists()
    recovered = Attempt.objects.filter(pk__in=ids)
    assert {a.history[-1]["error"].split(": ")[-1] for a in recovered} == {
        recovery.ENGINE_RESTARTED
    }


def test_recoveries_back_off_after_the_first_and_keep_the_jobs_error(schedule_at, clock, settings):
    settings.CADENCE_MAX_RECOVERIES = 3
    _, claim = running_attempt(schedule_at, clock, max_attempts=10)
    outcomes.record_failure(claim, "boom", clock.now())
    attempt = Attempt.objects.get(pk=claim.attempt_id)
    delays = []
    for _ in range(3):
        now = clock.advance(hours=2)
        (claim,) = leases.claim(now, worker="w1", slots=1)
        recovery.recover(now, lost_workers={"w1"})
        attempt.refresh_from_db()
        delays.append(attempt.retry_at - now if attempt.status == "pending" else None)
    options = {"base": timedelta(seconds=10), "cap": timedelta(hours=1)}
    assert delays[0] == timedelta(0)
    assert delays[1] is not None
    assert delays[1] == policies.recovery_delay(1, **options, key=key_of(attempt))
    assert delays[2] is None  # the third loss: dead-lettered
    assert attempt.status == "dead_letter"
    assert attempt.error.startswith("boom\n[dead letter:")
    assert [e["result"] for e in attempt.history] == ["failed", "lost", "lost", "lost"]


def key_of(attempt):
    return idempotency_key(attempt.schedule_id, attempt.occurrence_at, attempt.trigger)
