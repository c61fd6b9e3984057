"""Admitting occurrences: what a schedule has running and waiting, which its overlap policy
admits new occurrences against, and the row of one admitted occurrence.

The planner admits the occurrences that fall due (invariant 2); a backfill
(``ops/backfill.py``) and a manual run (``services.trigger``) admit theirs exactly as it
would, so the three share these, below the engine and ops, where all may import them.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from .models import Attempt, Schedule, Status
from .schedule import policies, specs
from .store import batch_writes
from .store.batch_writes import PlannedRow


def overlap_states(schedule_ids: list[int]) -> dict[int, policies.OverlapState]:
    """What each schedule has running and waiting, in one query (the overlap policy's input)."""
    counts: dict[int, dict[str, tuple[int, int]]] = defaultdict(dict)
    for schedule_id, status, n, retried in batch_writes.open_attempt_counts(
        Attempt.objects.db, schedule_ids
    ):
        counts[schedule_id][status] = (n, int(retried or 0))
    return defaultdict(
        policies.OverlapState,
        {
            sid: policies.OverlapState(
                running=c.get(Status.RUNNING, (0, 0))[0],
                waiting=c.get(Status.PENDING, (0, 0))[0],
                retrying=c.get(Status.PENDING, (0, 0))[1],
            )
            for sid, c in counts.items()
        },
    )


def planned_row(
    schedule: Schedule, occurrence_at: datetime, status: str, reason: str, now: datetime
) -> PlannedRow:
    """The row of one admitted occurrence: pending (ready after its jitter) or skipped."""
    if status == Status.SKIPPED:
        return PlannedRow(
            schedule_id=schedule.pk,
            schedule_name=schedule.name,
            occurrence_at=occurrence_at,
            status=Status.SKIPPED,
            finished_at=now,
            error=f"skipped: {reason}",
        )
    delay = specs.jitter_delay(str(schedule.pk), occurrence_at, schedule.jitter or timedelta(0))
    return PlannedRow(
        schedule_id=schedule.pk,
        schedule_name=schedule.name,
        occurrence_at=occurrence_at,
        status=Status.PENDING,
        retry_at=occurrence_at + delay,
    )
