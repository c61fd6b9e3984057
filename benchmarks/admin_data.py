"""The admin benchmark's data: 100 schedules and as many attempts as asked, made in bulk.

Attempt ``i`` belongs to schedule ``i % 100`` and is that schedule's ``i // 100``-th newest
occurrence (one step of the schedule, 1 to 60 minutes, earlier per rank), so growing the table
from 10^4 to 10^6 rows only appends older history and keeps the rows already made. The rows
are what the engine writes (``planner.planned_row``, ``runner.record_*``): the per-try
``history`` entries, tracebacks as errors, ``[dead letter: ...]`` suffixes, tokens and leases
on running rows, ``retry_at`` on every pending one, as ``Attempt``'s constraints require.

The newest occurrence of each schedule is where the live states are (10 running, 20 pending
retries, 10 pending first tries); older ones are finished: 96.6% succeeded (3.2% after a
failed try, 1% run by hand), 2% skipped, 0.4% missed, 0.2% cancelled, 0.8% dead letters.
Rows go in through ``COPY`` on PostgreSQL and multi-row ``INSERT`` elsewhere, chunk by chunk.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction

from django_cadence.models import Attempt, Kind, Schedule, Status, Trigger

SCHEDULES = 100
CHUNK = 50_000
BATCH = 2_000  # rows per INSERT statement (PostgreSQL allows 65,535 parameters)
TEAMS = ("billing", "reports", "search", "mail", "sync")
JOBS = ("nightly-report", "sync-invoices", "reindex", "digest", "cleanup", "export", "ping")
ZONES = ("UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo", "Australia/Sydney")
WORKERS = tuple(f"app-{n}:{4100 + n}:{n:06x}" for n in range(4))
EXECUTOR = "benchmarks.app.jobs.noop"
TRACEBACK = """Traceback (most recent call last):
  File "/srv/app/django_cadence/execution.py", line 88, in run
    result = func(**payload)
  File "/srv/app/billing/jobs.py", line 41, in sync_invoices
    response = client.fetch(batch, timeout=30)
  File "/srv/app/billing/client.py", line 112, in fetch
    raise UpstreamTimeout(f"upstream timed out after {timeout}s")
billing.client.UpstreamTimeout: upstream timed out after 30s"""
COLUMNS = (
    "schedule_id",
    "occurrence_at",
    "trigger",
    "status",
    "tries",
    "retry_at",
    "started_at",
    "finished_at",
    "error",
    "outcome",
    "claim_token",
    "lease_until",
    "worker",
    "recoveries",
    "cancel_requested",
    "history",
    "created_at",
)
TIMES = {"occurrence_at", "retry_at", "started_at", "finished_at", "lease_until", "created_at"}


def step(s: int) -> timedelta:
    """How often schedule ``s`` runs: 1 to 60 minutes."""
    return timedelta(minutes=1 + s % 60)


def occurrence(anchor: datetime, i: int) -> datetime:
    s = i % SCHEDULES
    return anchor - timedelta(seconds=s) - (i // SCHEDULES) * step(s)


def make_schedules(anchor: datetime) -> list[Schedule]:
    """Cron and interval schedules in five zones, some paused, created 15 months ago."""
    made = []
    for s in range(SCHEDULES):
        minutes = 1 + s % 60
        spec: dict[str, Any] = (
            {"kind": Kind.INTERVAL, "interval": step(s)}
            if s % 3 == 0
            else {
                "kind": Kind.CRON,
                "cron": f"*/{minutes} * * * *" if minutes < 60 else "0 * * * *",
            }
        )
        paused = s % 17 == 5
        made.append(
            Schedule.objects.create(
                name=f"{TEAMS[s % len(TEAMS)]}-{JOBS[s % len(JOBS)]}-{s:03d}",
                timezone=ZONES[s % len(ZONES)],
                executor=EXECUTOR,
                enabled=not paused,
                pause_reason="paused: its last 3 occurrences ended dead-lettered" if paused else "",
                max_attempts=3,
                created_at=anchor - timedelta(days=450),
                last_run_at=occurrence(anchor, s),
                **spec,
            )
        )
    return made


def _try(n: int, worker: str, start: datetime, end: datetime, result: str, error: str = "") -> dict:
    entry = {
        "try": n,
        "worker": worker,
        "started_at": start.isoformat(),
        "finished_at": end.isoformat(),
        "result": result,
    }
    if error:
        entry["error"] = error
    return entry


def attempt_row(schedule_ids: list[int], anchor: datetime, i: int) -> dict[str, Any]:
    """Attempt ``i`` as column values, its status from its rank and a hash of ``i``."""
    s, rank, h = i % SCHEDULES, i // SCHEDULES, zlib.crc32(i.to_bytes(8, "little")) % 1000
    occ = occurrence(anchor, i)
    worker = WORKERS[i % len(WORKERS)]
    start = occ + timedelta(milliseconds=40 + h % 900)
    end = start + timedelta(milliseconds=200 + 37 * h)
    row: dict[str, Any] = {
        "schedule_id": schedule_ids[s],
        "occurrence_at": occ,
        "trigger": Trigger.MANUAL if h >= 990 else Trigger.SCHEDULE,
        "status": Status.SUCCEEDED,
        "tries": 1,
        "retry_at": occ,
        "started_at": start,
        "finished_at": end,
        "error": "",
        "outcome": {"processed": h} if s % 2 else None,
        "claim_token": None,
        "lease_until": None,
        "worker": worker,
        "recoveries": 0,
        "cancel_requested": False,
        "history": [_try(1, worker, start, end, "succeeded")],
        "created_at": occ,
    }
    live = s % 10 if rank == 0 else None  # the newest occurrence: running or pending
    if live == 0:
        row.update(status=Status.RUNNING, finished_at=None, outcome=None, history=[])
        row.update(claim_token=f"{h:016x}{i}", lease_until=anchor + timedelta(minutes=5))
    elif live == 3:
        row.update(status=Status.PENDING, tries=0, started_at=None, finished_at=None)
        row.update(outcome=None, worker="", history=[])
    elif live in (1, 2) or h < 40:
        _failed_tries(row, anchor, retrying=live in (1, 2), tries=live or (3 if h < 8 else 2))
    elif h < 60:
        reason = "an attempt of this schedule was running (overlap=skip_if_running)"
        row.update(status=Status.SKIPPED, tries=0, retry_at=None, started_at=None, worker="")
        row.update(finished_at=occ, error=f"skipped: {reason}", outcome=None, history=[])
    elif h < 64:
        first, last = occ, occ + 2 * step(s)
        error = f"missed 3 occurrence(s) from {first.isoformat()} to {last.isoformat()}"
        outcome = {"missed": 3, "first": first.isoformat(), "last": last.isoformat()}
        row.update(status=Status.MISSED, tries=0, retry_at=None, started_at=None, worker="")
        row.update(finished_at=end, error=f"{error} (misfire=fire_once)", outcome=outcome)
        row.update(history=[])
    elif h < 66:
        row.update(status=Status.CANCELLED, tries=0, started_at=None, worker="", history=[])
        row.update(finished_at=end, error="cancelled by an operator", outcome=None)
    return row


def _failed_tries(row: dict[str, Any], anchor: datetime, *, retrying: bool, tries: int) -> None:
    """Tries 30 s apart that failed: a pending retry, a dead letter (3 tries) or a late success."""
    worker, first = row["worker"], row["started_at"]
    starts = [first + timedelta(seconds=30 * n) for n in range(tries)]
    history = [
        _try(n + 1, worker, at, at + timedelta(seconds=30), "failed", TRACEBACK)
        for n, at in enumerate(starts)
    ]
    row.update(tries=tries, started_at=starts[-1], retry_at=starts[-1], history=history)
    if retrying:
        retry_at = anchor + timedelta(minutes=2 * tries + row["schedule_id"] % 60)
        row.update(status=Status.PENDING, retry_at=retry_at, finished_at=None)
        row.update(error=TRACEBACK, outcome=None)
    elif tries == 3:
        finished = starts[-1] + timedelta(seconds=30)
        row.update(status=Status.DEAD_LETTER, finished_at=finished, outcome=None)
        row.update(error=f"{TRACEBACK}\n[dead letter: no tries left ({tries} of 3)]")
    else:
        del history[-1]["error"]
        row["finished_at"] += starts[-1] - first
        history[-1].update(result="succeeded", finished_at=row["finished_at"].isoformat())


def _values(schedule_ids: list[int], anchor: datetime, start: int, stop: int) -> Iterator[tuple]:
    """Rows ``start`` to ``stop`` as database values in ``COLUMNS`` order."""
    adapt = connection.ops.adapt_datetimefield_value
    for i in range(start, stop):
        row = attempt_row(schedule_ids, anchor, i)
        for name in TIMES:
            row[name] = adapt(row[name])
        row["status"], row["trigger"] = str(row["status"]), str(row["trigger"])
        row["history"] = json.dumps(row["history"])
        row["outcome"] = None if row["outcome"] is None else json.dumps(row["outcome"])
        yield tuple(row[name] for name in COLUMNS)


def _insert(rows: Iterator[tuple]) -> None:
    table = connection.ops.quote_name(Attempt._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(name) for name in COLUMNS)
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        sql = f"INSERT INTO {table} ({columns}) VALUES ({', '.join(['%s'] * len(COLUMNS))})"
        batch = []
        for row in rows:
            batch.append(row)
            if len(batch) == BATCH:
                cursor.executemany(sql, batch)
                batch = []
        if batch:
            cursor.executemany(sql, batch)


def top_up(schedules: list[Schedule], anchor: datetime, size: int, progress=print) -> int:
    """Add attempts until there are ``size``; returns how many were added."""
    have = Attempt.objects.count()
    if have > size:
        raise ValueError(f"the table already holds {have} attempts, more than {size}")
    ids = [schedule.pk for schedule in schedules]
    for start in range(have, size, CHUNK):
        _insert(_values(ids, anchor, start, min(start + CHUNK, size)))
        progress(f"  {min(start + CHUNK, size):,} attempts")
    for s, schedule in enumerate(schedules):  # the engine's counter, for the change form
        schedule.occurrence_count = len(range(s, size, SCHEDULES))
    Schedule.objects.bulk_update(schedules, ["occurrence_count"])
    return size - have


def analyze() -> None:
    """Fresh planner statistics (and, on PostgreSQL, the visibility map autovacuum would set)."""
    tables = [connection.ops.quote_name(m._meta.db_table) for m in (Schedule, Attempt)]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for table in tables:
                cursor.execute(f"VACUUM (ANALYZE) {table}")
        elif connection.vendor == "mysql":
            cursor.execute(f"ANALYZE TABLE {', '.join(tables)}")
            cursor.fetchall()
        else:
            cursor.execute("ANALYZE")
