"""What workers leave behind, checked: the lines of their logs, the record of every
occurrence that ``benchmarks.fleet`` reads (invariants 1, 2 and 4), and the executions the
jobs recorded of themselves.

The fleet tests start the workers (the ``worker`` fixture of ``tests/fleet/conftest.py``);
the clock's tests run an engine in this process and check the same record.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from itertools import pairwise
from pathlib import Path

from benchmarks.fleet import occurrence_record, tries_of
from django_cadence.models import Attempt, Schedule, Trigger
from django_cadence.schedule import specs

# Lines no worker may log in a healthy run. Job failures are expected here: they are logged
# as one-line events by ``django_cadence.events`` (never as tracebacks) and are not problems;
# nor is a schedule whose jobs keep failing being reported overdue.
JOB_EVENTS = re.compile(
    r" django_cadence\.events (attempt failed|attempt dead_letter|occurrence|schedule overdue) "
)
PROBLEMS = re.compile(
    r"Traceback|Exception in thread|Exception ignored| WARNING | ERROR | CRITICAL "
    r"|attempt lost|attempt recovered|second signal"
)


def log_problems(text: str, *, allowed: tuple[str, ...] = ()) -> list[str]:
    """The lines of a worker's log that report something wrong, less the ``allowed`` ones."""
    return [
        line
        for line in text.splitlines()
        if PROBLEMS.search(line)
        and not JOB_EVENTS.search(line)
        and not any(ok in line for ok in allowed)
    ]


OUTAGE_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ERROR \S+ database unavailable: .*?"
    r"; retrying in ([\d.]+) s$",
    re.MULTILINE | re.DOTALL,
)


def backoffs(text: str) -> list[tuple[float, float]]:
    """(seconds announced, seconds until the next attempt logged) for each outage line that
    has a next one: a worker that backs off keeps to what it announced."""
    lines = [  # local times, read as UTC: only their differences count
        (datetime.strptime(f"{at} +0000", "%Y-%m-%d %H:%M:%S,%f %z"), float(delay))
        for at, delay in OUTAGE_LINE.findall(text)
    ]
    return [(delay, (later - at).total_seconds()) for (at, delay), (later, _) in pairwise(lines)]


# --- the record of every occurrence (invariants 1, 2 and 4) ----------------------------------


def check_occurrences(schedule: Schedule, *, ended: bool = False) -> dict[str, int]:
    """Assert that every occurrence from the schedule's first to its ``last_run_at`` has
    exactly one record, and nothing beyond: one attempt row each, or a place in exactly one
    ``missed`` row's range (counted with its ``outcome["missed"]``).

    Also that the schedule's counters and ``next_run_at`` agree with the rows, which is what
    "advance and record together" leaves behind (not for a schedule ``ended`` since, whose
    ``next_run_at`` is cleared only when a planner next looks at it). Returns the figures.
    """
    assert schedule.last_run_at is not None, f"{schedule.name} was never planned"
    rows = Attempt.objects.filter(schedule=schedule, trigger=Trigger.SCHEDULE)
    record = occurrence_record(schedule, rows, schedule.last_run_at)
    assert not record.bad_missed, record.bad_missed
    assert not record.twice, f"{schedule.name}: occurrences recorded twice: {record.twice}"
    assert not record.gaps, f"{schedule.name}: occurrences without a record: {record.gaps}"
    assert not record.beyond, (
        f"{schedule.name}: records of no occurrence in the window: {record.beyond}"
    )
    assert schedule.occurrence_count == record.planned, (schedule.name, schedule.occurrence_count)
    assert schedule.missed_count == record.missed, (schedule.name, schedule.missed_count)
    if not ended:
        assert schedule.next_run_at == specs.next_occurrence(schedule.spec(), schedule.last_run_at)
    return {"occurrences": len(record.expected), "rows": record.rows, "missed": record.missed}


def try_intervals(attempt: Attempt) -> Iterator[tuple[datetime, datetime, str]]:
    """(started_at, finished_at, worker) of every try the attempt's history records."""
    for entry in tries_of(attempt):
        yield entry["start"], entry["end"], entry.get("worker") or ""


# --- what the jobs themselves recorded (``tests.jobs.record_span``) -------------------------


def spans(directory: Path) -> list[dict]:
    """Every execution ``tests.jobs.record_span`` recorded in ``directory``, by start; one
    still running (or killed) has no ``end``."""
    found = [json.loads(path.read_text()) for path in Path(directory).glob("*.json")]
    return sorted(found, key=lambda span: span["start"])


def overlapping_spans(recorded: list[dict]) -> list[tuple[str, float, dict, dict]]:
    """(schedule, seconds, earlier, later) for every execution that started before an
    earlier one of its schedule had ended (one that never ended overlaps all later ones)."""
    found = []
    latest: dict[str, dict] = {}
    for span in recorded:
        before = latest.get(span["schedule"])
        if before is not None:
            end = before.get("end", float("inf"))
            if span["start"] < end:
                found.append((span["schedule"], end - span["start"], before, span))
        if before is None or span.get("end", float("inf")) > before.get("end", float("inf")):
            latest[span["schedule"]] = span
    return found
