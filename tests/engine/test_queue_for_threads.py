"""Claiming ahead: a worker whose tries are short holds several tries per thread (more the
shorter they are), and hands back any that wait too long for one."""

import threading
from datetime import timedelta

import pytest

from django_cadence.engine import budget, handbacks, recovery
from django_cadence.engine import tuning as engine_module
from django_cadence.models import Attempt
from tests import jobs
from tests.support.polling import poll_until

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)


def wait_for_threads(engine):
    for flight in list(engine.tries.held.values()):
        assert flight.done.wait(5)


def warmed_up(engine, schedule_at, clock):
    """The engine after one quick try: it has seen that its tries are short."""
    schedule_at(executor="tests.jobs.noop", interval=timedelta(hours=1))
    clock.advance(hours=1)
    engine.tick()
    wait_for_threads(engine)
    engine.tick()
    assert engine.in_flight == 0
    poll_until(lambda: engine.tries.running.busy == 0)  # its thread has let go of the queue
    return engine


def gated_schedules(engine, schedule_at, count):
    """``count`` schedules due in a minute whose tries wait at the gate; the engine has seen
    them (on SQLite it reads the next due instant only between ticks)."""
    schedules = [
        schedule_at(executor="tests.jobs.wait_at_gate", payload={"label": f"g{i}"}, interval=MINUTE)
        for i in range(count)
    ]
    engine.tick()
    return schedules


def statuses(schedules):
    return sorted(s.attempts.get().status for s in schedules)


def test_short_tries_let_a_worker_claim_ahead_of_its_threads(
    schedule_at, clock, threaded_engine, gate
):
    engine = warmed_up(threaded_engine(concurrency=1), schedule_at, clock)
    most = engine_module.QUEUE_MAX_ROUNDS  # the warm-up try took far under 10 ms
    schedules = gated_schedules(engine, schedule_at, most + 1)
    clock.advance(MINUTE)
    engine.tick()
    assert engine.in_flight == most  # one thread, the others waiting for it
    assert len(engine.tries.running.queued) == most - 1
    assert statuses(schedules) == ["pending"] + ["running"] * most
    gate.set()
    wait_for_threads(engine)
    engine.tick()  # records what finished and claims the last one
    wait_for_threads(engine)
    engine.tick()
    assert statuses(schedules) == ["succeeded"] * (most + 1)
    assert sorted(jobs.CALLS) == sorted(f"g{i}" for i in range(most + 1))


@pytest.mark.parametrize(
    ("average", "rounds"),
    [(None, 1), (0.0, 16), (0.009, 16), (0.03, 6), (0.049, 4), (0.05, 1), (2.0, 1)],
)
def test_the_shorter_the_tries_the_more_rounds_a_worker_holds(threaded_engine, average, rounds):
    engine = threaded_engine(concurrency=3)
    engine.tries.budget.runtime_avg = average
    assert engine.tries.budget.capacity() == 3 * rounds


def test_a_worker_that_has_not_seen_short_tries_claims_only_its_threads(
    schedule_at, clock, threaded_engine, gate
):
    engine = threaded_engine(concurrency=2)
    schedules = gated_schedules(engine, schedule_at, 4)
    clock.advance(MINUTE)
    engine.tick()
    assert engine.in_flight == 2
    assert statuses(schedules) == ["pending"] * 2 + ["running"] * 2


def test_long_tries_stop_claiming_ahead(schedule_at, clock, threaded_engine, gate):
    engine = threaded_engine(concurrency=2)
    schedule_at(
        executor="tests.jobs.sleep_for",
        payload={"seconds": engine_module.QUEUE_MAX_RUNTIME * 3},
        interval=timedelta(hours=1),
    )
    clock.advance(hours=1)
    engine.tick()
    wait_for_threads(engine)
    engine.tick()
    schedules = gated_schedules(engine, schedule_at, 4)
    clock.advance(MINUTE)
    engine.tick()
    assert engine.in_flight == 2
    assert statuses(schedules) == ["pending"] * 2 + ["running"] * 2


def test_a_try_waiting_too_long_for_a_thread_is_handed_back(
    schedule_at, clock, threaded_engine, gate, monkeypatch
):
    engine = warmed_up(threaded_engine(concurrency=2), schedule_at, clock)
    schedules = gated_schedules(engine, schedule_at, 4)
    clock.advance(MINUTE)
    engine.tick()
    assert engine.in_flight == 4
    monkeypatch.setattr(handbacks, "QUEUE_MAX_WAIT", 0.0)
    monkeypatch.setattr(budget, "QUEUE_MAX_WAIT", 0.0)
    engine.tick()
    assert engine.in_flight == 2  # and no claims ahead until tries are seen short again
    assert engine.tries.budget.ahead_budget() == 2  # nor a burst before its instant: one round
    handed_back = [s.attempts.get() for s in schedules if s.attempts.get().status == "pending"]
    assert len(handed_back) == 2
    assert all((a.tries, a.claim_token, a.lease_until) == (0, None, None) for a in handed_back)
    gate.set()
    wait_for_threads(engine)
    # The handed-back tries never ran here (the next tick may claim them again, as any
    # worker may: that is a new claim).
    assert len(jobs.CALLS) == 2


def test_shutdown_hands_back_tries_claimed_ahead_at_once(schedule_at, clock, threaded_engine, gate):
    engine = warmed_up(threaded_engine(concurrency=2), schedule_at, clock)
    schedules = gated_schedules(engine, schedule_at, 4)
    clock.advance(MINUTE)
    engine.tick()
    assert engine.in_flight == 4
    threading.Timer(0.3, gate.set).start()
    engine._drain(grace=5)
    assert statuses(schedules) == ["pending"] * 2 + ["succeeded"] * 2
    assert len(jobs.CALLS) == 2


def test_a_queued_try_replaced_before_it_starts_is_cancelled_unrun(
    schedule_at, clock, threaded_engine, gate
):
    engine = warmed_up(threaded_engine(concurrency=1), schedule_at, clock)
    first, second = gated_schedules(engine, schedule_at, 2)
    clock.advance(MINUTE)
    engine.tick()
    assert engine.in_flight == 2
    (queued,) = engine.tries.running.queued
    queued.claim.cancel_event.set()  # what a cancel request seen by the heartbeat does
    gate.set()
    wait_for_threads(engine)
    engine.tick()
    assert len(jobs.CALLS) == 1
    cancelled = queued.claim.attempt_id
    by_id = {s.attempts.get().id: s.attempts.get() for s in (first, second)}
    assert by_id[cancelled].status == "cancelled"
    assert "replaced" in by_id[cancelled].error
    (other,) = [a for pk, a in by_id.items() if pk != cancelled]
    assert other.status == "succeeded"


def test_a_queued_try_is_not_timed_out_before_it_starts(schedule_at, clock, threaded_engine, gate):
    engine = warmed_up(threaded_engine(concurrency=1), schedule_at, clock)
    schedules = [
        schedule_at(
            executor="tests.jobs.wait_at_gate",
            payload={"label": f"t{i}"},
            interval=MINUTE,
            max_runtime=timedelta(seconds=5),
        )
        for i in range(2)
    ]
    engine.tick()
    clock.advance(MINUTE)
    engine.tick()
    (queued,) = engine.tries.running.queued
    poll_until(lambda: jobs.CALLS)  # the other try's job has started
    clock.advance(seconds=6)
    engine.tick()  # the running try is past its deadline; the queued one has not started
    by_id = {s.attempts.get().id: s.attempts.get() for s in schedules}
    assert by_id[queued.claim.attempt_id].status == "running"
    assert by_id[queued.claim.attempt_id].error == ""
    (timed_out,) = [a for pk, a in by_id.items() if pk != queued.claim.attempt_id]
    assert (timed_out.status, "timed out after 5 s" in timed_out.error) == ("pending", True)
    assert not queued.claim.cancel_event.is_set()
    gate.set()
    assert queued.done.wait(5)
    engine.tick()
    assert Attempt.objects.get(pk=queued.claim.attempt_id).status == "succeeded"


def test_a_worker_never_starts_again_an_attempt_still_running_in_its_own_thread(
    schedule_at, clock, threaded_engine, gate, caplog
):
    """docs/design.md, "Lost workers": a try recovered from under its worker (its session
    cut, its process paused) may still run in a thread there. The worker never claims the
    attempt beside it; its next renewal finds the try lost and stops it (logged once, its
    result never recorded); once the thread has ended the attempt may run here again."""
    engine = threaded_engine(concurrency=2)
    gated_schedules(engine, schedule_at, 1)
    clock.advance(MINUTE)
    engine.tick()
    poll_until(lambda: jobs.CALLS == ["g0"])
    (first,) = engine.tries.claims()
    assert recovery.recover(clock.now(), lost_workers={engine.worker_id}) == 1
    engine.tick()
    assert (engine.in_flight, Attempt.objects.get().status) == (1, "pending")

    clock.advance(seconds=11)  # the next renewal (a third of the 30 s lease)
    engine.tick()
    assert first.cancel_event.is_set()
    assert (engine.in_flight, Attempt.objects.get().status) == (0, "pending")
    assert caplog.text.count("attempt lost") == 1

    gate.set()  # the lost try ends; its success is never written
    poll_until(lambda: not engine.tries.running_here().attempts)
    engine.tick()
    wait_for_threads(engine)
    engine.tick()
    attempt = Attempt.objects.get()
    assert (attempt.status, attempt.tries, jobs.CALLS) == ("succeeded", 2, ["g0", "g0"])
    assert [entry["result"] for entry in attempt.history] == ["lost", "succeeded"]
    assert caplog.text.count("attempt lost") == 1


def test_a_lost_process_isolated_try_has_its_child_killed(schedule_at, clock, threaded_engine):
    """docs/design.md, "Lost workers": a thread cannot be killed, a child process can."""
    engine = threaded_engine(concurrency=1)
    schedule_at(executor="tests.jobs.process_sleep", payload={"seconds": 60}, interval=MINUTE)
    engine.tick()
    clock.advance(MINUTE)
    engine.tick()
    (held,) = engine.tries.held.values()
    assert recovery.recover(clock.now(), lost_workers={engine.worker_id}) == 1
    clock.advance(seconds=11)  # the next renewal finds the try lost
    engine.tick()
    assert held.done.wait(30)  # its child was killed: the 60 s sleep did not run out
    engine.tries.record_finished()
    attempt = Attempt.objects.get()
    assert (attempt.status, [e["result"] for e in attempt.history]) == ("pending", ["lost"])
