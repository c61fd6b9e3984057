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
from benchmarks.chaos_checks import read_execution_lines
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
