"""Running one try: thread, child process (killed on cancel), atomic."""

import os
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from django_cadence.engine.claims import Claim
from django_cadence.engine.execution import run_try


def make_claim(executor, payload=None, **fields):
    values = {
        "attempt_id": 1,
        "token": "t",
        "schedule_id": 1,
        "schedule_name": "s",
        "worker": "w",
        "executor": executor,
        "payload": payload or {},
        "occurrence_at": datetime(2026, 1, 1, tzinfo=UTC),
        "trigger": "schedule",
        "tries": 1,
        "recoveries": 0,
        "started_at": datetime(2026, 1, 1, tzinfo=UTC),
        "max_attempts": 3,
        "retry_base": timedelta(seconds=1),
        "retry_cap": timedelta(seconds=1),
        "max_runtime": timedelta(seconds=60),
        "delivery": "at_least_once",
        "isolation": "thread",
        "history": [],
        "pause_after_failures": None,
    }
    values.update(fields)
    return Claim(**values)


def test_execution_thread_result_and_error():
    assert run_try(make_claim("tests.jobs.add", {"a": 1, "b": 2}), None).value == 3
    failed = run_try(make_claim("tests.jobs.raise_error", {"message": "bad"}), None)
    assert failed.kind == "error"
    assert "RuntimeError: bad" in failed.error
    assert run_try(make_claim("tests.jobs.raise_permanent"), None).kind == "permanent"


def test_execution_records_a_job_that_calls_sys_exit_as_a_failed_try():
    """In a thread, ``SystemExit`` would end the thread silently and the try would hang on
    until its timeout; it is a failure like any other."""
    failed = run_try(make_claim("tests.jobs.call_sys_exit", {"code": 3}), None)
    assert failed.kind == "error"
    assert "SystemExit: 3" in failed.error


def test_execution_records_an_async_job_cancelled_from_within_as_a_failed_try():
    """``CancelledError`` is a ``BaseException``: escaping the try, it would end the thread
    and leave the try unrecorded, its slot taken, until its run-time limit."""
    failed = run_try(make_claim("tests.jobs.cancelled_async"), None)
    assert failed.kind == "error"
    assert "CancelledError" in failed.error


def test_execution_refuses_a_path_outside_the_allow_list_at_run_time():
    result = run_try(make_claim("os.system", {"command": "true"}), None)
    assert result.kind == "permanent"  # dead-lettered at once: retrying cannot allow it
    assert "not allowed" in result.error.lower() or "CADENCE_EXECUTORS" in result.error


@pytest.mark.process
def test_execution_process_isolation_runs_in_a_child():
    result = run_try(
        make_claim("tests.jobs.process_sleep", {"seconds": 0}, isolation="process"), None
    )
    assert result.kind == "ok"
    assert result.value != os.getpid()


@pytest.mark.process
def test_execution_process_isolation_is_killed_on_cancel():
    claim = make_claim("tests.jobs.process_sleep", {"seconds": 60}, isolation="process")
    threading.Timer(1.0, claim.cancel_event.set).start()
    started = time.monotonic()
    result = run_try(claim, None)
    assert result.kind == "error"
    assert "killed" in result.error
    assert time.monotonic() - started < 15


@pytest.mark.process
@pytest.mark.parametrize(
    ("kind", "kind_of_result", "expected"),
    [
        ("undecodable", "error", "OSError: cannot open /srv/in/r\ufffdport.csv"),
        ("unprintable", "error", "UnprintableError: <exception str() failed>"),
        ("surrogate_outcome", "ok", "lone surrogate"),
    ],
)
def test_execution_process_isolation_sends_back_cleaned_text(kind, kind_of_result, expected):
    """The child cleans what it sends, as a thread does: the parent gets storable text."""
    from tests.jobs import HOSTILE_SECRET

    result = run_try(
        make_claim("tests.jobs.process_hostile", {"kind": kind}, isolation="process"), None
    )
    assert result.kind == kind_of_result
    text = result.error if kind_of_result == "error" else str(result.value)
    assert expected in text
    text.encode("utf-8")
    assert HOSTILE_SECRET not in text
