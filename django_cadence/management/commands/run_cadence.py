"""``manage.py run_cadence``: a thin shell around :class:`~django_cadence.engine.Engine`.

It parses options, installs signal handlers and runs the engine with its start-up
(:func:`start_up`: the declared schedules applied, a summary logged), which the engine,
below ops, leaves to it. The first SIGTERM/SIGINT stops claiming and drains; a second one
exits at once (leases then expire and another worker recovers the attempts). A worker
holding ``CADENCE_STUCK_THREADS_LIMIT`` stuck threads drains and exits with status 3, for its
supervisor to start a fresh one, after recording the ``worker_unhealthy`` episode that
``CADENCE_NOTIFY`` tells of; one whose stopped try runs on past its claim exits at once
with status 4 (``engine.watchdog``).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import socket
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor

from django_cadence import log_output, metrics, store
from django_cadence.engine.loop import Engine
from django_cadence.exceptions import UnsupportedConnection
from django_cadence.management.arguments import positive_int, positive_seconds, queues, worker_id
from django_cadence.models import Event
from django_cadence.notify import episodes
from django_cadence.ops.reconcile import reconcile_on_start
from django_cadence.ops.status import schedules_summary
from django_cadence.schedule.queues import InvalidQueue
from django_cadence.store import bounds
from django_cadence.store.base import Store
from django_cadence.store.sqlite import EngineAlreadyRunning, SQLiteStore

logger = logging.getLogger("django_cadence.engine")

UNHEALTHY_EXIT = 3  # too many stuck threads (CADENCE_STUCK_THREADS_LIMIT): replace this worker


class Command(BaseCommand):
    help = "Run the django-cadence engine: plan due occurrences, run them, record results."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--concurrency",
            type=positive_int,
            default=None,
            help="Tries run at once by this worker (default CADENCE_CONCURRENCY, else "
            f"{Store.default_concurrency}, or {SQLiteStore.default_concurrency} on SQLite).",
        )
        parser.add_argument(
            "--once",
            action="store_true",
            help="One pass: claim what is due, run it to the end, exit.",
        )
        parser.add_argument(
            "--max-tick",
            type=positive_seconds,
            default=None,
            help="Longest sleep between passes, in seconds (default CADENCE_MAX_TICK).",
        )
        parser.add_argument(
            "--worker-id",
            type=worker_id,
            default=None,
            help="This worker's name in attempts and logs: up to 200 printable characters, "
            "no whitespace (default host:pid:random).",
        )
        parser.add_argument(
            "--queues",
            type=queues,
            default=None,
            help="Run only the attempts of these queues, by name separated by commas "
            "(billing,reports); without it, every queue. NAME:N lets that queue's tries hold "
            "at most N threads (reports:2,default:6); when every queue has one and "
            "--concurrency is not given, the worker's threads are their sum.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        _bound_connections()
        _refuse_unmigrated_database()
        log_output.ensure_output()
        try:
            engine = Engine(
                worker_id=options["worker_id"],
                concurrency=options["concurrency"],
                max_tick=options["max_tick"],
                queues=options["queues"],
            )
        except InvalidQueue as exc:  # a thread share larger than the worker's threads
            raise CommandError(str(exc)) from None
        metrics.start_from_settings()  # only with CADENCE_METRICS and CADENCE_METRICS_PORT
        stop = threading.Event()
        _install_signal_handlers(stop)
        try:
            engine.run(stop, once=options["once"], on_start=start_up)
        except (EngineAlreadyRunning, UnsupportedConnection) as exc:
            raise CommandError(str(exc)) from None
        if engine.unhealthy:
            # As Gunicorn recycles a worker that missed its timeout: a fresh process has no
            # stuck threads. Status 3 tells its supervisor to start one.
            exited_unhealthy(engine, engine.unhealthy, UNHEALTHY_EXIT)
            raise CommandError(engine.unhealthy, returncode=UNHEALTHY_EXIT)


def exited_unhealthy(engine: Engine, why: str, status: int) -> None:
    """Record, before the exit, the ``worker_unhealthy`` episode of this host (CADENCE_NOTIFY):
    any worker's notifier sends it. A database that cannot take the write loses it: the
    supervisor's restart, and Sentry's missed check-ins, still say so."""
    with contextlib.suppress(DatabaseError):
        host = socket.gethostname()
        episodes.open_or_count(
            Event.WORKER_UNHEALTHY,
            f"host:{host}",
            host,
            engine.clock.now(),
            detail=f"worker {engine.worker_id} exited with status {status}: {why}",
        )


def start_up(engine: Engine) -> None:
    """What a worker does once it holds the engine lock, before it ticks: apply the schedules
    declared in code (``CADENCE_RECONCILE_ON_START``), then log how many may fire and when."""
    reconcile_on_start(engine.clock, holder=engine.worker_id, using=engine.using)
    with contextlib.suppress(DatabaseError):
        logger.info(schedules_summary())
    # What is loaded by now (Django, the apps, the jobs' modules) lives as long as the worker:
    # kept out of the collector's full passes, each of which would otherwise walk all of it
    # (some 20 ms, a pause in whatever burst it lands in).
    gc.freeze()


def _bound_connections() -> None:
    """Every connection of this worker waits on a silent network for seconds, not for as long
    as the kernel retries (docs/design.md, "A worker cut off from its database"); one opened
    already (by the system checks) is closed, to be opened again bounded."""
    using = store.alias()
    bounds.bound_connections(using)
    connections[using].close()


def _refuse_unmigrated_database() -> None:
    """Stop at once, in one line, when the app's tables are not there yet.

    A database that cannot be reached is left to the engine, which waits for it to return.
    """
    try:
        executor = MigrationExecutor(connections[store.alias()])
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError:
        return
    missing = [migration.name for migration, _ in plan if migration.app_label == "django_cadence"]
    if missing:
        raise CommandError(
            f"The database lacks django_cadence's tables ({len(missing)} migration(s) not "
            "applied): run `python manage.py migrate` first."
        )


def _install_signal_handlers(stop: threading.Event) -> None:
    def handle(signum: int, frame: object) -> None:
        if stop.is_set():
            logger.warning(
                "second signal: exiting now; running tries are not handed back: another "
                "worker recovers them as a dead worker's, each recovery counted "
                "(CADENCE_MAX_RECOVERIES)"
            )
            logging.shutdown()
            os._exit(1)
        logger.info(  # an ordinary stop: a deploy or a supervisor asks for it
            "signal %s: stopping: no new tries; draining, then exiting",
            signal.Signals(signum).name,
        )
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
