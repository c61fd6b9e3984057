"""Engine ticks on the fake clock: what fires, when it sleeps, timeouts, public operations."""

import logging
import time
from datetime import timedelta

import pytest

import django_cadence
from django_cadence.clock import DatabaseClock, log_clock_skew
from django_cadence.engine import leases
from django_cadence.engine.loop import Engine
from django_cadence.models import Attempt

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)


def test_engine_tick_runs_due_occurrence_and_records_outcome(engine, schedule_at, clock):
    schedule = schedule_at(executor="tests.jobs.add", payload={"a": 2, "b": 3}, interval=MINUTE)
    engine.tick()
    assert not Attempt.objects.exists()
    clock.advance(MINUTE)
    engine.tick()
    attempt = Attempt.objects.get(schedule=schedule)
    assert (attempt.status, attempt.outcome, attempt.tries) == ("succeeded", 5, 1)
    assert attempt.finished_at == clock.now()


def test_engine_sleeps_until_the_next_due_occurrence(engine, schedule_at, clock):
    schedule_at(interval=timedelta(seconds=7))
    assert engine.tick() == pytest.approx(7)
    clock.advance(seconds=3)
    assert engine.tick() == pytest.approx(4)


def test_engine_sleep_counts_from_the_clock_read_after_its_queries(clock, schedule_at):
    """Time passes while the engine asks the database when to wake; the sleep is shorter."""
    from django.db import connection

    def slow_query(execute, *args):
        clock.advance(milliseconds=5)
        return execute(*args)

    schedule = schedule_at(interval=timedelta(seconds=7))
    engine = Engine(clock=clock, inline=True)
    with connection.execute_wrapper(slow_query):
        delay = engine.tick()
    schedule.refresh_from_db()
    assert delay == pytest.approx((schedule.next_run_at - clock.now()).total_seconds())


def test_engine_reads_the_next_due_instant_after_planning_instead_of_planning_again(
    schedule_at, clock, threaded_engine, monkeypatch
):
    from django_cadence.engine import planner

    calls = []
    plan_due = planner.plan_due
    monkeypatch.setattr(
        planner, "plan_due", lambda now, **kw: calls.append(now) or plan_due(now, **kw)
    )
    engine = threaded_engine(concurrency=2)
    schedule_at(executor="tests.jobs.sleep_for", payload={"seconds": 0.3}, interval=MINUTE)
    clock.advance(seconds=59)
    engine.tick()  # reads the next due instant, a second ahead (beyond the claim-ahead horizon)
    clock.advance(seconds=1)
    engine.tick()  # plans and starts the occurrence
    assert len(calls) == 2
    assert engine.in_flight == 1
    engine.tick()  # the try still runs; nothing else is due
    assert len(calls) == 2


def test_engine_sleep_is_bounded_by_max_tick(clock, schedule_at):
    schedule_at(interval=timedelta(hours=1))
    engine = Engine(clock=clock, inline=True, max_tick=2.5)
    assert engine.tick() == pytest.approx(2.5)


def test_engine_sleeps_until_a_ready_retry(engine, schedule_at, clock):
    schedule_at(
        executor="tests.jobs.raise_error",
        interval=timedelta(hours=1),
        retry_base=timedelta(seconds=4),
        retry_cap=timedelta(seconds=4),
    )
    clock.advance(hours=1)
    delay = engine.tick()
    attempt = Attempt.objects.get()
    assert attempt.status == "pending"
    assert delay == pytest.approx((attempt.retry_at - clock.now()).total_seconds())
    assert 3.2 <= delay <= 4


def test_engine_passes_context_with_stable_idempotency_key(engine, schedule_at, clock):
    schedule = schedule_at(
        executor="tests.jobs.fail_n_times", payload={"n": 1, "key": "k"}, interval=MINUTE
    )
    clock.advance(MINUTE)
    engine.tick()
    attempt = Attempt.objects.get(schedule=schedule)
    clock.set(attempt.retry_at)
    engine.tick()
    attempt.refresh_from_db()
    assert attempt.status == "succeeded"
    assert attempt.tries == 2


def test_engine_runs_async_jobs(engine, schedule_at, clock):
    schedule_at(executor="tests.jobs.async_add", payload={"a": 1, "b": 1}, interval=MINUTE)
    clock.advance(MINUTE)
    engine.tick()
    assert Attempt.objects.get().outcome == 2


def test_engine_timeout_counts_as_failed_try_and_sets_cancel(schedule_at, clock, threaded_engine):
    engine = threaded_engine(concurrency=2)
    schedule_at(
        executor="tests.jobs.sleep_for",
        payload={"seconds": 30},
        interval=timedelta(hours=1),
        max_runtime=timedelta(seconds=5),
        max_attempts=2,
    )
    clock.advance(hours=1)
    engine.tick()
    attempt = Attempt.objects.get()
    assert attempt.status == "running"
    (flight,) = engine.tries.held.values()
    clock.advance(seconds=6)
    engine.tick()
    attempt.refresh_from_db()
    assert attempt.status == "pending"
    assert "timed out after 5 s" in attempt.error
    assert flight.claim.cancel_event.is_set()
    assert flight.done.wait(5)  # the job saw the cancel event and returned
    engine.tick()  # its late result is discarded
    attempt.refresh_from_db()
    assert attempt.status == "pending"
    assert attempt.tries == 1


def test_engine_debug_query_log_does_not_grow(engine, schedule_at, clock, settings):
    from django.db import connection

    settings.DEBUG = True
    schedule_at(interval=MINUTE)
    for _ in range(5):
        clock.advance(MINUTE)
        engine.tick()
    assert len(connection.queries) < 40


def test_engine_tick_query_budget(engine, schedule_at, clock, django_assert_max_num_queries):
    for _ in range(20):
        schedule_at(interval=MINUTE, overlap="allow")
    engine.tick()
    clock.advance(MINUTE)
    # A fixed part (plan, claim, recovery, sleep computation, savepoints: under 30) plus one
    # fenced completion statement per attempt.
    with django_assert_max_num_queries(30 + 20):
        engine.tick()
    assert Attempt.objects.filter(status="succeeded").count() == 20


def test_trigger_runs_now_and_is_never_collapsed(engine, schedule_at, clock):
    schedule = schedule_at(interval=timedelta(hours=1), overlap="allow")
    first = django_cadence.trigger(schedule, now=clock.now())
    second = django_cadence.trigger(schedule, now=clock.now())
    assert first.pk != second.pk
    assert {first.trigger, second.trigger} == {"manual"}
    engine.tick()
    assert list(Attempt.objects.values_list("status", flat=True)) == ["succeeded"] * 2


def test_trigger_goes_through_the_overlap_policy_unless_forced(schedule_at, clock):
    schedule = schedule_at(interval=timedelta(hours=1), overlap="skip_if_running")
    running = django_cadence.trigger(schedule, now=clock.now())
    Attempt.objects.filter(pk=running.pk).update(
        status="running", claim_token="t", lease_until=clock.now() + MINUTE
    )
    assert django_cadence.trigger(schedule, now=clock.now()).status == "skipped"
    assert django_cadence.trigger(schedule, now=clock.now(), force=True).status == "pending"


def test_pause_and_resume_catch_nothing_up(schedule_at, clock, engine):
    schedule = schedule_at(interval=MINUTE)
    django_cadence.pause(schedule)
    clock.advance(minutes=30)
    engine.tick()
    assert not Attempt.objects.exists()
    resumed = django_cadence.resume(schedule.name)
    assert resumed.enabled
    assert resumed.next_run_at > resumed.enabled_at - MINUTE


def test_retry_sends_a_dead_letter_back_with_fresh_tries(engine, schedule_at, clock):
    schedule_at(executor="tests.jobs.raise_permanent", interval=MINUTE)
    clock.advance(MINUTE)
    engine.tick()
    dead = Attempt.objects.get()
    assert dead.status == "dead_letter"
    retried = django_cadence.retry(dead, now=clock.now())
    assert (retried.status, retried.tries) == ("pending", 0)
    with pytest.raises(ValueError, match="only dead letters"):
        django_cadence.retry(retried)


def test_cancel_pending_and_running(schedule_at, clock):
    schedule = schedule_at(interval=timedelta(hours=1), overlap="allow")
    pending = django_cadence.trigger(schedule, now=clock.now())
    assert django_cadence.cancel(pending, now=clock.now()).status == "cancelled"
    running = django_cadence.trigger(schedule, now=clock.now())
    Attempt.objects.filter(pk=running.pk).update(
        status="running", claim_token="t", lease_until=clock.now() + MINUTE
    )
    assert django_cadence.cancel(running).cancel_requested is True


def test_engine_replace_cancels_the_running_try(schedule_at, clock, settings, threaded_engine):
    settings.CADENCE_LEASE = 3
    engine = threaded_engine(concurrency=2)
    schedule = schedule_at(
        executor="tests.jobs.sleep_for",
        payload={"seconds": 30},
        interval=MINUTE,
        overlap="replace",
    )
    clock.advance(MINUTE)
    engine.tick()
    clock.advance(MINUTE)
    engine.tick()  # plans the next occurrence and asks the running one to stop
    clock.advance(seconds=1)
    engine.tick()  # heartbeat sees the request and sets the cancel event
    deadline = time.monotonic() + 5
    while engine.in_flight and time.monotonic() < deadline:
        engine._wake.wait(0.1)
        engine.tick()
    statuses = list(
        Attempt.objects.filter(schedule=schedule)
        .order_by("occurrence_at")
        .values_list("status", flat=True)
    )
    assert statuses[0] == "cancelled"
    assert statuses[1] in ("running", "succeeded", "pending")


@pytest.mark.django_db(transaction=True)
def test_engine_atomic_job_commits_effect_with_success(schedule_at, clock, threaded_engine):
    engine = threaded_engine(concurrency=2)
    schedule = schedule_at(executor="tests.jobs.atomic_noop", interval=MINUTE)
    clock.advance(MINUTE)
    engine.tick()
    for flight in list(engine.tries.held.values()):
        assert flight.done.wait(5)
    engine.tick()
    attempt = Attempt.objects.get(schedule=schedule)
    assert (attempt.status, attempt.outcome) == ("succeeded", "atomic")
    assert not engine.tries.held


class SkewedDatabaseClock(DatabaseClock):
    """The database clock as a host 5 minutes ahead of the server would see it."""

    def now(self):
        return super().now() - timedelta(minutes=5)


def test_engine_logs_clock_skew_against_the_database(caplog):
    caplog.set_level(logging.INFO, logger="django_cadence")
    log_clock_skew(DatabaseClock(), "w1")
    log_clock_skew(SkewedDatabaseClock(), "w2")
    lines = [r for r in caplog.records if "clock skew" in r.getMessage()]
    assert [r.levelname for r in lines] == ["INFO", "WARNING"]
    skewed = float(lines[1].getMessage().split("=")[1].split("s")[0])
    assert 299 < skewed < 301


def test_trigger_refuses_a_paused_schedule_naming_the_flag(schedule_at, clock):
    schedule = schedule_at(interval=timedelta(hours=1))
    django_cadence.pause(schedule)
    with pytest.raises(ValueError, match="is paused") as excinfo:
        django_cadence.trigger(schedule, now=clock.now())
    assert "is paused; resume it, or run it once while it stays paused with trigger(..., " in (
        str(excinfo.value)
    )
    assert "even_if_paused=True" in str(excinfo.value)
    assert not Attempt.objects.exists()


def test_trigger_even_if_paused_runs_one_attempt_and_the_schedule_stays_paused(
    engine, schedule_at, clock, caplog
):
    """Invariant 6's one exception: a manual run asked for even if paused."""
    schedule = schedule_at(executor="tests.jobs.add", payload={"a": 1, "b": 2}, interval=MINUTE)
    django_cadence.pause(schedule, reason="comparing with beat")
    with caplog.at_level(logging.INFO, logger="django_cadence"):
        manual = django_cadence.trigger(schedule, now=clock.now(), even_if_paused=True)
    assert manual.even_if_paused
    assert manual.trigger == "manual"
    assert "even_if_paused=True: one manual run; the schedule stays paused" in caplog.text

    assert engine.tick() == pytest.approx(engine.max_tick)  # nothing else is due: it waits
    clock.advance(minutes=5)
    engine.tick()

    manual.refresh_from_db()
    assert (manual.status, manual.outcome) == ("succeeded", 3)
    assert list(Attempt.objects.values_list("trigger", flat=True)) == ["manual"]  # no occurrence
    schedule.refresh_from_db()
    assert (schedule.enabled, schedule.pause_reason) == (False, "comparing with beat")


def test_engine_wakes_for_a_manual_run_even_if_paused(engine, schedule_at, clock):
    schedule = schedule_at(interval=timedelta(hours=1))
    django_cadence.pause(schedule)
    clock.advance(seconds=30)
    django_cadence.trigger(schedule, now=clock.now() + timedelta(seconds=4), even_if_paused=True)
    assert engine.tick() == pytest.approx(4)


def test_the_retries_of_a_run_even_if_paused_run_while_the_schedule_stays_paused(
    engine, schedule_at, clock
):
    """Invariant 6: an attempt triggered even if paused starts while its schedule is paused,
    and so do its retries; the engine wakes for them, and nothing else of it runs."""
    schedule = schedule_at(
        executor="tests.jobs.fail_n_times",
        payload={"n": 1, "key": "paused"},
        interval=MINUTE,
        retry_base=timedelta(seconds=4),
        retry_cap=timedelta(seconds=4),
        overlap="allow",  # a serial policy would keep the run behind the one that waits
    )
    waiting = django_cadence.trigger(schedule, now=clock.now())  # before the pause: it waits
    django_cadence.pause(schedule, reason="maintenance")
    manual = django_cadence.trigger(schedule, now=clock.now(), even_if_paused=True)

    delay = engine.tick()  # the first try fails
    manual.refresh_from_db()
    assert (manual.status, manual.tries) == ("pending", 1)
    assert delay == pytest.approx((manual.retry_at - clock.now()).total_seconds())  # wakes
    clock.set(manual.retry_at)
    engine.tick()

    manual.refresh_from_db()
    assert (manual.status, manual.tries, manual.outcome) == ("succeeded", 2, "ok")
    waiting.refresh_from_db()
    assert (waiting.status, waiting.tries) == ("pending", 0)
    schedule.refresh_from_db()
    assert (schedule.enabled, schedule.pause_reason) == (False, "maintenance")


def test_a_run_even_if_paused_whose_worker_was_lost_is_recovered_and_runs_while_paused(
    engine, schedule_at, clock, settings
):
    """Invariant 6: the recovery of an attempt triggered even if paused makes it ready again,
    and it runs while its schedule stays paused."""
    settings.CADENCE_LEASE = 10
    settings.CADENCE_RECOVERY_GRACE = 5
    schedule = schedule_at(executor="tests.jobs.add", payload={"a": 2, "b": 2}, interval=MINUTE)
    django_cadence.pause(schedule)
    manual = django_cadence.trigger(schedule, now=clock.now(), even_if_paused=True)
    (claim,) = leases.claim(clock.now(), worker="w-gone", slots=1)  # a worker that then died
    assert claim.attempt_id == manual.pk

    clock.advance(seconds=16)  # its lease expired beyond the recovery grace
    engine.tick()

    manual.refresh_from_db()
    assert (manual.status, manual.outcome, manual.recoveries) == ("succeeded", 4, 1)
    assert [(e["worker"], e["result"]) for e in manual.history] == [
        ("w-gone", "lost"),
        ("worker-1", "succeeded"),
    ]
    schedule.refresh_from_db()
    assert schedule.enabled is False


def test_engine_does_not_wake_for_retries_of_a_paused_schedule(engine, schedule_at, clock):
    schedule = schedule_at(interval=timedelta(hours=1))
    django_cadence.trigger(schedule, now=clock.now())
    django_cadence.pause(schedule)
    assert engine.tick() == pytest.approx(engine.max_tick)
    assert Attempt.objects.get().status == "pending"


def test_engine_skips_the_planning_read_until_the_next_due_instant(
    engine, schedule_at, clock, monkeypatch
):
    """Between due instants a tick does not lock schedules to find that none is due."""
    from django_cadence.engine import planner

    planned = []
    plan_due = planner.plan_due
    monkeypatch.setattr(
        planner, "plan_due", lambda now, **kw: planned.append(now) or plan_due(now, **kw)
    )
    schedule_at(interval=timedelta(hours=1))
    engine.tick()  # nothing read yet: plans (nothing), then reads the next due instant
    clock.advance(MINUTE)
    engine.tick()
    assert len(planned) == 1
    clock.advance(hours=1)
    engine.tick()
    assert len(planned) == 2
    assert Attempt.objects.filter(status="succeeded").count() == 1


def test_engine_plans_a_schedule_saved_after_it_read_the_next_due_instant(
    engine, schedule_at, clock
):
    """Another process saves a schedule due now while the engine believes nothing is due for
    an hour: the next tick sees it and asks to run again at once, and that tick plans it."""
    schedule_at(interval=timedelta(hours=1))
    engine.tick()
    late = schedule_at(interval=timedelta(seconds=1))
    clock.advance(seconds=1)
    assert engine.tick() == 0.0
    engine.tick()
    assert Attempt.objects.filter(schedule=late, status="succeeded").count() == 1


def test_engine_plans_at_once_on_a_change_notice(engine, schedule_at, clock):
    """On PostgreSQL a saved schedule sends a notice; the tick it wakes plans without delay."""
    schedule_at(interval=timedelta(hours=1))
    engine.tick()
    late = schedule_at(interval=timedelta(seconds=1))
    clock.advance(seconds=1)
    engine._notice()  # what the listener thread calls on a notification
    engine.tick()
    assert Attempt.objects.filter(schedule=late, status="succeeded").count() == 1


def test_engine_does_not_plan_every_tick_once_nothing_is_left_to_fire(
    engine, schedule_at, clock, monkeypatch
):
    """A fired one-shot has no next run: "no schedule will fire" is not "not read yet"."""
    from django_cadence.engine import planner

    planned = []
    plan_due = planner.plan_due
    monkeypatch.setattr(
        planner, "plan_due", lambda now, **kw: planned.append(now) or plan_due(now, **kw)
    )
    schedule_at(kind="once", run_at=clock.now() + MINUTE, interval=None)
    clock.advance(MINUTE)
    engine.tick()
    assert Attempt.objects.get().status == "succeeded"
    calls = len(planned)
    for _ in range(3):
        clock.advance(seconds=1)
        engine.tick()
    assert len(planned) == calls
