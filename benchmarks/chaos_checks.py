"""The chaos harness's verdict: what the database and the workers' logs say happened.

Every function reads the finished record (attempt rows, their per-try ``history``, the
``Effect`` rows the jobs wrote, the executions the jobs recorded, the workers' log files) and
returns figures; none asserts.
``benchmarks.chaos`` turns the figures into goals; ``tests/fleet/test_chaos.py`` asserts
them. Instants in ``history`` come from the engine clock (the database server's on
PostgreSQL and MariaDB); the harness's own instants (kills, the restart) from the local
clock of the same host.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

from benchmarks import fleet
from benchmarks.chaos import JOBS
from django_cadence.executors.calling import idempotency_key
from django_cadence.models import Attempt, Schedule, Status, Trigger
from django_cadence.schedule.policies import is_serial

# Two consecutive tries of a serial schedule (or of one attempt) on two workers may seem to
# overlap by the time between one worker reading its clock and its claim seeing the other's
# recorded end: a few ms, some 50 ms on a loaded machine (tests/fleet/test_many_workers.py).
CLOCK_SLACK = timedelta(milliseconds=200)

COUNTING = frozenset({f"{JOBS}.count_run"})
ATOMIC = frozenset({f"{JOBS}.atomic_effect", f"{JOBS}.atomic_flaky"})

STARTED = re.compile(r"attempt started id=(\d+) schedule=\S+ occurrence=\S+ try=(\d+) worker=(\S+)")
RELEASED = re.compile(r"attempt released id=(\d+)")
FENCED_OUT = re.compile(r"attempt lost id=(\d+)")


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


# --- occurrences: lost, duplicated, beyond the window -----------------------------------------


def occurrence_record(
    schedules: Iterable[Schedule], window_end: datetime, ahead: timedelta = timedelta(0)
) -> dict[str, Any]:
    """Every occurrence of each schedule from its creation to ``window_end`` must have one
    record: an attempt row, or a place in one ``missed`` row's range (the fleet tests assert
    the same :func:`benchmarks.fleet.occurrence_record`). Returns the counts of expected,
    lost, duplicated and beyond (missed rows whose range is wrong count as beyond)."""
    expected = lost = duplicated = beyond = missed = 0
    examples: list[str] = []
    rows_by_schedule: dict[int, list[Attempt]] = defaultdict(list)
    for attempt in Attempt.objects.filter(trigger=Trigger.SCHEDULE).only(
        "schedule_id", "occurrence_at", "status", "outcome"
    ):
        rows_by_schedule[attempt.schedule_id].append(attempt)
    for schedule in schedules:
        record = fleet.occurrence_record(
            schedule, rows_by_schedule.get(schedule.pk, ()), window_end, ahead
        )
        expected += len(record.expected)
        lost += len(record.gaps)
        duplicated += len(record.twice)
        beyond += len(record.beyond) + len(record.bad_missed)
        missed += record.missed
        examples += record.bad_missed
        for label, ats in (
            ("lost", record.gaps),
            ("twice", record.twice),
            ("beyond", record.beyond),
        ):
            examples += [f"{schedule.name}: {label} {at.isoformat()}" for at in ats[:3]]
    return {
        "expected": expected,
        "lost": lost,
        "duplicated": duplicated,
        "beyond": beyond,
        "missed": missed,
        "examples": examples[:20],
    }


def duplicate_rows() -> int:
    """Rows beyond one per (schedule, occurrence_at, trigger): 0 by the unique constraint."""
    distinct, total = fleet.no_duplicate_occurrences()
    return total - distinct


# --- tries: double claims, serial overlaps, recovery -------------------------------------------


def double_claims_in_history(attempts: list[Attempt]) -> dict[str, Any]:
    """Per attempt, two tries whose [started_at, finished_at] intervals overlap, or two
    entries for one try number. A ``lost`` entry ends at its recovery, which comes after its
    lease expired, and the next try is claimed after that: it must not overlap either."""
    overlaps, repeated, examples = 0, 0, []
    for attempt in attempts:
        entries = fleet.tries_of(attempt)
        numbers = Counter(e.get("try") for e in entries)
        repeated += sum(n - 1 for n in numbers.values() if n > 1)
        for previous, current in pairwise(entries):
            if previous["end"] - current["start"] > CLOCK_SLACK:
                overlaps += 1
                examples.append(
                    f"attempt {attempt.pk}: try {previous.get('try')} by {previous.get('worker')} "
                    f"ends {previous['end'].isoformat()} after try {current.get('try')} by "
                    f"{current.get('worker')} starts {current['start'].isoformat()}"
                )
    return {"overlaps": overlaps, "repeated_try_numbers": repeated, "examples": examples[:10]}


def double_claims_in_logs(log_paths: Iterable[Path]) -> dict[str, Any]:
    """Every ``attempt started id=N try=T`` line across all workers' logs: one (N, T) may be
    started once, or once more per ``attempt released id=N`` (a drained worker hands an
    unfinished try back with its count decremented, so the same try number starts again)."""
    starts: Counter[tuple[int, int]] = Counter()
    who: dict[tuple[int, int], list[str]] = defaultdict(list)
    released: Counter[int] = Counter()
    fenced_out = 0
    for path in log_paths:
        text = path.read_text(errors="replace")
        for attempt_id, try_number, worker in STARTED.findall(text):
            key = (int(attempt_id), int(try_number))
            starts[key] += 1
            who[key].append(worker)
        for attempt_id in RELEASED.findall(text):
            released[int(attempt_id)] += 1
        fenced_out += len(FENCED_OUT.findall(text))
    doubles = []
    for (attempt_id, try_number), n in starts.items():
        if n > 1 + released[attempt_id]:
            doubles.append(
                f"attempt {attempt_id} try {try_number} started by {who[attempt_id, try_number]}"
            )
    return {
        "starts": sum(starts.values()),
        "double_starts": len(doubles),
        "released": sum(released.values()),
        "fenced_out_writes": fenced_out,
        "examples": doubles[:10],
    }


def serial_overlaps(attempts: list[Attempt], policies: dict[int, str]) -> dict[str, Any]:
    """Under every overlap policy but ``allow``, no two tries of one schedule overlap."""
    serial = [a for a in attempts if is_serial(policies[a.schedule_id])]
    by_schedule = fleet.tries_by_schedule(serial)
    overlaps, worst, examples = 0, timedelta(0), []
    for tries in by_schedule.values():
        for overlap, latest, current in fleet.overlaps(tries):
            if overlap > CLOCK_SLACK:
                overlaps += 1
                examples.append(f"{latest} / {current}")
            worst = max(worst, overlap)
    return {
        "schedules": len(by_schedule),
        "overlaps": overlaps,
        "worst_s": worst.total_seconds(),
        "examples": examples[:10],
    }


def recoveries(
    attempts: list[Attempt], kills: list[dict[str, Any]], lease: float
) -> dict[str, Any]:
    """Orphan recovery: for each try lost with a killed worker, its recovery instant (the
    ``lost`` entry's ``finished_at``, written by the worker that recovered it) minus the
    kill. Tries lost while their worker lived are counted apart: workers that were not
    killed, and tries lost before their worker's kill (the database restart cut every
    worker's session, or a lease ran out while the database was down)."""
    killed_at = {kill["worker"]: kill["at"] for kill in kills}
    delays: list[float] = []
    by_kill = other = 0
    lost_attempts: Counter[int] = Counter()
    for attempt in attempts:
        for entry in fleet.tries_of(attempt):
            if entry.get("result") != "lost":
                continue
            lost_attempts[attempt.pk] += 1
            at = killed_at.get(entry.get("worker"))
            if at is None or entry["end"] < at:
                other += 1
                continue
            by_kill += 1
            delays.append((entry["end"] - at).total_seconds())
    return {
        "lost_by_kill": by_kill,
        "lost_other": other,
        "lost_attempts": lost_attempts,
        "count": len(delays),
        "p50_s": percentile(delays, 50),
        "p99_s": percentile(delays, 99),
        "max_s": max(delays) if delays else None,
        "min_s": min(delays) if delays else None,
        "lease_s": lease,
    }


# --- executions: what the jobs recorded themselves --------------------------------------------


@dataclass(frozen=True)
class Execution:
    """One run of a job body, from the job's own record
    (``benchmarks.chaos_app.jobs.execution_record``): wall-clock instants of one host;
    ``cut_off`` when its worker died before the end, which is then the instant the harness
    saw that worker gone."""

    attempt: int
    schedule: str
    try_number: int
    pid: int
    occurrence: float  # the instant of its occurrence, as a timestamp
    start: float
    end: float
    cut_off: bool


def read_execution_lines(directory: Path) -> list[dict[str, Any]]:
    """Every line the jobs appended under ``directory`` (one ``<pid>.jsonl`` per worker)."""
    lines = []
    for path in sorted(directory.glob("*.jsonl")):
        for text in path.read_text().splitlines():
            if text.strip():
                lines.append(json.loads(text))
    return lines


def executions(lines: Iterable[Mapping[str, Any]], gone_at: Mapping[int, float]) -> list[Execution]:
    """Pair each execution's start line with its end line (by its ``run`` id). One with no end
    was cut off with its worker: it ends when that process was seen gone (``gone_at`` by
    pid; never, if unknown, so that it overlaps everything after it)."""
    starts: dict[str, Mapping[str, Any]] = {}
    ends: dict[str, float] = {}
    for line in lines:
        if "start" in line:
            starts[line["run"]] = line
        elif "end" in line:
            ends[line["run"]] = float(line["end"])
    found = []
    for run, line in starts.items():
        end = ends.get(run)
        found.append(
            Execution(
                attempt=int(line["attempt"]),
                schedule=str(line["schedule"]),
                try_number=int(line["try"]),
                pid=int(line["pid"]),
                occurrence=float(line["occurrence"]),
                start=float(line["start"]),
                end=end if end is not None else gone_at.get(int(line["pid"]), math.inf),
                cut_off=end is None,
            )
        )
    return sorted(found, key=lambda e: (e.start, e.end))


def overlapping(
    runs: Iterable[Execution], group: Any, slack: timedelta = CLOCK_SLACK
) -> dict[str, Any]:
    """Executions that start before an earlier one of their group (``group(execution)``) has
    ended, by more than ``slack``; the worst overlap in seconds (a gap counts as none)."""
    latest: dict[Any, Execution] = {}
    count, worst, examples = 0, 0.0, []
    for run in sorted(runs, key=lambda e: (e.start, e.end)):
        key = group(run)
        before = latest.get(key)
        if before is not None:
            overlap = before.end - run.start
            worst = max(worst, overlap)
            if overlap > slack.total_seconds():
                count += 1
                examples.append(
                    f"{run.schedule} attempt {run.attempt} try {run.try_number} (pid {run.pid}) "
                    f"starts {overlap:.3f} s before attempt {before.attempt} try "
                    f"{before.try_number} (pid {before.pid}"
                    f"{', cut off' if before.cut_off else ''}) ends"
                )
        if before is None or run.end > before.end:
            latest[key] = run
    return {"overlaps": count, "worst_s": worst, "examples": examples[:10]}


def started_early(runs: Iterable[Execution]) -> dict[str, Any]:
    """Executions that started before the instant of their occurrence (invariant 6), by the
    job's own reading of the clock: no slack, since the engine starts a try only once its
    estimate of the server's clock, never ahead of it, reads the instant, and the server runs
    on this host's clock. The worst as seconds before the instant (0 when none)."""
    early = sorted((run for run in runs if run.start < run.occurrence), key=lambda e: e.start)
    return {
        "count": len(early),
        "worst_s": max((run.occurrence - run.start for run in early), default=0.0),
        "examples": [
            f"{run.schedule} attempt {run.attempt} try {run.try_number} (pid {run.pid}) "
            f"started {run.occurrence - run.start:.6f} s before its occurrence"
            for run in early[:10]
        ],
    }


def execution_overlaps(runs: list[Execution], serial_schedules: set[str]) -> dict[str, Any]:
    """From the jobs' own records: two live executions of one attempt, and two executions
    of one serial schedule at once (beyond :data:`CLOCK_SLACK` either way); executions that
    started before their instant; and how many executions were cut off by their worker's
    death, and of those how many ran again."""
    by_attempt = overlapping(runs, lambda e: e.attempt)
    early = started_early(runs)
    serial = overlapping([e for e in runs if e.schedule in serial_schedules], lambda e: e.schedule)
    last_start: dict[int, float] = {}
    for e in runs:
        last_start[e.attempt] = max(e.start, last_start.get(e.attempt, e.start))
    cut = [e for e in runs if e.cut_off]
    rerun = sum(1 for e in cut if last_start[e.attempt] > e.start)
    return {
        "executions": len(runs),
        "cut_off": len(cut),
        "cut_off_and_run_again": rerun,
        "attempt_overlaps": by_attempt["overlaps"],
        "attempt_worst_s": by_attempt["worst_s"],
        "serial_overlaps": serial["overlaps"],
        "serial_worst_s": serial["worst_s"],
        "slack_s": CLOCK_SLACK.total_seconds(),
        "started_early": early["count"],
        "started_early_worst_s": early["worst_s"],
        "examples": (early["examples"] + by_attempt["examples"] + serial["examples"])[:10],
    }


# --- effects: non-atomic executions, atomic exactly once ---------------------------------------


def _key(attempt: Attempt) -> str:
    return idempotency_key(attempt.schedule_id, attempt.occurrence_at, attempt.trigger)


def effects(
    attempts: list[Attempt],
    executors: dict[int, str],
    effect_keys: list[str],
    lost_attempts: Counter[int],
    released: int,
) -> dict[str, Any]:
    """``count_run`` writes one ``Effect`` per execution (``<key>|<uuid>``): executions beyond
    one per occurrence may only come from tries cut off (lost, or released at shutdown).
    Atomic jobs write ``<key>`` in the transaction of their fenced success: exactly one per
    succeeded attempt, none for any other."""
    executions: Counter[str] = Counter()
    plain: Counter[str] = Counter()
    for key in effect_keys:
        prefix, bar, _ = key.partition("|")
        if bar:
            executions[prefix] += 1
        else:
            plain[key] += 1
    counting = atomic = atomic_succeeded = 0
    extra = allowed = never_ran = atomic_bad = 0
    examples = []
    for attempt in attempts:
        executor = executors[attempt.schedule_id]
        if attempt.status in (Status.SKIPPED, Status.MISSED):
            continue
        key = _key(attempt)
        if executor in COUNTING:
            counting += 1
            n = executions[key]
            extra += max(0, n - 1)
            allowed += lost_attempts[attempt.pk]
            if attempt.status == Status.SUCCEEDED and n == 0:
                never_ran += 1
                examples.append(f"attempt {attempt.pk} succeeded without running")
        elif executor in ATOMIC:
            atomic += 1
            want = 1 if attempt.status == Status.SUCCEEDED else 0
            atomic_succeeded += want
            if plain[key] != want:
                atomic_bad += 1
                examples.append(
                    f"atomic attempt {attempt.pk} {attempt.status}: {plain[key]} effect(s)"
                )
    return {
        "counting_attempts": counting,
        "counting_executions": sum(executions.values()),
        "counting_extra": extra,
        "counting_extra_allowed": allowed + released,
        "counting_succeeded_without_execution": never_ran,
        "atomic_attempts": atomic,
        "atomic_succeeded": atomic_succeeded,
        "atomic_effects": sum(plain.values()),
        "atomic_not_exactly_once": atomic_bad,
        "examples": examples[:10],
    }


# --- logs --------------------------------------------------------------------------------------


def log_figures(log_paths: Iterable[Path]) -> dict[str, int]:
    figures: Counter[str] = Counter()
    for path in log_paths:
        text = path.read_text(errors="replace")
        figures["tracebacks"] += text.count("Traceback")
        figures["database_is_locked"] += text.count("database is locked")
        figures["database_unavailable"] += text.count("database unavailable")
        figures["deadlocks"] += text.count("Deadlock found")  # InnoDB error 1213
    return dict(figures)
