"""The worker registry: each engine says who it is and that it is alive.

The admin and ``cadence_status`` list live and lost workers from it. One decision reads it:
a worker registered with ``session_lock`` holds a session lock named after it, so when the
server no longer sees that lock its running attempts are recovered at once (the other
workers' are left to their leases).
"""

from __future__ import annotations

import os
import socket
from datetime import datetime

from ..models import Worker

MAX_WORKER_ID = 200  # Worker.worker_id and Attempt.worker hold this many characters


def check_worker_id(value: str) -> str:
    """Return ``value`` if it can name a worker; raise ``ValueError`` saying why not.

    A worker id goes into every attempt it runs and into log lines: 1 to 200 printable
    characters and no whitespace, so it can neither forge a log line nor hide in one.
    """
    if not value:
        raise ValueError("a worker id cannot be empty")
    if len(value) > MAX_WORKER_ID:
        raise ValueError(f"a worker id has at most {MAX_WORKER_ID} characters, not {len(value)}")
    if not value.isprintable() or any(char.isspace() for char in value):
        raise ValueError(
            f"a worker id has printable characters only, no whitespace: {ascii(value)[:100]}"
        )
    return value


def register(
    worker_id: str,
    now: datetime,
    *,
    concurrency: int,
    queues: str = "",
    session_lock: bool = False,
) -> None:
    """Record the worker at start: who, where, its threads and the queues it serves ("":
    every queue)."""
    Worker.objects.update_or_create(
        worker_id=worker_id,
        defaults={
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started_at": now,
            "heartbeat_at": now,
            "stopped_at": None,
            "in_flight": 0,
            "stuck_threads": 0,
            "stuck_since": None,
            "concurrency": concurrency,
            "queues": queues,
            "session_lock": session_lock,
        },
    )


def beat(
    worker_id: str,
    now: datetime,
    *,
    in_flight: int,
    stuck_threads: int = 0,
    stuck_since: datetime | None = None,
) -> None:
    Worker.objects.filter(worker_id=worker_id).update(
        heartbeat_at=now,
        in_flight=in_flight,
        stuck_threads=stuck_threads,
        stuck_since=stuck_since,
    )


def stopped(worker_id: str, now: datetime) -> None:
    Worker.objects.filter(worker_id=worker_id).update(stopped_at=now, in_flight=0)
