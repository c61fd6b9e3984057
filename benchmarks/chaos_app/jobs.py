"""The chaos harness's jobs (allowed by ``benchmarks/chaos_settings.py``): they count their
executions, sleep, fail, or write an effect atomically, and each records its own runs.

Module-level, so a ``run_cadence`` child imports them by dotted path.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django_cadence.exceptions import Permanent
from django_cadence.executors.registry import job

EXECUTIONS_ENV = "CADENCE_TEST_EXECUTIONS"
"""A directory: when set, every job here records each of its executions in it."""


def _append(path: Path, line: dict[str, Any]) -> None:
    """One line, in one ``write`` to a file opened for appending: the threads of a worker
    share its file, and a line written is kept whatever happens to the process next."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


@contextlib.contextmanager
def execution_record(context: Any) -> Iterator[None]:
    """Record this execution's own start and end (``time.time()``, whatever the body does)
    in ``<pid>.jsonl`` under ``$CADENCE_TEST_EXECUTIONS``, if set, with the instant of its
    occurrence.

    A worker killed mid-run leaves the start without its end. The harness counts overlapping
    executions, and executions that started before their instant, from these lines, which
    the jobs write themselves, not from the rows the engine writes.
    """
    directory = os.environ.get(EXECUTIONS_ENV)
    if not directory or context is None:
        yield
        return
    path = Path(directory) / f"{os.getpid()}.jsonl"
    base = {
        "run": uuid.uuid4().hex,
        "attempt": context.attempt_id,
        "schedule": context.schedule_name,
        "try": context.try_number,
        "pid": os.getpid(),
    }
    _append(path, {**base, "occurrence": context.occurrence_at.timestamp(), "start": time.time()})
    try:
        yield
    finally:
        _append(path, {**base, "end": time.time()})


def sleep_or_cancel(seconds: float, context: Any = None) -> str:
    """Sleep ``seconds`` in small steps; ``"cancelled"`` early once the try is cancelled."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if context is not None:
            if context.cancel_event.wait(min(left, 0.05)):
                return "cancelled"
        else:
            time.sleep(min(left, 0.05))
    return "done"


def noop(context: Any = None) -> None:
    with execution_record(context):
        return None


def sleep_for(seconds: float, context: Any = None) -> str:
    with execution_record(context):
        return sleep_or_cancel(seconds, context)


def raise_error(message: str = "boom", context: Any = None) -> None:
    with execution_record(context):
        raise RuntimeError(message)


def raise_permanent(context: Any = None) -> None:
    with execution_record(context):
        raise Permanent("permanent failure")


def fail_n_times(n: int, key: str, context: Any) -> str:
    """Fail tries 1..n of an attempt, succeed from try n + 1 on."""
    with execution_record(context):
        if context.try_number <= n:
            raise RuntimeError(f"failing try {context.try_number} of {n} ({key})")
        return "ok"


def count_run(context: Any, seconds: float = 0) -> str:
    """Insert one ``Effect`` per execution (``<idempotency key>|<random>``), then sleep.

    A try run twice (two workers claiming one attempt) shows as two rows with the same prefix.
    """
    from .models import Effect

    with execution_record(context):
        Effect.objects.create(key=f"{context.idempotency_key}|{uuid.uuid4().hex}")
        sleep_or_cancel(seconds)
        return "counted"


@job(delivery="atomic")
def atomic_effect(context: Any, seconds: float = 0) -> str:
    """Atomic: insert an ``Effect`` keyed by the idempotency key, then sleep. The effect and
    the fenced success write commit together: a killed try leaves no ``Effect`` row."""
    from .models import Effect

    with execution_record(context):
        Effect.objects.create(key=context.idempotency_key)
        sleep_or_cancel(seconds)
        return "effect written"


@job(delivery="atomic")
def atomic_flaky(context: Any, fail_tries: int = 1, seconds: float = 0) -> str:
    """Atomic: insert an ``Effect`` keyed by the idempotency key, sleep, then fail while
    ``context.try_number <= fail_tries``. A failed try rolls its insert back, so a succeeded
    attempt has exactly one ``Effect`` and a dead-lettered one none."""
    from .models import Effect

    with execution_record(context):
        Effect.objects.create(key=context.idempotency_key)
        sleep_or_cancel(seconds)
        if context.try_number <= fail_tries:
            raise RuntimeError(f"atomic try {context.try_number} fails after its insert")
        return "effect written"
