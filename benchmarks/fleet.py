"""A fleet of ``run_cadence`` workers, the database servers under them, and the record they
leave: what the fleet tests (``tests/fleet``) and the chaos harness (``benchmarks.chaos``)
share.

Workers are child processes with their output in a file each; servers are the local
PostgreSQL cluster and MariaDB server, stopped and started as CI does; the record checks read
the attempt rows against each schedule's occurrences (invariants 1, 2 and 4 of
``docs/design.md``) and return what they find, for a test to assert or a harness to count.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import takewhile
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from django_cadence.models import Attempt, Schedule

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")

# The environment a fleet's child reads its database from (``databases_from_env``): the
# vendor in ``CADENCE_TEST_DB``, the database's name in the vendor's variable below.
DB_ENV = "CADENCE_TEST_DB"
DB_NAME_ENV = {
    "sqlite": "CADENCE_SQLITE_NAME",
    "postgresql": "CADENCE_PG_NAME",
    "mysql": "CADENCE_MYSQL_NAME",
}
DEFAULT_NAMES = {"sqlite": "cadence-test.sqlite3", "postgresql": "test", "mysql": "test"}
OVERRIDES_ENV = "CADENCE_TEST_OVERRIDES"


def wait_until(
    predicate: Callable[[], T],
    *,
    timeout: float = 15.0,
    message: str = "condition",
    interval: float = 0.1,
) -> T:
    """Poll ``predicate`` every ``interval`` seconds until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {message}")
        time.sleep(interval)


# --- workers ---------------------------------------------------------------------------------


def run_cadence_args(
    settings: str,
    name: str,
    *,
    once: bool = False,
    concurrency: int | None = None,
    max_tick: float | None = None,
) -> list[str]:
    """The command line of one ``run_cadence`` worker called ``name``."""
    args = [sys.executable, "-m", "django", "run_cadence", f"--settings={settings}"]
    args += ["--worker-id", name]
    if once:
        args.append("--once")
    if concurrency is not None:
        args += ["--concurrency", str(concurrency)]
    if max_tick is not None:
        args += ["--max-tick", str(max_tick)]
    return args


def databases_from_env() -> dict[str, dict[str, Any]]:
    """``DATABASES`` for the database the environment names (what :func:`database_env` sets):
    the test suite's settings and the chaos workers' read it the same way, so a worker sees
    the database of the test that started it. Servers are the local ones unless
    ``CADENCE_PG_*`` or ``CADENCE_MYSQL_*`` say otherwise (``CADENCE_PG_OPTIONS``: the
    connection's ``OPTIONS`` as JSON)."""
    vendor = os.environ.get(DB_ENV, "sqlite")
    if vendor not in DB_NAME_ENV:
        raise RuntimeError(f"{DB_ENV} must be sqlite, postgresql or mysql, not {vendor!r}")
    name = os.environ.get(DB_NAME_ENV[vendor], DEFAULT_NAMES[vendor])
    if vendor == "sqlite":
        test_name = os.environ.get("CADENCE_SQLITE_TEST_NAME", DEFAULT_NAMES[vendor])
        return {
            "default": {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": name,
                "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
                "TEST": {"NAME": test_name},
            }
        }
    if vendor == "postgresql":
        return {
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": name,
                "USER": os.environ.get("CADENCE_PG_USER", "postgres"),
                "HOST": os.environ.get("CADENCE_PG_HOST", "127.0.0.1"),
                "PORT": os.environ.get("CADENCE_PG_PORT", "5432"),
                # Django's connection pool, as JSON: '{"pool": {"max_size": 12}}'.
                "OPTIONS": json.loads(os.environ.get("CADENCE_PG_OPTIONS") or "{}"),
            }
        }
    return {
        "default": {
            "ENGINE": "django.db.backends.mysql",
            "NAME": name,
            "USER": os.environ.get("CADENCE_MYSQL_USER", "root"),
            "PASSWORD": os.environ.get("CADENCE_MYSQL_PASSWORD", ""),
            "HOST": os.environ.get("CADENCE_MYSQL_HOST", "127.0.0.1"),
            "PORT": os.environ.get("CADENCE_MYSQL_PORT", "3306"),
            "OPTIONS": {"charset": "utf8mb4"},
            "TEST": {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"},
        }
    }


def settings_overrides(variable: str = OVERRIDES_ENV) -> dict[str, Any]:
    """The ``CADENCE_*`` settings a parent passes its child as JSON in ``variable`` (shrunken
    leases, as a rule); refuses any other setting."""
    overrides = json.loads(os.environ.get(variable) or "{}")
    for name in overrides:
        if not name.startswith("CADENCE_"):
            raise RuntimeError(f"{variable} may set only CADENCE_* settings, not {name}")
    return overrides


def database_env() -> dict[str, str]:
    """Point a child at the database this process's default connection uses."""
    from django.db import connection

    vendor = connection.vendor
    name = str(connection.settings_dict["NAME"])
    if vendor == "sqlite":
        name = str(Path(name).resolve())
    return {DB_ENV: vendor, DB_NAME_ENV[vendor]: name}


def child_env(db_env: dict[str, str], overrides: dict[str, Any] | None = None) -> dict[str, str]:
    """A child's environment: this one, the database, unbuffered output, and the settings it
    shrinks as JSON (its settings module applies :func:`settings_overrides` last)."""
    return {
        **os.environ,
        **db_env,
        "PYTHONUNBUFFERED": "1",
        OVERRIDES_ENV: json.dumps(overrides or {}),
    }


class Worker:
    """One child process (``run_cadence``, as a rule), with its output in ``<name>.log``."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.args = args
        self.log_path = log_dir / f"{name}.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.poll()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def send(self, signum: int) -> None:
        self.process.send_signal(signum)

    def terminate(self) -> None:
        """SIGTERM, if it still runs: it drains and exits."""
        if self.alive:
            self.send(signal.SIGTERM)

    def kill(self) -> None:
        """``kill -9``: no drain, no release; leases are left to expire."""
        if self.alive:
            self.process.kill()
        self.process.wait(30)

    def exit_code(self, timeout: float) -> int | None:
        """The exit code, waiting up to ``timeout`` seconds for it; None if it still runs."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def wait(self, timeout: float) -> int:
        """The exit code, waiting up to ``timeout`` seconds for it; an AssertionError after."""
        code = self.exit_code(timeout)
        if code is None:
            raise AssertionError(f"worker {self.name} still running after {timeout:g} s")
        return code

    def wait_for_log(self, text: str, timeout: float = 15.0) -> None:
        def seen() -> bool:
            if text in self.output():
                return True
            if not self.alive:
                raise AssertionError(
                    f"worker {self.name} exited ({self.returncode}) before logging {text!r}"
                )
            return False

        wait_until(seen, timeout=timeout, message=f"{text!r} in the log of worker {self.name}")

    def wait_started(self, timeout: float = 20.0) -> Worker:
        self.wait_for_log("engine started", timeout)
        return self


def stop_all(workers: Iterable[Worker], timeout: float = 30.0) -> dict[str, int | None]:
    """SIGTERM every worker at once (they drain in parallel); their exit codes by name, None
    for one still running after ``timeout``."""
    workers = list(workers)
    for child in workers:
        child.terminate()
    return {child.name: child.exit_code(timeout) for child in workers}


# --- taking the database away ----------------------------------------------------------------


def _run(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


class PostgreSQLServer:
    """The local cluster, driven with Debian's ``pg_ctlcluster``."""

    def __init__(self, settings_dict: dict[str, Any]) -> None:
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

    def __init__(self, settings_dict: dict[str, Any]) -> None:
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
    """The server behind the default connection, or None for SQLite (a file, no server)."""
    from django.db import connection

    if connection.vendor == "postgresql":
        return PostgreSQLServer(connection.settings_dict)
    if connection.vendor == "mysql":
        return MariaDBServer(connection.settings_dict)
    return None


@contextlib.contextmanager
def server_down(server: PostgreSQLServer | MariaDBServer, seconds: float) -> Iterator[None]:
    """Stop the server, keep it down ``seconds``, start it again: up on exit, come what may.

    This process's own connection died with the server: it is dropped, so the next query
    (and pytest-django's flush at teardown) connects afresh.
    """
    from django.db import connection

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


# --- the record of every occurrence (invariants 1, 2 and 4) ----------------------------------


@dataclass
class OccurrenceRecord:
    """How a schedule's attempt rows cover its occurrences up to the end of a window."""

    expected: list[datetime]
    rows: int = 0
    planned: int = 0  # rows of one occurrence each (every status but missed)
    missed: int = 0  # occurrences inside the ranges of missed rows
    twice: list[datetime] = field(default_factory=list)
    gaps: list[datetime] = field(default_factory=list)
    beyond: list[datetime] = field(default_factory=list)
    bad_missed: list[str] = field(default_factory=list)  # ranges that are not a run of them


def occurrence_record(
    schedule: Schedule,
    rows: Iterable[Attempt],
    window_end: datetime,
    ahead: timedelta = timedelta(0),
) -> OccurrenceRecord:
    """Match ``rows`` (the schedule's ``trigger=schedule`` attempts) against its occurrences
    from its creation to ``window_end``: each must have exactly one record, an attempt row or
    a place in one ``missed`` row's range (``outcome["first"]`` to ``outcome["last"]``,
    ``outcome["missed"]`` of them, starting at the row's own occurrence).

    Occurrences up to ``ahead`` past the window may have a record too (planned ahead of
    their instant, ``CADENCE_CLAIM_AHEAD``) but need none; rows past that are ``beyond``."""
    from django_cadence.models import Status
    from django_cadence.schedule import specs

    expected = list(
        takewhile(
            lambda at: at <= window_end,
            specs.occurrences(schedule.spec(), schedule.created_at),
        )
    )
    record = OccurrenceRecord(expected=expected)
    covered: Counter[datetime] = Counter()
    for attempt in rows:
        record.rows += 1
        if attempt.status != Status.MISSED:
            covered[attempt.occurrence_at] += 1
            record.planned += 1
            continue
        outcome = attempt.outcome or {}
        first = datetime.fromisoformat(outcome["first"])
        last = datetime.fromisoformat(outcome["last"])
        span = [at for at in expected if first <= at <= last]
        if (
            attempt.occurrence_at != first
            or span[:1] != [first]
            or span[-1:] != [last]
            or len(span) != outcome["missed"]
        ):
            record.bad_missed.append(
                f"{schedule.name}: missed row at {attempt.occurrence_at.isoformat()} "
                f"{outcome} spans {len(span)} occurrence(s)"
            )
        covered.update(span)
        record.missed += len(span)
    record.twice = sorted(at for at, n in covered.items() if n > 1)
    record.gaps = sorted(set(expected) - set(covered))
    # Planned ahead before the window closed: an ``end_at`` set at the window's end (the
    # chaos run's) came after them, so they are counted without it.
    spec = schedule.spec()
    unbounded = dataclasses.replace(spec, end_at=None) if ahead else spec
    allowed = set(
        takewhile(
            lambda at: at <= window_end + ahead,
            specs.occurrences(unbounded, schedule.created_at),
        )
    )
    record.beyond = sorted(set(covered) - allowed)
    return record


def no_duplicate_occurrences() -> tuple[int, int]:
    """(distinct (schedule, occurrence_at, trigger), total rows): equal by invariant 1."""
    from django_cadence.models import Attempt

    total = Attempt.objects.count()
    distinct = (
        Attempt.objects.order_by().values("schedule", "occurrence_at", "trigger").distinct().count()
    )
    return distinct, total


def tries_of(attempt: Attempt) -> list[dict[str, Any]]:
    """The attempt's history entries that have both ends, with parsed instants (``start``,
    ``end``), by start."""
    entries = []
    for entry in attempt.history or []:
        if not isinstance(entry, dict):
            continue
        started, finished = entry.get("started_at"), entry.get("finished_at")
        if started and finished:
            start, end = datetime.fromisoformat(started), datetime.fromisoformat(finished)
            entries.append({**entry, "start": start, "end": end})
    return sorted(entries, key=lambda e: e["start"])


Try = tuple[datetime, datetime, str, int]  # (start, end, worker, attempt id)


def tries_by_schedule(attempts: Iterable[Attempt]) -> dict[int, list[Try]]:
    """Every try of ``attempts``, by schedule id, in order of start."""
    by_schedule: dict[int, list[Try]] = defaultdict(list)
    for attempt in attempts:
        for entry in tries_of(attempt):
            try_ = (entry["start"], entry["end"], entry.get("worker") or "", attempt.pk)
            by_schedule[attempt.schedule_id].append(try_)
    for tries in by_schedule.values():
        tries.sort()
    return dict(by_schedule)


def overlaps(tries: list[Try]) -> Iterator[tuple[timedelta, Try, Try]]:
    """For tries in order of start: (how long each overlaps the latest-ending one before it,
    that one, it); a gap is a negative overlap."""
    latest = tries[0]
    for current in tries[1:]:
        yield latest[1] - current[0], latest, current
        if current[1] > latest[1]:
            latest = current
