"""``Worker`` rows as engines register them, for the pages and commands that show workers."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django_cadence.models import Worker


def worker_row(
    worker_id: str,
    *,
    heartbeat_at: datetime,
    started_at: datetime | None = None,
    host: str = "h",
    pid: int = 1,
    **fields: Any,
) -> Worker:
    """A worker that last beat at ``heartbeat_at``, started an hour before unless told."""
    return Worker.objects.create(
        worker_id=worker_id,
        host=host,
        pid=pid,
        started_at=started_at or heartbeat_at - timedelta(hours=1),
        heartbeat_at=heartbeat_at,
        **fields,
    )


def live_lost_stopped(now: datetime, **fields: Any) -> dict[str, Worker]:
    """Three workers on host ``h1``, started an hour before ``now``: ``w-live`` beat 20 s ago,
    ``w-lost`` 5 minutes ago, ``w-stopped`` stopped then."""
    five_minutes_ago = now - timedelta(minutes=5)
    return {
        worker_id: worker_row(
            worker_id,
            heartbeat_at=beat,
            started_at=now - timedelta(hours=1),
            host="h1",
            pid=7,
            stopped_at=stopped,
            concurrency=4,
            **fields,
        )
        for worker_id, beat, stopped in (
            ("w-live", now - timedelta(seconds=20), None),
            ("w-lost", five_minutes_ago, None),
            ("w-stopped", five_minutes_ago, five_minutes_ago),
        )
    }
