"""Odd text never kills a worker: errors that cannot be encoded, printed or stored whole, and
outcomes that cannot be stored as they are, are recorded as cleaned, bounded, redacted text.

The engine runs inline on the fake clock here (in a thread where the thread's survival is the
point); ``tests/fleet/test_hostile_jobs.py`` runs the same jobs in real ``run_cadence``
processes.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from django_cadence.engine.outcomes import MAX_ERROR_CHARS
from django_cadence.executors.redaction import REDACTED
from django_cadence.models import Attempt, Status
from tests.executors.test_redaction import TABLE
from tests.jobs import HOSTILE_SECRET
from tests.models import Effect
from tests.support.polling import poll_until

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)

ERRORS = {
    "undecodable": "OSError: cannot open /srv/in/r\ufffdport.csv",
    "nul": "RuntimeError: bad row 'a\\x00b'",
    "unprintable": "tests.jobs.UnprintableError: <exception str() failed>",
    "huge": f"RuntimeError: password={REDACTED} xxxx",
}


def run_hostile(schedule_at, clock, engine, kind: str, *, max_attempts: int = 2) -> Attempt:
    schedule = schedule_at(
        name=f"hostile-{kind}",
        executor="tests.jobs.hostile",
        payload={"kind": kind},
        interval=timedelta(hours=1),
        max_attempts=max_attempts,
        retry_base=timedelta(seconds=1),
    )
    clock.advance(timedelta(hours=1))
    engine.tick()
    for _ in range(max_attempts):
        clock.advance(MINUTE)
        engine.tick()
    return Attempt.objects.get(schedule=schedule)


def assert_clean(text: str) -> None:
    text.encode("utf-8")  # no lone surrogate
    assert "\x00" not in text
    assert HOSTILE_SECRET not in text
    assert len(text) <= MAX_ERROR_CHARS + 100


@pytest.mark.parametrize("kind", list(ERRORS))
def test_a_hostile_error_is_recorded_cleaned_on_every_try(schedule_at, clock, engine, kind, caplog):
    with caplog.at_level(logging.INFO, logger="django_cadence"):
        attempt = run_hostile(schedule_at, clock, engine, kind)

    assert attempt.status == Status.DEAD_LETTER
    assert attempt.tries == 2
    assert [entry["result"] for entry in attempt.history] == ["failed", "failed"]
    assert Effect.objects.count() == 2  # each try ran once, and each is recorded once
    assert ERRORS[kind] in attempt.error
    assert_clean(attempt.error)
    for entry in attempt.history:
        assert_clean(entry["error"])
    assert HOSTILE_SECRET not in caplog.text
    assert "\x00" not in caplog.text
    failed = [r.getMessage() for r in caplog.records if "attempt failed" in r.getMessage()]
    assert len(failed) == 2
    assert all(len(line) < 1000 for line in failed)


def test_a_megabytes_long_error_is_cut_and_says_so(schedule_at, clock, engine):
    attempt = run_hostile(schedule_at, clock, engine, "huge", max_attempts=1)
    assert "[cut: " in attempt.error
    assert len(attempt.error) <= MAX_ERROR_CHARS + len("\n[dead letter: no tries left (1 of 1)]")


@pytest.mark.parametrize(
    ("kind", "note"),
    [
        ("surrogate_outcome", "lone surrogate"),
        ("nul_outcome", "NUL character"),
        ("nan_outcome", "JSON numbers are finite"),
        ("inf_outcome", "JSON numbers are finite"),
        ("huge_outcome", "larger than CADENCE_PAYLOAD_MAX_BYTES"),
        ("bad_repr_outcome", "of type BadRepr"),
        ("secret_outcome", "of type object"),
    ],
)
def test_an_outcome_that_cannot_be_stored_is_summarised_and_the_try_succeeds(
    schedule_at, clock, engine, kind, note
):
    attempt = run_hostile(schedule_at, clock, engine, kind)

    assert attempt.status == Status.SUCCEEDED
    assert attempt.tries == 1
    assert Effect.objects.count() == 1
    assert set(attempt.outcome) == {"repr", "type", "note"}
    assert note in attempt.outcome["note"]
    for text in attempt.outcome.values():
        assert_clean(text)
        assert len(text) <= 500


def test_the_repr_of_an_outcome_that_is_not_json_is_redacted(schedule_at, clock, engine):
    attempt = run_hostile(schedule_at, clock, engine, "secret_outcome")
    assert "postgres://etl:" in attempt.outcome["repr"]
    assert REDACTED in attempt.outcome["repr"]


@pytest.mark.parametrize(
    ("text", "secrets", "kept"), [row[1:] for row in TABLE], ids=[r[0] for r in TABLE]
)
def test_every_secret_of_the_redaction_table_is_absent_from_the_row_and_the_log(
    schedule_at, clock, engine, caplog, text, secrets, kept
):
    """The texts of tests/executors/test_redaction.py raised by a job: the stored error,
    its history entry and every log line hide each secret."""
    schedule = schedule_at(
        name="leaky",
        executor="tests.jobs.raise_error",
        payload={"message": text},
        interval=timedelta(hours=1),
        max_attempts=1,
    )
    clock.advance(timedelta(hours=1))
    with caplog.at_level(logging.DEBUG, logger="django_cadence"):
        engine.tick()

    attempt = Attempt.objects.get(schedule=schedule)
    assert attempt.status == Status.DEAD_LETTER
    stored = [attempt.error, *(entry["error"] for entry in attempt.history)]
    logged = [record.getMessage() for record in caplog.records]
    assert any("attempt failed" in line for line in logged)
    for secret in secrets:
        for where in (*stored, *logged):
            assert secret not in where
    for context in kept:
        assert context in attempt.error


def test_an_async_job_cancelled_from_within_is_a_failed_try_and_frees_its_thread(
    schedule_at, clock, threaded_engine
):
    """``CancelledError`` is not an ``Exception``: the try is recorded failed and its thread
    takes the next try, rather than die with it and hold the try until its run-time limit."""
    schedule = schedule_at(
        name="cancelled-async",
        executor="tests.jobs.cancelled_async",
        interval=timedelta(hours=1),
        max_attempts=2,
        retry_base=timedelta(seconds=1),
    )
    engine = threaded_engine(concurrency=1)
    for wait in (timedelta(hours=1), MINUTE):  # the occurrence, then its retry
        clock.advance(wait)
        engine.tick()
        poll_until(engine.tries.has_unrecorded)
        engine.tick()
    attempt = Attempt.objects.get(schedule=schedule, occurrence_at=schedule.next_run_at)
    assert (attempt.status, attempt.tries) == (Status.DEAD_LETTER, 2)
    assert "CancelledError" in attempt.error
    assert (engine.in_flight, engine.tries.running.busy) == (0, 0)
