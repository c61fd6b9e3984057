"""When schedules come due: pure functions of a spec and an instant, no database, no clock.

A spec's occurrences are a fixed set of UTC instants; every function here takes the instant
to ask from (``after``) as an argument, so the planner, the admin preview and the tests all
see the same answer (docs/design.md "Time" and "Specs and bounds"). Cron expressions and their
DST rules live in :mod:`django_cadence.schedule.cron`; this module adds intervals, one-shots, the
bounds every kind shares, and jitter.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice, takewhile
from zoneinfo import ZoneInfo

from django_cadence.exceptions import InvalidSpec
from django_cadence.schedule import calendar_filter
from django_cadence.schedule.calendar_filter import ExcludedRun
from django_cadence.schedule.calendars import CalendarSet
from django_cadence.schedule.cron import cron_instants
from django_cadence.schedule.cron_syntax import is_fixed_time, validate_cron
from django_cadence.schedule.instants import as_utc

__all__ = [
    "Spec",
    "count_between",
    "cron_instants",
    "excluded_runs",
    "is_fixed_time",
    "jitter_delay",
    "next_occurrence",
    "occurrences",
    "upcoming",
    "validate_cron",
    "validate_timezone",
]

KINDS = ("cron", "interval", "once")
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class Spec:
    """Everything that decides a schedule's instants, detached from the model row.

    ``occurrence_count`` is how many occurrences were already spent toward
    ``max_occurrences``; the occurrences returned from ``after`` are capped at what is left.
    ``anchor`` is the interval anchor when ``start_at`` is None (the schedule's creation).
    ``calendars`` exclude instants, which ``shift`` skips or moves to an included day.
    """

    kind: str  # "cron" | "interval" | "once"
    cron: str = ""
    interval: timedelta | None = None
    run_at: datetime | None = None
    timezone: str = "UTC"  # IANA name; cron fields are read in this zone
    start_at: datetime | None = None
    end_at: datetime | None = None
    max_occurrences: int | None = None
    occurrence_count: int = 0
    anchor: datetime | None = None
    calendars: CalendarSet | None = None
    shift: str = "skip"  # "skip" | "previous" | "next"


def validate_timezone(name: str) -> ZoneInfo:
    """Load an IANA zone, or raise InvalidSpec; never anything else.

    ``ZoneInfo`` raises KeyError, ValueError or OSError depending on how a name is wrong
    (unknown, absolute path, directory, not a TZif file); a form only needs one answer.
    """
    if not isinstance(name, str) or not name:
        raise InvalidSpec(f"Unknown time zone {name!r}.")
    try:
        return ZoneInfo(name)
    except Exception as exc:  # see the docstring: every failure means "unknown zone"
        raise InvalidSpec(f"Unknown time zone '{name}'.") from exc


def occurrences(spec: Spec, after: datetime) -> Iterator[datetime]:
    """The spec's instants strictly after ``after``, in UTC, with its bounds applied.

    Bounds: at or after ``start_at``, at or before ``end_at`` (inclusive), and at most
    ``max_occurrences - occurrence_count`` of them. Stops when a bound ends the schedule.
    Validates eagerly, so a bad spec raises here rather than at the first ``next()``.
    """
    after = as_utc(after, "after")
    left = _remaining(spec)
    instants = _raw(spec, after)
    if spec.calendars is not None and spec.calendars.calendars:
        zone = validate_timezone(spec.timezone)
        start_at = _optional_utc(spec.start_at, "start_at")
        instants = calendar_filter.effective(
            lambda point: _raw(spec, point), spec.calendars, zone, spec.shift, after
        )
        if start_at is not None:  # a shift back never moves before the schedule starts
            instants = (instant for instant in instants if instant >= start_at)
    if left is not None:
        instants = islice(instants, left)
    return instants


def _raw(spec: Spec, after: datetime) -> Iterator[datetime]:
    """The rule's instants strictly after ``after`` within start_at and end_at, no calendar."""
    end_at = _optional_utc(spec.end_at, "end_at")
    instants = _unbounded(spec, _floor(spec, after))
    if end_at is not None:
        instants = takewhile(lambda instant: instant <= end_at, instants)
    return instants


def excluded_runs(spec: Spec, after: datetime, until: datetime) -> list[ExcludedRun]:
    """The rule's instants in (after, until] that its calendars exclude, as runs."""
    if spec.calendars is None or not spec.calendars.calendars:
        return []
    until = as_utc(until, "until")
    raw = takewhile(lambda instant: instant <= until, _raw(spec, as_utc(after, "after")))
    return calendar_filter.excluded_runs(raw, spec.calendars, validate_timezone(spec.timezone))


def upcoming(spec: Spec, count: int, after: datetime) -> list[datetime]:
    """The next ``count`` occurrences (fewer if the schedule ends first)."""
    if count < 0:
        raise ValueError(f"count must be zero or more, not {count}.")
    return list(islice(occurrences(spec, after), count))


def next_occurrence(spec: Spec, after: datetime) -> datetime | None:
    """The first occurrence strictly after ``after``, or None when the schedule is finished."""
    return next(occurrences(spec, after), None)


def count_between(spec: Spec, after: datetime, until: datetime) -> int:
    """How many occurrences fall in (after, until], bounds applied.

    Integer arithmetic for intervals, so a long outage of a one-second schedule is O(1);
    cron and once iterate, bounded by ``until``.
    """
    after, until = as_utc(after, "after"), as_utc(until, "until")
    if until <= after:
        return 0
    if spec.kind != "interval" or spec.calendars is not None:
        return sum(1 for _ in takewhile(lambda i: i <= until, occurrences(spec, after)))
    anchor, step, first_k = _interval_grid(spec)
    end_at = _optional_utc(spec.end_at, "end_at")
    ceiling = until if end_at is None else min(until, end_at)
    low = max(first_k, _micros(_floor(spec, after) - anchor) // step + 1)
    high = _micros(ceiling - anchor) // step
    count = max(0, high - low + 1)
    left = _remaining(spec)
    return count if left is None else min(count, left)


def jitter_delay(key: str, occurrence_at: datetime, jitter: timedelta) -> timedelta:
    """A start delay in [0, jitter) that every worker computes alike for one occurrence.

    Derived from sha256(key + the occurrence's UTC ISO format), so it spreads a fleet of
    schedules due at the same instant without any shared state.
    """
    if jitter < timedelta(0):
        raise ValueError(f"jitter must be zero or more, not {jitter!r}.")
    at = as_utc(occurrence_at, "occurrence_at")
    span = _micros(jitter)
    if span == 0:
        return timedelta(0)
    digest = hashlib.sha256((key + at.isoformat()).encode()).digest()
    return timedelta(microseconds=int.from_bytes(digest, "big") % span)


def _unbounded(spec: Spec, floor: datetime) -> Iterator[datetime]:
    """The kind's own instants strictly after ``floor``, before end_at and the count apply."""
    if spec.kind == "cron":
        return cron_instants(spec.cron, validate_timezone(spec.timezone), floor)
    if spec.kind == "interval":
        return _interval_instants(spec, floor)
    if spec.kind == "once":
        if spec.run_at is None:
            raise InvalidSpec("A once schedule needs run_at.")
        run_at = as_utc(spec.run_at, "run_at")
        return iter([run_at] if run_at > floor else [])
    raise InvalidSpec(f"Unknown schedule kind {spec.kind!r}; expected one of {', '.join(KINDS)}.")


def _interval_instants(spec: Spec, floor: datetime) -> Iterator[datetime]:
    anchor, step, first_k = _interval_grid(spec)
    k = max(first_k, _micros(floor - anchor) // step + 1)
    return _grid(anchor, step, k)


def _grid(anchor: datetime, step: int, k: int) -> Iterator[datetime]:
    """anchor + k * step for k, k+1, ...: each computed from the anchor, so nothing drifts."""
    try:
        while True:
            yield anchor + timedelta(microseconds=k * step)
            k += 1
    except OverflowError:  # past datetime.max: the schedule simply has no more instants
        return


def _interval_grid(spec: Spec) -> tuple[datetime, int, int]:
    """(anchor, step in microseconds, first k): start_at fires at k=0, creation at k=1."""
    if not isinstance(spec.interval, timedelta) or spec.interval <= timedelta(0):
        raise InvalidSpec(f"An interval schedule needs a positive interval, not {spec.interval!r}.")
    step = _micros(spec.interval)
    if spec.start_at is not None:
        return as_utc(spec.start_at, "start_at"), step, 0
    if spec.anchor is not None:
        return as_utc(spec.anchor, "anchor"), step, 1
    raise ValueError("An interval spec needs start_at or anchor (the schedule's creation time).")


def _floor(spec: Spec, after: datetime) -> datetime:
    """Instants must be > floor: strictly after ``after`` and at or after ``start_at``."""
    start_at = _optional_utc(spec.start_at, "start_at")
    if start_at is None or start_at <= after:
        return after
    return start_at - _MICROSECOND


def _remaining(spec: Spec) -> int | None:
    if spec.max_occurrences is None:
        return None
    return max(0, spec.max_occurrences - spec.occurrence_count)


def _optional_utc(value: datetime | None, name: str) -> datetime | None:
    return None if value is None else as_utc(value, name)


def _micros(delta: timedelta) -> int:
    """Exact integer microseconds: float seconds would drift over millions of steps."""
    return delta // _MICROSECOND
