"""A try that marked itself uncertain, then lost its worker to ``kill -9``, is dead-lettered
by another worker and never run again (docs/design.md, "Lost workers"); the job's own journal
shows its step ran once."""

from __future__ import annotations

import pytest

from benchmarks.fleet import wait_until
from django_cadence.models import Status
from tests.support.attempts import wait_for_status

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

SHORT_LEASE = {"CADENCE_LEASE": 2, "CADENCE_RECOVERY_GRACE": 0.5}


def test_a_try_marked_uncertain_and_killed_is_dead_lettered_not_run_again(
    worker, due_schedule, tmp_path
):
    journal = tmp_path / "journal.txt"
    schedule = due_schedule(
        executor="tests.jobs.charge_card",
        payload={"journal": str(journal), "block": 120},
        max_attempts=5,
    )
    first = worker("A", settings=SHORT_LEASE)
    # The job appends to its journal only after mark_uncertain() returned.
    wait_until(lambda: journal.exists() and journal.read_text(), timeout=20, message="a charge")

    first.kill()

    assert first.returncode == -9
    second = worker("B", settings=SHORT_LEASE)
    attempt = wait_for_status(schedule, Status.DEAD_LETTER, timeout=25)
    assert "marked itself uncertain (charging card)" in attempt.error
    assert attempt.uncertain == "charging card"
    assert attempt.tries == 1
    assert [(entry["worker"], entry["result"]) for entry in attempt.history] == [("A", "lost")]
    assert "attempt recovered" in wait_until(
        lambda: "attempt recovered" in second.output() and second.output(), message="B's log"
    )
    assert second.alive
    assert journal.read_text().count("charged") == 1
