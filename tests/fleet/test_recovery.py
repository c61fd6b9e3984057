"""Workers lost to ``kill -9``: their attempts are recovered by another worker, and a job that
keeps killing its worker is dead-lettered instead of taking the fleet down."""

from __future__ import annotations

import pytest

from benchmarks.fleet import wait_until
from django_cadence.models import Attempt, Status
from tests.support.attempts import wait_for_status

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

SHORT_LEASE = {"CADENCE_LEASE": 2, "CADENCE_RECOVERY_GRACE": 0.5}


def test_kill_9_mid_try_is_recovered_and_finished_by_another_worker(worker, due_schedule):
    schedule = due_schedule(executor="tests.jobs.sleep_for", payload={"seconds": 1.5})
    first = worker("A", settings=SHORT_LEASE)
    wait_for_status(schedule, Status.RUNNING, worker="A", timeout=20)

    first.kill()

    assert first.returncode == -9
    assert "attempt succeeded" not in first.output()
    second = worker("B", settings=SHORT_LEASE)
    attempt = wait_for_status(schedule, Status.SUCCEEDED, timeout=25)
    assert attempt.worker == "B"
    assert attempt.recoveries == 1
    assert attempt.tries == 2
    assert attempt.outcome == "done"
    assert [(entry["worker"], entry["result"]) for entry in attempt.history] == [
        ("A", "lost"),
        ("B", "succeeded"),
    ]
    assert "worker A was lost on try 1" in attempt.history[0]["error"]
    assert "attempt recovered" in second.output()


def test_job_that_kills_its_worker_is_dead_lettered_after_max_recoveries(worker, due_schedule):
    settings = {"CADENCE_LEASE": 1, "CADENCE_RECOVERY_GRACE": 0.2, "CADENCE_MAX_RECOVERIES": 2}
    # Plenty of tries left: the crash-loop rule, not max_attempts, must end it.
    schedule = due_schedule(executor="tests.jobs.kill_worker", max_attempts=10)
    children = []

    def restart_until_dead_letter():
        attempt = Attempt.objects.filter(schedule=schedule, status=Status.DEAD_LETTER).first()
        if attempt is None and (not children or not children[-1].alive):
            assert len(children) < 5, "the attempt kept killing workers past the limit"
            children.append(worker(f"W{len(children) + 1}", settings=settings))
        return attempt

    attempt = wait_until(restart_until_dead_letter, timeout=45, message="a dead letter")

    assert attempt.recoveries == 2
    assert "lost its worker repeatedly" in attempt.error
    assert attempt.tries == 2
    assert [entry["result"] for entry in attempt.history] == ["lost", "lost"]
    # Two workers died running it; the third recovered it as a dead letter and lives on.
    assert [child.returncode for child in children] == [-9, -9, None]
