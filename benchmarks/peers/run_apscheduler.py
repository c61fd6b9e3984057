"""APScheduler 3 runner: a BackgroundScheduler with the SQLAlchemy job store on PostgreSQL.

Configuration (see ``benchmarks/peers/apscheduler.py``): ``SQLAlchemyJobStore`` on
``postgresql+psycopg://.../cadence_bench`` (table ``apscheduler_jobs``), a
``ThreadPoolExecutor(max_workers=concurrency)``, ``job_defaults = {"coalesce": False,
"max_instances": 1, "misfire_grace_time": 60}`` (60 s like django-cadence's default grace;
APScheduler's own default of 1 s would drop W1's late starts instead of running them).
One-shots use ``DateTrigger``; interval schedules ``IntervalTrigger(seconds=N,
start_date=...)``. The executor hands each scheduled run time to the job (APScheduler 3 does
not pass it), splitting a batch of run times into one ``run_job`` call each, unchanged
otherwise.
"""

from __future__ import annotations

import threading

from apscheduler.executors.base import run_job
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from benchmarks.peers import _runner

CONFIG = _runner.load_config()
DSN = CONFIG["dsn"]
_due = threading.local()


def record(name: str) -> None:
    started_at = _runner.utcnow()
    _runner.record(DSN, name, _due.at, started_at)


def noop(name: str) -> None:
    return None


class DueTimeExecutor(ThreadPoolExecutor):
    """APScheduler's thread pool, telling the job which scheduled run time it runs for."""

    def _do_submit_job(self, job, run_times):
        def one_by_one() -> list:
            events = []
            for run_time in run_times:
                _due.at = run_time
                events += run_job(job, job._jobstore_alias, [run_time], self._logger.name)
            return events

        def callback(f):
            exc = f.exception()
            if exc:
                self._run_job_error(job.id, exc, getattr(exc, "__traceback__", None))
            else:
                self._run_job_success(job.id, f.result())

        self._pool.submit(one_by_one).add_done_callback(callback)


def main() -> None:
    url = "postgresql+psycopg://postgres@127.0.0.1:5432/cadence_bench"
    scheduler = BackgroundScheduler(
        jobstores={"default": SQLAlchemyJobStore(url=url)},
        executors={"default": DueTimeExecutor(max_workers=CONFIG["concurrency"])},
        job_defaults={"coalesce": False, "max_instances": 1, "misfire_grace_time": 60},
        timezone="UTC",
    )
    func = record if CONFIG["spec"].get("job", "record") == "record" else noop
    scheduler.start(paused=True)
    idle = [g for g in CONFIG["spec"]["groups"] if g.get("offset", 0) >= 3600]
    active = [g for g in CONFIG["spec"]["groups"] if g.get("offset", 0) < 3600]
    now = _runner.utcnow()
    for name, group, at in _runner.schedules({"groups": idle}, now):
        _add(scheduler, func, name, group, at)
    t0 = _runner.pick_t0(CONFIG)
    for name, group, at in _runner.schedules({"groups": active}, t0):
        _add(scheduler, func, name, group, at)
    scheduler.resume()
    _runner.announce_ready(CONFIG, t0)
    _runner.wait_for_stop()
    scheduler.shutdown(wait=True)


def _add(scheduler, func, name, group, at) -> None:
    if group["kind"] == "once":
        trigger = DateTrigger(run_date=at)
    else:
        trigger = IntervalTrigger(seconds=group["every"], start_date=at)
    scheduler.add_job(func, trigger, args=[name], id=name, replace_existing=False)


if __name__ == "__main__":
    main()
