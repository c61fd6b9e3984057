"""A worker cut off from its database by a network that goes silent (docs/design.md, "A
worker cut off from its database"; docs/guarantees.md).

Worker A reaches the server through a fault proxy (``benchmarks.fault_proxy``) that, at one
moment, stops forwarding both ways and keeps both sockets open: the server still sees A's
session and its session lock, so only A's lease can free its try. Worker B reaches the
server directly. Every execution is counted from what the job itself records
(``tests.jobs.record_span``): its start, its end, and whether it saw its cancel event.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.db import connection

from benchmarks.fault_proxy import FaultProxy
from benchmarks.fleet import no_duplicate_occurrences, stop_all, wait_until
from django_cadence.models import Attempt, Status, Worker
from django_cadence.store import bounds
from tests.support.attempts import attempt_of, wait_for_status
from tests.support.records import overlapping_spans, spans

pytestmark = [
    pytest.mark.process,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor == "sqlite", reason="a server across a network"),
]

LEASE, GRACE = 6, 1
SETTINGS = {"CADENCE_LEASE": LEASE, "CADENCE_RECOVERY_GRACE": GRACE}
JOB = 8.0  # seconds: long enough to span a short cut, short enough to re-run quickly


@pytest.fixture
def fault_proxy():
    """A proxy to this test's database server; ``env`` points a worker through it."""
    settings = connection.settings_dict
    port = int(settings["PORT"] or (5432 if connection.vendor == "postgresql" else 3306))
    proxy = FaultProxy((settings["HOST"] or "127.0.0.1", port)).start()
    variable = "CADENCE_PG_PORT" if connection.vendor == "postgresql" else "CADENCE_MYSQL_PORT"
    proxy.env = {variable: str(proxy.port)}
    yield proxy
    proxy.stop()


def holder_and_survivor(
    worker, due_schedule, tmp_path, proxy, executor="tests.jobs.record_span", seconds=JOB, **payload
):
    """A, behind the proxy, runs a long job; B, direct, runs beside it with nothing to do."""
    holder = worker("A", concurrency=1, settings=SETTINGS, env=proxy.env).wait_started()
    payload.update(seconds=seconds, directory=str(tmp_path))
    schedule = due_schedule(executor=executor, payload=payload, overlap="queue")
    wait_for_status(schedule, Status.RUNNING, worker="A", timeout=20)
    survivor = worker("B", settings=SETTINGS).wait_started()
    wait_until(lambda: spans(tmp_path), timeout=10, message="A's job to start")
    return holder, survivor, schedule


def registered(name: str):
    return lambda: Worker.objects.filter(worker_id=name, session_lock=True).exists()


def ended(run: dict) -> dict | None:
    return run if "end" in run else None


@pytest.mark.parametrize("cut", [10.0, 60.0])
def test_a_cut_longer_than_the_lease_stops_the_try_before_the_survivor_runs_it(
    worker, due_schedule, tmp_path, fault_proxy, cut
):
    # A's try runs until it is told to stop, however long starting B took; B's re-run is short.
    holder, survivor, schedule = holder_and_survivor(
        worker, due_schedule, tmp_path, fault_proxy, seconds=10 * JOB, rerun_seconds=JOB
    )
    cut_at = time.time()
    fault_proxy.hold()

    # B re-runs the attempt once A's lease has expired and the grace passed, by its clock.
    wait_until(lambda: len(spans(tmp_path)) == 2, timeout=LEASE + GRACE + 4, message="B's run")
    first, rerun = spans(tmp_path)
    assert (first["pid"], rerun["pid"]) == (holder.pid, survivor.pid)
    first = wait_until(lambda: ended(spans(tmp_path)[0]), timeout=5, message="A's run to end")
    assert first["cancelled"] is True
    # A stopped its try before B started it again: no two executions at once.
    assert first["end"] < rerun["start"], (first, rerun)
    assert rerun["start"] - cut_at <= LEASE + GRACE + 2
    holder.wait_for_log("attempt lost", timeout=1)
    assert "database has not confirmed it since" in holder.output()
    assert holder.alive  # the job heeded its cancel event: nothing forced the worker out

    done = wait_for_status(schedule, Status.SUCCEEDED, timeout=JOB + 10)
    assert [(e["worker"], e["result"]) for e in done.history] == [("A", "lost"), ("B", "succeeded")]
    assert done.recoveries == 1

    remaining = cut - (time.time() - cut_at)
    if remaining > 0:
        time.sleep(remaining)
    fault_proxy.heal()

    # The engine's own statement waited on the silent network: cut, and it reconnected.
    holder.wait_for_log("database silent", timeout=1)
    holder.wait_for_log("database back", timeout=15)
    assert stop_all([holder, survivor]) == {"A": 0, "B": 0}
    recorded = spans(tmp_path)
    assert len(recorded) == 2
    assert all("end" in run for run in recorded)
    assert overlapping_spans(recorded) == []
    assert attempt_of(schedule).status == Status.SUCCEEDED
    distinct, total = no_duplicate_occurrences()
    assert distinct == total
    assert not Attempt.objects.running().exists()
    print(
        f"\n{connection.vendor}: cut {cut:g} s; A stopped {first['end'] - cut_at:.2f} s into "
        f"it; B re-ran {rerun['start'] - cut_at:.2f} s into it; gap between them "
        f"{rerun['start'] - first['end']:.2f} s"
    )


def test_a_cut_worker_whose_job_ignores_its_cancel_exits_before_the_rerun(
    worker, due_schedule, tmp_path, fault_proxy
):
    """The job cannot be stopped from outside: the worker exits (status 4) half the gap
    before the earliest recovery, and its job with it; B re-runs it after."""
    holder, _, _ = holder_and_survivor(
        worker, due_schedule, tmp_path, fault_proxy, "tests.jobs.record_span_deaf", 30
    )
    fault_proxy.hold()
    assert holder.wait(LEASE + 5) == 4
    gone_at = time.time()
    assert "worker exiting worker=A status=4" in holder.output()
    assert "record_span_deaf" in holder.output()  # where its thread was
    wait_until(lambda: len(spans(tmp_path)) == 2, timeout=LEASE + GRACE + 4, message="B's run")
    first, rerun = spans(tmp_path)
    assert "end" not in first  # it died with its worker
    assert gone_at < rerun["start"]
    print(f"\n{connection.vendor}: A gone {rerun['start'] - gone_at:.2f} s before B's re-run")


def test_a_reset_of_every_connection_costs_the_try_nothing(
    worker, due_schedule, tmp_path, fault_proxy
):
    """Every connection of A ends with a TCP reset and the network is back at once: A sees
    the errors, reconnects, takes its lock again and re-asserts its try within a probe, well
    before B would take it for dead."""
    holder, survivor, schedule = holder_and_survivor(worker, due_schedule, tmp_path, fault_proxy)
    fault_proxy.reset()
    holder.wait_for_log("session lock taken again worker=A", timeout=10)
    done = wait_for_status(schedule, Status.SUCCEEDED, timeout=JOB + 10)
    assert [(e["worker"], e["result"]) for e in done.history] == [("A", "succeeded")]
    (run,) = spans(tmp_path)
    assert run["cancelled"] is False
    assert "attempt recovered" not in survivor.output()
    assert stop_all([holder, survivor]) == {"A": 0, "B": 0}


def test_a_slow_network_stops_nothing(worker, due_schedule, tmp_path, fault_proxy):
    """A quarter of a second each way on every packet of A, at the default lease: a tick
    takes seconds of round trips, but every renewal is answered well within the lease, so
    the watchdog never acts. (With the 6 s lease of the other tests, it would: A's lease
    really ran out on the server, and B took the try over.)"""
    fault_proxy.delay(0.25)
    holder = worker("A", concurrency=1, env=fault_proxy.env).wait_started(timeout=60)
    schedule = due_schedule(
        executor="tests.jobs.record_span", payload={"seconds": 12, "directory": str(tmp_path)}
    )
    wait_for_status(schedule, Status.RUNNING, worker="A", timeout=30)
    survivor = worker("B").wait_started()
    done = wait_for_status(schedule, Status.SUCCEEDED, timeout=60)
    assert [(e["worker"], e["result"]) for e in done.history] == [("A", "succeeded")]
    assert "attempt lost" not in holder.output()
    assert "attempt recovered" not in survivor.output()
    assert stop_all([holder, survivor]) == {"A": 0, "B": 0}


def test_a_cut_shorter_than_the_lease_costs_the_try_nothing(
    worker, due_schedule, tmp_path, fault_proxy
):
    holder, survivor, schedule = holder_and_survivor(worker, due_schedule, tmp_path, fault_proxy)
    fault_proxy.hold()
    time.sleep(3.0)
    fault_proxy.heal()

    done = wait_for_status(schedule, Status.SUCCEEDED, timeout=JOB + 10)
    assert [(e["worker"], e["result"]) for e in done.history] == [("A", "succeeded")]
    (run,) = spans(tmp_path)
    assert run["cancelled"] is False
    assert "attempt lost" not in holder.output()
    assert "attempt recovered" not in survivor.output()
    assert stop_all([holder, survivor]) == {"A": 0, "B": 0}


def test_a_cut_inside_a_transaction_does_not_hold_the_rerun_back(
    worker, due_schedule, tmp_path, fault_proxy
):
    """A's try is inside its transaction, holding the row its re-run must insert, when the
    cut comes: the server ends that transaction once it has been idle for the lease plus the
    grace (``store/bounds``), so B's re-run is not held back by it; A's job stopped before."""
    holder, survivor, schedule = holder_and_survivor(
        worker, due_schedule, tmp_path, fault_proxy, "tests.jobs.record_span_in_transaction", 5
    )
    cut_at = time.time()
    fault_proxy.hold()
    wait_until(lambda: len(spans(tmp_path)) == 2, timeout=LEASE + GRACE + 4, message="B's run")
    first, rerun = spans(tmp_path)
    # A's job ended (its five seconds were up, or it was told to stop) before B's began.
    assert "end" in first
    assert first["end"] < rerun["start"], (first, rerun)
    done = wait_for_status(schedule, Status.SUCCEEDED, timeout=JOB + 10)
    assert [e["worker"] for e in done.history] == ["A", "B"]
    fault_proxy.heal()
    assert stop_all([holder, survivor]) == {"A": 0, "B": 0}
    print(f"\n{connection.vendor}: B re-ran {rerun['start'] - cut_at:.2f} s into the cut")


def test_a_cut_survivor_takes_nothing_from_the_worker_it_cannot_see(
    worker, due_schedule, tmp_path, fault_proxy
):
    """The cut is between B and the server: A's try runs to its end, untouched; B comes back
    after the heal and works again."""
    holder = worker("A", concurrency=1, settings=SETTINGS).wait_started()
    schedule = due_schedule(
        executor="tests.jobs.record_span", payload={"seconds": JOB, "directory": str(tmp_path)}
    )
    wait_for_status(schedule, Status.RUNNING, worker="A", timeout=20)
    survivor = worker("B", settings=SETTINGS, env=fault_proxy.env).wait_started()
    wait_until(registered("B"), timeout=10, message="B registered, its lock taken")
    wait_until(lambda: spans(tmp_path), timeout=10, message="A's job to start")
    fault_proxy.hold()
    time.sleep(LEASE + GRACE + 1)
    fault_proxy.heal()

    done = wait_for_status(schedule, Status.SUCCEEDED, timeout=JOB + 10)
    assert [(e["worker"], e["result"]) for e in done.history] == [("A", "succeeded")]
    (run,) = spans(tmp_path)
    assert run["cancelled"] is False
    later = due_schedule(executor="tests.jobs.noop", name="after the heal")
    wait_for_status(later, Status.SUCCEEDED, timeout=20)
    assert "attempt recovered" not in survivor.output()
    assert stop_all([holder, survivor]) == {"A": 0, "B": 0}


def test_a_workers_sessions_and_sockets_are_bounded(worker, due_schedule, tmp_path):
    """Through the door a user opens: ``run_cadence``, whose try reports its own session."""
    report = tmp_path / "session.json"
    schedule = due_schedule(executor="tests.jobs.report_session", payload={"path": str(report)})
    settings = {"CADENCE_LEASE": 30, "CADENCE_RECOVERY_GRACE": 5}
    worker("A", once=True, settings=settings).wait(60)
    wait_for_status(schedule, "succeeded", timeout=5)
    seen = json.loads(report.read_text())
    idle, statement = (
        ("idle_in_transaction_session_timeout", "statement_timeout")
        if connection.vendor == "postgresql"
        else ("idle_transaction_timeout", "max_statement_time")
    )
    limit = float(seen[idle]) / (1000 if connection.vendor == "postgresql" else 1)
    assert limit == (timedelta(seconds=30) + timedelta(seconds=5)).total_seconds()
    assert float(seen[statement]) == 0  # a job's statements are its own business
    assert seen["keepalive"] == 1
    assert seen["keepidle"] == bounds.KEEPALIVE_IDLE
    assert seen["user_timeout"] == bounds.TCP_USER_TIMEOUT * 1000
