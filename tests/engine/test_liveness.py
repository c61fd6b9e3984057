"""Lost workers by session lock, on SQLite at start, and the crash-loop backoff, on the fake
clock (docs/design.md, "Lost workers")."""

import time
from datetime import timedelta

import pytest

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


@pytest.mark.servers("session locks")
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


# --- dead, not merely disconnected (docs/design.md, "Lost workers") -------------------------

servers_only = pytest.mark.servers("session locks")


@pytest.fixture
def watch(clock, lock_freed):
    """The lost-worker watch of a survivor holding its own session lock."""
    from django_cadence.engine.lost_workers import LostWorkerWatch

    lock_freed("w-survivor")  # a test before may have closed its session a moment ago
    survivor = LostWorkerWatch("w-survivor")
    survivor.start(clock.now())
    assert survivor.session_lock is not None
    workers.register("w-survivor", clock.now(), concurrency=1, session_lock=True)
    yield survivor
    survivor.stop()


def running_on_a_worker_without_its_lock(schedule_at, clock, worker="w-gone"):
    _, claim = running_attempt(schedule_at, clock, worker=worker)
    workers.register(worker, clock.now(), concurrency=1, session_lock=True)
    return claim


@servers_only
def test_a_lock_seen_gone_once_is_not_death_its_attempts_wait_for_the_window(
    schedule_at, clock, watch
):
    from django_cadence.engine.tuning import LIVENESS_PROBE, LIVENESS_WINDOW

    claim = running_on_a_worker_without_its_lock(schedule_at, clock)
    seen = []
    for _ in range(3):
        watch.probe(clock.now(), has_tries=False)
        seen.append(Attempt.objects.get(pk=claim.attempt_id).status)
        clock.advance(LIVENESS_PROBE)
    assert LIVENESS_WINDOW == 2 * LIVENESS_PROBE
    assert seen == ["running", "running", "pending"]  # recovered on the third probe, 1 s on


@servers_only
def test_a_worker_that_takes_its_lock_again_within_the_window_keeps_its_attempts(
    schedule_at, clock, watch
):
    claim = running_on_a_worker_without_its_lock(schedule_at, clock)
    watch.probe(clock.now(), has_tries=False)  # seen gone
    back = liveness.SessionLock("w-gone")
    assert back.acquire()  # it came back
    try:
        for _ in range(4):
            clock.advance(seconds=0.5)
            watch.probe(clock.now(), has_tries=False)
        assert Attempt.objects.get(pk=claim.attempt_id).status == "running"
    finally:
        back.release()


@servers_only
def test_after_its_own_reconnect_a_survivor_trusts_no_sighting_for_the_restart_window(
    schedule_at, clock, watch
):
    from django_cadence.engine.tuning import LIVENESS_WINDOW, RESTART_WINDOW

    claim = running_on_a_worker_without_its_lock(schedule_at, clock)
    watch.disconnected()
    reconnected = clock.now()
    while clock.now() < reconnected + RESTART_WINDOW + LIVENESS_WINDOW:
        watch.probe(clock.now(), has_tries=False)
        assert Attempt.objects.get(pk=claim.attempt_id).status == "running", clock.now()
        clock.advance(seconds=0.5)
    watch.probe(clock.now(), has_tries=False)
    assert Attempt.objects.get(pk=claim.attempt_id).status == "pending"


@servers_only
def test_a_recovery_asks_again_under_the_row_locks_and_spares_a_worker_back_meanwhile(
    schedule_at, clock, lock_freed
):
    claim = running_on_a_worker_without_its_lock(schedule_at, clock)
    back = liveness.SessionLock("w-gone")
    assert back.acquire()
    try:
        confirm = liveness.lost_workers
        assert recovery.recover(clock.now(), lost_workers={"w-gone"}, confirm=confirm) == 0
        assert Attempt.objects.get(pk=claim.attempt_id).status == "running"
    finally:
        back.release()
    lock_freed("w-gone")
    assert recovery.recover(clock.now(), lost_workers={"w-gone"}, confirm=confirm) == 1


@servers_only
def test_a_worker_whose_own_lock_was_cut_takes_it_again_and_says_to_reassert(
    clock, watch, caplog, lock_freed
):
    caplog.set_level("INFO", "django_cadence.engine")
    watch.session_lock._session.close()  # the server ended its lock session
    lock_freed("w-survivor")
    assert watch.probe(clock.now(), has_tries=True) is True
    assert liveness.still_held("w-survivor")
    assert "session lock lost worker=w-survivor" in caplog.text
    assert "session lock taken again worker=w-survivor" in caplog.text
    assert watch.may_claim()


@servers_only
def test_after_a_reconnect_an_idle_worker_looks_at_its_own_lock_before_it_claims(
    clock, watch, lock_freed
):
    watch.session_lock._session.close()  # its lock session ended with the restart
    lock_freed("w-survivor")
    watch.disconnected()
    assert not watch.may_claim()
    assert watch.probe(clock.now(), has_tries=False) is True  # nothing runs; it looked anyway
    assert watch.may_claim()
    assert liveness.still_held("w-survivor")


@servers_only
@pytest.mark.parametrize(
    ("look_returned_after", "recovered_on"),
    [(0.05, "the third probe, 1 s on"), (0.3, "the fourth probe, 1.5 s on")],
)
def test_a_lock_first_seen_gone_counts_from_no_earlier_than_the_slack_before_the_look(
    schedule_at, clock, look_returned_after, recovered_on
):
    """A window counted from long before the look (a slow tick's ``now``) could end before
    the lock had been gone that long; the gone worker's tries start on a sighting of their
    own lock up to START_CONFIRMED old, so the window is shortened by SIGHTING_SLACK at most.
    A look within the slack keeps the recovery on the window's third probe."""
    from datetime import timedelta

    from django_cadence.engine.lost_workers import LostWorkerWatch
    from django_cadence.engine.tuning import LIVENESS_PROBE, SIGHTING_SLACK

    assert SIGHTING_SLACK == 0.1
    looked_after = timedelta(seconds=look_returned_after)
    survivor = LostWorkerWatch("w-slow", now=lambda: clock.now() + looked_after)
    survivor.start(clock.now())
    workers.register("w-slow", clock.now(), concurrency=1, session_lock=True)
    claim = running_on_a_worker_without_its_lock(schedule_at, clock)
    try:
        seen = []
        for _ in range(4):
            survivor.probe(clock.now(), has_tries=False)
            seen.append(Attempt.objects.get(pk=claim.attempt_id).status)
            clock.advance(LIVENESS_PROBE)
    finally:
        survivor.stop()
    probes = ["the third probe, 1 s on", "the fourth probe, 1.5 s on"]
    assert seen[:2] == ["running", "running"]
    assert probes[seen.index("pending") - 2] == recovered_on


@servers_only
def test_a_worker_whose_thread_saw_its_lock_gone_reasserts_before_a_try_starts(clock, watch):
    """A try thread found the lock gone (``OwnLock.may_start``): the engine's next probe
    owes a re-assertion even if the lock is held by then, and no try starts before it."""
    watch.own.seen_gone()
    assert not watch.own.may_start()
    assert watch.probe(clock.now(), has_tries=True) is True
    assert not watch.own.may_start()  # until the engine has re-asserted its tries
    watch.reasserted()
    assert watch.own.may_start()


@servers_only
def test_a_worker_holding_tries_keeps_its_own_sighting_fresh_with_its_probes(clock, watch):
    from django_cadence.engine.tuning import START_CONFIRMED

    watch.own.held_since(time.monotonic() - 10)
    watch.probe(clock.now(), has_tries=True)
    assert watch.own.age() < START_CONFIRMED
