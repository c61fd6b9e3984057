"""Many ``run_cadence`` workers sharing one database: invariants 1 to 5 under load.

Four workers (one on SQLite, which allows no more) run 120 interval schedules of 1 to 3 s for
20 s: every overlap policy but ``replace``; jobs that return at once, sleep, fail then succeed,
or always fail (so retries and dead letters happen); a few schedules whose zero misfire grace
turns occurrences into ``missed`` ranges. The fleet drains on SIGTERM, the schedules end at
their last planned occurrence, a ``--once`` pass (and a worker, if a single round of claims
is not enough) finishes what is left, and the whole record is checked against the schedules'
arithmetic. The jobs record each execution themselves: none started before its occurrence's
instant, and each try the rows record ran exactly once.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count, F
from django.utils import timezone

from benchmarks.chaos_app.jobs import EXECUTIONS_ENV
from benchmarks.chaos_checks import executions, read_execution_lines, started_early
from benchmarks.fleet import overlaps, stop_all, tries_by_schedule, tries_of, wait_until
from django_cadence.engine.running import LATE
from django_cadence.models import TERMINAL_STATUSES, Attempt, Schedule, Status
from tests.support.records import check_occurrences, log_problems, try_intervals

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

SCHEDULES = 120
RUN_SECONDS = 20.0
SLOTS = 64  # tries the whole fleet may run at once
SETTINGS = {"CADENCE_SHUTDOWN_GRACE": 10}
# A try's interval in its history runs from its claim's clock reading to its recording's,
# both taken just outside the transactions that decide: two consecutive tries of a serial
# schedule on two workers may seem to overlap by the time between one worker reading its
# clock and its claim seeing the other's recorded end (a few ms; some 50 ms on a loaded
# machine). A double run of the serial sleepers here (0.3 s and more) would overlap by more.
CLOCK_SLACK = timedelta(milliseconds=200)

# (overlap, executor, payload, max_attempts or None for the default of 3)
PROFILES = (
    ("allow", "tests.jobs.noop", {}, None),
    ("allow", "tests.jobs.sleep_for", {"seconds": 0.2}, None),
    ("allow", "tests.jobs.sleep_for", {"seconds": 2.5}, None),  # runs overlap each other
    ("allow", "tests.jobs.fail_n_times", {"n": 1, "key": "allow"}, None),
    ("allow", "tests.jobs.raise_error", {"message": "always"}, 2),
    ("skip_if_running", "tests.jobs.sleep_for", {"seconds": 1.5}, None),
    ("skip_if_running", "tests.jobs.noop", {}, None),
    ("skip_if_running", "tests.jobs.fail_n_times", {"n": 2, "key": "skip"}, None),
    ("queue", "tests.jobs.sleep_for", {"seconds": 0.3}, None),
    ("queue", "tests.jobs.fail_n_times", {"n": 1, "key": "queue"}, None),
    ("queue", "tests.jobs.raise_error", {"message": "queued"}, 2),
    ("buffer_one", "tests.jobs.sleep_for", {"seconds": 1.6}, None),
    ("buffer_one", "tests.jobs.noop", {}, None),
    ("buffer_one", "tests.jobs.raise_permanent", {}, None),
)


def create_schedules() -> list[Schedule]:
    schedules = []
    for i in range(SCHEDULES):
        overlap, executor, payload, max_attempts = PROFILES[i % len(PROFILES)]
        misfire, grace = "fire_once", None
        if i % 20 == 3:
            misfire = "fire_all"
        elif i % 20 == 7:  # every occurrence is late: all of them are recorded missed
            misfire, grace = "skip", timedelta(0)
        elif i % 20 == 13:  # all but the latest of each planning pass are missed
            misfire, grace = "fire_once", timedelta(0)
        schedules.append(
            Schedule.objects.create(
                name=f"fleet-{i:03d}-{overlap}-{executor.rsplit('.', 1)[1]}",
                kind="interval",
                interval=timedelta(seconds=1 + (i // len(PROFILES)) % 3),
                executor=executor,
                payload=payload,
                overlap=overlap,
                misfire=misfire,
                misfire_grace=grace,
                max_attempts=max_attempts,
                retry_base=timedelta(seconds=0.2),
                retry_cap=timedelta(seconds=1),
            )
        )
    return schedules


def running_counts() -> dict[tuple[int, str], int]:
    """Running attempts per (schedule, overlap), in one statement: a consistent snapshot."""
    rows = (
        Attempt.objects.running()
        .order_by()
        .values("schedule_id", "schedule__overlap")
        .annotate(n=Count("id"))
        .values_list("schedule_id", "schedule__overlap", "n")
    )
    return {(schedule_id, overlap): n for schedule_id, overlap, n in rows}


def run_fleet(worker, count: int, seconds: float, env: dict) -> tuple[list, Counter]:
    """Start ``count`` workers; every 0.5 s for ``seconds``, check no serial schedule has two
    attempts running (and that ``allow`` ones do, so the check can see it)."""
    fleet = [
        worker(f"w{n}", concurrency=SLOTS // count, max_tick=1, settings=SETTINGS, env=env)
        for n in range(1, count + 1)
    ]
    for child in fleet:
        child.wait_started()
    samples: Counter[str] = Counter()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        counts = running_counts()
        serial = {key: n for key, n in counts.items() if key[1] != "allow"}
        assert all(n <= 1 for n in serial.values()), f"serial schedules running twice: {serial}"
        samples["samples"] += 1
        for key, n in counts.items():
            kind = "allow" if key[1] == "allow" else "serial"
            samples[f"max_{kind}"] = max(samples[f"max_{kind}"], n)
        samples["max_running"] = max(samples["max_running"], sum(counts.values()))
        dead = [(c.name, c.returncode) for c in fleet if not c.alive]
        assert not dead, f"workers exited during the run: {dead}"
        time.sleep(0.5)
    return fleet, samples


def unfinished() -> bool:
    return Attempt.objects.filter(status__in=(Status.PENDING, Status.RUNNING)).exists()


def finish_leftovers(worker, env: dict, timeout: float = 90.0) -> list:
    """Run what the fleet left (retries waiting, queued occurrences) to its end.

    One ``--once`` pass first; it claims a single round, so when occurrences still wait
    behind others (a queue, a retry later than the pass), a worker goes on until none is
    pending or running. Returns the workers it started.
    """
    once = worker("once", once=True, concurrency=SLOTS, max_tick=1, env=env)
    assert once.wait(60) == 0, once.output()
    if not unfinished():
        return [once]
    finisher = worker("finisher", concurrency=SLOTS, max_tick=1, settings=SETTINGS, env=env)
    wait_until(lambda: not unfinished(), timeout=timeout, message="no attempt left to run")
    assert stop_all([finisher]) == {"finisher": 0}
    return [once, finisher]


def max_overlap(schedules: list[Schedule]) -> tuple[timedelta, list]:
    """The largest intersection of two tries of one schedule, from the tries' history."""
    worst, where = timedelta(0), []
    by_schedule = tries_by_schedule(Attempt.objects.filter(schedule__in=schedules))
    for tries in by_schedule.values():
        for overlap, latest, current in overlaps(tries):
            if overlap > worst:
                worst, where = overlap, [latest, current]
    return worst, where


def test_many_workers_record_every_occurrence_once_and_run_serial_schedules_serially(
    worker, tmp_path
):
    count = 4 if connection.features.has_select_for_update_skip_locked else 1
    schedules = create_schedules()
    recorded = tmp_path / "executions"  # each job's own record of each execution
    recorded.mkdir()
    env = {EXECUTIONS_ENV: str(recorded)}

    fleet, samples = run_fleet(worker, count, RUN_SECONDS, env)
    stopped_at = timezone.now()
    exits = stop_all(fleet)

    assert exits == {child.name: 0 for child in fleet}
    assert not Attempt.objects.running().exists(), "a drained worker left an attempt running"

    # (a) Every occurrence in the window, from each schedule's first to the last one it
    # planned, has exactly one record; planning kept up until the stop.
    figures = Counter()
    for schedule in Schedule.objects.all():
        figures.update(check_occurrences(schedule))
        behind = stopped_at - schedule.last_run_at
        assert behind < schedule.interval + timedelta(seconds=3), (schedule.name, behind)

    # (c) Nothing is left unfinished: end each schedule at its last planned occurrence (so no
    # new one is planned), run what is left, and every attempt is final.
    Schedule.objects.update(end_at=F("last_run_at"))
    finishers = finish_leftovers(worker, env)
    statuses = Counter(Attempt.objects.values_list("status", flat=True))
    assert set(statuses) <= set(TERMINAL_STATUSES), statuses
    for schedule in Schedule.objects.all():
        check_occurrences(schedule, ended=True)  # the finishers planned nothing new

    # (b) Serial schedules never ran two tries at once, by the samples (above) and by the
    # tries' intervals in the rows.
    worst, where = max_overlap([s for s in schedules if s.overlap != "allow"])
    assert worst <= CLOCK_SLACK, f"two tries of a serial schedule overlap by {worst}: {where}"
    assert samples["max_serial"] == 1
    # Controls: the same checks do see ``allow`` schedules running several tries at once.
    assert samples["max_allow"] > 1, samples
    assert max_overlap([s for s in schedules if s.overlap == "allow"])[0] > timedelta(seconds=1)
    attempts = list(Attempt.objects.exclude(status__in=(Status.SKIPPED, Status.MISSED)))
    tries = [(a, t) for a in attempts for t in try_intervals(a)]
    by_worker = Counter(who for _, (_, _, who) in tries)
    assert all(by_worker[child.name] > 0 for child in fleet), by_worker

    # (e) By the jobs' own records (a row's started_at is never before its instant by
    # construction): no execution started before its occurrence's instant (invariant 6), and
    # every try the rows record ran once, and nothing else ran (no try was cut off: the drain
    # let every running try finish, and handed back only tries not started).
    runs = executions(read_execution_lines(recorded), {})
    early = started_early(runs)
    assert early["count"] == 0, early["examples"]
    ran = Counter((run.attempt, run.try_number) for run in runs)
    in_rows = Counter((a.pk, entry["try"]) for a in attempts for entry in tries_of(a))
    assert ran == in_rows, (ran - in_rows, in_rows - ran)

    # The scenario exercised what it is meant to: retries, dead letters, skips, missed ranges.
    assert all(statuses[s] for s in (Status.DEAD_LETTER, Status.SKIPPED, Status.MISSED)), statuses
    assert any(a.tries > 1 for a in attempts)

    # (d) The logs report no traceback, lost fence, recovery, warning or database error. A
    # worker starved past START_LATE (a loaded machine) hands a try back unrun rather than
    # start it that late, as designed: the records above show nothing lost or run twice.
    for child in fleet + finishers:
        assert log_problems(child.output(), allowed=(LATE,)) == [], child.name
    starved = sum(child.output().count(LATE) for child in fleet + finishers)

    print(
        f"\n{connection.vendor}: {count} worker(s), {len(schedules)} schedules, "
        f"{figures['occurrences']} occurrences, {sum(statuses.values())} rows "
        f"{dict(statuses)}, {len(tries)} tries by {dict(by_worker)}, "
        f"{figures['missed']} missed in {statuses[Status.MISSED]} rows, {len(runs)} "
        f"executions recorded by the jobs, {starved} handed back for a late start, finished by "
        f"{[c.name for c in finishers]}, samples {dict(samples)}, "
        f"worst serial overlap {worst.total_seconds():.4f} s"
    )
