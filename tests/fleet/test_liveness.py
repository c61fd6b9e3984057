"""A worker's liveness from its database session, with default settings.

The contract: docs/design.md, "Lost workers". With the default 30 s lease, every wait below
is shorter than the lease: only the session lock (PostgreSQL, MariaDB) or the single-engine
lock (SQLite) can have recovered the attempt.
"""

from __future__ import annotations

import signal

import pytest
from django.db import connection

from django_cadence.models import Status
from django_cadence.store import mysql as mysql_store
from django_cadence.store import postgresql as pg_store
from tests.fleet.conftest import wait_for_status

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

servers_only = pytest.mark.skipif(
    connection.vendor == "sqlite", reason="session locks: PostgreSQL and MariaDB"
)
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
def test_kill_9_is_recovered_by_a_running_worker_before_the_lease_ends(worker, due_schedule):
    first = worker("A")
    schedule = due_schedule(executor="tests.jobs.sleep_for", payload={"seconds": 3})
    wait_for_status(schedule, Status.RUNNING, worker="A", timeout=20)
    survivor = worker("B").wait_started()

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
def test_worker_whose_lock_session_is_cut_is_fenced_out_and_takes_a_new_lock(worker, due_schedule):
    """Design, invariant 3: the cut worker's late write is refused; it goes on working."""
    first = worker("A", concurrency=1).wait_started()
    schedule = due_schedule(executor="tests.jobs.sleep_for", payload={"seconds": 4})
    wait_for_status(schedule, Status.RUNNING, worker="A", timeout=20)
    survivor = worker("B").wait_started()

    cut_lock_session("A")

    attempt = wait_for_status(schedule, Status.SUCCEEDED, timeout=20)
    assert attempt.worker == "B"
    assert attempt.history[0]["worker"] == "A"
    assert "its database session ended" in attempt.history[0]["error"]
    assert "attempt recovered" in survivor.output()
    first.wait_for_log("session lock lost worker=A")
    first.wait_for_log("session lock taken again worker=A")
    first.wait_for_log("attempt lost")
    assert first.alive

    # A goes on: its next try is its own, not taken for a dead worker's.
    survivor.send(signal.SIGTERM)
    survivor.wait(30)
    later = due_schedule(executor="tests.jobs.sleep_for", payload={"seconds": 1.5})
    done = wait_for_status(later, Status.SUCCEEDED, timeout=20)
    assert done.worker == "A"
    assert done.recoveries == 0
