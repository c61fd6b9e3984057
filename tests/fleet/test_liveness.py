"""A worker's liveness from its database session, with default settings.

The contract: docs/design.md, "Lost workers". With the default 30 s lease, every wait below
is shorter than the lease: only the session lock (PostgreSQL, MariaDB) or the single-engine
lock (SQLite) can have recovered the attempt.
"""

from __future__ import annotations

import re
import signal
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from benchmarks.fleet import wait_until
from django_cadence.engine.tuning import START_LATE
from django_cadence.models import Attempt, Status
from django_cadence.store import mysql as mysql_store
from django_cadence.store import postgresql as pg_store
from tests.support.attempts import make_due, wait_for_status
from tests.support.records import spans

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

LEASE_DEFAULT = 30.0
# A lease short enough for a freeze to outlast it, renewed every 1 s.
SHRUNK = {"CADENCE_LEASE": 3, "CADENCE_RECOVERY_GRACE": 0.5}
# Claimed 3 s before its instant, so that a test sees the claim and freezes the worker before
# the instant even on a loaded machine; the lease is long enough that a recovery by lease,
# of a worker frozen from its claim, comes more than START_LATE after the instant.
CLAIMED_AHEAD = {"CADENCE_LEASE": 6, "CADENCE_RECOVERY_GRACE": 0.5, "CADENCE_CLAIM_AHEAD": 3}

servers_only = pytest.mark.servers("session locks")
sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="single-engine lock")


def cut_lock_session(worker_id: str) -> None:
    """End, on the server, the session that holds the worker's lock (the worker lives on)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                "AND classid = %s::bigint::oid AND objid = %s::bigint::oid AND objsubid = 2 "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                [pg_store.LOCK_CLASS, pg_store.lock_key(worker_id)],
            )
            assert [row[0] for row in cursor.fetchall()] == [True]
        else:
            database = connection.settings_dict["NAME"]
            cursor.execute("SELECT IS_USED_LOCK(%s)", [mysql_store.lock_name(worker_id, database)])
            (owner,) = cursor.fetchone()
            assert owner is not None
            cursor.execute(f"KILL CONNECTION {int(owner)}")


@servers_only
def test_kill_9_is_recovered_by_a_running_worker_before_the_lease_ends(
    worker, due_schedule, tmp_path
):
    """Dead, not merely disconnected, with default settings: a killed worker's try starts
    again on a survivor once its lock has stayed gone for the liveness window (design.md:
    within 2 s; benchmarks/recovery.py measures it), long before its 30 s lease ends."""
    first = worker("A")
    schedule = due_schedule(
        executor="tests.jobs.record_span", payload={"seconds": 3, "directory": str(tmp_path)}
    )
    wait_for_status(schedule, Status.RUNNING, worker="A", timeout=20)
    survivor = worker("B").wait_started()
    wait_until(lambda: spans(tmp_path), timeout=10, message="A's job to start")

    killed = time.time()
    first.kill()

    attempt = wait_for_status(schedule, Status.SUCCEEDED, timeout=15)
    assert attempt.worker == "B"
    assert attempt.recoveries == 1
    assert [(entry["worker"], entry["result"]) for entry in attempt.history] == [
        ("A", "lost"),
        ("B", "succeeded"),
    ]
    assert "its database session ended" in attempt.history[0]["error"]
    assert "attempt recovered" in survivor.output()
    a_run, b_run = spans(tmp_path)
    assert ("end" not in a_run, b_run["end"] > b_run["start"]) == (True, True)
    restarted_after = b_run["start"] - killed
    assert restarted_after < LEASE_DEFAULT / 6, restarted_after  # by its session, not lease
    print(f"\n{connection.vendor}: re-run started {restarted_after:.2f} s after kill -9")


@sqlite_only
def test_sqlite_engine_recovers_every_running_attempt_when_it_starts(worker, due_schedule):
    schedule = due_schedule(executor="tests.jobs.sleep_for", payload={"seconds": 1.5})
    first = worker("A")
    wait_for_status(schedule, Status.RUNNING, worker="A", timeout=20)

    first.kill()

    second = worker("B")
    attempt = wait_for_status(schedule, Status.SUCCEEDED, timeout=15)
    assert attempt.worker == "B"
    assert attempt.recoveries == 1
    assert "its engine stopped without handing it back" in attempt.history[0]["error"]
    assert "attempt recovered" in second.output()


@servers_only
def test_worker_whose_lock_session_is_cut_takes_it_again_and_keeps_its_try(
    worker, due_schedule, tmp_path
):
    """design.md, "Lost workers": a cut session is not death. The worker takes its lock
    again and re-asserts its try within the liveness window; nobody recovers it, and the job
    runs once, to its end."""
    first = worker("A", concurrency=1).wait_started()
    schedule = due_schedule(
        executor="tests.jobs.record_span", payload={"seconds": 4, "directory": str(tmp_path)}
    )
    wait_for_status(schedule, Status.RUNNING, worker="A", timeout=20)
    survivor = worker("B").wait_started()
    wait_until(lambda: spans(tmp_path), timeout=10, message="A's job to start")

    cut_lock_session("A")

    first.wait_for_log("session lock lost worker=A")
    first.wait_for_log("session lock taken again worker=A")
    attempt = wait_for_status(schedule, Status.SUCCEEDED, timeout=20)
    assert (attempt.worker, attempt.recoveries, len(attempt.history)) == ("A", 0, 1)
    (run,) = spans(tmp_path)
    assert run["cancelled"] is False
    assert "attempt recovered" not in survivor.output()
    assert "attempt lost" not in first.output()

    # A goes on: its next try is its own, not taken for a dead worker's.
    later = due_schedule(executor="tests.jobs.sleep_for", payload={"seconds": 1.5})
    done = wait_for_status(later, Status.SUCCEEDED, timeout=20)
    assert done.recoveries == 0


@servers_only
def test_a_paused_worker_whose_session_was_cut_stops_its_try_when_it_runs_again(
    worker, due_schedule, tmp_path
):
    """design.md, "Lost workers": a worker paused (SIGSTOP) while its session is cut cannot
    take its lock again in time: its try is recovered and run again. When it runs again, its
    first probe finds its lock gone, takes it again, and its re-assertion matches no row: it
    stops the try (the job sees ``context.cancelled``), logs it, and records nothing."""
    first = worker("A", concurrency=1).wait_started()
    schedule = due_schedule(
        executor="tests.jobs.record_span", payload={"seconds": 8, "directory": str(tmp_path)}
    )
    wait_for_status(schedule, Status.RUNNING, worker="A", timeout=20)
    survivor = worker("B").wait_started()
    wait_until(lambda: spans(tmp_path), timeout=10, message="A's job to start")

    first.send(signal.SIGSTOP)
    cut_lock_session("A")
    wait_until(lambda: len(spans(tmp_path)) == 2, timeout=15, message="the re-run on B")
    thawed = time.time()
    first.send(signal.SIGCONT)

    first.wait_for_log("attempt lost")
    a_run = wait_until(lambda: _ended(spans(tmp_path)[0]), timeout=15, message="A's job to stop")
    assert a_run["cancelled"] is True
    stopped_after = a_run["end"] - thawed
    assert stopped_after < LEASE_DEFAULT / 3, stopped_after  # within one heartbeat
    attempt = wait_for_status(schedule, Status.SUCCEEDED, timeout=20)
    assert [(e["worker"], e["result"]) for e in attempt.history] == [
        ("A", "lost"),
        ("B", "succeeded"),
    ]
    assert "attempt recovered" in survivor.output()
    assert first.output().count("attempt lost") == 1
    print(f"\n{connection.vendor}: A's try stopped {stopped_after:.2f} s after SIGCONT")


@servers_only
def test_a_worker_frozen_past_its_lease_stops_its_try_within_a_heartbeat_of_thawing(
    worker, due_schedule, tmp_path
):
    """design.md, "Lost workers": frozen (SIGSTOP) past its lease, a worker keeps its session
    lock, so its try is recovered by its lease and run again. Thawed, it sees the pause (a
    gap in its monotonic clock), renews at once, finds the try lost and stops it: the job
    sees ``context.cancelled`` within one heartbeat, and its result is never recorded."""
    first = worker("A", concurrency=1, settings=SHRUNK).wait_started()
    schedule = due_schedule(
        executor="tests.jobs.record_span", payload={"seconds": 10, "directory": str(tmp_path)}
    )
    wait_for_status(schedule, Status.RUNNING, worker="A", timeout=20)
    survivor = worker("B", settings=SHRUNK).wait_started()
    wait_until(lambda: spans(tmp_path), timeout=10, message="A's job to start")

    first.send(signal.SIGSTOP)
    wait_until(lambda: len(spans(tmp_path)) == 2, timeout=20, message="the re-run on B")
    thawed = time.time()
    first.send(signal.SIGCONT)

    a_run = wait_until(lambda: _ended(spans(tmp_path)[0]), timeout=15, message="A's job to stop")
    assert a_run["cancelled"] is True
    stopped_after = a_run["end"] - thawed
    heartbeat = SHRUNK["CADENCE_LEASE"] / 3
    assert stopped_after < 2 * heartbeat, stopped_after
    first.wait_for_log("attempt lost")
    attempt = wait_for_status(schedule, Status.SUCCEEDED, timeout=30)
    assert [(e["worker"], e["result"]) for e in attempt.history] == [
        ("A", "lost"),
        ("B", "succeeded"),
    ]
    assert "its lease expired" in attempt.history[0]["error"]
    assert "attempt recovered" in survivor.output()
    assert first.output().count("attempt lost") == 1
    print(f"\n{connection.vendor}: A's try stopped {stopped_after:.2f} s after SIGCONT")


@servers_only
def test_a_worker_frozen_between_its_claim_ahead_and_the_instant_never_starts_the_try(
    worker, due_schedule, tmp_path
):
    """design.md, "Lost workers": a try claimed ahead of its instant by a worker that is then
    frozen past its lease is recovered and run elsewhere. Thawed, the frozen worker finds the
    try's start too late (``START_LATE``) and hands it back unrun rather than start it beside
    the re-run: the job, which records each execution itself, ran once, on the other worker."""
    settings = CLAIMED_AHEAD
    recovered_after = settings["CADENCE_LEASE"] + settings["CADENCE_RECOVERY_GRACE"]
    assert recovered_after - settings["CADENCE_CLAIM_AHEAD"] > START_LATE + 1
    first = worker("A", settings=settings).wait_started()
    schedule = due_schedule(
        executor="tests.jobs.record_span",
        payload={"seconds": 0.2, "directory": str(tmp_path)},
        due=False,
    )
    make_due(schedule, ago=-timedelta(seconds=5))  # due in 5 s: claimed 3 s before
    attempt = wait_for_status(schedule, Status.RUNNING, worker="A", timeout=10)
    first.send(signal.SIGSTOP)
    assert attempt.started_at > timezone.now(), "claimed on its instant, not ahead of it"
    assert spans(tmp_path) == []

    survivor = worker("B", settings=settings).wait_started()
    (b_run,) = wait_until(lambda: spans(tmp_path), timeout=20, message="the re-run on B")
    first.send(signal.SIGCONT)

    # Its thread hands the late try back, or its renewal finds the claim lost first: either
    # way the try never starts.
    wait_until(
        lambda: re.search("attempt (handed back|lost)", first.output()),
        timeout=10,
        message="A to let the try go",
    )
    done = wait_for_status(schedule, Status.SUCCEEDED, timeout=20)
    assert b_run["pid"] == survivor.pid
    assert [(e["worker"], e["result"]) for e in done.history] == [
        ("A", "lost"),
        ("B", "succeeded"),
    ]
    time.sleep(1)  # A's timer and threads have run since the thaw
    assert len(spans(tmp_path)) == 1


@servers_only
def test_a_worker_frozen_and_cut_off_before_the_instant_never_starts_the_recovered_try(
    worker, due_schedule, tmp_path
):
    """design.md, "Lost workers": a worker frozen holding a try claimed ahead, while its
    session is cut, loses the try to a recovery within the liveness window, and thaws before
    ``START_LATE`` has passed. Its timer finds the instant come, but a try starts only while
    the worker has seen its own lock held within ``START_CONFIRMED``: the thread asks the
    server, finds the lock gone, and hands the try back unrun. The job, which records each
    execution itself, ran once, on the other worker."""
    running, ahead = tmp_path / "running", tmp_path / "ahead"
    running.mkdir()
    ahead.mkdir()
    # Claimed 4 s ahead, so that the recovery (a liveness window after the cut, 1 to 1.5 s)
    # comes well before the instant, and the thaw after it, even on a loaded machine.
    first = worker("A", concurrency=2, settings={"CADENCE_CLAIM_AHEAD": 4}).wait_started()
    long_job = due_schedule(
        executor="tests.jobs.record_span", payload={"seconds": 30, "directory": str(running)}
    )
    wait_for_status(long_job, Status.RUNNING, worker="A", timeout=20)
    survivor = worker("B").wait_started()  # probes A's lock every half second: A runs a try
    schedule = due_schedule(
        executor="tests.jobs.record_span",
        payload={"seconds": 0.2, "directory": str(ahead)},
        due=False,
    )
    make_due(schedule, ago=-timedelta(seconds=6))  # due in 6 s: claimed 4 s before
    claimed = wait_for_status(schedule, Status.RUNNING, worker="A", timeout=10)
    first.send(signal.SIGSTOP)
    cut_lock_session("A")
    instant = claimed.started_at
    assert instant > timezone.now(), "claimed on its instant, not ahead of it"

    wait_until(
        lambda: Attempt.objects.filter(pk=claimed.pk, recoveries=1).exists(),
        timeout=10,
        message="B to recover A's tries",
    )
    wait_until(lambda: timezone.now() > instant + timedelta(seconds=0.3), timeout=5)
    first.send(signal.SIGCONT)
    thawed_late_by = (timezone.now() - instant).total_seconds()
    assert thawed_late_by < START_LATE - 0.5, "thawed too late to need its lock seen held"

    wait_until(
        lambda: re.search("attempt (handed back|lost)", first.output()),
        timeout=10,
        message="A to let the try go",
    )
    done = wait_for_status(schedule, Status.SUCCEEDED, timeout=20)
    assert [(e["worker"], e["result"]) for e in done.history] == [
        ("A", "lost"),
        ("B", "succeeded"),
    ]
    time.sleep(1)  # A's timer and threads have run since the thaw
    assert [run["pid"] for run in spans(ahead)] == [survivor.pid]
    print(f"\n{connection.vendor}: A thawed {thawed_late_by:.2f} s after the instant")


def _ended(span):
    return span if "end" in span else None
