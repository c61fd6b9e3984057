"""Recovery after ``kill -9`` with default settings: how long a killed worker's running try
waits before a running worker hands it back.

    python -m benchmarks recovery [--db postgresql|mysql|sqlite] [--kills 20]

Each round: a victim worker claims a try of a one-shot schedule (a 3 s sleep), a survivor
worker is started beside it and logs that it runs, the victim is SIGKILLed, and the time from
the kill to the recovery write (polled every 10 ms) is recorded. On SQLite the survivor is
started after the kill (one engine per file): the figure includes its start. The database
(``--database``, default ``cadence_recovery``) is made afresh; logs go to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from .chaos import JOBS, SETTINGS, reset_database, setup_django
from .fleet import Worker, child_env, run_cadence_args, wait_until

DB_NAME = "cadence_recovery"


def _worker(name: str, env: dict[str, str], logs: Path) -> Worker:
    return Worker(name, run_cadence_args(SETTINGS, name), env, logs).wait_started(30)


def _wait(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    return wait_until(predicate, timeout=timeout, message=what, interval=0.01)


def one_round(i: int, db: str, env: dict[str, str], logs: Path) -> float:
    """Seconds from the victim's kill to its try's recovery."""
    from django.db import connections

    from django_cadence.models import Attempt, Status

    victim = _worker(f"victim-{i}", env, logs)
    schedule = _one_shot(i)
    running = Attempt.objects.filter(schedule=schedule, status=Status.RUNNING)
    _wait(running.exists, 30, "the victim's try")
    survivor = None
    if db != "sqlite":
        survivor = _worker(f"survivor-{i}", env, logs)
        time.sleep(random.uniform(0.5, 1.5))  # at work, at no set phase of its probe
    killed = time.monotonic()
    victim.kill()
    if survivor is None:
        survivor = _worker(f"survivor-{i}", env, logs)
    recovered = Attempt.objects.filter(schedule=schedule, recoveries__gte=1)
    _wait(recovered.exists, 60, "the recovery")
    seconds = time.monotonic() - killed
    survivor.terminate()
    survivor.exit_code(30)
    connections.close_all()
    return seconds


def _one_shot(i: int):
    from django.utils import timezone

    from django_cadence.models import Schedule

    return Schedule.objects.create(
        name=f"recovery-{i}",
        kind="once",
        run_at=timezone.now() - timedelta(seconds=1),
        executor=f"{JOBS}.sleep_for",
        payload={"seconds": 3},
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks recovery")
    parser.add_argument("--db", default="postgresql", choices=("postgresql", "mysql", "sqlite"))
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--database", default=DB_NAME, help="made afresh (servers only)")
    args = parser.parse_args(argv)
    logs = Path(tempfile.mkdtemp(prefix="cadence-recovery-"))
    name = str(logs / "db.sqlite3") if args.db == "sqlite" else args.database
    env = child_env(setup_django(args.db, name))  # no overrides: the default settings
    reset_database(args.db, name)
    times = sorted(one_round(i, args.db, env, logs) for i in range(args.kills))
    p99 = times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]
    result = {
        "db": args.db,
        "kills": len(times),
        "p50_s": round(statistics.median(times), 3),
        "p99_s": round(p99, 3),
        "max_s": round(times[-1], 3),
        "logs": str(logs),
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
