"""The chaos report's recovery figures count only tries lost with a kill, after it."""

from datetime import UTC, datetime, timedelta

from benchmarks.chaos_checks import recoveries
from django_cadence.models import Attempt

T0 = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def lost_try(worker: str, started: datetime, recovered: datetime) -> dict:
    return {
        "try": 1,
        "worker": worker,
        "result": "lost",
        "started_at": started.isoformat(),
        "finished_at": recovered.isoformat(),
    }


def test_a_try_lost_before_its_workers_kill_is_not_a_recovery_of_that_kill():
    second = timedelta(seconds=1)
    attempts = [
        # Killed at T0 + 60 s, recovered 0.3 s later: a recovery after a kill.
        Attempt(pk=1, history=[lost_try("w1", T0 + 50 * second, T0 + 60.3 * second)]),
        # Lost at T0 + 10 s (the database restart cut its session), killed later.
        Attempt(pk=2, history=[lost_try("w1", T0, T0 + 10 * second)]),
        # A worker never killed.
        Attempt(pk=3, history=[lost_try("w2", T0, T0 + 10 * second)]),
    ]
    report = recoveries(attempts, [{"worker": "w1", "at": T0 + 60 * second}], lease=30)
    assert (report["lost_by_kill"], report["lost_other"], report["count"]) == (1, 2, 1)
    assert round(report["min_s"], 3) == round(report["max_s"], 3) == 0.3
