"""SIGTERM: stop claiming, let running tries finish within the grace, release the rest, exit 0.
A second signal exits at once."""

from __future__ import annotations

import signal
import time

import pytest

from django_cadence.models import Status
from tests.support.attempts import attempt_of, wait_for_status

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_sigterm_drains_a_running_try_and_exits_0(worker, due_schedule):
    schedule = due_schedule(executor="tests.jobs.sleep_for", payload={"seconds": 2})
    child = worker("drain", settings={"CADENCE_SHUTDOWN_GRACE": 20})
    wait_for_status(schedule, Status.RUNNING, timeout=20)

    child.send(signal.SIGTERM)

    assert child.wait(15) == 0
    attempt = attempt_of(schedule)
    assert attempt.status == Status.SUCCEEDED
    assert attempt.outcome == "done"  # ran to its end: its cancel event was never set
    assert attempt.tries == 1
    log = child.output()
    assert log.index("signal SIGTERM") < log.index("attempt succeeded")


def test_sigterm_releases_a_try_longer_than_the_grace_and_exits_0(worker, due_schedule):
    schedule = due_schedule(executor="tests.jobs.sleep_for", payload={"seconds": 60})
    child = worker("release", settings={"CADENCE_SHUTDOWN_GRACE": 0.5})
    wait_for_status(schedule, Status.RUNNING, timeout=20)

    child.send(signal.SIGTERM)
    sent = time.monotonic()

    assert child.wait(10) == 0
    assert time.monotonic() - sent < 5
    attempt = attempt_of(schedule)
    assert attempt.status == Status.PENDING  # back for another worker, at once
    assert attempt.tries == 0  # the try cut short by the shutdown does not count
    assert attempt.claim_token is None
    assert attempt.lease_until is None
    assert attempt.retry_at is not None
    assert attempt.outcome is None
    assert "attempt released" in child.output()


def test_second_sigterm_exits_at_once(worker, due_schedule):
    schedule = due_schedule(executor="tests.jobs.sleep_for", payload={"seconds": 60})
    child = worker("impatient", settings={"CADENCE_SHUTDOWN_GRACE": 60})
    wait_for_status(schedule, Status.RUNNING, timeout=20)
    child.send(signal.SIGTERM)
    child.wait_for_log("draining")

    child.send(signal.SIGTERM)
    sent = time.monotonic()

    assert child.wait(5) != 0
    assert time.monotonic() - sent < 3
    attempt = attempt_of(schedule)
    # Nothing released or recorded: the lease is left to expire and another worker recovers.
    assert attempt.status == Status.RUNNING
    assert attempt.worker == "impatient"
    assert "second signal" in child.output()


def test_first_ctrl_c_says_at_once_what_it_waits_for_and_how_to_exit_now(worker, due_schedule):
    schedule = due_schedule(executor="tests.jobs.sleep_for", payload={"seconds": 60})
    child = worker("ctrl-c", settings={"CADENCE_SHUTDOWN_GRACE": 45})
    attempt = wait_for_status(schedule, Status.RUNNING, timeout=20)

    child.send(signal.SIGINT)
    child.wait_for_log("draining: waiting", timeout=5)

    log = " ".join(child.output().split())
    assert "signal SIGINT: stopping: no new tries" in log
    assert (
        "draining: waiting up to 45 s (CADENCE_SHUTDOWN_GRACE) for 1 running try to finish "
        f"(attempts {attempt.pk}); any still running then are handed back to other workers. "
        "A second Ctrl+C (SIGINT or SIGTERM) exits now and hands nothing back: their leases "
        "expire and another worker takes them over"
    ) in log

    child.send(signal.SIGINT)
    assert child.wait(5) != 0
    assert "second signal: exiting now; running tries are not handed back" in child.output()
    assert attempt_of(schedule).status == Status.RUNNING  # left to its lease
