"""``run_cadence`` behind PgBouncer or Django's connection pool, at start: it refuses, in
one line naming the setting to change, what it cannot keep its guarantees on, and runs on
the rest (docs/design.md, "Databases"). Real processes, a real PgBouncer."""

import json
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection

from benchmarks.fleet import child_env, database_env, run_cadence_args, wait_until
from django_cadence.models import Status, Worker
from tests.support.attempts import attempt_of, make_due
from tests.support.pgbouncer import free_port

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="PgBouncer and Django's pool: PostgreSQL"
    ),
    pytest.mark.django_db(transaction=True),  # the child writes through its own connection
]

ROOT = Path(__file__).resolve().parents[2]


def run_once(env=None, overrides=None, concurrency=None):
    return subprocess.run(
        run_cadence_args("tests.settings", "w-pooling", once=True, concurrency=concurrency),
        cwd=ROOT,
        env={**child_env(database_env(), overrides), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def refusal(result) -> str:
    """The one line of a refused start, which registered no worker."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert not Worker.objects.exists()
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("CommandError")]
    return line


def test_run_cadence_refuses_session_liveness_through_transaction_pooling(pgbouncer):
    line = refusal(run_once(pgbouncer("transaction").env()))

    assert "through a transaction-pooling proxy" in line
    assert "Set CADENCE_SESSION_LIVENESS = False" in line
    assert "point run_cadence at a proxy in pool_mode = session, or straight at the server" in line


def test_run_cadence_runs_on_leases_through_transaction_pooling_without_listen(
    pgbouncer, make_schedule
):
    schedule = make_schedule(interval=timedelta(hours=1), executor="tests.jobs.noop")
    make_due(schedule)

    result = run_once(pgbouncer("transaction").env(), overrides={"CADENCE_SESSION_LIVENESS": False})

    assert result.returncode == 0, result.stderr
    assert attempt_of(schedule).status == Status.SUCCEEDED
    assert Worker.objects.get().session_lock is False


def test_run_cadence_refuses_statement_pooling(pgbouncer):
    line = refusal(
        run_once(pgbouncer("statement").env(), overrides={"CADENCE_SESSION_LIVENESS": False})
    )

    assert "cannot run through a statement-pooling proxy" in line
    assert "pool_mode = session (or transaction, with CADENCE_SESSION_LIVENESS = False)" in line


def test_run_cadence_refuses_a_django_pool_too_small_for_its_threads():
    options = {"CADENCE_PG_OPTIONS": json.dumps({"pool": True})}

    line = refusal(run_once(options, concurrency=8))

    assert "run_cadence with --concurrency 8 may hold 12 connections" in line
    assert "lends at most 4 (pool = True: psycopg_pool's default)" in line
    assert "Set max_size to 12 or more in DATABASES['default']['OPTIONS']['pool']" in line


def test_run_cadence_runs_with_a_django_pool_of_the_size_it_needs(make_schedule):
    schedule = make_schedule(interval=timedelta(hours=1), executor="tests.jobs.count_run")
    make_due(schedule)
    options = {"CADENCE_PG_OPTIONS": json.dumps({"pool": {"max_size": 6}})}

    result = run_once(options, concurrency=2)  # 2 try threads, 4 stuck ones at most

    assert result.returncode == 0, result.stderr
    assert attempt_of(schedule).status == Status.SUCCEEDED


def test_run_cadence_started_before_its_pgbouncer_waits_for_it_then_refuses(pgbouncer, tmp_path):
    """A start cannot skip the check: a worker that cannot reach the database yet says so,
    waits, and is refused once it can tell."""
    port = free_port()
    log = tmp_path / "worker.log"
    with log.open("wb") as output:
        child = subprocess.Popen(
            run_cadence_args("tests.settings", "w-early"),
            cwd=ROOT,
            env=child_env(database_env(), {}) | {"CADENCE_PG_PORT": str(port)},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until(lambda: "database unavailable" in log.read_text(), timeout=30)
        pgbouncer("transaction", port=port)
        assert child.wait(60) == 1
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    output = log.read_text()
    assert "CommandError: run_cadence cannot prove its workers alive" in output
    assert "engine started" not in output
    assert not Worker.objects.exists()
