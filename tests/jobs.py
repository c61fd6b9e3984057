"""Executors for the whole test suite, allowed by ``CADENCE_EXECUTORS = ["tests.jobs.*"]``.

Module-level, simple and deterministic, so a child process can import them by path too. The
fleet's jobs (``noop``, ``sleep_for``, ``fail_n_times``, ``raise_error``, ``raise_permanent``)
record each execution themselves, as the chaos harness's do, when ``CADENCE_TEST_EXECUTIONS``
names a directory (``benchmarks.chaos_app.jobs.execution_record``).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.chaos_app.jobs import execution_record, sleep_or_cancel
from django_cadence.exceptions import Permanent
from django_cadence.executors.registry import job

CALLS: list[str] = []
"""Labels recorded by :func:`record_call`, in call order; tests clear it."""

GATE = threading.Event()
"""Opened by a test to let :func:`wait_at_gate` tries finish; tests clear it."""


def noop(context: Any = None, **kwargs: Any) -> None:
    with execution_record(context):
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


def raise_permanent(context: Any = None, **kwargs: Any) -> None:
    with execution_record(context):
        raise Permanent("permanent failure")


def call_sys_exit(code: int = 3) -> None:
    """A job that calls ``sys.exit()``, as a script turned into a job may."""
    sys.exit(code)


async def cancelled_async() -> None:
    """An async job whose own task is cancelled (a timeout helper misused): ``asyncio.run``
    raises ``CancelledError``, which is not an ``Exception``."""
    task = asyncio.current_task()
    assert task is not None
    task.cancel()
    await asyncio.sleep(0)


def raise_error(message: str = "boom", context: Any = None) -> None:
    with execution_record(context):
        raise RuntimeError(message)


def sleep_for(seconds: float, context: Any = None) -> str:
    """Sleep ``seconds`` in small steps; return ``"cancelled"`` early once cancelled."""
    with execution_record(context):
        return sleep_or_cancel(seconds, context)


def record_span(
    directory: str, seconds: float, context: Any, rerun_seconds: float | None = None
) -> str:
    """Run ``seconds`` (``rerun_seconds`` from the second try on, if given; stopping early once
    cancelled) and record this execution in a file of its own in ``directory``: its start
    first, then its end and whether it saw its cancel.

    Execution guarantees (never two at once, never twice) are counted from these files, which
    the job writes itself, not from the rows the engine writes.
    """
    path, span = _start_span(directory, context)
    if rerun_seconds is not None and context.try_number > 1:
        seconds = rerun_seconds
    outcome = sleep_or_cancel(seconds, context)
    span.update(end=time.time(), cancelled=outcome == "cancelled")
    _write_whole(path, span)
    return outcome


def record_span_deaf(directory: str, seconds: float, context: Any) -> str:
    """``record_span`` for a job that ignores its cancel event: it sleeps its ``seconds``."""
    path, span = _start_span(directory, context)
    time.sleep(seconds)
    span.update(end=time.time(), cancelled=context.cancelled)
    _write_whole(path, span)
    return "slept"


def _start_span(directory: str, context: Any) -> tuple[Path, dict[str, Any]]:
    """Record an execution's start in a file of its own in ``directory``."""
    path = Path(directory) / f"{uuid.uuid4().hex}.json"
    span: dict[str, Any] = {
        "schedule": context.schedule_name,
        "key": context.idempotency_key,
        "try": context.try_number,
        "pid": os.getpid(),
        "start": time.time(),
    }
    _write_whole(path, span)
    return path, span


def _write_whole(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` so that a reader sees the old file or the new one, never a part."""
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(record))
    partial.replace(path)


def fail_n_times(n: int, key: str, context: Any) -> str:
    """Fail tries 1..n of an attempt, succeed from try n + 1 on."""
    with execution_record(context):
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


@job(queue="reports")
def reports_noop(**kwargs):
    """A no-op whose schedules wait in the reports queue unless they name another."""
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
    sleep_or_cancel(seconds)
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
    sleep_or_cancel(seconds)
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


def raise_with_kwargs(**kwargs: Any) -> None:
    """Fail with the payload's repr in the message, as careless job code does (redaction)."""
    raise RuntimeError(f"could not log in with {kwargs!r}")


def charge_card(context: Any, journal: str, block: float = 0, fail: bool = False) -> str:
    """Mark the attempt uncertain, then "charge" (append a line to ``journal``), then block.

    The journal is the job's own record of how often the step ran; ``fail`` raises after it.
    """
    context.mark_uncertain("charging card")
    with Path(journal).open("a") as record:
        record.write(f"charged {context.idempotency_key} try {context.try_number}\n")
    sleep_for(block, context)
    if fail:
        raise RuntimeError("the card provider answered 502")
    return "charged"


@job(isolation="process")
def charge_card_then_die(context: Any, journal: str) -> None:
    """In a child process: mark the attempt uncertain, "charge", then die without a result."""
    context.mark_uncertain("charging card")
    Path(journal).write_text(f"charged {context.idempotency_key}\n")
    os._exit(3)


# --- hostile jobs: text and values the engine must record without dying (tests/*/test_hostile_*)

HOSTILE_SECRET = "Sup3r-s3cret"
"""A password every hostile error carries, which no row or log line may show."""


class UnprintableError(RuntimeError):
    """An exception whose ``__str__`` raises, as a broken library's may."""

    def __str__(self) -> str:
        raise ValueError("no str for you")


class BadRepr:
    """Not JSON, and its ``repr`` raises."""

    def __repr__(self) -> str:
        raise ValueError("no repr for you")


def _hostile_outcome(kind: str) -> Any:
    outcomes: dict[str, Any] = {
        "surrogate_outcome": {"file": "r\udcffport.csv"},
        "nul_outcome": {"row": "a\x00b"},
        "nan_outcome": {"ratio": float("nan")},
        "inf_outcome": float("inf"),
        "huge_outcome": "y" * 2_000_000,
        "bad_repr_outcome": [BadRepr()],
        "secret_outcome": {"url": f"postgres://etl:{HOSTILE_SECRET}@db/x", "at": object()},
    }
    return outcomes[kind]


def hostile(kind: str, context: Any) -> Any:
    """Record this try (an ``Effect`` per execution), then misbehave as ``kind`` says.

    Errors: ``undecodable`` (a lone surrogate from an undecodable file name), ``nul``,
    ``unprintable`` (``__str__`` raises), ``huge`` (a 5 MB message). Outcomes that cannot
    be stored as they are: ``*_outcome``. Every error carries :data:`HOSTILE_SECRET`.
    """
    from tests.models import Effect

    Effect.objects.create(key=f"{context.idempotency_key}|{context.try_number}|{uuid.uuid4().hex}")
    return _misbehave(kind)


@job(isolation="process")
def process_hostile(kind: str) -> Any:
    """:func:`hostile` in a child process, recording nothing: what the child sends back."""
    return _misbehave(kind)


def _misbehave(kind: str) -> Any:
    dsn = f"postgres://etl:{HOSTILE_SECRET}@db.internal/prod"
    if kind == "undecodable":
        raise OSError(f"cannot open /srv/in/r\udcffport.csv (loading into {dsn})")
    if kind == "nul":
        raise RuntimeError(f"bad row 'a\x00b' from {dsn}")
    if kind == "unprintable":
        raise UnprintableError(dsn)
    if kind == "huge":
        raise RuntimeError(f"password={HOSTILE_SECRET} " + "x" * 5_000_000)
    return _hostile_outcome(kind)


def hang(**kwargs: Any) -> None:
    """Never return, and ignore cancellation: the job a thread cannot be taken back from."""
    while True:
        time.sleep(0.2)


def record_start(context: Any) -> str:
    """Insert an ``Effect`` keyed ``<schedule>|<occurrence>``: its ``created_at`` is when the
    occurrence ran, so its lag is measured from the job's own record."""
    from tests.models import Effect

    Effect.objects.create(key=f"{context.schedule_name}|{context.occurrence_at.isoformat()}")
    return "recorded"


@job(delivery="atomic")
def record_span_in_transaction(directory: str, seconds: float, context: Any) -> str:
    """``record_span`` inside the try's own transaction, after inserting its ``Effect``: a
    session of the worker inside a transaction that holds a row lock another run of the same
    occurrence needs (the unique key), as a network cut may find it."""
    from tests.models import Effect

    Effect.objects.create(key=context.idempotency_key)
    return record_span(directory, seconds, context)


def run_sql(sql: str) -> None:
    """Run ``sql`` on this thread's connection (a statement that takes long, as a rule)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(sql)


def report_session(path: str) -> None:
    """Write what this try's database session is bounded by (``store/bounds``): the server's
    limits on it, and the TCP options on its socket."""
    import socket

    from django.db import connection

    from django_cadence import store

    names = {
        "postgresql": ["idle_in_transaction_session_timeout", "statement_timeout"],
        "mysql": ["idle_transaction_timeout", "max_statement_time"],
    }[connection.vendor]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            values = {}
            for name in names:
                cursor.execute(f"SELECT setting FROM pg_settings WHERE name = '{name}'")
                values[name] = cursor.fetchone()[0]
        else:
            cursor.execute(f"SELECT {', '.join('@@SESSION.' + n for n in names)}")
            values = dict(zip(names, map(str, cursor.fetchone()), strict=True))
    sock = socket.socket(fileno=store.of().socket_of(connection.connection))
    try:
        values["keepalive"] = sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)
        values["keepidle"] = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)
        values["user_timeout"] = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT)
    finally:
        sock.detach()
    Path(path).write_text(json.dumps(values))


NOTIFIED: list[dict[str, Any]] = []
"""Messages :func:`notify_into_list` received (a ``callable`` channel of CADENCE_NOTIFY)."""


def notify_into_list(message: dict[str, Any]) -> None:
    NOTIFIED.append(message)
