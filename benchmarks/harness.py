"""Plumbing shared by every workload: databases, processes, CPU, statistics, tables, results.

Processes started here are registered and killed (their whole session) when the harness
exits, however it exits, so a run never leaves a worker behind.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
RESULTS = BENCH / "results"
LOGS = RESULTS / "logs"
PG_DSN = "host=127.0.0.1 port=5432 user=postgres"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def utcnow() -> datetime:
    return datetime.now(UTC)


def sleep_until(at: datetime) -> None:
    delay = (at - utcnow()).total_seconds()
    if delay > 0:
        time.sleep(delay)


# --- databases -----------------------------------------------------------------------------


def db_name() -> str:
    """The benchmark database: ``cadence_bench`` unless ``CADENCE_BENCH_NAME`` says otherwise."""
    from django.conf import settings

    return settings.BENCH_NAME


def reset_database(db: str) -> None:
    """Drop and recreate the benchmark database, then migrate it (the ``bench`` app too)."""
    from django.core.management import call_command
    from django.db import connections

    connections.close_all()
    name = db_name()
    if db == "postgresql":
        import psycopg

        with psycopg.connect(f"{PG_DSN} dbname=postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name}")
    elif db == "mysql":
        import MySQLdb

        conn = MySQLdb.connect(host="127.0.0.1", port=3306, user="root", passwd="")
        try:
            cursor = conn.cursor()
            cursor.execute(f"DROP DATABASE IF EXISTS {name}")
            cursor.execute(f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
        finally:
            conn.close()
    else:
        RESULTS.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm", "-journal", ".cadence.lock"):
            (RESULTS / f"{name}.sqlite3{suffix}").unlink(missing_ok=True)
    call_command("migrate", verbosity=0, interactive=False)
    connections.close_all()


def other_pg_activity() -> list[str]:
    """Databases other than ours with active backends: noise on a shared server."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT datname FROM pg_stat_activity "
            "WHERE datname IS NOT NULL AND datname <> %s AND pid <> pg_backend_pid()",
            [db_name()],
        )
        return sorted(row[0] for row in cursor.fetchall())


# --- CPU from /proc ------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int, float, float] | None:
    """(comm, ppid, own CPU s, reaped children's CPU s) of a live process, else None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = raw[raw.index("(") + 1 : raw.rindex(")")]
    rest = raw[raw.rindex(")") + 2 :].split()
    own = (int(rest[11]) + int(rest[12])) / CLK_TCK
    children = (int(rest[13]) + int(rest[14])) / CLK_TCK
    return comm, int(rest[1]), own, children


def _all_stats() -> dict[int, tuple[str, int, float, float]]:
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st:
                stats[int(entry)] = st
    return stats


def tree_cpu(root_pids: list[int]) -> float:
    """CPU seconds of processes and all their descendants (live ones plus reaped ones)."""
    stats = _all_stats()
    children: dict[int, list[int]] = {}
    for pid, (_, ppid, _, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, stack, seen = 0.0, list(root_pids), set()
    while stack:
        pid = stack.pop()
        if pid in seen or pid not in stats:
            continue
        seen.add(pid)
        _, _, own, reaped = stats[pid]
        total += own + reaped
        stack.extend(children.get(pid, ()))
    return total


def db_server_cpu(db: str) -> float:
    """CPU seconds of the database server: every postgres process, or mariadbd.

    PostgreSQL forks a backend per connection; backends that exited are counted through the
    postmaster's reaped-children time. The server is shared: other clients count too (the
    harness records which other databases were active).
    """
    stats = _all_stats()
    if db == "postgresql":
        roots = [
            pid
            for pid, (comm, ppid, _, _) in stats.items()
            if comm == "postgres" and stats.get(ppid, ("",))[0] != "postgres"
        ]
        return tree_cpu(roots)
    if db == "mysql":
        return sum(own for comm, _, own, _ in stats.values() if comm in ("mariadbd", "mysqld"))
    return 0.0


# --- processes -----------------------------------------------------------------------------

_live: dict[int, subprocess.Popen] = {}


def spawn(args: list[str], *, env: dict[str, str], log: Path, cwd: Path = ROOT) -> subprocess.Popen:
    """Start a process in its own session, output to ``log``; killed at harness exit."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            args,
            env={**os.environ, "PYTHONPATH": str(ROOT), **env},
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    _live[proc.pid] = proc
    return proc


def stop(proc: subprocess.Popen, *, grace: float = 15.0, sig: int = signal.SIGTERM) -> int | None:
    """Ask a process to stop, wait ``grace`` seconds, then kill its whole session."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)
    _live.pop(proc.pid, None)
    return proc.returncode


def kill9(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    _live.pop(proc.pid, None)


def _cleanup() -> None:
    for proc in list(_live.values()):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    _live.clear()


def _on_signal(signum, frame) -> None:
    _cleanup()
    sys.exit(128 + signum)


atexit.register(_cleanup)
signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)


def wait_for_line(log: Path, needle: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and needle in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name}: exited with {proc.returncode} before {needle!r}")
        time.sleep(0.05)
    raise RuntimeError(f"{log.name}: no {needle!r} within {timeout} s")


# --- statistics ----------------------------------------------------------------------------


def percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def lag_stats(lags_s: list[float]) -> dict[str, float | None]:
    values = sorted(lags_s)
    ms = {
        f"lag_p{q}_ms": (None if (v := percentile(values, q)) is None else v * 1000)
        for q in (50, 95, 99)
    }
    ms["lag_max_ms"] = values[-1] * 1000 if values else None
    ms["lag_min_ms"] = values[0] * 1000 if values else None
    return ms


@dataclass
class Firings:
    """The rows of ``bench_firing`` due in a window: lags, distinct occurrences, duplicates."""

    rows: list[tuple[str, datetime, datetime]] = field(default_factory=list)

    @classmethod
    def load(cls, start: datetime | None = None, end: datetime | None = None) -> Firings:
        from benchmarks.app.models import Firing

        qs = Firing.objects.all()
        if start is not None:
            qs = qs.filter(due_at__gte=start)
        if end is not None:
            qs = qs.filter(due_at__lt=end)
        return cls(list(qs.values_list("schedule_name", "due_at", "started_at")))

    @property
    def distinct(self) -> int:
        return len({(name, due) for name, due, _ in self.rows})

    @property
    def duplicates(self) -> int:
        return len(self.rows) - self.distinct

    def lags(self) -> list[float]:
        """One lag per occurrence (its first start), in seconds."""
        first: dict[tuple[str, datetime], datetime] = {}
        for name, due, started in self.rows:
            key = (name, due)
            if key not in first or started < first[key]:
                first[key] = started
        return [(started - due).total_seconds() for (_, due), started in first.items()]


# --- tables and results --------------------------------------------------------------------


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    if not rows:
        return "(no rows)"
    columns = columns or list(dict.fromkeys(k for row in rows for k in row))
    cells = [[fmt(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += [
        "  ".join(
            v.ljust(w) if i == 0 else v.rjust(w)
            for i, (v, w) in enumerate(zip(r, widths, strict=False))
        )
        for r in cells
    ]
    return "\n".join(out)


def engine_revision() -> str:
    """The commit under test, with ``+dirty`` when django_cadence/ has local changes."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--", "django_cadence") else "")


def goal(name: str, measured: Any, met: bool | None) -> dict[str, Any]:
    return {"goal": name, "measured": measured, "met": met}


def write_result(result: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"{stamp}-{result['workload']}-{result['system']}-{result['db']}.json"
    path.write_text(json.dumps(result, indent=2, default=str))
    return path


def render(result: dict[str, Any]) -> str:
    head = (
        f"== {result['workload']} {result.get('title', '')} | system={result['system']} "
        f"db={result['db']} workers={result.get('workers')} "
        f"concurrency={result.get('concurrency')} engine={result.get('engine_revision', '?')}"
    )
    parts = [head]
    if result.get("status", "ok") != "ok":
        parts.append(f"status: {result['status']}: {result.get('reason', '')}")
    if result.get("rows"):
        parts.append(table(result["rows"], result.get("columns")))
    if result.get("goals"):
        parts.append(table(result["goals"], ["goal", "measured", "met"]))
    if result.get("noise"):
        parts.append(f"note: other databases active on the server: {', '.join(result['noise'])}")
    for note in result.get("notes", ()):
        parts.append(f"note: {note}")
    return "\n".join(parts)
