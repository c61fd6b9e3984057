"""Task functions for the django-q2 and Celery peers (imported by their worker processes)."""

from __future__ import annotations

from datetime import datetime

from benchmarks.peers import _runner

DSN = "host=127.0.0.1 port=5432 user=postgres dbname=cadence_bench"


def record(name: str, due: str) -> None:
    started_at = _runner.utcnow()
    _runner.record(DSN, name, datetime.fromisoformat(due), started_at)


def noop(name: str = "", due: str = "") -> None:
    return None
