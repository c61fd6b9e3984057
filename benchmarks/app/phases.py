"""Where a ``run_cadence`` worker's time goes, step by step: thread CPU and wall per phase.

A sampling profile says which functions are on the CPU; it does not say how long a firing
spends planning, claiming or recording, nor how much of that is waiting on the database.
This wraps the engine's steps (looked up where their callers look them up) with timers of
the calling thread's CPU and of wall time, and writes the totals as JSON to the file named
by ``CADENCE_BENCH_PHASES`` when the worker exits. Nested steps are counted in their parent
too. It measures; it changes nothing the engine does.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import json
import threading
import time

# (module the caller looks the name up in, attribute path, label). Indented labels are parts
# of the unindented one above them.
PHASES = (
    ("django_cadence.engine.loop", "Engine.tick", "tick (all of the main thread's steps)"),
    ("django_cadence.engine.lost_workers", "LostWorkerWatch.probe", "  recovery probe"),
    ("django_cadence.engine.planner", "plan_due", "  plan"),
    ("django_cadence.engine.planner", "due_schedules", "    read and lock due schedules"),
    ("django_cadence.engine.planner", "overlap_states", "    overlap counts"),
    ("django_cadence.engine.planner", "_plan_schedule", "    policies and rows (Python)"),
    ("django_cadence.store.batch_writes", "insert_planned", "    insert attempts"),
    ("django_cadence.engine.planner", "_advance", "    advance slots"),
    ("django_cadence.engine.leases", "claim", "  claim"),
    ("django_cadence.engine.leases", "_CANDIDATES.rows", "    locking read"),
    ("django_cadence.store.batch_writes", "start_tries", "    start UPDATE"),
    ("django_cadence.engine.leases", "claim_of", "    build claims (Python)"),
    ("django_cadence.engine.outcomes", "record_successes", "  record successes"),
    ("django_cadence.store.batch_writes", "end_in_success", "    success UPDATE"),
    ("django_cadence.engine.wake_up", "sleep_seconds", "  sleep decision"),
    ("django_cadence.engine.running", "run_try", "try threads: run_try (the job included)"),
)

_lock = threading.Lock()
_totals: dict[str, list[float]] = {}  # label -> [calls, cpu_s, wall_s]


def _timed(function, label: str):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        cpu, wall = time.thread_time(), time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
            with _lock:
                total = _totals.setdefault(label, [0, 0.0, 0.0])
                total[0] += 1
                total[1] += cpu
                total[2] += wall

    return timed


def resolve(module_name: str, attribute: str) -> tuple[object, str]:
    """The object that holds a phase's callable, and the callable's name on it."""
    owner = importlib.import_module(module_name)
    *parents, name = attribute.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    return owner, name


def install(path: str) -> None:
    for module_name, attribute, label in PHASES:
        owner, name = resolve(module_name, attribute)
        setattr(owner, name, _timed(getattr(owner, name), label))

    def write() -> None:
        with _lock:
            rows = [
                {"phase": label, "calls": int(t[0]), "cpu_s": t[1], "wall_s": t[2]}
                for _, _, label in PHASES
                if (t := _totals.get(label))
            ]
        with open(path, "w") as f:
            json.dump(rows, f)

    atexit.register(write)
