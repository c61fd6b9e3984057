"""Workers behind PgBouncer and Django's connection pool: a ``kill -9`` is recovered and
the job runs once, counted from what the job recorded itself (docs/design.md, "Lost
workers" and "Databases"; docs/howto/deploy.md, "Behind PgBouncer or a connection pool").

- PgBouncer in ``session`` mode is a direct connection to the engine: on a client's end it
  resets the server session (``DISCARD ALL``), which frees the worker's session lock, so a
  survivor recovers the try within the liveness window, long before the 30 s lease.
- In ``transaction`` mode, with ``CADENCE_SESSION_LIVENESS = False`` (else refused at
  start: tests/commands/test_run_cadence_pooling.py), leases alone: recovered once the
  lease has ended, plus the grace.
- Django's pool lends connections to the threads that run tries; the engine's own sessions
  are its own, so the session lock dies with the worker, and a pool of exactly the try
  threads' number runs them all at once.
"""

from __future__ import annotations

import json
import time

import pytest
from django.db import connection

from benchmarks.fleet import wait_until
from django_cadence.engine.recovery import LEASE_EXPIRED, SESSION_ENDED
from django_cadence.models import Attempt, Status, Worker
from tests.models import Effect
from tests.support.attempts import wait_for_status
from tests.support.records import log_problems, spans

pytestmark = [
    pytest.mark.process,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="PgBouncer and Django's pool: PostgreSQL"
    ),
]

# Leases alone: short, renewed every second.
LEASES_ONLY = {"CADENCE_SESSION_LIVENESS": False, "CADENCE_LEASE": 3, "CADENCE_RECOVERY_GRACE": 0.5}


def kill_mid_try(worker, due_schedule, tmp_path, *, settings=None, env=None):
    """Two workers up, a 4 s job's try on one of them, that one killed while it runs;
    returns the attempt once it succeeded, the survivor, and the seconds from the kill to
    the survivor's re-run. (Both start first: a worker may take seconds to start on a busy
    host, longer than a try that began before it.)"""
    fleet = {name: worker(name, settings=settings, env=env) for name in ("A", "B")}
    for child in fleet.values():
        child.wait_started()
    schedule = due_schedule(
        executor="tests.jobs.record_span", payload={"seconds": 4, "directory": str(tmp_path)}
    )
    held = wait_for_status(schedule, Status.RUNNING, timeout=20).worker
    (other,) = set(fleet) - {held}
    wait_until(lambda: spans(tmp_path), timeout=10, message="the job to start")

    killed = time.time()
    fleet[held].kill()

    attempt = wait_for_status(schedule, Status.SUCCEEDED, timeout=20)
    assert [(entry["worker"], entry["result"]) for entry in attempt.history] == [
        (held, "lost"),
        (other, "succeeded"),
    ]
    assert (attempt.worker, attempt.recoveries) == (other, 1)
    # What the job recorded: the first execution died with its worker, the re-run ran once,
    # to its end.
    first_run, re_run = spans(tmp_path)
    assert "end" not in first_run
    assert (re_run["end"] > re_run["start"], re_run["cancelled"]) == (True, False)
    survivor = fleet[other]
    assert "attempt recovered" in survivor.output()
    return attempt, survivor, re_run["start"] - killed


def test_pgbouncer_session_mode_recovers_a_killed_worker_by_its_session_lock(
    worker, due_schedule, tmp_path, pgbouncer
):
    bouncer = pgbouncer("session")

    attempt, survivor, after = kill_mid_try(worker, due_schedule, tmp_path, env=bouncer.env())

    assert SESSION_ENDED in attempt.history[0]["error"]  # not its lease: that is 30 s
    assert Worker.objects.get(worker_id=survivor.name).session_lock is True
    assert log_problems(survivor.output(), allowed=("attempt recovered",)) == []
    print(f"\nPgBouncer session mode: re-run started {after:.2f} s after kill -9")


def test_pgbouncer_transaction_mode_recovers_a_killed_worker_when_its_lease_ends(
    worker, due_schedule, tmp_path, pgbouncer
):
    bouncer = pgbouncer("transaction")

    attempt, survivor, after = kill_mid_try(
        worker, due_schedule, tmp_path, settings=LEASES_ONLY, env=bouncer.env()
    )

    assert LEASE_EXPIRED in attempt.history[0]["error"]
    assert Worker.objects.get(worker_id=survivor.name).session_lock is False
    # No LISTEN on a shared session: said once, at start; nothing else is amiss.
    output = survivor.output()
    assert output.count("no LISTEN through a transaction-pooling proxy") == 1
    assert log_problems(output, allowed=("attempt recovered",)) == []
    print(f"\nPgBouncer transaction mode: re-run started {after:.2f} s after kill -9")


def test_django_pool_recovers_a_killed_worker_by_its_session_lock(worker, due_schedule, tmp_path):
    pool = {"CADENCE_PG_OPTIONS": json.dumps({"pool": {"max_size": 12}})}  # 8 + 4 stuck

    attempt, survivor, after = kill_mid_try(worker, due_schedule, tmp_path, env=pool)

    assert SESSION_ENDED in attempt.history[0]["error"]
    assert log_problems(survivor.output(), allowed=("attempt recovered",)) == []
    print(f"\nDjango's pool: re-run started {after:.2f} s after kill -9")


def test_django_pool_of_the_try_threads_size_runs_them_all_at_once(worker, due_schedule):
    """The engine's thread, its session lock, its listener and its overdue probe take
    nothing from the pool: three tries that each hold a connection for a second run at
    once on a pool of three, none waiting out the pool's timeout."""
    pool = {"pool": {"min_size": 1, "max_size": 3, "timeout": 3}}
    settings = {"CADENCE_STUCK_THREADS_LIMIT": 0}  # no room kept for stuck threads
    first = worker(
        "A",
        concurrency=3,
        settings=settings,
        env={"CADENCE_PG_OPTIONS": json.dumps(pool)},
    ).wait_started()
    schedules = [
        due_schedule(executor="tests.jobs.count_run", payload={"seconds": 1.5}) for _ in range(3)
    ]

    for schedule in schedules:
        wait_for_status(schedule, Status.SUCCEEDED, timeout=20)
    assert Attempt.objects.filter(status=Status.SUCCEEDED).count() == 3
    assert Effect.objects.count() == 3
    tries = [entry for a in Attempt.objects.all() for entry in a.history]
    assert len(tries) == 3  # one try each: none failed for want of a connection
    assert log_problems(first.output()) == []
