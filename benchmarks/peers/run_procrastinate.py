"""Procrastinate 3 runner: one worker process on PostgreSQL, periodic tasks and deferred jobs.

Configuration: ``App(connector=PsycopgConnector(conninfo=... cadence_bench))``, schema applied
on the fresh database; ``run_worker_async(concurrency=C, fetch_job_polling_interval=0.5,
listen_notify=True)`` with its periodic deferrer. The polling interval is lowered from its
default of 5 s because a job deferred with ``schedule_at`` in the future is only seen by
polling (its NOTIFY fires at defer time). Interval schedules are periodic tasks,
``cron="*/N * * * * *"`` (croniter's seconds field), one ``periodic_id`` each; the task gets
its due instant as ``timestamp``. One-shots are jobs deferred with ``schedule_at=due``; idle
schedules are jobs deferred a day ahead (``batch_defer_async``).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from procrastinate import App, PsycopgConnector

from benchmarks.peers import _runner

CONFIG = _runner.load_config()
DSN = CONFIG["dsn"]
RECORD = CONFIG["spec"].get("job", "record") == "record"

app = App(connector=PsycopgConnector(conninfo=DSN))


@app.task(name="bench_periodic")
def periodic_record(timestamp: int, name: str) -> None:
    started_at = _runner.utcnow()
    if RECORD:
        _runner.record(DSN, name, datetime.fromtimestamp(timestamp, UTC), started_at)


@app.task(name="bench_once")
def once_record(name: str, due: str) -> None:
    started_at = _runner.utcnow()
    if RECORD:
        _runner.record(DSN, name, datetime.fromisoformat(due), started_at)


def register_periodic() -> None:
    for name, group, _ in _runner.schedules(CONFIG["spec"], _runner.utcnow()):
        if group["kind"] == "interval" and group.get("offset", 0) < 3600:
            every = int(group["every"])
            cron = "* * * * * *" if every == 1 else f"*/{every} * * * * *"
            app.periodic(cron=cron, periodic_id=name, task_kwargs={"name": name})(periodic_record)


async def main() -> None:
    register_periodic()
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        now = _runner.utcnow()
        idle = [g for g in CONFIG["spec"]["groups"] if g.get("offset", 0) >= 3600]
        names = [name for name, _, _ in _runner.schedules({"groups": idle}, now)]
        later = once_record.configure(schedule_at=now + timedelta(days=1))
        for start in range(0, len(names), 5000):
            await later.batch_defer_async(
                *(
                    {"name": n, "due": (now + timedelta(days=1)).isoformat()}
                    for n in names[start : start + 5000]
                )
            )
        t0 = _runner.pick_t0(CONFIG)
        ones = [g for g in CONFIG["spec"]["groups"] if g["kind"] == "once"]
        by_due: dict[datetime, list[str]] = {}
        for name, _, at in _runner.schedules({"groups": ones}, t0):
            by_due.setdefault(at, []).append(name)
        for at, batch in by_due.items():
            deferrer = once_record.configure(schedule_at=at)
            await deferrer.batch_defer_async(*({"name": n, "due": at.isoformat()} for n in batch))
        _runner.announce_ready(CONFIG, t0)
        await app.run_worker_async(
            concurrency=CONFIG["concurrency"],
            fetch_job_polling_interval=0.5,
            listen_notify=True,
            install_signal_handlers=True,
        )


if __name__ == "__main__":
    asyncio.run(main())
