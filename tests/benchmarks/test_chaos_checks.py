"""The chaos report's figures: recoveries count only tries lost with a kill, after it;
execution overlaps are counted from what the jobs recorded of their own runs."""

import math
from datetime import UTC, datetime, timedelta

import pytest

from benchmarks.chaos_app import jobs
from benchmarks.chaos_checks import (
    CLOCK_SLACK,
    execution_overlaps,
    executions,
    read_execution_lines,
    recoveries,
    started_early,
)
from django_cadence.executors.calling import AttemptContext
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


# --- execution overlaps, from the jobs' own records -------------------------------------------


def run(
    n: int,
    attempt: int,
    schedule: str,
    start: float,
    end: float | None,
    pid: int = 10,
    occurrence: float | None = None,
):
    """The lines ``execution_record`` appends for one execution (of an occurrence due at its
    start, unless ``occurrence`` says when)."""
    base = {"run": f"r{n}", "attempt": attempt, "schedule": schedule, "try": 1, "pid": pid}
    due = start if occurrence is None else occurrence
    lines = [{**base, "occurrence": due, "start": start}]
    if end is not None:
        lines.append({**base, "end": end})
    return lines


def test_executions_pair_start_and_end_and_end_a_cut_off_one_when_its_worker_went():
    lines = run(1, 1, "s", 0.0, 1.0) + run(2, 2, "s", 2.0, None, pid=11)
    found = executions(lines, {11: 5.0})
    assert [(e.attempt, e.start, e.end, e.cut_off) for e in found] == [
        (1, 0.0, 1.0, False),
        (2, 2.0, 5.0, True),
    ]
    # A worker never seen gone: its cut-off execution runs on forever.
    assert executions(run(3, 3, "s", 2.0, None, pid=12), {})[0].end == math.inf


def test_two_live_executions_of_one_attempt_are_counted():
    # Attempt 1: killed at 5 s, re-run at 6 s (no overlap); then, by a broken engine, a
    # third execution while the second still runs.
    lines = (
        run(1, 1, "a", 0.0, None, pid=11)
        + run(2, 1, "a", 6.0, 9.0)
        + run(3, 1, "a", 7.0, 8.0, pid=12)
    )
    report = execution_overlaps(executions(lines, {11: 5.0}), serial_schedules=set())
    assert report["attempt_overlaps"] == 1
    assert report["attempt_worst_s"] == 2.0
    assert (report["cut_off"], report["cut_off_and_run_again"]) == (1, 1)
    assert report["serial_overlaps"] == 0  # "a" is not serial


def test_a_cut_off_execution_overlaps_its_rerun_until_its_worker_is_gone():
    lines = run(1, 1, "a", 0.0, None, pid=11) + run(2, 1, "a", 3.0, 4.0)
    killed_late = execution_overlaps(executions(lines, {11: 3.5}), set())
    killed_before = execution_overlaps(executions(lines, {11: 2.9}), set())
    assert (killed_late["attempt_overlaps"], killed_before["attempt_overlaps"]) == (1, 0)


def test_serial_schedules_overlap_only_beyond_the_slack_and_allow_ones_never():
    slack = CLOCK_SLACK.total_seconds()
    lines = (
        # serial "s": the second starts within the slack of the first's end, the third overlaps
        run(1, 1, "s", 0.0, 1.0)
        + run(2, 2, "s", 1.0 - slack / 2, 2.0)
        + run(3, 3, "s", 1.5, 2.5)
        # "a" allows overlap: two at once are fine
        + run(4, 4, "a", 0.0, 3.0)
        + run(5, 5, "a", 1.0, 2.0)
    )
    report = execution_overlaps(executions(lines, {}), serial_schedules={"s"})
    assert report["serial_overlaps"] == 1
    assert report["serial_worst_s"] == 0.5
    assert report["attempt_overlaps"] == 0
    assert report["executions"] == 5
    assert len(report["examples"]) == 1


def test_executions_one_after_another_do_not_overlap():
    lines = run(1, 1, "s", 0.0, 1.0) + run(2, 1, "s", 1.1, 2.0) + run(3, 2, "s", 2.5, 3.0)
    report = execution_overlaps(executions(lines, {}), serial_schedules={"s"})
    assert (report["attempt_overlaps"], report["serial_overlaps"]) == (0, 0)
    assert report["serial_worst_s"] == 0.0


def test_an_execution_that_started_before_its_instant_is_counted_however_little():
    lines = (
        run(1, 1, "s", 10.0, 11.0, occurrence=10.0)  # on its instant
        + run(2, 2, "s", 12.5, 13.0, occurrence=12.0)  # late
        + run(3, 3, "s", 13.999, 14.5, occurrence=14.0)  # a millisecond early
        + run(4, 4, "s", 15.0, None, occurrence=15.5)  # early, then cut off
    )
    found = executions(lines, {})
    report = started_early(found)
    assert report["count"] == 2
    assert report["worst_s"] == 0.5
    assert [e.split(" started ")[0] for e in report["examples"]] == [
        "s attempt 3 try 1 (pid 10)",
        "s attempt 4 try 1 (pid 10)",
    ]
    figures = execution_overlaps(found, serial_schedules=set())
    assert (figures["started_early"], figures["started_early_worst_s"]) == (2, 0.5)
    assert started_early(executions(run(5, 5, "s", 1.0, 2.0), {})) == {
        "count": 0,
        "worst_s": 0.0,
        "examples": [],
    }


def test_a_job_records_its_own_start_and_end_even_when_it_raises(tmp_path, monkeypatch):
    monkeypatch.setenv(jobs.EXECUTIONS_ENV, str(tmp_path))
    context = AttemptContext(
        attempt_id=7,
        schedule_name="s",
        occurrence_at=T0,
        try_number=2,
        idempotency_key="k",
    )
    with pytest.raises(RuntimeError):
        jobs.raise_error("x", context=context)
    assert jobs.fail_n_times(1, "k", context) == "ok"

    found = executions(read_execution_lines(tmp_path), {})
    assert [(e.attempt, e.schedule, e.try_number, e.cut_off) for e in found] == [
        (7, "s", 2, False),
        (7, "s", 2, False),
    ]
    assert {e.occurrence for e in found} == {T0.timestamp()}
    assert all(e.start <= e.end for e in found)
    assert found[0].end <= found[1].start


def test_the_fleet_tests_jobs_record_their_own_executions_too(tmp_path, monkeypatch):
    """``tests/fleet/test_many_workers.py`` counts executions from these records."""
    from django_cadence.exceptions import Permanent
    from tests import jobs as fleet_jobs

    monkeypatch.setenv(jobs.EXECUTIONS_ENV, str(tmp_path))
    context = AttemptContext(
        attempt_id=8, schedule_name="f", occurrence_at=T0, try_number=2, idempotency_key="k"
    )
    fleet_jobs.noop(context=context)
    fleet_jobs.sleep_for(0, context=context)
    fleet_jobs.fail_n_times(1, "k", context)
    with pytest.raises(RuntimeError):
        fleet_jobs.raise_error("x", context=context)
    with pytest.raises(Permanent):
        fleet_jobs.raise_permanent(context=context)

    found = executions(read_execution_lines(tmp_path), {})
    assert [(e.attempt, e.try_number, e.occurrence, e.cut_off) for e in found] == [
        (8, 2, T0.timestamp(), False)
    ] * 5
