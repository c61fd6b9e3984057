"""Hostile jobs in a real ``run_cadence`` process: errors that cannot be encoded, printed or
stored whole, outcomes that cannot be stored as they are, and a notifier connected to every
signal that times out. The worker lives on, every try is recorded once (from the rows and from
what the jobs record), every stored text is cleaned, and nothing is lost."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from benchmarks.fleet import wait_until
from django_cadence.engine.outcomes import MAX_ERROR_CHARS
from django_cadence.executors.calling import idempotency_key
from django_cadence.models import Attempt, Status
from tests.jobs import HOSTILE_SECRET
from tests.models import Effect
from tests.support.attempts import attempt_of, wait_for_status
from tests.support.records import log_problems

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

FAILING = ["undecodable", "nul", "unprintable", "huge"]
UNSTORABLE = [
    "surrogate_outcome",
    "nul_outcome",
    "nan_outcome",
    "inf_outcome",
    "huge_outcome",
    "bad_repr_outcome",
    "secret_outcome",
]
TRIES = 2
RAISING_RECEIVERS = {"CADENCE_TEST_EXTRA_APPS": "tests.raising_receivers"}


def assert_clean(text: str) -> None:
    text.encode("utf-8")  # no lone surrogate: every database stored it
    assert "\x00" not in text
    assert HOSTILE_SECRET not in text
    assert len(text) <= MAX_ERROR_CHARS + 100


def executions(attempt: Attempt) -> Counter[int]:
    """Executions per try number, from the ``Effect`` rows the job wrote as it started."""
    key = idempotency_key(attempt.schedule_id, attempt.occurrence_at, attempt.trigger)
    keys = Effect.objects.filter(key__startswith=f"{key}|").values_list("key", flat=True)
    return Counter(int(k.split("|")[1]) for k in keys)


def test_hostile_jobs_and_raising_receivers_never_stop_a_worker(worker, due_schedule):
    schedules = {
        kind: due_schedule(
            name=f"hostile-{kind}",
            executor="tests.jobs.hostile",
            payload={"kind": kind},
            max_attempts=TRIES,
            retry_base=timedelta(seconds=1),
            pause_after_failures=1 if kind == "unprintable" else None,
        )
        for kind in FAILING + UNSTORABLE
    }
    child = worker("hostile", concurrency=4, env=RAISING_RECEIVERS).wait_started()

    for kind in FAILING:
        wait_for_status(schedules[kind], Status.DEAD_LETTER, timeout=60)
    for kind in UNSTORABLE:
        wait_for_status(schedules[kind], Status.SUCCEEDED, timeout=60)
    # The worker goes on: a schedule made due now still runs.
    after = due_schedule(name="after", executor="tests.jobs.echo", payload={"ok": True})
    assert wait_for_status(after, Status.SUCCEEDED, timeout=30).outcome == {"ok": True}
    assert child.alive, child.output()[-3000:]

    for kind in FAILING:
        attempt = attempt_of(schedules[kind])
        assert attempt.tries == TRIES
        assert [entry["result"] for entry in attempt.history] == ["failed"] * TRIES
        assert executions(attempt) == dict.fromkeys(range(1, TRIES + 1), 1)
        assert_clean(attempt.error)
        for entry in attempt.history:
            assert_clean(entry["error"])
    assert "r\ufffdport.csv" in attempt_of(schedules["undecodable"]).error
    assert "<exception str() failed>" in attempt_of(schedules["unprintable"]).error
    assert "[cut: " in attempt_of(schedules["huge"]).error
    schedules["unprintable"].refresh_from_db()
    assert not schedules["unprintable"].enabled  # auto-paused, its receiver raising too

    for kind in UNSTORABLE:
        attempt = attempt_of(schedules[kind])
        assert attempt.tries == 1
        assert executions(attempt) == {1: 1}
        assert set(attempt.outcome) == {"repr", "type", "note"}
        for text in attempt.outcome.values():
            assert_clean(text)

    child.terminate()
    assert child.wait(30) == 0
    log = child.output()
    assert HOSTILE_SECRET not in log
    assert "xoxb-hostile-123" not in log
    assert "\x00" not in log
    expected = ("signal receiver failed", "schedule paused schedule=hostile-unprintable")
    assert log_problems(log, allowed=expected) == []
    failed_receivers = [line for line in log.splitlines() if "signal receiver failed" in line]
    assert {line.split("signal=")[1].split()[0] for line in failed_receivers} == {
        "attempt_started",
        "attempt_succeeded",
        "attempt_failed",
        "attempt_dead_lettered",
        "schedule_paused",
    }
    assert all("NotifierTimedOut: slack timed out\\nwebhook" in line for line in failed_receivers)
    assert not any(line.startswith("webhook") for line in log.splitlines())  # no forged line
    wait_until(lambda: not Attempt.objects.filter(status=Status.RUNNING).exists(), timeout=5)
