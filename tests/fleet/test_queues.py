"""Real ``run_cadence`` workers serving chosen queues: each runs only its queues' schedules,
counted from the jobs' own records of their executions.

On SQLite one engine runs at a time: the worker serving ``billing`` runs billing's schedules,
and ``reports``' attempts wait for a worker serving it.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection

from benchmarks.chaos_app.jobs import EXECUTIONS_ENV
from benchmarks.chaos_checks import executions, read_execution_lines
from benchmarks.fleet import stop_all, wait_until
from django_cadence.clock import default_clock
from django_cadence.models import Attempt, Schedule, Status, Worker
from django_cadence.ops import health
from tests.support.attempts import wait_for_status

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


SHORT_LEASE = {"CADENCE_LEASE": 2, "CADENCE_RECOVERY_GRACE": 0.5}


def _spans(directory) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))]


def test_the_only_reports_worker_killed_its_tries_wait_are_named_and_run_once_later(
    worker, due_schedule, tmp_path, settings
):
    """Recovered by a billing worker (recovery is not a run), they wait; the health check names
    reports; a reports worker started later runs each once."""
    settings.CADENCE_LEASE, settings.CADENCE_MAX_TICK = 2, 1  # R1 is lost 6 s after its kill
    spans = tmp_path / "spans"
    spans.mkdir()
    payload = {"directory": str(spans), "seconds": 60, "rerun_seconds": 0.1}
    schedules = [
        due_schedule(executor="tests.jobs.record_span", payload=payload, queue="reports")
        for _ in range(2)
    ]
    first = worker("R1", queues="reports", settings=SHORT_LEASE)
    wait_until(
        lambda: len(_spans(spans)) == 2, timeout=30, message="both reports jobs running on R1"
    )
    first.kill()
    billing = worker("B", queues="billing", settings=SHORT_LEASE)
    wait_until(
        lambda: Attempt.objects.filter(status=Status.PENDING, recoveries=1).count() == 2,
        timeout=30,
        message="both tries recovered",
    )
    reasons = wait_until(
        lambda: [r for r in health.check(default_clock().now()).reasons if r.queues],
        timeout=30,
        message="the health check names the unserved queue",
    )
    assert [(r.check, r.queues) for r in reasons] == [("unserved_queue", ("reports",))]
    assert Attempt.objects.filter(status=Status.PENDING).count() == 2  # B ran none
    if connection.vendor == "sqlite":
        stop_all([billing])  # one engine per database file
    worker("R2", queues="reports", settings=SHORT_LEASE)
    for schedule in schedules:
        wait_for_status(schedule, Status.SUCCEEDED, worker="R2", timeout=30)
    by_schedule = Counter((s["schedule"], s["pid"] == first.pid) for s in _spans(spans))
    for schedule in schedules:
        assert by_schedule[(schedule.name, True)] == 1  # cut off with R1
        assert by_schedule[(schedule.name, False)] == 1  # run once, by R2


def test_a_notice_wakes_a_worker_of_another_queue_which_claims_nothing(worker):
    """On PostgreSQL a run-now wakes every listening worker at once: one serving billing,
    woken by a reports run, leaves it waiting and runs billing's."""
    if connection.vendor != "postgresql":
        pytest.skip("LISTEN/NOTIFY: PostgreSQL")
    from django_cadence import services

    for name, queue in (("totals", "reports"), ("invoices", "billing")):
        Schedule.objects.create(
            name=name, interval=timedelta(hours=1), executor="tests.jobs.noop", queue=queue
        )
    billing = worker("billing", queues="billing", max_tick=60)  # only a notice wakes it sooner
    billing.wait_for_log("engine started")
    wait_until(lambda: Worker.objects.filter(worker_id="billing").exists(), message="registered")
    totals = services.trigger("totals")
    invoices = services.trigger("invoices")
    wait_until(
        lambda: Attempt.objects.get(pk=invoices.pk).status == Status.SUCCEEDED,
        timeout=30,
        message="the billing run, woken by its notice",
    )
    assert Attempt.objects.get(pk=totals.pk).status == Status.PENDING
    assert Attempt.objects.get(pk=totals.pk).worker in (None, "")
