"""Helpers for the fleet tests: stopping several workers, reading their logs, checking the
record of every occurrence, and taking the database away from under them.

The workers themselves come from the ``worker`` fixture of ``conftest.py``; what is here is
specific to many workers at once and to database outages.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from itertools import pairwise, takewhile

from django.db import connection

from django_cadence.models import Attempt, Schedule, Status, Trigger
from django_cadence.schedule import specs

# Lines no worker may log in a healthy run. Job failures are expected here: they are logged
# as one-line events by ``django_cadence.events`` (never as tracebacks) and are not problems.
JOB_EVENTS = re.compile(r" django_cadence\.events (attempt failed|attempt dead_letter|occurrence) ")
PROBLEMS = re.compile(
    r"Traceback|Exception in thread|Exception ignored| WARNING | ERROR | CRITICAL "
    r"|attempt lost|attempt recovered|second signal"
)


def stop_all(workers, timeout: float = 30.0) -> dict[str, int]:
    """SIGTERM every worker at once (they drain in parallel); their exit codes by name."""
    for child in workers:
        if child.alive:
            child.send(signal.SIGTERM)
    return {child.name: child.wait(timeout) for child in workers}


def log_problems(text: str, *, allowed: tuple[str, ...] = ()) -> list[str]:
    """The lines of a worker's log that report something wrong, less the ``allowed`` ones."""
    return [
        line
        for line in text.splitlines()
        if PROBLEMS.search(line)
        and not JOB_EVENTS.search(line)
        and not any(ok in line for ok in allowed)
    ]


OUTAGE_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ERROR \S+ database unavailable: .*?"
    r"; retrying in ([\d.]+) s$",
    re.MULTILINE | re.DOTALL,
)


def backoffs(text: str) -> list[tuple[float, float]]:
    """(seconds announced, seconds until the next attempt logged) for each outage line that
    has a next one: a worker that backs off keeps to what it announced."""
    lines = [  # local times, read as UTC: only their differences count
        (datetime.strptime(f"{at} +0000", "%Y-%m-%d %H:%M:%S,%f %z"), float(delay))
        for at, delay in OUTAGE_LINE.findall(text)
    ]
    return [(delay, (later - at).total_seconds()) for (at, delay), (later, _) in pairwise(lines)]


# --- the record of every occurrence (invariants 1, 2 and 4) ----------------------------------


def check_occurrences(schedule: Schedule, *, ended: bool = False) -> dict[str, int]:
    """Assert that every occurrence from the schedule's first to its ``last_run_at`` has
    exactly one record, and nothing beyond: one attempt row each, or a place in exactly one
    ``missed`` row's range (counted with its ``outcome["missed"]``).

    Also that the schedule's counters and ``next_run_at`` agree with the rows, which is what
    "advance and record together" leaves behind (not for a schedule ``ended`` since, whose
    ``next_run_at`` is cleared only when a planner next looks at it). Returns the figures.
    """
    assert schedule.last_run_at is not None, f"{schedule.name} was never planned"
    spec = schedule.spec()
    expected = list(
        takewhile(
            lambda at: at <= schedule.last_run_at,
            specs.occurrences(spec, schedule.created_at),
        )
    )
    covered: Counter[datetime] = Counter()
    rows = list(Attempt.objects.filter(schedule=schedule, trigger=Trigger.SCHEDULE))
    planned = missed = 0
    for attempt in rows:
        if attempt.status != Status.MISSED:
            covered[attempt.occurrence_at] += 1
            planned += 1
            continue
        first = datetime.fromisoformat(attempt.outcome["first"])
        last = datetime.fromisoformat(attempt.outcome["last"])
        span = [at for at in expected if first <= at <= last]
        assert attempt.occurrence_at == first, attempt.outcome
        assert span[:1] == [first], (schedule.name, attempt.outcome)
        assert span[-1:] == [last], (schedule.name, attempt.outcome)
        assert len(span) == attempt.outcome["missed"], (schedule.name, attempt.outcome, span)
        covered.update(span)
        missed += len(span)
    duplicates = sorted(at for at, n in covered.items() if n > 1)
    gaps = sorted(set(expected) - set(covered))
    beyond = sorted(set(covered) - set(expected))
    assert not duplicates, f"{schedule.name}: occurrences recorded twice: {duplicates}"
    assert not gaps, f"{schedule.name}: occurrences without a record: {gaps}"
    assert not beyond, f"{schedule.name}: records of no occurrence in the window: {beyond}"
    assert schedule.occurrence_count == planned, (schedule.name, schedule.occurrence_count)
    assert schedule.missed_count == missed, (schedule.name, schedule.missed_count)
    if not ended:
        assert schedule.next_run_at == specs.next_occurrence(spec, schedule.last_run_at)
    return {"occurrences": len(expected), "rows": len(rows), "missed": missed}


def no_duplicate_occurrences() -> tuple[int, int]:
    """(distinct (schedule, occurrence_at, trigger), total rows): equal by invariant 1."""
    total = Attempt.objects.count()
    distinct = (
        Attempt.objects.order_by().values("schedule", "occurrence_at", "trigger").distinct().count()
    )
    return distinct, total


def try_intervals(attempt: Attempt) -> Iterator[tuple[datetime, datetime, str]]:
    """(started_at, finished_at, worker) of every try the attempt's history records."""
    for entry in attempt.history or []:
        if entry.get("started_at") and entry.get("finished_at"):
            yield (
                datetime.fromisoformat(entry["started_at"]),
                datetime.fromisoformat(entry["finished_at"]),
                entry.get("worker") or "",
            )


# --- taking the database away ----------------------------------------------------------------


def _run(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


class PostgreSQLServer:
    """The local cluster the tests use, driven with Debian's ``pg_ctlcluster``."""

    def __init__(self, settings_dict: dict) -> None:
        self.host = str(settings_dict.get("HOST") or "127.0.0.1")
        self.port = str(settings_dict.get("PORT") or "5432")
        self.version = sorted(os.listdir("/etc/postgresql"))[0]

    def _ctl(self, action: str) -> None:
        done = _run("pg_ctlcluster", "--skip-systemctl-redirect", self.version, "main", action)
        assert done.returncode == 0, f"pg_ctlcluster {action}: {done.stdout}{done.stderr}"

    def ready(self) -> bool:
        return _run("pg_isready", "-h", self.host, "-p", self.port).returncode == 0

    def stop(self) -> None:
        self._ctl("stop")  # fast mode: every client connection is cut

    def start(self) -> None:
        if not self.ready():
            self._ctl("start")
        _wait(self.ready, 60, "PostgreSQL to accept connections")


class MariaDBServer:
    """The local server, stopped with ``mariadb-admin shutdown`` and started as CI does."""

    DAEMON = "/usr/sbin/mariadbd"

    def __init__(self, settings_dict: dict) -> None:
        self.client = [
            "-h",
            str(settings_dict.get("HOST") or "127.0.0.1"),
            "-P",
            str(settings_dict.get("PORT") or "3306"),
            f"-u{settings_dict.get('USER') or 'root'}",
        ]
        if settings_dict.get("PASSWORD"):
            self.client.append(f"-p{settings_dict['PASSWORD']}")

    def ready(self) -> bool:
        return _run("mariadb-admin", *self.client, "ping").returncode == 0

    def _daemon_running(self) -> bool:
        return _run("start-stop-daemon", "--status", "--exec", self.DAEMON).returncode == 0

    def stop(self) -> None:
        done = _run("mariadb-admin", *self.client, "shutdown")
        assert done.returncode == 0, f"mariadb-admin shutdown: {done.stdout}{done.stderr}"
        # start-stop-daemon --oknodo would do nothing while the old process still exits.
        _wait(lambda: not self._daemon_running(), 60, "mariadbd to exit")

    def start(self) -> None:
        if not self.ready():
            _wait(lambda: not self._daemon_running() or self.ready(), 60, "mariadbd to exit")
            if not self._daemon_running():
                start = ("--start", "--oknodo", "--background", "--exec", self.DAEMON)
                _run("start-stop-daemon", *start)
        _wait(self.ready, 60, "MariaDB to accept connections")


def server_for_this_database() -> PostgreSQLServer | MariaDBServer | None:
    """The server behind the test database, or None for SQLite (a file, no server)."""
    if connection.vendor == "postgresql":
        return PostgreSQLServer(connection.settings_dict)
    if connection.vendor == "mysql":
        return MariaDBServer(connection.settings_dict)
    return None


@contextlib.contextmanager
def server_down(server: PostgreSQLServer | MariaDBServer, seconds: float) -> Iterator[None]:
    """Stop the server, keep it down ``seconds``, start it again: up on exit, come what may.

    The test process's own connection died with the server: it is dropped, so the next query
    (and pytest-django's flush at teardown) connects afresh.
    """
    try:
        server.stop()
        time.sleep(seconds)
        yield
    finally:
        server.start()
        with contextlib.suppress(Exception):
            connection.close()


@contextlib.contextmanager
def sqlite_locked(path: str, seconds: float) -> Iterator[None]:
    """Hold an exclusive lock on a SQLite database for ``seconds``: no engine reads or writes."""
    locker = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        time.sleep(seconds)
        yield
    finally:
        with contextlib.suppress(sqlite3.Error):
            locker.execute("ROLLBACK")
        locker.close()
