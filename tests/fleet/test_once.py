"""``run_cadence --once``: one pass over what is due, run to the end, exit 0."""

from __future__ import annotations

from datetime import timedelta

import pytest

from django_cadence.models import Attempt, Status
from tests.support.attempts import attempt_of

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_once_runs_every_due_schedule_exactly_once_and_exits_0(worker, due_schedule):
    due = {
        due_schedule(executor="tests.jobs.add", payload={"a": 2, "b": 3}): 5,
        due_schedule(executor="tests.jobs.echo", payload={"word": "hi"}): {"word": "hi"},
        due_schedule(executor="tests.jobs.sleep_for", payload={"seconds": 0.3}): "done",
    }
    not_due = due_schedule(due=False)

    # One slot: the pass still runs everything that was due when it started, one by one.
    child = worker("once", once=True, concurrency=1)

    assert child.wait(30) == 0
    for schedule, outcome in due.items():
        attempt = attempt_of(schedule)
        assert attempt.status == Status.SUCCEEDED
        assert attempt.tries == 1
        assert attempt.worker == "once"
        assert attempt.outcome == outcome
        assert attempt.occurrence_at == schedule.next_run_at
        schedule.refresh_from_db()
        assert schedule.next_run_at == attempt.occurrence_at + timedelta(hours=1)
    assert not Attempt.objects.filter(schedule=not_due).exists()
