"""The benchmark jobs (allowed by ``CADENCE_EXECUTORS = ["benchmarks.app.jobs.*"]``)."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from django.db import connection

WORKER = os.environ.get("CADENCE_BENCH_WORKER", "")


def record(context) -> None:
    """Record this start: the local clock first, then one INSERT.

    The same plain statement the peers' jobs run (``benchmarks/peers/_runner.py``), sent
    through Django's connection: the job's own cost is then equal for every system, and
    what differs is the scheduler's.
    """
    started_at = datetime.now(UTC)
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO bench_firing (schedule_name, due_at, started_at, worker) "
            "VALUES (%s, %s, %s, %s)",
            (context.schedule_name, adapt(context.occurrence_at), adapt(started_at), WORKER),
        )


def noop() -> None:
    """Nothing at all: throughput runs measure the engine alone (counted from attempts)."""
    return None
