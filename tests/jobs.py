"""Executors for the whole test suite, allowed by ``CADENCE_EXECUTORS = ["tests.jobs.*"]``.

Module-level, simple and deterministic, so a child process can import them by path too.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from django_cadence.exceptions import Permanent
from django_cadence.executors.registry import job

CALLS: list[str] = []
"""Labels recorded by :func:`record_call`, in call order; tests clear it."""

GATE = threading.Event()
"""Opened by a test to let :func:`wait_at_gate` tries finish; tests clear it."""


def noop(**kwargs: Any) -> None:
    return None


def echo(**kwargs: Any) -> dict[str, Any]:
    return kwargs


def add(a: int, b: int) -> int:
    return a + b


def with_context(context: Any, label: str = "x") -> dict[str, Any]:
    return {"label": label, "try": context.try_number, "key": context.idempotency_key}


async def async_add(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a + b


async def async_with_context(context: Any) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"try": context.try_number, "key": context.idempotency_key}


def raise_permanent(**kwargs: Any) -> None:
    raise Permanent("permanent failure")


def raise_error(message: str = "boom") -> None:
    raise RuntimeError(message)


def sleep_for(seconds: float, context: Any = None) -> str:
    """Sleep ``seconds`` in small steps; return ``"cancelled"`` early once cancelled."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if context is not None:
            if context.cancel_event.wait(min(left, 0.05)):
                return "cancelled"
        else:
            time.sleep(min(left, 0.05))
    return "done"


def record_span(directory: str, seconds: float, context: Any) -> str:
    """Run ``seconds`` (stopping early once cancelled) and record this execution in a file
    of its own in ``directory``: its start first, then its end and whether it saw its cancel.

    Execution guarantees (never two at once, never twice) are counted from these files, which
    the job writes itself, not from the rows the engine writes.
    """
    path = Path(directory) / f"{uuid.uuid4().hex}.json"
    span: dict[str, Any] = {
        "schedule": context.schedule_name,
        "key": context.idempotency_key,
        "try": context.try_number,
        "pid": os.getpid(),
        "start": time.time(),
    }
    path.write_text(json.dumps(span))
    outcome = sleep_for(seconds, context)
    span.update(end=time.time(), cancelled=outcome == "cancelled")
    path.write_text(json.dumps(span))
    return outcome


def fail_n_times(n: int, key: str, context: Any) -> str:
    """Fail tries 1..n of an attempt, succeed from try n + 1 on."""
    if context.try_number <= n:
        raise RuntimeError(f"failing try {context.try_number} of {n} ({key})")
    return "ok"


def record_call(label: str, context: Any = None) -> str:
    CALLS.append(label)
    return label


def wait_at_gate(label: str) -> str:
    """Record the call, then wait (up to 10 s) until the test opens :data:`GATE`."""
    CALLS.append(label)
    GATE.wait(10)
    return label


def kill_worker() -> None:
    """Kill the process running the job, as a crash would (for recovery tests)."""
    os.kill(os.getpid(), signal.SIGKILL)


@job(delivery="at_most_once")
def at_most_once_noop(**kwargs):
    """A no-op whose lost tries must never be re-run automatically."""
    return None


@job(delivery="atomic")
def atomic_noop(**kwargs):
    """An atomic job with no effect: its success is written in its own transaction."""
    return "atomic"


def count_run(context: Any, seconds: float = 0) -> str:
    """Insert one ``Effect`` per execution (``<idempotency key>|<random>``), then sleep.

    A try run twice (two workers claiming one attempt) shows as two rows with the same prefix.
    """
    from tests.models import Effect

    Effect.objects.create(key=f"{context.idempotency_key}|{uuid.uuid4().hex}")
    sleep_for(seconds)
    return "counted"


@job(delivery="atomic")
def atomic_effect(context: Any, seconds: float = 0, marker: str = "") -> str:
    """Atomic: insert an ``Effect`` keyed by the idempotency key, touch ``marker``, sleep.

    The effect and the fenced success write commit together, so a worker killed during the
    sleep leaves no ``Effect`` row; the marker file tells a test the insert has happened.
    """
    from tests.models import Effect

    Effect.objects.create(key=context.idempotency_key)
    if marker:
        Path(marker).write_text(f"try {context.try_number}\n")
    sleep_for(seconds)
    return "effect written"


@job(isolation="process")
def process_sleep(seconds: float = 30) -> int:
    """Sleeps in a child process, ignoring cancel events: only killing it stops it early."""
    time.sleep(seconds)
    return os.getpid()


def fails_until_file(path: str) -> str:
    """Fail permanently (a dead letter at once) while ``path`` is missing; succeed once it exists.

    The browser test retries the dead letter from the admin after creating the file.
    """
    if not Path(path).exists():
        raise Permanent(f"{Path(path).name} is not there yet")
    return f"imported {Path(path).name}"


@job(delivery="atomic")
def atomic_flaky(context: Any, fail_tries: int = 1, seconds: float = 0) -> str:
    """Atomic: insert an ``Effect`` keyed by the idempotency key, sleep, then fail while
    ``context.try_number <= fail_tries``. A failed try rolls its insert back, so a succeeded
    attempt has exactly one ``Effect`` and a dead-lettered one none (the chaos harness)."""
    from tests.models import Effect

    Effect.objects.create(key=context.idempotency_key)
    sleep_for(seconds)
    if context.try_number <= fail_tries:
        raise RuntimeError(f"atomic try {context.try_number} fails after its insert")
    return "effect written"


def raise_with_kwargs(**kwargs: Any) -> None:
    """Fail with the payload's repr in the message, as careless job code does (redaction)."""
    raise RuntimeError(f"could not log in with {kwargs!r}")
