"""The worker registry: each engine says who it is and that it is alive.

Purely informational (the admin and ``cadence_status`` list live and lost workers); no
decision depends on it: correctness comes from attempt leases alone.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime

from ..models import Worker


def register(worker_id: str, now: datetime, *, concurrency: int) -> None:
    Worker.objects.update_or_create(
        worker_id=worker_id,
        defaults={
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started_at": now,
            "heartbeat_at": now,
            "stopped_at": None,
            "in_flight": 0,
            "concurrency": concurrency,
        },
    )


def beat(worker_id: str, now: datetime, *, in_flight: int) -> None:
    Worker.objects.filter(worker_id=worker_id).update(heartbeat_at=now, in_flight=in_flight)


def stopped(worker_id: str, now: datetime) -> None:
    Worker.objects.filter(worker_id=worker_id).update(stopped_at=now, in_flight=0)
