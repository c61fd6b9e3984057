"""Chaos harness: a fleet of ``run_cadence`` workers, SIGKILLed and restarted while they work,
the database server restarted under them, and the record checked afterwards.

    python -m benchmarks.chaos [--db postgresql|mysql|sqlite] [--workers 4] [--duration 300]
                               [--kill-every 5] [--restart-db] [--json PATH]
                               [--schedules 200] [--oneshots 2000] [--embedded-writers N]
    python -m benchmarks.chaos soak [--db postgresql] [--minutes 30] [--rate 20]

The run: N workers (subprocesses, ``--settings=benchmarks.chaos_settings``), 200 interval
schedules of 1 to 10 s and 2,000 one-shots spread over the run, with every overlap policy and
jobs that count their executions, sleep, fail, or write an effect atomically. Every K seconds
a random worker is SIGKILLed and started again under a new id; with ``--restart-db`` the
database server is stopped and started once, in the middle (no kill lands near it, so every
recovery time measures a kill alone). At the end every worker gets SIGTERM, every schedule
ends at that instant, and a finisher runs what is left until nothing is pending or running.
Then :mod:`benchmarks.chaos_checks` reads the record: lost, duplicated and double-claimed
occurrences, serial overlaps, orphan recovery times, extra executions, atomic effects; and,
from what the jobs themselves recorded (each execution's start and end, in a file per worker
under ``executions/`` of the run's folder), executions that overlapped or started before
their instant.

``--embedded-writers N`` is the SQLite embedded case: one engine beside N threads writing
through the ORM as a web application would, no kills; the figure is "database is locked"
errors of the engine (and lost occurrences).

The database ``cadence_chaos`` (a file in the run's folder for SQLite) is dropped and made
afresh for each run. Logs and the JSON go to a temporary folder unless ``--json`` says where.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .fleet import (
    DB_ENV,
    DB_NAME_ENV,
    Worker,
    child_env,
    run_cadence_args,
    server_down,
    server_for_this_database,
    stop_all,
)

SETTINGS = "benchmarks.chaos_settings"
JOBS = "benchmarks.chaos_app.jobs"  # the workers' jobs (what chaos_settings allows)
DB_NAME = "cadence_chaos"
NAME_ENV = DB_NAME_ENV
SWEEP_S = 1.0  # the engine looks for expired leases at most once a second
RECOVERY_MARGIN_S = 5.0  # the goal: recovery within lease + sweep + 5 s
# No kill lands from lease + grace + sweep + 1 s before the database restart until this long
# after it (the workers' reconnection back-off): each recovery time then measures a kill.
QUIET_AFTER_S = 5.0

# (overlap, executor, payload, max_attempts or None for the default 3). Sleeps stay below
# the shortest interval for ``queue`` (so its backlog drains) and above it for
# ``skip_if_running``, ``buffer_one`` and ``replace`` (so they skip and cancel).
PROFILES: tuple[tuple[str, str, dict[str, Any], int | None], ...] = (
    ("allow", f"{JOBS}.count_run", {"seconds": 0.3}, None),
    ("allow", f"{JOBS}.count_run", {"seconds": 2.0}, None),
    ("allow", f"{JOBS}.noop", {}, None),
    ("allow", f"{JOBS}.fail_n_times", {"n": 1, "key": "chaos"}, None),
    ("allow", f"{JOBS}.raise_error", {"message": "chaos"}, 2),
    ("allow", f"{JOBS}.atomic_effect", {"seconds": 0.3}, None),
    ("allow", f"{JOBS}.atomic_flaky", {"fail_tries": 1, "seconds": 0.2}, None),
    ("queue", f"{JOBS}.atomic_flaky", {"fail_tries": 9}, 2),  # always a dead letter
    ("skip_if_running", f"{JOBS}.count_run", {"seconds": 1.5}, None),
    ("skip_if_running", f"{JOBS}.sleep_for", {"seconds": 1.0}, None),
    ("queue", f"{JOBS}.count_run", {"seconds": 0.2}, None),
    ("queue", f"{JOBS}.fail_n_times", {"n": 1, "key": "queue"}, None),
    ("buffer_one", f"{JOBS}.count_run", {"seconds": 1.2}, None),
    ("buffer_one", f"{JOBS}.atomic_effect", {"seconds": 0.2}, None),
    ("replace", f"{JOBS}.sleep_for", {"seconds": 4.0}, None),
    ("skip_if_running", f"{JOBS}.raise_permanent", {}, None),
)
ONESHOT_PROFILES: tuple[tuple[str, dict[str, Any], int | None], ...] = (
    (f"{JOBS}.count_run", {"seconds": 0.1}, None),
    (f"{JOBS}.atomic_effect", {}, None),
    (f"{JOBS}.atomic_flaky", {"fail_tries": 1}, None),
    (f"{JOBS}.noop", {}, None),
    (f"{JOBS}.fail_n_times", {"n": 1, "key": "once"}, None),
    (f"{JOBS}.raise_error", {"message": "once"}, 2),
)


@dataclass
class Options:
    db: str = "postgresql"
    workers: int = 4
    duration: float = 300.0
    kill_every: float = 5.0  # 0: no kills
    restart_db: bool = False
    schedules: int = 200
    oneshots: int = 2000
    concurrency: int = 16
    lease: float = 5.0
    recovery_grace: float = 1.0
    shutdown_grace: float = 10.0
    down_seconds: float = 2.0
    embedded_writers: int = 0
    seed: int = 1
    finish_timeout: float = 180.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def recovery_bound(self) -> float:
        return self.lease + self.recovery_grace + SWEEP_S + RECOVERY_MARGIN_S


def utcnow() -> datetime:
    return datetime.now(UTC)


# --- workers -----------------------------------------------------------------------------------


def start_worker(
    name: str, env: dict[str, str], log_dir: Path, *, concurrency: int, max_tick: float = 1.0
) -> Worker:
    """One ``run_cadence`` child on the harness's settings."""
    args = run_cadence_args(SETTINGS, name, concurrency=concurrency, max_tick=max_tick)
    return Worker(name, args, env, log_dir)


class Fleet:
    """The workers, one slot each; a killed worker's slot gets a new incarnation."""

    def __init__(self, options: Options, env: dict[str, str], log_dir: Path) -> None:
        self.options = options
        self.env = env
        self.log_dir = log_dir
        self.slots: dict[int, Worker] = {}
        self.incarnations: dict[int, int] = {}
        self.all: list[Worker] = []
        # When each process (by pid) was seen gone: the end of the executions it cut off.
        self.gone_at: dict[int, float] = {}

    def mark_gone(self, child: Worker, at: float | None = None) -> None:
        self.gone_at.setdefault(child.pid, time.time() if at is None else at)

    def start(self, slot: int) -> Worker:
        n = self.incarnations[slot] = self.incarnations.get(slot, 0) + 1
        child = start_worker(
            f"w{slot}-{n}", self.env, self.log_dir, concurrency=self.options.concurrency
        )
        self.slots[slot] = child
        self.all.append(child)
        return child

    def extra(self, name: str, **kwargs: Any) -> Worker:
        child = start_worker(name, self.env, self.log_dir, **kwargs)
        self.all.append(child)
        return child

    def stop(self, timeout: float) -> dict[str, int | None]:
        """SIGTERM to every live worker at once; exit codes by id (None: did not exit)."""
        live = [child for child in self.slots.values() if child.alive]
        codes = stop_all(live, timeout)
        for child in live:
            if child.alive:
                child.kill()
            self.mark_gone(child)
        return codes

    def kill_everything(self) -> None:
        for child in self.all:
            with contextlib.suppress(Exception):
                child.kill()
            self.mark_gone(child)


def worker_env(
    db_env: dict[str, str], options: Options, executions: Path | None = None
) -> dict[str, str]:
    """The workers' environment; with ``executions``, their jobs record each execution there."""
    from .chaos_app.jobs import EXECUTIONS_ENV

    overrides = {
        "CADENCE_LEASE": options.lease,
        "CADENCE_RECOVERY_GRACE": options.recovery_grace,
        "CADENCE_SHUTDOWN_GRACE": options.shutdown_grace,
        **options.extra,
    }
    env = {**child_env(db_env, overrides), "DJANGO_SETTINGS_MODULE": SETTINGS}
    env.pop("CADENCE_CHAOS_DEBUG", None)
    env.pop(EXECUTIONS_ENV, None)
    if executions is not None:
        env[EXECUTIONS_ENV] = str(executions)
    return env


# --- the scenario ------------------------------------------------------------------------------


def create_schedules(options: Options, start: datetime) -> dict[str, int]:
    """The interval schedules now; the one-shots spread from 2 s in to 5 s before the end."""
    from django.db import transaction

    from django_cadence.models import Schedule

    figures = {"interval": 0, "once": 0}
    with transaction.atomic():
        for i in range(options.schedules):
            overlap, executor, payload, max_attempts = PROFILES[i % len(PROFILES)]
            # ``replace`` admits every new occurrence as pending behind the one it cancels,
            # and a cancel is seen at the next lease renewal (LEASE / 3): below 3 s its
            # backlog would grow without end. From 3 s on it cancels now and then.
            seconds = 3 + i % 8 if overlap == "replace" else 1 + i % 10
            Schedule.objects.create(
                name=f"chaos-{i:03d}-{overlap}-{executor.rsplit('.', 1)[1]}",
                kind="interval",
                interval=timedelta(seconds=seconds),
                executor=executor,
                payload=payload,
                overlap=overlap,
                max_attempts=max_attempts,
                retry_base=timedelta(seconds=0.2),
                retry_cap=timedelta(seconds=1),
            )
            figures["interval"] += 1
    span = max(1.0, options.duration - 7.0)
    rng = random.Random(options.seed)
    with transaction.atomic():
        for i in range(options.oneshots):
            executor, payload, max_attempts = ONESHOT_PROFILES[i % len(ONESHOT_PROFILES)]
            offset = 2.0 + span * i / max(1, options.oneshots) + rng.random() * 0.5
            Schedule.objects.create(
                name=f"chaos-once-{i:04d}-{executor.rsplit('.', 1)[1]}",
                kind="once",
                run_at=start + timedelta(seconds=offset),
                executor=executor,
                payload=payload,
                max_attempts=max_attempts,
                retry_base=timedelta(seconds=0.2),
                retry_cap=timedelta(seconds=1),
            )
            figures["once"] += 1
    return figures


def serial_running_max() -> int:
    """The most attempts one serial schedule has running at this instant (one statement)."""
    from django.db.models import Count

    from django_cadence.models import Attempt

    counts = (
        Attempt.objects.running()
        .exclude(schedule__overlap="allow")
        .order_by()
        .values("schedule_id")
        .annotate(n=Count("id"))
        .values_list("n", flat=True)
    )
    return max(counts, default=0)


def running_of(worker_id: str) -> list[int]:
    from django_cadence.models import Attempt

    return list(Attempt.objects.running().filter(worker=worker_id).values_list("id", flat=True))


def restart_database(seconds: float) -> dict[str, Any]:
    """Stop the server, keep it down ``seconds``, start it again: up again, come what may."""
    server = server_for_this_database()
    if server is None:
        raise RuntimeError("--restart-db needs PostgreSQL or MariaDB")
    down_at = utcnow()
    with server_down(server, seconds):
        pass
    up_at = utcnow()
    return {
        "down_at": down_at.isoformat(),
        "up_at": up_at.isoformat(),
        "seconds": (up_at - down_at).total_seconds(),
    }


def _quietly(default: Any, func, *args: Any) -> Any:
    """``func(*args)``, or ``default`` while the database is away."""
    from django.db import DatabaseError, connection

    try:
        return func(*args)
    except DatabaseError:
        with contextlib.suppress(Exception):
            connection.close()
        return default


class Writers:
    """Threads writing through the ORM as a web application beside the engine would."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.stop = threading.Event()
        self.writes = 0
        self.errors: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._write, args=(n,), name=f"writer-{n}", daemon=True)
            for n in range(count)
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def join(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)

    def _write(self, n: int) -> None:
        from django.db import DatabaseError, connection, transaction

        from .chaos_app.models import Effect

        rng = random.Random(n)
        done = 0
        try:
            while not self.stop.is_set():
                try:
                    if rng.random() < 0.3:
                        with transaction.atomic():
                            for _ in range(5):
                                Effect.objects.create(key=f"writer-{n}-{uuid.uuid4().hex}")
                            Effect.objects.filter(key__startswith=f"writer-{n}-").order_by(
                                "id"
                            ).first()
                        done += 6
                    else:
                        Effect.objects.create(key=f"writer-{n}-{uuid.uuid4().hex}")
                        done += 1
                except DatabaseError as exc:
                    with self._lock:
                        self.errors[str(exc)[:80]] += 1
                self.stop.wait(rng.random() * 0.01)
        finally:
            with self._lock:
                self.writes += done
            connection.close()


# --- one run -----------------------------------------------------------------------------------


def run_chaos(
    options: Options,
    *,
    db_env: dict[str, str],
    log_dir: Path,
    progress=print,
) -> dict[str, Any]:
    """Run the scenario against the configured, migrated, empty database; return the report.

    ``db_env`` points the workers at the same database as this process
    (``benchmarks.fleet.database_env``).
    """
    from django.db import connection
    from django.db.models import Count

    from django_cadence.conf import cadence_settings
    from django_cadence.models import Attempt, Schedule, Status
    from django_cadence.schedule.policies import is_serial

    from . import chaos_checks as checks

    if connection.vendor == "sqlite" and options.workers != 1:
        raise ValueError("SQLite runs one worker per database file: --workers 1")
    if options.restart_db and connection.vendor == "sqlite":
        raise ValueError("--restart-db needs PostgreSQL or MariaDB")
    log_dir.mkdir(parents=True, exist_ok=True)
    executions_dir = log_dir / "executions"
    executions_dir.mkdir(exist_ok=True)
    env = worker_env(db_env, options, executions_dir)
    fleet = Fleet(options, env, log_dir)
    rng = random.Random(options.seed)
    kills: list[dict[str, Any]] = []
    skipped_kills = 0
    unexpected_exits: list[str] = []
    restart: dict[str, Any] | None = None
    samples = serial_max = 0
    writers = Writers(options.embedded_writers) if options.embedded_writers else None

    t_setup = time.monotonic()
    start = utcnow()
    created = create_schedules(options, start)
    progress(
        f"chaos: {connection.vendor}, {created['interval']} interval schedules and "
        f"{created['once']} one-shots in {time.monotonic() - t_setup:.1f} s; "
        f"{options.workers} worker(s), {options.duration:g} s, kill every "
        f"{options.kill_every:g} s, restart db: {options.restart_db}; logs in {log_dir}"
    )
    try:
        for slot in range(1, options.workers + 1):
            fleet.start(slot)
        if writers:
            writers.start()
        began = time.monotonic()
        end = began + options.duration
        middle = began + options.duration / 2
        quiet_before = options.lease + options.recovery_grace + SWEEP_S + 1
        next_kill = began + options.kill_every if options.kill_every else float("inf")
        next_note = began + 30
        while (now := time.monotonic()) < end:
            if options.restart_db and restart is None and now >= middle:
                progress(f"chaos: restarting the database server at {now - began:.0f} s")
                restart = restart_database(options.down_seconds)
                restart["at_s"] = round(now - began, 1)
                restart["up_monotonic"] = time.monotonic()
                progress(f"chaos: database back after {restart['seconds']:.1f} s")
            if now >= next_kill:
                next_kill += options.kill_every
                near_restart = options.restart_db and (
                    (restart is None and now >= middle - quiet_before)
                    or (restart is not None and now < restart["up_monotonic"] + QUIET_AFTER_S)
                )
                if near_restart:
                    skipped_kills += 1  # its recovery would measure the outage, not the kill
                else:
                    slot = rng.choice(sorted(fleet.slots))
                    victim = fleet.slots[slot]
                    victim.kill()
                    at = utcnow()
                    fleet.mark_gone(victim, at.timestamp())
                    hit = _quietly([], running_of, victim.name)
                    kills.append(
                        {
                            "worker": victim.name,
                            "pid": victim.pid,
                            "at": at,
                            "running": hit,
                            "t_s": now - began,
                        }
                    )
                    fleet.start(slot)
            for slot, child in list(fleet.slots.items()):
                if not child.alive:
                    fleet.mark_gone(child)
                    unexpected_exits.append(f"{child.name} exited {child.returncode}")
                    fleet.start(slot)
            serial_max = max(serial_max, _quietly(0, serial_running_max))
            samples += 1
            if now >= next_note:
                next_note += 30
                counts = _quietly({}, _status_counts)
                progress(f"chaos: {now - began:.0f} s, {len(kills)} kills, attempts {counts}")
            time.sleep(0.25)

        # The end: stop the fleet, end every schedule at this instant, finish what is left.
        if writers:
            writers.join()
        stopped_at = utcnow()
        exits = fleet.stop(options.shutdown_grace + 20)
        Schedule.objects.update(end_at=stopped_at)
        finish_started = time.monotonic()
        finished = _finish(fleet, options, stopped_at)
        finish_seconds = time.monotonic() - finish_started
    finally:
        if writers and not writers.stop.is_set():
            writers.join()
        fleet.kill_everything()

    # The verdict.
    if restart:
        restart.pop("up_monotonic", None)
    schedules = list(Schedule.objects.all())
    attempts = list(Attempt.objects.all())
    policies = {s.pk: s.overlap for s in schedules}
    executors = {s.pk: s.executor for s in schedules}
    logs = [child.log_path for child in fleet.all]
    # Workers plan up to CADENCE_CLAIM_AHEAD past their last tick, and the schedules' end_at
    # commits a moment after ``stopped_at``: occurrences that close to the stop may have a
    # record, and need none.
    ahead = cadence_settings.CLAIM_AHEAD + timedelta(seconds=1)
    record = checks.occurrence_record(schedules, stopped_at, ahead)
    history = checks.double_claims_in_history(attempts)
    log_claims = checks.double_claims_in_logs(logs)
    serial = checks.serial_overlaps(attempts, policies)
    runs = checks.executions(checks.read_execution_lines(executions_dir), fleet.gone_at)
    executed = checks.execution_overlaps(runs, {s.name for s in schedules if is_serial(s.overlap)})
    recovered = checks.recoveries(attempts, kills, options.lease)
    lost_attempts = recovered.pop("lost_attempts")
    from .chaos_app.models import Effect

    effect_keys = list(
        Effect.objects.exclude(key__startswith="writer-").values_list("key", flat=True)
    )
    effected = checks.effects(
        attempts, executors, effect_keys, lost_attempts, log_claims["released"]
    )
    statuses = dict(Attempt.objects.order_by().values_list("status").annotate(n=Count("id")))
    not_terminal = statuses.get(Status.PENDING, 0) + statuses.get(Status.RUNNING, 0)
    log_figures = checks.log_figures(logs)
    report: dict[str, Any] = {
        "db": connection.vendor,
        "options": {k: v for k, v in asdict(options).items() if k != "extra"},
        "started_at": start.isoformat(),
        "window": [start.isoformat(), stopped_at.isoformat()],
        "schedules": created,
        "kills": len(kills),
        "kills_skipped_near_restart": skipped_kills,
        "kills_hit_running": sum(1 for k in kills if k["running"]),
        # Running in the database just after the kill: an upper bound, since a commit the
        # worker sent before it died may still land (its try then shows no "lost" entry).
        "tries_hit_by_kills": sum(len(k["running"]) for k in kills),
        "kill_log": [
            {
                "worker": k["worker"],
                "pid": k["pid"],
                "at": k["at"].isoformat(),
                "t_s": round(k["t_s"], 1),
                "running": len(k["running"]),
            }
            for k in kills
        ],
        "unexpected_exits": unexpected_exits,
        "exit_codes_at_stop": exits,
        "db_restart": restart,
        "statuses": statuses,
        "occurrences": record,
        "duplicate_rows": checks.duplicate_rows(),
        "double_claims": {"history": history, "logs": log_claims},
        "serial": {**serial, "sampled_max_running": serial_max, "samples": samples},
        "executions": executed,
        "not_terminal": not_terminal,
        "finish": {"seconds": round(finish_seconds, 1), "finished": finished},
        "recovery": {**recovered, "bound_s": options.recovery_bound},
        "effects": effected,
        "logs": log_figures,
        "log_dir": str(log_dir),
    }
    if writers:
        report["writers"] = {
            "threads": writers.count,
            "writes": writers.writes,
            "errors": dict(writers.errors),
        }
    report["goals"] = goals(report, options)
    report["ok"] = all(goal["ok"] for goal in report["goals"])
    return report


def _status_counts() -> dict[str, int]:
    from django.db.models import Count

    from django_cadence.models import Attempt

    return dict(Attempt.objects.order_by().values_list("status").annotate(n=Count("id")))


def _finish(fleet: Fleet, options: Options, stopped_at: datetime) -> bool:
    """A finisher worker until no attempt is pending or running and nothing is left to plan
    (each schedule ended at ``stopped_at``); True if that happened within the timeout."""
    from django_cadence.models import Attempt, Schedule, Status

    def done() -> bool:
        unfinished = Attempt.objects.filter(status__in=(Status.PENDING, Status.RUNNING))
        unplanned = Schedule.objects.filter(enabled=True, next_run_at__lte=stopped_at)
        return not unfinished.exists() and not unplanned.exists()

    finisher = fleet.extra("finisher", concurrency=max(16, options.concurrency))
    deadline = time.monotonic() + options.finish_timeout
    ok = False
    try:
        while time.monotonic() < deadline:
            if _quietly(False, done):
                ok = True
                break
            if not finisher.alive:
                fleet.mark_gone(finisher)
                finisher = fleet.extra(
                    f"finisher-{len(fleet.all)}", concurrency=max(16, options.concurrency)
                )
            time.sleep(0.5)
    finally:
        finisher.terminate()
        if finisher.exit_code(options.shutdown_grace + 20) is None:
            finisher.kill()
        fleet.mark_gone(finisher)
    return ok


# --- goals and the table -----------------------------------------------------------------------


def goals(report: dict[str, Any], options: Options) -> list[dict[str, Any]]:
    record, effects_ = report["occurrences"], report["effects"]
    claims = report["double_claims"]
    recovery = report["recovery"]
    rows = [
        ("lost occurrences", record["lost"], "0", record["lost"] == 0),
        (
            "duplicate (schedule, occurrence) rows",
            report["duplicate_rows"],
            "0",
            report["duplicate_rows"] == 0,
        ),
        (
            "occurrences recorded twice or outside the window",
            record["duplicated"] + record["beyond"],
            "0",
            record["duplicated"] + record["beyond"] == 0,
        ),
        (
            "double claims (history overlaps, repeated tries, double starts)",
            claims["history"]["overlaps"]
            + claims["history"]["repeated_try_numbers"]
            + claims["logs"]["double_starts"],
            "0",
            claims["history"]["overlaps"]
            + claims["history"]["repeated_try_numbers"]
            + claims["logs"]["double_starts"]
            == 0,
        ),
        (
            "serial overlaps (history, > 200 ms)",
            report["serial"]["overlaps"],
            "0",
            report["serial"]["overlaps"] == 0,
        ),
        (
            "executions recorded by the jobs themselves",
            report["executions"]["executions"],
            "> 0",
            report["executions"]["executions"] > 0,
        ),
        (
            "live executions of one attempt at once (jobs' records, > 200 ms)",
            report["executions"]["attempt_overlaps"],
            "0",
            report["executions"]["attempt_overlaps"] == 0,
        ),
        (
            "executions started before their instant (jobs' records)",
            report["executions"]["started_early"],
            "0",
            report["executions"]["started_early"] == 0,
        ),
        (
            "serial overlaps (jobs' records, > 200 ms)",
            report["executions"]["serial_overlaps"],
            "0",
            report["executions"]["serial_overlaps"] == 0,
        ),
        (
            "serial schedules seen running twice",
            max(0, report["serial"]["sampled_max_running"] - 1),
            "0",
            report["serial"]["sampled_max_running"] <= 1,
        ),
        (
            "attempts not terminal at the end",
            report["not_terminal"],
            "0",
            report["not_terminal"] == 0 and report["finish"]["finished"],
        ),
        (
            "atomic effects not exactly once",
            effects_["atomic_not_exactly_once"],
            "0",
            effects_["atomic_not_exactly_once"] == 0,
        ),
        (
            "extra executions of non-atomic jobs",
            effects_["counting_extra"],
            f"<= {effects_['counting_extra_allowed']} (tries cut off)",
            effects_["counting_extra"] <= effects_["counting_extra_allowed"]
            and effects_["counting_succeeded_without_execution"] == 0,
        ),
        (
            "workers that exited on their own",
            len(report["unexpected_exits"]),
            "0",
            not report["unexpected_exits"],
        ),
    ]
    if options.kill_every:
        worst = recovery["max_s"]
        rows.append(
            (
                "orphan recovery max (s)",
                "-" if worst is None else round(worst, 2),
                f"<= {options.recovery_bound:g}",
                worst is None or worst <= options.recovery_bound,
            )
        )
    if options.embedded_writers:
        locked = report["logs"].get("database_is_locked", 0)
        rows.append(("engine 'database is locked' errors", locked, "0", locked == 0))
    return [{"goal": g, "measured": m, "target": t, "ok": bool(ok)} for g, m, t, ok in rows]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return "-" if value is None else str(value)


def render(report: dict[str, Any]) -> str:
    recovery = report["recovery"]
    effects_ = report["effects"]
    executed = report["executions"]
    restart = report["db_restart"]
    lines = [
        (
            f"== chaos on {report['db']}: {report['options']['workers']} worker(s), "
            f"{report['options']['duration']:g} s, {report['schedules']['interval']} interval "
            f"schedules, {report['schedules']['once']} one-shots"
        ),
        (
            f"kills: {report['kills']} ({report['kills_hit_running']} hit running tries, "
            f"{report['tries_hit_by_kills']} tries; {report['kills_skipped_near_restart']} "
            "skipped near the restart)"
        ),
        "database restart: "
        + (f"down {restart['seconds']:.1f} s at {restart['at_s']} s" if restart else "none"),
        f"attempts: {report['statuses']}",
        (
            f"occurrences expected: {report['occurrences']['expected']} "
            f"({report['occurrences']['missed']} recorded missed)"
        ),
        (
            f"orphan recovery (s): n={recovery['count']} p50={_fmt(recovery['p50_s'])} "
            f"p99={_fmt(recovery['p99_s'])} max={_fmt(recovery['max_s'])} "
            f"(lease {recovery['lease_s']:g}, bound {recovery['bound_s']:g}); lost tries: "
            f"{recovery['lost_by_kill']} by kills, {recovery['lost_other']} otherwise"
        ),
        (
            f"counting job: {effects_['counting_attempts']} attempts, "
            f"{effects_['counting_executions']} executions, {effects_['counting_extra']} extra "
            f"(allowed {effects_['counting_extra_allowed']})"
        ),
        (
            f"atomic jobs: {effects_['atomic_attempts']} attempts, {effects_['atomic_succeeded']} "
            f"succeeded, {effects_['atomic_effects']} effects"
        ),
        (
            f"fenced-out writes: {report['double_claims']['logs']['fenced_out_writes']}, "
            f"released at shutdown: {report['double_claims']['logs']['released']}, "
            f"worst serial overlap {report['serial']['worst_s']:.3f} s, "
            f"finish {report['finish']['seconds']} s"
        ),
        (
            f"executions recorded by the jobs: {executed['executions']}, "
            f"{executed['cut_off']} cut off by a kill or the stop "
            f"({executed['cut_off_and_run_again']} run again); worst overlap of one attempt "
            f"{executed['attempt_worst_s']:.3f} s, of a serial schedule "
            f"{executed['serial_worst_s']:.3f} s; {executed['started_early']} started before "
            "their instant"
        ),
        f"logs: {report['logs']}",
    ]
    if "writers" in report:
        lines.append(f"writers: {report['writers']}")
    rows = report["goals"]
    widths = [max(len(str(r[c])) for r in rows) for c in ("goal", "measured", "target")]
    widths = [max(w, len(h)) for w, h in zip(widths, ("goal", "measured", "target"), strict=True)]
    header = ("goal", "measured", "target", "ok")
    lines.append(
        f"{header[0]:<{widths[0]}}  {header[1]:>{widths[1]}}  {header[2]:<{widths[2]}}  ok"
    )
    for r in rows:
        lines.append(
            f"{r['goal']:<{widths[0]}}  {_fmt(r['measured']):>{widths[1]}}  "
            f"{r['target']:<{widths[2]}}  {'yes' if r['ok'] else 'NO'}"
        )
    problems = (
        report["occurrences"]["examples"]
        + report["double_claims"]["history"]["examples"]
        + report["double_claims"]["logs"]["examples"]
        + report["serial"]["examples"]
        + report["executions"]["examples"]
        + report["effects"]["examples"]
        + report["unexpected_exits"]
    )
    lines += [f"  ! {p}" for p in problems[:20]]
    lines.append("ALL GOALS MET" if report["ok"] else "GOALS NOT MET")
    return "\n".join(lines)


def to_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, default=str)


# --- the command line --------------------------------------------------------------------------


def setup_django(db: str, name: str, *, debug: bool = False) -> dict[str, str]:
    """Point ``benchmarks.chaos_settings`` at ``name`` on ``db``; returns the workers' env."""
    db_env = {DB_ENV: db, NAME_ENV[db]: name}
    os.environ.update(db_env)
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS
    if debug:
        os.environ["CADENCE_CHAOS_DEBUG"] = "1"
    import django

    django.setup()
    return db_env


def reset_database(db: str, name: str) -> None:
    """Drop and create the harness's database, then migrate it (the chaos app too)."""
    from django.core.management import call_command
    from django.db import connection, connections

    connections.close_all()
    settings = connection.settings_dict
    if db == "postgresql":
        import psycopg

        dsn = f"host={settings['HOST']} port={settings['PORT']} user={settings['USER']}"
        with psycopg.connect(f"{dsn} dbname=postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    elif db == "mysql":
        import MySQLdb

        conn = MySQLdb.connect(
            host=settings["HOST"],
            port=int(settings["PORT"]),
            user=settings["USER"],
            passwd=settings["PASSWORD"],
        )
        try:
            cursor = conn.cursor()
            cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
            cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        finally:
            conn.close()
    else:
        for suffix in ("", "-wal", "-shm", "-journal", ".cadence.lock"):
            Path(f"{name}{suffix}").unlink(missing_ok=True)
    call_command("migrate", verbosity=0, interactive=False)
    connections.close_all()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.chaos", description=__doc__.split("\n")[0]
    )
    defaults = Options()
    parser.add_argument("--db", choices=tuple(NAME_ENV), default="postgresql")
    parser.add_argument("--workers", type=int, default=None, help="default 4 (1 on SQLite)")
    parser.add_argument("--duration", type=float, default=defaults.duration)
    parser.add_argument("--kill-every", type=float, default=None, help="0: no kills")
    parser.add_argument("--restart-db", action="store_true")
    parser.add_argument(
        "--schedules", type=int, default=None, help=f"default {defaults.schedules} (40 on SQLite)"
    )
    parser.add_argument(
        "--oneshots", type=int, default=None, help=f"default {defaults.oneshots} (400 on SQLite)"
    )
    parser.add_argument("--concurrency", type=int, default=defaults.concurrency)
    parser.add_argument("--lease", type=float, default=defaults.lease)
    parser.add_argument("--recovery-grace", type=float, default=defaults.recovery_grace)
    parser.add_argument("--embedded-writers", type=int, default=0)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--db-name", default=None, help=f"default {DB_NAME}")
    parser.add_argument("--log-dir", default=None)
    parser.add_argument("--json", default=None, help="where to write the report")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["soak"]:
        from .chaos_soak import main as soak_main

        return soak_main(argv[1:])
    args = _parser().parse_args(argv)
    log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix=f"cadence-chaos-{args.db}-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    name = args.db_name or (str(log_dir / f"{DB_NAME}.sqlite3") if args.db == "sqlite" else DB_NAME)
    embedded = args.embedded_writers > 0
    sqlite = args.db == "sqlite"
    options = Options(
        db=args.db,
        workers=args.workers or (4 if args.db != "sqlite" else 1),
        duration=args.duration,
        kill_every=args.kill_every if args.kill_every is not None else (0 if embedded else 5),
        restart_db=args.restart_db,
        # One SQLite engine has the slots of one worker, not four: a fifth of the load.
        schedules=args.schedules if args.schedules is not None else (40 if sqlite else 200),
        oneshots=args.oneshots if args.oneshots is not None else (400 if sqlite else 2000),
        concurrency=args.concurrency,
        lease=args.lease,
        recovery_grace=args.recovery_grace,
        embedded_writers=args.embedded_writers,
        seed=args.seed,
    )
    db_env = setup_django(args.db, name)
    reset_database(args.db, name)
    report = run_chaos(options, db_env=db_env, log_dir=log_dir)
    print(render(report), flush=True)
    path = Path(args.json) if args.json else log_dir / "chaos.json"
    path.write_text(to_json(report))
    print(f"-> {path}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
