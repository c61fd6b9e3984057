"""Soak: one engine firing ``--rate`` occurrences a second for ``--minutes``, with
``DEBUG = True`` (Django then keeps the queries it runs), its memory and the database's
connection count sampled every 10 s.

    python -m benchmarks.chaos soak [--db postgresql|mysql|sqlite] [--minutes 30] [--rate 20]

The engine must not grow: its resident memory (``VmRSS`` from ``/proc``), its threads and
open files, and the connections it holds are printed per sample, and their growth from the
first sample after a one-minute warm-up to the last. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from .chaos import (
    DB_NAME,
    JOBS,
    NAME_ENV,
    reset_database,
    setup_django,
    start_worker,
    worker_env,
)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def threads(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


def open_files(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def connections(db: str, name: str, pid: int) -> int:
    """Database connections of this database (the soak's engine is its only client)."""
    from django.db import connection

    if db == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> "
                "pg_backend_pid()",
                [name],
            )
            return cursor.fetchone()[0]
    if db == "mysql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = %s "
                "AND ID <> CONNECTION_ID()",
                [name],
            )
            return cursor.fetchone()[0]
    # SQLite: the engine's open descriptors on the database file.
    target = str(Path(name).resolve())
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if str(fd.readlink()) == target:
                count += 1
        except OSError:
            continue
    return count


def create_schedules(rate: int) -> None:
    """``rate`` interval schedules of 1 s: ``rate`` firings a second."""
    from django_cadence.models import Schedule

    for i in range(rate):
        Schedule.objects.create(
            name=f"soak-{i:03d}",
            kind="interval",
            interval=timedelta(seconds=1),
            executor=f"{JOBS}.noop",
            overlap="allow",
        )


def lag_figures(since) -> dict[str, Any]:
    from django_cadence.models import Attempt

    from .chaos_checks import percentile

    rows = Attempt.objects.filter(started_at__gte=since).values_list("started_at", "occurrence_at")
    lags = [(s - o).total_seconds() for s, o in rows]
    return {
        "firings": len(lags),
        "lag_p50_s": percentile(lags, 50),
        "lag_p99_s": percentile(lags, 99),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.chaos soak")
    parser.add_argument("--db", choices=tuple(NAME_ENV), default="postgresql")
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--rate", type=int, default=20)
    parser.add_argument("--every", type=float, default=10, help="seconds between samples")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--log-dir", default=None)
    args = parser.parse_args(argv)

    log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix=f"cadence-soak-{args.db}-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    name = str(log_dir / f"{DB_NAME}.sqlite3") if args.db == "sqlite" else f"{DB_NAME}_soak"
    db_env = setup_django(args.db, name, debug=True)
    reset_database(args.db, name)
    create_schedules(args.rate)

    from django.utils import timezone

    from .chaos import Options

    env = worker_env(db_env, Options(db=args.db))
    env["CADENCE_CHAOS_DEBUG"] = "1"
    engine = start_worker("soak", env, log_dir, concurrency=args.concurrency)
    began = time.monotonic()
    started = timezone.now()
    samples: list[dict[str, Any]] = []
    print(f"soak: {args.db}, DEBUG=True, {args.rate} firings/s, {args.minutes:g} min; {log_dir}")
    print(f"{'t_s':>6} {'rss_mib':>8} {'threads':>7} {'fds':>5} {'conns':>5} {'firings':>8}")
    try:
        while (elapsed := time.monotonic() - began) < args.minutes * 60:
            time.sleep(args.every - (elapsed % args.every))
            if not engine.alive:
                raise SystemExit(f"the engine exited: see {engine.log_path}")
            pid = engine.process.pid
            from django_cadence.models import Attempt

            sample = {
                "t_s": round(time.monotonic() - began),
                "rss_kib": rss_kib(pid),
                "threads": threads(pid),
                "fds": open_files(pid),
                "connections": connections(args.db, name, pid),
                "firings": Attempt.objects.count(),
            }
            samples.append(sample)
            print(
                f"{sample['t_s']:>6} {sample['rss_kib'] / 1024:>8.1f} {sample['threads']:>7} "
                f"{sample['fds']:>5} {sample['connections']:>5} {sample['firings']:>8}",
                flush=True,
            )
    finally:
        engine.terminate()
        if engine.exit_code(40) is None:
            engine.kill()
    warm = [s for s in samples if s["t_s"] >= 60] or samples
    first, last = warm[0], warm[-1]
    hours = max(1e-9, (last["t_s"] - first["t_s"]) / 3600)
    growth = (last["rss_kib"] - first["rss_kib"]) / 1024
    summary = {
        "db": args.db,
        "minutes": args.minutes,
        "rate": args.rate,
        "rss_mib_first": round(first["rss_kib"] / 1024, 1),
        "rss_mib_last": round(last["rss_kib"] / 1024, 1),
        "rss_mib_max": round(max(s["rss_kib"] for s in samples) / 1024, 1),
        "rss_growth_mib": round(growth, 2),
        "rss_growth_mib_per_hour": round(growth / hours, 2),
        "connections_min": min(s["connections"] for s in samples),
        "connections_max": max(s["connections"] for s in samples),
        "threads_max": max(s["threads"] for s in samples),
        "fds_first": first["fds"],
        "fds_last": last["fds"],
        **lag_figures(started),
        "errors_in_log": engine.output().count(" ERROR "),
        "tracebacks_in_log": engine.output().count("Traceback"),
    }
    print(
        "soak growth: "
        + ", ".join(f"{k}={v}" for k, v in summary.items() if k not in ("db", "minutes", "rate"))
    )
    (log_dir / "soak.json").write_text(
        json.dumps({"summary": summary, "samples": samples}, indent=2)
    )
    print(f"-> {log_dir / 'soak.json'}")
    return 0
