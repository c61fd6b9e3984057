"""Real ``run_cadence`` workers serving chosen queues: each runs only its queues' schedules,
counted from the jobs' own records of their executions.

On SQLite one engine runs at a time: the worker serving ``billing`` runs billing's schedules,
and ``reports``' attempts wait for a worker serving it.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection

from benchmarks.chaos_app.jobs import EXECUTIONS_ENV
from benchmarks.chaos_checks import executions, read_execution_lines
from benchmarks.fleet import stop_all, wait_until
from django_cadence.models import Attempt, Schedule, Status, Worker

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

QUEUES = {"invoices": "billing", "dunning": "billing", "totals": "reports", "exports": "reports"}


def _schedules() -> None:
    for name, queue in QUEUES.items():
        Schedule.objects.create(
            name=name,
            interval=timedelta(seconds=1),
            executor="tests.jobs.noop",
            queue=queue,
        )


def _runs_by_worker(directory, workers) -> dict[str, Counter[str]]:
    """Each worker's executions, by schedule, from the lines its jobs wrote (by pid)."""
    names = {w.pid: w.name for w in workers}
    found: dict[str, Counter[str]] = {w.name: Counter() for w in workers}
    for line in read_execution_lines(directory):
        if "start" in line:
            found[names[line["pid"]]][line["schedule"]] += 1
    return found


def test_two_workers_with_different_queues_each_run_only_their_own(worker, tmp_path):
    _schedules()
    recorded = tmp_path / "executions"
    recorded.mkdir()
    env = {EXECUTIONS_ENV: str(recorded)}
    sqlite = connection.vendor == "sqlite"
    billing = worker("billing", queues="billing", env=env)
    fleet = [billing]
    if not sqlite:
        fleet.append(worker("reports", queues="reports", env=env))
    billing.wait_for_log("queues=billing")

    def each_ran_twice() -> bool:
        runs = _runs_by_worker(recorded, fleet)
        served = [n for n, q in QUEUES.items() if q == "billing" or not sqlite]
        every = sum(runs.values(), Counter())
        return all(every[name] >= 2 for name in served)

    wait_until(each_ran_twice, timeout=60, message="every served schedule ran twice")
    assert Worker.objects.get(worker_id="billing").queues == "billing"
    assert set(stop_all(fleet).values()) == {0}
    runs = _runs_by_worker(recorded, fleet)
    assert set(runs["billing"]) == {"invoices", "dunning"}
    if sqlite:
        # Nobody served reports: its attempts wait, none ran.
        waiting = Attempt.objects.filter(schedule__queue="reports")
        assert waiting.exists()
        assert not waiting.exclude(status=Status.PENDING).exists()
    else:
        assert set(runs["reports"]) == {"totals", "exports"}
        assert Worker.objects.get(worker_id="reports").queues == "reports"


def _running_at(found, schedules, instant: float) -> int:
    """How many executions of ``schedules`` were running at ``instant``."""
    return sum(1 for e in found if e.schedule in schedules and e.start <= instant < e.end)


def test_a_queues_share_leaves_threads_for_the_other_queue(worker, tmp_path):
    """Long reports tries, due every second, hold at most their share (2 of 3 threads): the
    default queue's 1 s schedule keeps running beside them."""
    reports = ("report-a", "report-b")
    for name in reports:
        Schedule.objects.create(
            name=name,
            interval=timedelta(seconds=1),
            overlap="allow",
            executor="tests.jobs.sleep_for",
            payload={"seconds": 3},
            queue="reports",
        )
    Schedule.objects.create(name="tick", interval=timedelta(seconds=1), executor="tests.jobs.noop")
    recorded = tmp_path / "executions"
    recorded.mkdir()
    child = worker("shared", queues="reports:2,default:1", env={EXECUTIONS_ENV: str(recorded)})
    child.wait_for_log("concurrency=3")

    def ticks_beside_full_reports() -> list:
        found = executions(read_execution_lines(recorded), {})
        return [
            e for e in found if e.schedule == "tick" and _running_at(found, reports, e.start) == 2
        ]

    beside = wait_until(
        lambda: len(ticks_beside_full_reports()) >= 3 and ticks_beside_full_reports(),
        timeout=60,
        message="the 1 s schedule ran three times while reports held its whole share",
    )
    assert len(beside) >= 3
    assert set(stop_all([child]).values()) == {0}
    found = executions(read_execution_lines(recorded), {})
    # Never more reports tries at once than its share, at any start.
    assert max(_running_at(found, reports, e.start) for e in found) <= 2
    assert Worker.objects.get(worker_id="shared").queues == "reports:2,default:1"
