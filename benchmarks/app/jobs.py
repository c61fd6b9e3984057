"""The benchmark jobs (allowed by ``CADENCE_EXECUTORS = ["benchmarks.app.jobs.*"]``)."""

from __future__ import annotations

import functools
import os
from datetime import UTC, datetime

from django.db import connection

from benchmarks.peers import _runner as peer_job

WORKER = os.environ.get("CADENCE_BENCH_WORKER", "")


def record(context) -> None:
    """Record this start: the local clock first, then one INSERT.

    On PostgreSQL this is the peers' job body itself (``benchmarks/peers/_runner.py``): the
    same statement through psycopg on a connection kept per thread, so the job costs every
    system the same and what differs is the scheduler's. Elsewhere (no peer runs there) the
    same statement goes through Django's connection.
    """
    started_at = datetime.now(UTC)
    dsn = _postgresql_dsn()
    if dsn is not None:
        peer_job.record(dsn, context.schedule_name, context.occurrence_at, started_at)
        return
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO bench_firing (schedule_name, due_at, started_at, worker) "
            "VALUES (%s, %s, %s, %s)",
            (context.schedule_name, adapt(context.occurrence_at), adapt(started_at), WORKER),
        )


@functools.cache
def _postgresql_dsn() -> str | None:
    """The peers' connection string on PostgreSQL, read once: the peers' job body takes it
    as an argument, so a lookup through Django's connection on every call would cost only
    this system; None on other databases."""
    if connection.vendor != "postgresql":
        return None
    settings = connection.settings_dict
    return (
        f"host={settings['HOST']} port={settings['PORT']} user={settings['USER']} "
        f"dbname={settings['NAME']}"
    )


def noop() -> None:
    """Nothing at all: throughput runs measure the engine alone (counted from attempts)."""
    return None
