"""The benchmark jobs (allowed by ``CADENCE_EXECUTORS = ["benchmarks.app.jobs.*"]``)."""

from __future__ import annotations

import os
from datetime import UTC, datetime

WORKER = os.environ.get("CADENCE_BENCH_WORKER", "")


def record(context) -> None:
    """Record this start: the local clock first, then one INSERT through the ORM."""
    started_at = datetime.now(UTC)
    from .models import Firing

    Firing.objects.create(
        schedule_name=context.schedule_name,
        due_at=context.occurrence_at,
        started_at=started_at,
        worker=WORKER,
    )


def noop() -> None:
    """Nothing at all: throughput runs measure the engine alone (counted from attempts)."""
    return None
