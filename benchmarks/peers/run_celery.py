"""Celery beat runner: django-celery-beat's DatabaseScheduler, Redis broker, one worker.

Configuration: Django settings made in ``celery_app.py`` (``django_celery_beat`` on
``cadence_bench``); broker ``redis://127.0.0.1:6379/15`` (flushed first); ``celery worker
--pool threads --concurrency C --without-gossip --without-mingle --without-heartbeat``;
``celery beat -S benchmarks.peers.celery_app:BenchScheduler`` (the DatabaseScheduler,
recording the due instant it acts on; default max loop interval). Interval schedules are
``PeriodicTask`` rows on ``IntervalSchedule(every=N, period=SECONDS)`` with ``start_time``;
one-shots are ``one_off`` tasks on a ``ClockedSchedule``; idle schedules are interval
tasks of one day starting a day ahead (``bulk_create``). Beat runs intervals from the
previous send, not on a fixed grid: its lag is relative to that, and drift shows as fewer
firings than expected.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from benchmarks.peers import _runner, celery_app  # noqa: F401 - configures Django

CONFIG = _runner.load_config()


def main() -> None:
    import redis
    from django.core.management import call_command
    from django_celery_beat.models import (
        ClockedSchedule,
        IntervalSchedule,
        PeriodicTask,
        PeriodicTasks,
    )

    redis.Redis(host="127.0.0.1", port=6379, db=15).flushdb()
    call_command("migrate", verbosity=0)
    task = "bench." + CONFIG["spec"].get("job", "record")
    now = _runner.utcnow()
    day = IntervalSchedule.objects.create(every=86400, period=IntervalSchedule.SECONDS)
    idle = [g for g in CONFIG["spec"]["groups"] if g.get("offset", 0) >= 3600]
    rows = [
        PeriodicTask(
            name=name,
            task=task,
            interval=day,
            kwargs=f'{{"name": "{name}"}}',
            start_time=now + timedelta(days=1),
        )
        for name, _, _ in _runner.schedules({"groups": idle}, now)
    ]
    PeriodicTask.objects.bulk_create(rows, batch_size=5000)
    t0 = _runner.pick_t0(CONFIG)
    active = [g for g in CONFIG["spec"]["groups"] if g.get("offset", 0) < 3600]
    intervals: dict[int, IntervalSchedule] = {}
    clocked = ClockedSchedule.objects.create(clocked_time=t0)
    ones: list[PeriodicTask] = []
    for name, group, at in _runner.schedules({"groups": active}, t0):
        kwargs = f'{{"name": "{name}"}}'
        if group["kind"] == "once":
            ones.append(
                PeriodicTask(name=name, task=task, clocked=clocked, one_off=True, kwargs=kwargs)
            )
            continue
        every = int(group["every"])
        if every not in intervals:
            intervals[every] = IntervalSchedule.objects.create(
                every=every, period=IntervalSchedule.SECONDS
            )
        PeriodicTask.objects.create(
            name=name, task=task, interval=intervals[every], kwargs=kwargs, start_time=at
        )
    PeriodicTask.objects.bulk_create(ones, batch_size=5000)
    PeriodicTasks.update_changed()
    base = [sys.executable, "-m", "celery", "-A", "benchmarks.peers.celery_app"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    run_dir = Path(CONFIG["run_dir"])
    worker_args = ["worker", "--pool", "threads", "--concurrency", str(CONFIG["concurrency"])]
    worker_args += ["--without-gossip", "--without-mingle", "--without-heartbeat", "-Q", "bench"]
    worker = subprocess.Popen(
        [*base, *worker_args, "--loglevel", "WARNING"],
        env=env,
        stdout=(run_dir / "celery-worker.log").open("ab"),
        stderr=subprocess.STDOUT,
    )
    beat_args = ["beat", "-S", "benchmarks.peers.celery_app:BenchScheduler", "--pidfile", ""]
    beat = subprocess.Popen(
        [*base, *beat_args, "--loglevel", "WARNING"],
        env=env,
        stdout=(run_dir / "celery-beat.log").open("ab"),
        stderr=subprocess.STDOUT,
    )
    _runner.announce_ready(CONFIG, t0)
    try:
        _runner.wait_for_stop()
    finally:
        for proc in (beat, worker):
            proc.send_signal(signal.SIGTERM)
        for proc in (beat, worker):
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()
