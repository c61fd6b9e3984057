"""django-cadence under test: ``run_cadence`` worker processes and schedules made from a spec.

A *spec* (shared with the peers) is a list of schedule groups, each with times relative to
an epoch ``t0`` that the system picks once its slow setup is done:

``{"prefix": "w2-", "count": 200, "kind": "interval", "every": 1, "offset": 0}``
``{"prefix": "w1-", "count": 1000, "kind": "once", "offset": 0}``
``{"prefix": "idle-", "count": 100000, "kind": "interval", "every": 86400, "offset": 86400}``

optionally with ``"misfire"`` and ``"grace"`` (seconds), ``"queue"`` (the schedules'
queue) and ``"calendars"`` (the names of calendars they run under). ``job`` is ``record``
(insert a ``bench_firing`` row) or ``noop``; ``calendars`` (ours only) maps each calendar
name to its rules (``{"weekdays": ["sat", "sun"]}``), created before the schedules.

Groups of at most ``SAVE_LIMIT`` schedules are created with ``Schedule.save()``, the path
users take. Larger ones (W1's 1,000, W3's 100,000, W5's 2,000) are ``bulk_create``d with
``next_run_at`` computed by the model's own ``compute_next_run_at()``: the same rows, but
they bypass ``save()`` (its validation, one INSERT and one NOTIFY each) for setup speed.
Workers are started after the schedules exist, so nothing depends on a wake-up.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from . import harness

SAVE_LIMIT = 300
EXECUTORS = {"record": "benchmarks.app.jobs.record", "noop": "benchmarks.app.jobs.noop"}


def make_schedules(spec: dict[str, Any], t0) -> None:
    from django_cadence.models import calendar_sets

    make_calendars(spec.get("calendars", {}))
    with calendar_sets.snapshot():  # the calendars read once, not once per bulk schedule
        _make_groups(spec, t0)
    _analyze()


def make_calendars(definitions: dict[str, dict[str, Any]]) -> None:
    """The spec's calendars (exclude mode, UTC), created or brought to the given rules."""
    from django_cadence.models import Calendar

    for name, rules in definitions.items():
        Calendar.objects.update_or_create(name=name, defaults={"rules": rules})


def _make_groups(spec: dict[str, Any], t0) -> None:
    from django.db import transaction

    from django_cadence.models import Schedule

    executor = EXECUTORS[spec.get("job", "record")]
    for group in spec["groups"]:
        at = t0 + timedelta(seconds=group.get("offset", 0))
        rows = []
        for i in range(group["count"]):
            s = Schedule(
                name=f"{group['prefix']}{i:06d}",
                kind=group["kind"],
                executor=executor,
                created_at=harness.utcnow(),
                overlap=group.get("overlap", "skip_if_running"),
                misfire=group.get("misfire", "fire_once"),
            )
            if group.get("grace") is not None:
                s.misfire_grace = timedelta(seconds=group["grace"])
            if group.get("queue"):
                s.queue = group["queue"]
            if group.get("calendars"):
                s.calendars = list(group["calendars"])
            if group["kind"] == "once":
                s.run_at = at
            else:
                s.interval = timedelta(seconds=group["every"])
                s.start_at = at
            rows.append(s)
        if group["count"] <= SAVE_LIMIT:
            with transaction.atomic():
                for s in rows:
                    s.save()
            continue
        for s in rows:
            s.enabled_at = s.created_at
            s.next_run_at = s.compute_next_run_at()
        for start in range(0, len(rows), 5000):
            Schedule.objects.bulk_create(rows[start : start + 5000])


def _analyze() -> None:
    """Fresh planner statistics after a bulk load (autovacuum would get there within a minute)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ANALYZE")
        elif connection.vendor == "mysql":
            cursor.execute("ANALYZE TABLE django_cadence_schedule, django_cadence_attempt")
            cursor.fetchall()


def _default_concurrency() -> int:
    """What a ``run_cadence`` started without ``--concurrency`` runs with."""
    from django_cadence import store
    from django_cadence.conf import cadence_settings

    return cadence_settings.CONCURRENCY or store.of().default_concurrency


class Cadence:
    """N ``run_cadence`` workers on one database; with ``queues``, one worker per queue
    (``w1`` serves ``queues[0]``, and so on), started with ``--queues`` and, when
    ``queue_concurrency`` is set, with that many threads each."""

    name = "cadence"

    def __init__(
        self,
        db: str,
        *,
        workers: int = 1,
        concurrency: int | None = None,  # None: the engine's default (CADENCE_CONCURRENCY)
        run_dir: Path,
        count_queries: bool = False,
        profile: bool = False,
        phases: bool = False,
    ) -> None:
        self.db = db
        self.workers = workers
        self.concurrency = concurrency or _default_concurrency()
        self.run_dir = run_dir
        self.count_queries = count_queries
        self.profile = profile
        self.phases = phases
        self.queues: list[str] | None = None
        self.queue_concurrency: int | None = None  # the threads of each queue's worker
        self.procs: dict[str, Any] = {}
        self.profilers: dict[str, Any] = {}

    def worker_names(self) -> list[str]:
        """``w1``, ``w2``...: one per queue when ``queues`` is set, else ``workers`` of them."""
        count = len(self.queues) if self.queues else self.workers
        return [f"w{i}" for i in range(1, count + 1)]

    def queue_of(self, name: str) -> str | None:
        """The queue worker ``name`` serves (None: every queue)."""
        if not self.queues:
            return None
        return self.queues[int(name.removeprefix("w")) - 1]

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self, spec: dict[str, Any], lead: float) -> Any:
        """Create the spec's schedules, start the workers; returns ``t0``."""
        idle = [g for g in spec["groups"] if g.get("offset", 0) >= 3600]
        active = [g for g in spec["groups"] if g.get("offset", 0) < 3600]
        if idle:  # the slow bulk load first, so the lead only covers the rest
            make_schedules({**spec, "groups": idle}, harness.utcnow())
        t0 = harness.utcnow() + timedelta(seconds=lead)
        make_schedules({**spec, "groups": active}, t0)
        from django.db import connections

        connections.close_all()
        # Started side by side: ten one after the other would outlast the lead.
        offsets = {name: self._spawn_worker(name) for name in self.worker_names()}
        for name, offset in offsets.items():
            self._await_worker(name, offset)
        return t0

    def start_worker(self, name: str) -> None:
        self._await_worker(name, self._spawn_worker(name))

    def threads_of(self, name: str) -> int:
        """The ``--concurrency`` worker ``name`` runs with."""
        if self.queue_of(name) and self.queue_concurrency:
            return self.queue_concurrency
        return self.concurrency

    def _spawn_worker(self, name: str) -> int:
        """Start worker ``name``; returns where its log stood before it started."""
        log = self.run_dir / f"{name}.log"
        env = {"CADENCE_BENCH_DB": self.db, "CADENCE_BENCH_WORKER": name}
        if self.count_queries:
            env["CADENCE_BENCH_COUNT_QUERIES"] = str(self.query_file(name))
        if self.phases:
            env["CADENCE_BENCH_PHASES"] = str(self.phase_file(name))
        args = [
            sys.executable,
            "-m",
            "django",
            "run_cadence",
            "--settings=benchmarks.settings",
            "--worker-id",
            name,
        ]
        if self.threads_of(name):
            args += ["--concurrency", str(self.threads_of(name))]
        queue = self.queue_of(name)
        if queue:
            args += ["--queues", queue]
        offset = log.stat().st_size if log.exists() else 0
        self.procs[name] = harness.spawn(args, env=env, log=log)
        return offset

    def _await_worker(self, name: str, offset: int) -> None:
        """Wait until worker ``name`` has started; then profile it if asked (``w1`` only)."""
        proc = self.procs[name]
        _wait_started(self.run_dir / f"{name}.log", offset, proc)
        if self.profile and name == "w1":
            out = self.run_dir / f"{name}.pyspy.txt"
            args = [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "--pid",
                str(proc.pid),
                "--format",
                "raw",
            ]
            args += ["-o", str(out), "--nonblocking", "--rate", "1000", "--threads", "--gil"]
            self.profilers[name] = harness.spawn(
                args,
                env={},
                log=self.run_dir / f"{name}.pyspy.log",
            )

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs.values() if p.poll() is None]

    def cpu(self) -> float:
        return harness.tree_cpu(self.pids())

    def kill9(self, name: str = "w1") -> None:
        harness.kill9(self.procs.pop(name))

    def snapshot_queries(self) -> None:
        for proc in self.procs.values():
            proc.send_signal(signal.SIGUSR1)
        time.sleep(0.3)

    def phase_file(self, name: str) -> Path:
        return self.run_dir / f"phases-{name}.json"

    def query_file(self, name: str) -> Path:
        return self.run_dir / f"queries-{name}.jsonl"

    def queries_between_snapshots(self) -> dict[str, int]:
        """Statements per kind between the last two SIGUSR1 snapshots, summed over workers."""
        total: dict[str, int] = {}
        for name in self.procs:
            lines = [
                json.loads(line)
                for line in self.query_file(name).read_text().splitlines()
                if line.strip()
            ]
            snaps = [line for line in lines if line["label"] == "usr1"]
            if len(snaps) < 2:
                continue
            before, after = snaps[-2]["by_kind"], snaps[-1]["by_kind"]
            for kind, n in after.items():
                total[kind] = total.get(kind, 0) + n - before.get(kind, 0)
        return total

    def stop(self) -> dict[str, int | None]:
        codes = {name: harness.stop(proc) for name, proc in self.procs.items()}
        for prof in self.profilers.values():
            harness.stop(prof, grace=20, sig=signal.SIGINT)
        return codes


def _wait_started(log: Path, offset: int, proc, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with log.open("rb") as f:
            f.seek(offset)
            if b"engine started" in f.read():
                return
        if proc.poll() is not None:
            raise RuntimeError(f"worker exited with {proc.returncode}; see {log}")
        time.sleep(0.05)
    raise RuntimeError(f"worker not started within {timeout} s; see {log}")
