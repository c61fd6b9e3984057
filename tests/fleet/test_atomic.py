"""``@job(delivery="atomic")``: the effect commits with the fenced success write, so a
``kill -9`` between effect and commit leaves nothing, and the rerun writes it exactly once."""

from __future__ import annotations

import pytest

from benchmarks.fleet import wait_until
from django_cadence.executors.calling import idempotency_key
from django_cadence.models import Status
from tests.models import Effect
from tests.support.attempts import attempt_of, wait_for_status

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

SHORT_LEASE = {"CADENCE_LEASE": 2, "CADENCE_RECOVERY_GRACE": 0.5}


def test_atomic_effect_survives_kill_9_exactly_once(worker, due_schedule, tmp_path):
    marker = tmp_path / "effect-inserted"
    schedule = due_schedule(
        executor="tests.jobs.atomic_effect", payload={"seconds": 2, "marker": str(marker)}
    )
    first = worker("A", settings=SHORT_LEASE)
    wait_until(marker.exists, timeout=20, message="the effect insert (marker file)")

    first.kill()  # after the insert, before the commit

    assert first.returncode == -9
    assert not Effect.objects.exists()
    lost = attempt_of(schedule)
    assert lost.status == Status.RUNNING
    assert lost.worker == "A"
    marker.unlink()

    worker("B", settings=SHORT_LEASE)
    attempt = wait_for_status(schedule, Status.SUCCEEDED, timeout=25)

    assert marker.read_text() == "try 2\n"
    key = idempotency_key(schedule.pk, attempt.occurrence_at, attempt.trigger)
    assert list(Effect.objects.values_list("key", flat=True)) == [key]
    assert attempt.worker == "B"
    assert attempt.recoveries == 1
    assert attempt.tries == 2
    assert attempt.outcome == "effect written"
    assert [entry["result"] for entry in attempt.history] == ["lost", "succeeded"]
