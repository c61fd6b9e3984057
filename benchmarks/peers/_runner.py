"""Helpers for the peer runner scripts; they run in the peers' virtualenvs (psycopg only).

``record(name, due)`` is the peer's job body: the local clock first, then one INSERT into
``bench_firing`` on a connection kept per thread (and per process).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

WORKER = os.environ.get("CADENCE_BENCH_WORKER", "peer")
_local = threading.local()


def load_config() -> dict:
    return json.loads(Path(sys.argv[1]).read_text())


def utcnow() -> datetime:
    return datetime.now(UTC)


def pick_t0(config: dict) -> datetime:
    """The epoch of the spec's offsets: ``lead`` seconds from now, on a whole second."""
    t0 = utcnow() + timedelta(seconds=config["lead"])
    return t0.replace(microsecond=0) + timedelta(seconds=1)


def announce_ready(config: dict, t0: datetime) -> None:
    tmp = Path(config["ready"] + ".tmp")
    tmp.write_text(json.dumps({"t0": t0.isoformat(), "pid": os.getpid()}))
    tmp.rename(config["ready"])


def connection(dsn: str) -> psycopg.Connection:
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed or getattr(_local, "pid", None) != os.getpid():
        conn = psycopg.connect(dsn, autocommit=True)
        _local.conn, _local.pid = conn, os.getpid()
    return conn


def record(dsn: str, name: str, due: datetime, started_at: datetime | None = None) -> None:
    started_at = started_at or utcnow()
    connection(dsn).execute(
        "INSERT INTO bench_firing (schedule_name, due_at, started_at, worker) "
        "VALUES (%s, %s, %s, %s)",
        (name, due, started_at, WORKER),
    )


def wait_for_stop() -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    while not stop.is_set():
        time.sleep(0.2)


def schedules(spec: dict, t0: datetime):
    """(name, group, first instant) of every schedule of the spec."""
    for group in spec["groups"]:
        at = t0 + timedelta(seconds=group.get("offset", 0))
        for i in range(group["count"]):
            yield f"{group['prefix']}{i:06d}", group, at
