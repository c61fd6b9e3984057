"""Starting on the instant (docs/design.md): what is due within ``CADENCE_CLAIM_AHEAD`` is
planned and claimed before its instant, and its try starts on the instant from a timer.

The fake clock stands still unless a test moves it, so a try claimed ahead visibly waits
until the clock reaches its instant, and never starts before it (invariant 6).
"""

import logging
import threading
import time
from datetime import timedelta

import pytest
from django.db import OperationalError, connection

from django_cadence import services, signals
from django_cadence.conf import cadence_settings
from django_cadence.engine import leases, planner, recovery
from django_cadence.engine.pool import TryPool
from django_cadence.models import Attempt, Status
from tests import jobs
from tests.support.polling import poll_until

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)
AHEAD = timedelta(seconds=0.5)


@pytest.fixture(autouse=True)
def no_calls():
    jobs.CALLS.clear()
    yield
    jobs.CALLS.clear()


def ticked_ahead(threaded_engine, clock, **options):
    """An engine (two threads) that ticked 0.3 s before the next minute's instant: what is
    due then is planned and claimed, waiting on its start timer."""
    options.setdefault("concurrency", 2)
    engine = threaded_engine(**options)
    clock.advance(seconds=59.7)
    engine.tick()
    return engine


def running_now(schedule, clock):
    """An attempt of ``schedule`` running since now, on another worker."""
    return Attempt.objects.create(
        schedule=schedule,
        occurrence_at=clock.now(),
        status=Status.RUNNING,
        worker="w",
        claim_token="t",
        started_at=clock.now(),
        lease_until=clock.now() + MINUTE,
        tries=1,
    )


def recording(schedule_at, label="x", **fields):
    fields.setdefault("interval", MINUTE)
    return schedule_at(executor="tests.jobs.record_call", payload={"label": label}, **fields)


# --- the planner --------------------------------------------------------------------------


def test_the_planner_plans_an_occurrence_due_within_the_horizon_before_its_instant(
    schedule_at, clock
):
    schedule = recording(schedule_at)
    due = schedule.next_run_at
    now = clock.advance(seconds=59.7)
    result = planner.plan_due(now, ahead_until=now + AHEAD)
    attempt = schedule.attempts.get()
    assert (attempt.status, attempt.occurrence_at, attempt.retry_at) == (Status.PENDING, due, due)
    schedule.refresh_from_db()
    assert schedule.next_run_at == due + MINUTE
    assert result.deferred is None


def test_the_planner_leaves_a_busy_serial_schedule_to_its_instant(schedule_at, clock):
    schedule = recording(schedule_at, overlap="skip_if_running")
    running_now(schedule, clock)
    due = schedule.next_run_at
    now = clock.advance(seconds=59.7)
    result = planner.plan_due(now, ahead_until=now + AHEAD)
    # Its running try may end before the instant: skip_if_running decides on the instant.
    assert result.deferred == due
    assert schedule.attempts.count() == 1
    later = clock.advance(seconds=0.3)
    planner.plan_due(later, ahead_until=later + AHEAD)
    skipped = schedule.attempts.get(occurrence_at=due)
    assert skipped.status == Status.SKIPPED


def test_an_allow_schedule_is_planned_ahead_whatever_runs(schedule_at, clock):
    schedule = recording(schedule_at, overlap="allow")
    running_now(schedule, clock)
    now = clock.advance(seconds=59.7)
    assert planner.plan_due(now, ahead_until=now + AHEAD).deferred is None
    assert schedule.attempts.filter(status=Status.PENDING).count() == 1


# --- the claim ----------------------------------------------------------------------------


def test_a_claim_ahead_starts_the_try_at_its_ready_time_with_a_lease_from_now(schedule_at, clock):
    schedule = recording(schedule_at)
    due = schedule.next_run_at
    now = clock.advance(seconds=59.7)
    planner.plan_due(now, ahead_until=now + AHEAD)
    assert leases.claim(now, worker="w1", slots=4) == []  # not ready yet, and none ahead
    (claim,) = leases.claim(now, worker="w1", slots=0, ahead_until=now + AHEAD, ahead_slots=4)
    attempt = Attempt.objects.get(pk=claim.attempt_id)
    assert attempt.status == Status.RUNNING
    assert attempt.started_at == claim.started_at == due  # never early (invariant 6)
    assert attempt.lease_until == now + cadence_settings.LEASE
    assert claim.deadline == due + claim.max_runtime


def test_ready_and_ahead_slots_are_budgets_of_their_own(schedule_at, clock):
    ready = recording(schedule_at, label="ready", interval=timedelta(seconds=30))
    ahead = recording(schedule_at, label="ahead")
    now = clock.advance(seconds=59.7)
    planner.plan_due(now, ahead_until=now + AHEAD)
    claims = leases.claim(now, worker="w1", slots=0, ahead_until=now + AHEAD, ahead_slots=1)
    assert [c.schedule_id for c in claims] == [ahead.pk]  # no slot for what is ready now
    (claim,) = leases.claim(now, worker="w1", slots=1)
    assert claim.schedule_id == ready.pk
    assert claim.started_at == now


def test_a_jittered_try_is_claimed_ahead_of_its_ready_time_not_of_its_occurrence(
    schedule_at, clock
):
    schedule = recording(schedule_at, jitter=timedelta(seconds=20))
    now = clock.advance(seconds=59.7)
    planner.plan_due(now, ahead_until=now + AHEAD)
    ready = schedule.attempts.get().retry_at
    assert ready > schedule.next_run_at - MINUTE  # its jitter moved it past the occurrence
    early = clock.advance(ready - AHEAD - timedelta(seconds=0.1) - now)
    assert leases.claim(early, worker="w1", slots=0, ahead_until=early + AHEAD, ahead_slots=4) == []
    close = clock.advance(seconds=0.2)
    (claim,) = leases.claim(close, worker="w1", slots=0, ahead_until=close + AHEAD, ahead_slots=4)
    assert claim.started_at == ready


def test_a_manual_run_between_the_plan_and_the_instant_goes_first_and_nothing_is_skipped(
    schedule_at, clock
):
    schedule = recording(schedule_at, overlap="skip_if_running")
    due = schedule.next_run_at
    now = clock.advance(seconds=59.7)
    planner.plan_due(now, ahead_until=now + AHEAD)
    manual = services.trigger(schedule, now=clock.advance(seconds=0.1))
    later = clock.now()
    claims = leases.claim(later, worker="w1", slots=4, ahead_until=later + AHEAD, ahead_slots=4)
    # Invariant 5: one at a time, the earlier occurrence (the manual run) first.
    assert [c.attempt_id for c in claims] == [manual.pk]
    planned = schedule.attempts.get(occurrence_at=due)
    assert planned.status == Status.PENDING  # decided at the plan: it waits, it is not skipped


# --- the engine ---------------------------------------------------------------------------


def test_a_try_claimed_ahead_starts_when_the_clock_reaches_its_instant(
    schedule_at, clock, threaded_engine
):
    schedule = recording(schedule_at, label="on-time")
    engine = ticked_ahead(threaded_engine, clock)
    attempt = schedule.attempts.get()
    assert attempt.status == Status.RUNNING  # claimed, leased, fenced: before its instant
    assert engine.tries.waiting() == 1
    time.sleep(0.3)
    assert jobs.CALLS == []  # the clock has not reached the instant
    clock.advance(seconds=0.3)
    poll_until(lambda: jobs.CALLS == ["on-time"])
    poll_until(lambda: engine.tries.has_unrecorded())
    engine.tick()
    attempt.refresh_from_db()
    assert attempt.status == Status.SUCCEEDED
    assert attempt.started_at == attempt.occurrence_at


def test_the_engine_sleeps_until_the_horizon_before_the_next_instant(
    schedule_at, clock, threaded_engine
):
    schedule = recording(schedule_at)
    engine = threaded_engine(concurrency=2, max_tick=300)
    delay = engine.tick()
    expected = (schedule.next_run_at - AHEAD - clock.now()).total_seconds()
    assert delay == pytest.approx(expected, abs=0.01)


def test_an_engine_that_woke_a_moment_before_the_horizon_plans_ahead_after_its_tick(
    schedule_at, clock, threaded_engine
):
    """Woken 1 ms before the horizon reaches the instant (its sleep ended a hair early by
    the engine clock), the tick plans nothing, and the tick itself takes 2 ms: the engine
    must tick again at once, not sleep until the instant and plan it then."""

    def slow_query(execute, *args):
        clock.advance(microseconds=500)
        return execute(*args)

    schedule = recording(schedule_at)
    due = schedule.next_run_at
    engine = threaded_engine(concurrency=2, max_tick=300)
    engine.tick()  # a minute before: it sleeps until the horizon reaches the instant
    clock.advance(seconds=59.5 - 0.001)
    with connection.execute_wrapper(slow_query):
        delay = engine.tick()
    assert schedule.attempts.count() == 0  # the horizon fell 1 ms short of the instant
    assert clock.now() < due - AHEAD + timedelta(milliseconds=5)
    assert delay == 0
    engine.tick()
    attempt = schedule.attempts.get()
    assert (attempt.status, attempt.started_at) == (Status.RUNNING, due)  # claimed ahead
    assert engine.tries.waiting() == 1


def test_a_try_left_beyond_the_ahead_budget_waits_for_its_instant_without_spinning(
    schedule_at, clock, threaded_engine, monkeypatch
):
    from django_cadence.engine import budget

    monkeypatch.setattr(budget, "AHEAD_TRIES", 1)
    monkeypatch.setattr(budget, "AHEAD_ROUNDS", 1)
    schedules = [recording(schedule_at, label=f"b{i}") for i in range(3)]
    engine = threaded_engine(concurrency=2, max_tick=300)
    clock.advance(seconds=59.7)
    engine.tick()
    assert sum(s.attempts.filter(status=Status.PENDING).count() for s in schedules) == 1
    delay = engine.tick()  # the third waits for a slot on its instant
    assert delay == pytest.approx(0.3, abs=0.01)


def test_a_worker_holds_at_most_its_rounds_of_tries_claimed_ahead_when_they_are_more(
    schedule_at, clock, threaded_engine, monkeypatch
):
    from django_cadence.engine import budget

    monkeypatch.setattr(budget, "AHEAD_TRIES", 1)
    monkeypatch.setattr(budget, "AHEAD_ROUNDS", 1)
    schedules = [recording(schedule_at, label=f"c{i}") for i in range(3)]
    engine = ticked_ahead(threaded_engine, clock)
    assert engine.tries.waiting() == 2  # one round of its two threads
    statuses = sorted(s.attempts.get().status for s in schedules)
    assert statuses == [Status.PENDING, Status.RUNNING, Status.RUNNING]


def test_a_one_thread_worker_claims_a_burst_ahead_beyond_its_rounds(
    schedule_at, clock, threaded_engine
):
    """The ahead budget is a number of tries (``AHEAD_TRIES``) whatever the pool's size: a
    burst bigger than a small pool's rounds is claimed before its instant, not after it."""
    from django_cadence.engine.tuning import AHEAD_ROUNDS, AHEAD_TRIES

    burst = AHEAD_ROUNDS + 2  # one thread: more than its rounds, within the budget
    assert burst <= AHEAD_TRIES
    schedules = [recording(schedule_at, label=f"d{i}") for i in range(burst)]
    engine = ticked_ahead(threaded_engine, clock, concurrency=1)
    assert engine.tries.waiting() == burst
    pending = Attempt.objects.filter(schedule__in=schedules, status=Status.PENDING)
    assert pending.count() == 0
    assert jobs.CALLS == []  # claimed, not started: the instant is 0.3 s away


@pytest.mark.parametrize(
    ("concurrency", "average", "budget"),
    [
        (4, None, 1024),  # not seen yet: a burst of a thousand
        (4, 0.0015, 1024),  # short: its threads would start more than that within a second
        (16, None, 2048),  # a bigger pool: its rounds
        (4, 0.05, 80),  # what 4 threads start within QUEUE_MAX_WAIT (1 s)
        (4, 0.5, 8),
        (4, 30.0, 4),  # one round at least
    ],
)
def test_the_ahead_budget_is_a_burst_until_tries_are_seen_to_be_long(
    threaded_engine, concurrency, average, budget
):
    engine = threaded_engine(concurrency=concurrency)
    engine.tries.budget.runtime_avg = average
    assert engine.tries.budget.ahead_budget() == budget


def test_a_worker_whose_tries_are_long_leaves_the_rest_of_a_burst_to_others(
    schedule_at, clock, threaded_engine
):
    """What its threads would not start within ``QUEUE_MAX_WAIT`` is not claimed ahead: it
    stays pending, for any worker of the fleet to claim, instead of being handed back late."""
    schedules = [recording(schedule_at, label=f"e{i}") for i in range(6)]
    engine = threaded_engine(concurrency=2)
    engine.tries.budget.runtime_avg = 0.5  # two threads start four such tries within a second
    clock.advance(seconds=59.7)
    engine.tick()
    assert engine.tries.waiting() == 4
    statuses = sorted(s.attempts.get().status for s in schedules)
    assert statuses == [Status.PENDING] * 2 + [Status.RUNNING] * 4
    other = leases.claim(
        clock.now, worker="other", slots=0, ahead_until=clock.now() + AHEAD, ahead_slots=8
    )
    assert len(other) == 2


def test_a_drain_hands_back_tries_waiting_for_their_instant_unstarted(
    schedule_at, clock, threaded_engine
):
    schedule = recording(schedule_at, label="never")
    due = schedule.next_run_at
    engine = ticked_ahead(threaded_engine, clock)
    engine._drain(grace=0)
    attempt = schedule.attempts.get()
    assert (attempt.status, attempt.tries) == (Status.PENDING, 0)
    # Handed back 0.3 s before its instant, it is not ready before it (invariant 6).
    assert attempt.retry_at == due
    assert leases.claim(clock.now, worker="other", slots=4) == []
    clock.advance(seconds=1)
    time.sleep(0.3)
    assert jobs.CALLS == []


def test_a_try_taken_from_the_worker_before_its_instant_never_starts(
    schedule_at, clock, threaded_engine
):
    schedule = recording(schedule_at, label="taken")
    engine = ticked_ahead(threaded_engine, clock)
    # Another worker recovered it (its lease expired): the token no longer matches.
    schedule.attempts.update(claim_token="someone-else")
    engine._renew(clock.now())
    assert engine.in_flight == 0
    clock.advance(seconds=1)
    time.sleep(0.3)
    assert jobs.CALLS == []


def test_a_try_whose_start_comes_too_late_is_handed_back_unrun_and_claimed_afresh(
    schedule_at, clock, threaded_engine, caplog
):
    """A process frozen past START_LATE between the claim and the instant may have lost the
    claim to a recovery: its thread leaves the try unrun, the engine hands it back (the try
    not counted), and a claim made afterwards runs it once (design.md, "Lost workers")."""
    schedule = recording(schedule_at, label="late")
    engine = ticked_ahead(threaded_engine, clock)
    (held,) = engine.tries.held.values()
    held.start_by = time.monotonic()  # what a freeze of the process past START_LATE leaves
    clock.advance(seconds=0.3)
    poll_until(lambda: held.done.is_set())
    assert jobs.CALLS == []
    with caplog.at_level(logging.WARNING, logger="django_cadence"):
        engine.tick()  # hands it back, then claims it again: it is due
    assert "attempt handed back" in caplog.text
    poll_until(lambda: engine.tries.has_unrecorded())
    engine.tick()
    attempt = schedule.attempts.get()
    assert (attempt.status, attempt.tries) == (Status.SUCCEEDED, 1)
    assert jobs.CALLS == ["late"]


def test_an_unstarted_try_whose_hand_back_failed_stays_held_and_is_handed_back_next_time(
    schedule_at, clock, threaded_engine, monkeypatch, caplog
):
    """The hand-back of a try its thread left unrun fails (the database went away): the try
    stays held, so the next tick hands it back, rather than leave it running unowned until
    a recovery; that tick then claims it afresh and it runs once."""
    schedule = recording(schedule_at, label="late")
    engine = ticked_ahead(threaded_engine, clock)
    (held,) = engine.tries.held.values()
    held.start_by = time.monotonic()  # what a freeze of the process past START_LATE leaves
    clock.advance(seconds=0.3)
    poll_until(lambda: held.done.is_set())
    release = leases.release
    failed = []

    def server_gone_once(claims, now):
        monkeypatch.setattr(leases, "release", release)
        failed.append([claim.attempt_id for claim in claims])
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(leases, "release", server_gone_once)
    with pytest.raises(OperationalError):
        engine.tick()  # the tick's hand-back is what failed
    assert failed == [[held.claim.attempt_id]]
    assert engine.in_flight == 1
    assert schedule.attempts.get().status == Status.RUNNING  # still this worker's
    assert jobs.CALLS == []
    with caplog.at_level(logging.WARNING, logger="django_cadence"):
        engine.tick()  # hands it back, then claims it again: it is due
    assert "attempt handed back" in caplog.text
    poll_until(lambda: engine.tries.has_unrecorded())
    engine.tick()
    attempt = schedule.attempts.get()
    assert (attempt.status, attempt.tries) == (Status.SUCCEEDED, 1)  # the unrun try not counted
    assert jobs.CALLS == ["late"]


@pytest.mark.servers("session locks")
def test_a_try_whose_worker_lost_its_session_lock_while_paused_is_handed_back_unrun(
    schedule_at, clock, threaded_engine, caplog, lock_freed
):
    """A process paused between the claim and the instant while its lock session was cut
    may have lost the claim to a recovery, well within START_LATE: its thread finds its
    last sighting of the lock stale, asks the server, finds the lock gone and leaves the try
    unrun. The engine hands it back, takes its lock again, and claims it afresh: it runs
    once (design.md, "Lost workers")."""
    schedule = recording(schedule_at, label="cut")
    engine = threaded_engine(concurrency=2)
    watch = engine._lost_workers
    watch.start(clock.now())
    try:
        clock.advance(seconds=59.7)
        engine.tick()
        (held,) = engine.tries.held.values()
        watch.session_lock._session.close()  # the server ended its lock session
        lock_freed(engine.worker_id)
        watch.own.held_since(time.monotonic() - 5)  # what a pause of 5 s leaves
        clock.advance(seconds=0.3)
        poll_until(lambda: held.done.is_set())
        assert jobs.CALLS == []
        with caplog.at_level(logging.INFO, logger="django_cadence"):
            engine.tick()  # hands it back, takes its lock again, claims it afresh
        assert "attempt handed back" in caplog.text
        assert "session lock was not seen held within 0.75 s" in caplog.text
        assert "session lock taken again" in caplog.text
        poll_until(lambda: engine.tries.has_unrecorded())
        engine.tick()
    finally:
        watch.stop()
    attempt = schedule.attempts.get()
    assert (attempt.status, attempt.tries) == (Status.SUCCEEDED, 1)
    assert jobs.CALLS == ["cut"]


def test_a_lost_workers_try_claimed_ahead_is_recovered_pending_until_its_instant(
    schedule_at, clock, threaded_engine
):
    """A worker dies holding a try claimed ahead: the survivor's recovery counts the try
    but keeps its instant, so no worker starts it early (invariant 6)."""
    schedule = recording(schedule_at, label="orphan")
    due = schedule.next_run_at
    engine = ticked_ahead(threaded_engine, clock, worker_id="doomed")
    engine.tries.running.timer.take_all()  # it dies: nothing of it runs any more
    assert recovery.recover(clock.now(), lost_workers={"doomed"}) == 1
    attempt = schedule.attempts.get()
    assert (attempt.status, attempt.recoveries, attempt.retry_at) == (Status.PENDING, 1, due)
    # Its history never shows a try that ended before it began: lost before its instant.
    [lost] = attempt.history
    assert (lost["result"], lost["started_at"]) == ("lost", None)
    assert lost["finished_at"] == clock.now().isoformat()
    assert "before its instant" in lost["error"]
    survivor = threaded_engine(worker_id="survivor", concurrency=2)
    survivor.tick()
    clock.advance(seconds=0.2)  # 0.1 s before the instant, within the claim-ahead horizon
    survivor.tick()
    time.sleep(0.3)
    assert jobs.CALLS == []  # claimed ahead again at most, not started
    clock.advance(seconds=0.1)
    poll_until(lambda: jobs.CALLS == ["orphan"])


def test_a_start_timer_that_cannot_start_a_thread_makes_the_worker_unhealthy(
    schedule_at, clock, threaded_engine, monkeypatch, caplog
):
    """The instant comes and no thread can be made for its try (the process is out of
    threads): the worker says so, stops claiming, and is drained and replaced (exit status
    3), rather than hold tries claimed ahead that nothing will start."""
    schedule = recording(schedule_at, label="never")
    engine = ticked_ahead(threaded_engine, clock)

    def no_thread(task):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(engine.tries.running._pool, "submit", no_thread)
    clock.advance(seconds=0.3)
    poll_until(lambda: engine.tries.launch_failure is not None)
    engine.tick()
    assert engine.unhealthy.startswith("worker unhealthy worker=")
    assert "could not start tries: RuntimeError: can't start new thread" in engine.unhealthy
    assert not engine.claiming
    assert engine.unhealthy in caplog.text
    assert jobs.CALLS == []
    # What it could not start waits for a thread, not for a start that will never come.
    assert (engine.tries.queued_count(), engine.tries.running.busy) == (1, 0)
    engine.tries.release_unstarted()  # a drain's first step hands it back, uncounted
    assert engine.in_flight == 0
    attempt = schedule.attempts.get()
    assert (attempt.status, attempt.tries, attempt.claim_token) == (Status.PENDING, 0, None)


def test_a_pause_committed_after_the_claim_takes_effect_from_the_next_occurrence(
    schedule_at, clock, threaded_engine
):
    schedule = recording(schedule_at, label="claimed")
    engine = ticked_ahead(threaded_engine, clock)
    services.pause(schedule, "maintenance")
    clock.advance(seconds=0.3)
    # Claimed before the pause: it runs, as a try that had started would (invariant 6).
    poll_until(lambda: jobs.CALLS == ["claimed"])
    poll_until(lambda: engine.tries.has_unrecorded())
    clock.advance(seconds=60)
    engine.tick()
    assert schedule.attempts.get().status == Status.SUCCEEDED
    assert schedule.attempts.count() == 1  # the next occurrence is not planned while paused


def test_a_try_cancelled_before_its_instant_never_starts_and_ends_cancelled(
    schedule_at, clock, threaded_engine
):
    schedule = recording(schedule_at, label="cancelled")
    engine = ticked_ahead(threaded_engine, clock)
    attempt = schedule.attempts.get()
    services.cancel(attempt, now=clock.now())
    engine._renew(clock.now())  # the renewal learns of the request
    clock.advance(seconds=0.3)
    poll_until(lambda: engine.tries.has_unrecorded())
    engine.tick()
    attempt.refresh_from_db()
    assert attempt.status == Status.CANCELLED
    assert jobs.CALLS == []


def test_a_burst_announces_its_starts_from_the_engine_thread_with_their_instants(
    schedule_at, clock, threaded_engine
):
    for i in range(4):
        recording(schedule_at, label=f"b{i}")
    heard = []

    def started(sender, **kw):
        heard.append(("started", kw["attempt_id"], kw["started_at"], threading.current_thread()))

    def succeeded(sender, **kw):
        heard.append(("succeeded", kw["attempt_id"], None, threading.current_thread()))

    signals.attempt_started.connect(started)
    signals.attempt_succeeded.connect(succeeded)
    try:
        engine = threaded_engine(concurrency=1)
        clock.advance(seconds=59.7)
        engine.tick()
        clock.advance(seconds=0.3)
        poll_until(lambda: len(jobs.CALLS) == 4)
        poll_until(lambda: engine.tries.still_running() == 0)
        engine.tick()
    finally:
        signals.attempt_started.disconnect(started)
        signals.attempt_succeeded.disconnect(succeeded)
    starts = [h for h in heard if h[0] == "started"]
    assert len(starts) == 4
    due = clock.now()
    assert all(at == due for _, _, at, _ in starts)  # each with the instant it began
    # The threads started the burst; the engine's thread announced what they left to it.
    assert any(thread is threading.main_thread() for *_, thread in starts)
    for _, attempt_id, _, _ in starts:
        order = [kind for kind, aid, _, _ in heard if aid == attempt_id]
        assert order == ["started", "succeeded"]


def test_an_inline_engine_never_claims_ahead(schedule_at, clock, engine):
    schedule = recording(schedule_at)
    clock.advance(seconds=59.7)
    engine.tick()
    assert schedule.attempts.count() == 0
    assert jobs.CALLS == []


def test_claim_ahead_zero_turns_it_off(schedule_at, clock, threaded_engine, settings):
    settings.CADENCE_CLAIM_AHEAD = 0
    schedule = recording(schedule_at)
    ticked_ahead(threaded_engine, clock)
    assert schedule.attempts.count() == 0


# --- the pool -----------------------------------------------------------------------------


def test_claiming_ahead_starts_the_threads_the_instant_will_need(
    schedule_at, clock, threaded_engine
):
    for i in range(3):
        recording(schedule_at, label=f"t{i}")
    engine = ticked_ahead(threaded_engine, clock)
    assert engine.tries.waiting() == 3
    poll_until(lambda: engine.tries.running._pool.threads == 2)  # capped at --concurrency
    assert jobs.CALLS == []


def test_warming_starts_threads_up_to_the_pool_size_and_runs_the_task_on_each():
    pool = TryPool(3)
    ran = []
    pool.warm(5, lambda: ran.append(1))
    poll_until(lambda: len(ran) == 3)
    pool.warm(2, lambda: ran.append(1))  # enough threads already
    time.sleep(0.05)
    assert len(ran) == 3
    assert pool.threads == 3
    pool.shutdown()


def test_idle_threads_exit_so_a_pool_sized_for_bursts_costs_nothing_between_them():
    pool = TryPool(8, idle_exit=0.05)
    done = []
    for i in range(8):
        pool.submit(lambda i=i: done.append(i))
    poll_until(lambda: len(done) == 8)
    assert pool.threads >= 1
    poll_until(lambda: pool.threads == 0)
    pool.submit(lambda: done.append("again"))  # a new burst starts threads again
    poll_until(lambda: "again" in done)
    pool.shutdown()


# --- the default number of threads ----------------------------------------------------------


def test_the_default_concurrency_fits_the_database_and_the_setting_overrides_it(settings):

    from django_cadence.engine.loop import Engine

    expected = 4 if connection.vendor == "sqlite" else 8  # one writer at a time on SQLite
    assert Engine(worker_id="w-default").concurrency == expected
    settings.CADENCE_CONCURRENCY = 7
    assert Engine(worker_id="w-set").concurrency == 7
    assert Engine(worker_id="w-flag", concurrency=3).concurrency == 3


def test_a_thread_the_process_could_not_start_is_not_counted_as_one(monkeypatch):
    """Out of threads: the submit raises, and the pool does not count a thread that never
    ran (it would wait for it to take the task); the next submit starts a real one."""
    pool = TryPool(2)
    start = threading.Thread.start

    def refused(thread):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refused)
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)
    assert pool.threads == 0
    monkeypatch.setattr(threading.Thread, "start", start)
    done = []
    pool.submit(lambda: done.append(1))
    poll_until(lambda: done == [1])
    assert pool.threads == 1
    pool.shutdown()
