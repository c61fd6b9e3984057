"""The chaos harness (``benchmarks/chaos.py``) in CI: a shorter run of the same scenario,
asserting the same goals.

On PostgreSQL and MariaDB: four workers, one SIGKILLed (and started again) every 5 s for
75 s, the database server restarted once in the middle. On SQLite, which allows one engine:
that engine is SIGKILLed and started again every 5 s, with no server to restart. Either way:
no occurrence lost or recorded twice, no try claimed twice, no serial schedule running two
tries (by the rows, and by the start and end each job recorded of its own execution), no
attempt executing twice at once, every attempt final at the end, atomic effects exactly
once, extra executions of the other jobs only where a try was cut off, every orphan
recovered within lease + sweep + 5 s.

The second test is the embedded SQLite case: one engine beside ten threads writing through
the ORM, as a web application in the same database would; the engine must never report
"database is locked" (30 s on SQLite, where it matters; 15 s on the others).
"""

from __future__ import annotations

import pytest
from django.db import connection

from benchmarks.chaos import JOBS, Options, render, run_chaos
from benchmarks.fleet import database_env

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def chaos_jobs_allowed(settings):
    """This process creates the harness's schedules, which name the chaos app's jobs."""
    settings.CADENCE_EXECUTORS = [*settings.CADENCE_EXECUTORS, f"{JOBS}.*"]


def test_fleet_under_kills_and_a_database_restart_keeps_every_invariant(tmp_path):
    if connection.vendor == "sqlite":
        # One engine, down for its restart after each kill: a lighter load than four share.
        options = Options(db="sqlite", workers=1, duration=57, schedules=32, oneshots=120)
    else:
        options = Options(
            db=connection.vendor,
            workers=4,
            duration=75,
            restart_db=True,
            schedules=100,
            oneshots=500,
        )

    report = run_chaos(options, db_env=database_env(), log_dir=tmp_path, progress=print)

    table = render(report)
    print(f"\n{table}")
    assert report["ok"], table
    # The run did what it is meant to: kills landed on running tries, which were recovered;
    # the server went away and the workers saw it.
    assert report["kills"] >= 8, table
    assert report["tries_hit_by_kills"] >= 1, table
    assert report["recovery"]["lost_by_kill"] >= 1, table
    assert report["occurrences"]["expected"] > 300, table
    assert report["effects"]["atomic_succeeded"] > 0, table
    # The jobs recorded their own executions, and some were cut off by a kill.
    assert report["executions"]["cut_off"] >= 1, table
    statuses = report["statuses"]
    # Skips are not asked for: a killed worker's try is recovered within 2 s (at once
    # on SQLite, as the engine starts again), so later occurrences rarely find it running.
    assert all(statuses.get(s) for s in ("succeeded", "dead_letter")), statuses
    if options.restart_db:
        assert report["db_restart"]["seconds"] >= options.down_seconds, table
        assert report["logs"]["database_unavailable"] > 0, table


def test_engine_beside_ten_writer_threads_never_finds_the_database_locked(tmp_path):
    options = Options(
        db=connection.vendor,
        workers=1,
        duration=30 if connection.vendor == "sqlite" else 15,
        kill_every=0,
        schedules=32,
        oneshots=100,
        embedded_writers=10,
        # Nothing is killed, so no recovery is timed: the default-sized lease keeps a renewal
        # that ten writers on a loaded machine hold back for seconds from reaching the
        # watchdog's deadline (a fifth-of-that lease stopped tries and the worker, exit 4).
        lease=30.0,
    )

    report = run_chaos(options, db_env=database_env(), log_dir=tmp_path, progress=print)

    table = render(report)
    print(f"\n{table}")
    assert report["ok"], table
    assert report["logs"]["database_is_locked"] == 0, table
    assert report["writers"]["writes"] > 1000, report["writers"]
    assert report["writers"]["errors"] == {}, report["writers"]
    assert report["occurrences"]["expected"] > 50, table
