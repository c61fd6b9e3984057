"""A try that will not stop cannot wedge the engine (docs/design.md, "Stuck threads").

Real ``run_cadence`` processes run ``tests.jobs.hang`` (a loop that ignores cancellation)
with a short ``max_runtime``, beside an interval schedule whose job records when it ran.
"""

from __future__ import annotations

import re
import signal
from datetime import datetime, timedelta

import pytest

from benchmarks.fleet import wait_until
from django_cadence.engine.running import LATE
from django_cadence.executors.calling import idempotency_key
from django_cadence.models import Attempt, Schedule, Status, Worker
from tests.models import Effect
from tests.support.attempts import make_due
from tests.support.records import check_occurrences, log_problems

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

SECOND = timedelta(seconds=1)
TICKER_PERIOD = timedelta(seconds=3)


def _hung(**fields) -> Schedule:
    """Every second, a try that hangs; timed out after half a second, never retried."""
    schedule = Schedule.objects.create(
        name="hung",
        kind="interval",
        interval=SECOND,
        executor="tests.jobs.hang",
        max_runtime=timedelta(seconds=0.5),
        max_attempts=1,
        **fields,
    )
    make_due(schedule)
    return schedule


def _ticker(executor: str = "tests.jobs.record_start") -> Schedule:
    schedule = Schedule.objects.create(
        name="ticker", kind="interval", interval=TICKER_PERIOD, executor=executor
    )
    make_due(schedule)
    return schedule


def _timed_out(schedule: Schedule) -> int:
    return Attempt.objects.filter(schedule=schedule, status=Status.DEAD_LETTER).count()


def _lags(schedule: Schedule) -> list[timedelta]:
    """How late each occurrence ran, from the job's own records."""
    lags = []
    for effect in Effect.objects.filter(key__startswith=f"{schedule.name}|"):
        occurrence = datetime.fromisoformat(effect.key.split("|", 1)[1])
        lags.append(effect.created_at - occurrence)
    return lags


@pytest.mark.parametrize("concurrency", [1, 4])
def test_hung_tries_do_not_wedge_the_worker(worker, concurrency):
    hung = _hung()
    ticker = _ticker()
    child = worker("stuck", concurrency=concurrency, settings={"CADENCE_STUCK_THREADS_LIMIT": 0})

    # More tries timed out than the worker has threads: each one kept its thread.
    wait_until(lambda: _timed_out(hung) >= concurrency + 2, timeout=60, message="timeouts")
    runs_then = len(_lags(ticker))
    wait_until(lambda: len(_lags(ticker)) >= runs_then + 2, timeout=30, message="ticker runs")

    row = wait_until(
        lambda: Worker.objects.filter(worker_id="stuck", stuck_threads__gt=concurrency).first(),
        timeout=10,
        message="the heartbeat to report the stuck threads",
    )
    assert row.stuck_since is not None
    child.terminate()
    assert child.wait(30) == 0  # unhealthy only past a limit, and 0 means none

    # The other schedule kept firing (twice, above, once the worker held more stuck threads
    # than it has slots): each occurrence has one record, and each try that started ran once.
    # How late it ran is the machine's speed, not a promise a loaded machine can keep: the
    # slot given back at once is shown on the fake clock (tests/engine/test_stuck.py).
    ticker.refresh_from_db()
    check_occurrences(ticker)
    ticker_ran = Attempt.objects.filter(schedule=ticker, tries__gt=0)
    assert (
        len(_lags(ticker))
        == ticker_ran.count()
        == ticker_ran.filter(status=Status.SUCCEEDED).count()
    )
    # The rest never ran: skipped while the one before still ran or waited for a thread
    # (skip_if_running), or planned or claimed ahead when the worker stopped (handed back).
    assert set(
        Attempt.objects.filter(schedule=ticker, tries=0).values_list("status", flat=True)
    ) <= {Status.SKIPPED, Status.PENDING}
    # "attempt started" only for tries that started: none was claimed and handed back.
    # (A try claimed ahead and handed back unrun is not "started".)
    log = child.output()
    started = {int(i) for i in re.findall(r"attempt started id=(\d+)", log)}
    ran = set(Attempt.objects.filter(tries__gt=0).values_list("id", flat=True))
    assert started == ran
    assert "stuck threads worker=stuck" in log
    # A try handed back for a start past START_LATE (a starved process) is not a problem.
    assert not log_problems(log, allowed=("stuck threads", LATE))


def test_worker_past_the_stuck_limit_exits_and_is_replaced(worker):
    hung = _hung()
    ticker = _ticker(executor="tests.jobs.count_run")
    first = worker("first", concurrency=2, settings={"CADENCE_STUCK_THREADS_LIMIT": 2})

    assert first.wait(60) == 3
    log = first.output()
    assert "worker unhealthy worker=first: 2 stuck thread(s)" in log
    assert "supervisor starts a fresh one" in log
    assert _timed_out(hung) >= 2

    # Its supervisor starts a fresh one, which carries on from where the first one stopped.
    second = worker("second", concurrency=2, settings={"CADENCE_STUCK_THREADS_LIMIT": 0})
    runs_then = Attempt.objects.filter(schedule=ticker, status=Status.SUCCEEDED).count()
    wait_until(
        lambda: (
            Attempt.objects.filter(
                schedule=ticker, status=Status.SUCCEEDED, worker="second"
            ).count()
            >= 2
            and Attempt.objects.filter(schedule=ticker, status=Status.SUCCEEDED).count() > runs_then
        ),
        timeout=30,
        message="the fresh worker to run the ticker",
    )
    Schedule.objects.filter(pk=hung.pk).update(enabled=False)
    second.send(signal.SIGTERM)
    assert second.wait(30) == 0

    # Nothing lost, nothing doubled: one record per occurrence, one run per success.
    ticker.refresh_from_db()
    check_occurrences(ticker)
    attempts = list(Attempt.objects.filter(schedule=ticker))
    assert {a.status for a in attempts} <= {Status.SUCCEEDED, Status.PENDING}
    for attempt in attempts:
        key = idempotency_key(attempt.schedule_id, attempt.occurrence_at, attempt.trigger)
        runs = Effect.objects.filter(key__startswith=f"{key}|").count()
        assert runs == (1 if attempt.status == Status.SUCCEEDED else 0), attempt
