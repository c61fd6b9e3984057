"""A schedule's instants under its calendars: skipped, or shifted to an included day.

The raw instants come from the schedule's rule (cron, interval, once); an instant whose local
day (in the schedule's zone) a calendar excludes, or that falls in a freeze window, is
excluded. ``skip`` drops it; ``previous`` and ``next`` move it to the same wall time on the
nearest included day, and an instant that lands on one already taken counts once. Every
search is bounded by :data:`LOOKAHEAD` (docs/design.md, "Calendars").
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from django_cadence.schedule.calendars import CalendarSet

__all__ = [
    "LOOKAHEAD",
    "SHIFTS",
    "ExcludedRun",
    "after_included_time",
    "effective",
    "excluded_runs",
    "shift_instant",
]

SHIFTS = ("skip", "previous", "next")
# How far a search for an included day goes before it says there is none.
LOOKAHEAD = timedelta(days=3660)
_DAY = timedelta(days=1)
_MICROSECOND = timedelta(microseconds=1)

RawFrom = Callable[[datetime], Iterator[datetime]]  # the rule's instants strictly after a point


@dataclass(frozen=True)
class ExcludedRun:
    """Consecutive excluded instants with one reason: one record in the history."""

    calendar: str
    first: datetime
    last: datetime
    count: int


def effective(
    raw_from: RawFrom, calendars: CalendarSet, zone: ZoneInfo, shift: str, after: datetime
) -> Iterator[datetime]:
    """The instants strictly after ``after`` that run, increasing, with the shift applied."""
    if shift == "skip":
        return _skipping(raw_from, calendars, zone, after)
    step = -1 if shift == "previous" else 1
    return _shifting(raw_from, calendars, zone, after, step)


def excluded_runs(
    raw: Iterator[datetime], calendars: CalendarSet, zone: ZoneInfo
) -> list[ExcludedRun]:
    """The excluded instants of ``raw`` (a finite span), grouped into runs by calendar."""
    runs: list[ExcludedRun] = []
    for instant in raw:
        reason = calendars.reason(instant, zone)
        if reason is None:
            if runs and runs[-1].count > 0:
                runs.append(ExcludedRun("", instant, instant, 0))  # a break between runs
            continue
        if runs and runs[-1].calendar == reason:
            run = runs[-1]
            runs[-1] = ExcludedRun(reason, run.first, instant, run.count + 1)
        else:
            runs.append(ExcludedRun(reason, instant, instant, 1))
    return [run for run in runs if run.count]


def shift_instant(
    instant: datetime, calendars: CalendarSet, zone: ZoneInfo, step: int
) -> datetime | None:
    """``instant``'s wall time on the nearest included day before (-1) or after (+1) it.

    A wall time that does not exist on that day (a spring-forward gap) lands as far past the
    gap as it was into it; an ambiguous one lands on its first pass. None: no included day
    within :data:`LOOKAHEAD`.
    """
    local = instant.astimezone(zone)
    wall = local.time().replace(tzinfo=None, fold=0)
    day: date | None = local.date()
    for _ in range(LOOKAHEAD.days):
        assert day is not None
        day = _next_included_day(calendars, day, step)
        if day is None:
            return None
        moved = datetime.combine(day, wall, tzinfo=zone).astimezone(UTC)
        if calendars.frozen(moved) is None:
            return moved
    return None


def after_included_time(
    start: datetime, span: timedelta, calendars: CalendarSet, zone: ZoneInfo
) -> datetime:
    """The instant at which ``span`` of included time has passed since ``start``: the local
    days the calendars exclude do not count (freezes do). Bounded by :data:`LOOKAHEAD`."""
    cursor, left = start, span
    for _ in range(LOOKAHEAD.days + span.days + 2):
        day = cursor.astimezone(zone).date()
        try:
            end_of_day = _day_start(day + _DAY, zone)
        except OverflowError:
            break
        if calendars.day_reason(day) is None:
            if cursor + left <= end_of_day:
                return cursor + left
            left -= end_of_day - cursor
        cursor = end_of_day
    return cursor + left


def _skipping(
    raw_from: RawFrom, calendars: CalendarSet, zone: ZoneInfo, after: datetime
) -> Iterator[datetime]:
    """Included raw instants; an excluded day or freeze is jumped over, not walked through."""
    cursor = after
    while True:
        for instant in raw_from(cursor):
            resume = _excluded_until(instant, calendars, zone)
            if resume is None:
                yield instant
                continue
            if resume - instant > LOOKAHEAD:
                return
            cursor = max(resume - _MICROSECOND, instant)
            break
        else:
            return


def _excluded_until(instant: datetime, calendars: CalendarSet, zone: ZoneInfo) -> datetime | None:
    """None when ``instant`` is included; else the first instant after its excluded span."""
    day = instant.astimezone(zone).date()
    if calendars.day_reason(day) is not None:
        included = _next_included_day(calendars, day, 1)
        return _day_start(included, zone) if included else instant + LOOKAHEAD + _DAY
    frozen = calendars.frozen(instant)
    return frozen[1] if frozen else None


def _shifting(
    raw_from: RawFrom, calendars: CalendarSet, zone: ZoneInfo, after: datetime, step: int
) -> Iterator[datetime]:
    """Every raw instant's run time (itself, or shifted), merged in order and deduplicated.

    Shifted instants come out of order, so they wait in a heap until no later raw instant
    can produce an earlier one: for ``next``, a shift never moves back; for ``previous``,
    never before the start of the last included day at or before the raw instant.
    """
    start = after if step < 0 else _lookback(after, calendars, zone)
    waiting: list[datetime] = []
    last = after
    for instant in raw_from(start):
        moved = instant
        if calendars.reason(instant, zone) is not None:
            if _next_included_day(calendars, instant.astimezone(zone).date(), 1) is None:
                break  # no included day left within the lookahead: nothing more can run
            moved = shift_instant(instant, calendars, zone, step)  # type: ignore[assignment]
        if moved is not None and moved > after:
            heapq.heappush(waiting, moved)
        bound = instant if step > 0 else _last_included_start(instant, calendars, zone)
        if bound is None:
            break
        while waiting and waiting[0] <= bound:
            ready = heapq.heappop(waiting)
            if ready > last:
                last = ready
                yield ready
        if not waiting and instant - last > LOOKAHEAD:
            return
    for ready in sorted(waiting):
        if ready > last:
            last = ready
            yield ready


def _lookback(after: datetime, calendars: CalendarSet, zone: ZoneInfo) -> datetime:
    """Where to read raw instants from for ``next``: the start of the excluded days just
    before ``after``, whose instants may be shifted past it."""
    day = after.astimezone(zone).date()
    first = day
    for _ in range(LOOKAHEAD.days):
        try:
            earlier = first - _DAY
        except OverflowError:
            break
        if calendars.day_reason(earlier) is None:
            break
        first = earlier
    return min(after, _day_start(first, zone) - _MICROSECOND)


def _last_included_start(
    instant: datetime, calendars: CalendarSet, zone: ZoneInfo
) -> datetime | None:
    day = instant.astimezone(zone).date()
    if calendars.day_reason(day) is None:
        return _day_start(day, zone)
    found = _next_included_day(calendars, day, -1)
    return _day_start(found, zone) if found else None


@lru_cache(maxsize=65_536)
def _next_included_day(calendars: CalendarSet, day: date, step: int) -> date | None:
    """The nearest day strictly before (-1) or after (+1) ``day`` no calendar excludes."""
    for _ in range(LOOKAHEAD.days):
        try:
            day = day + step * _DAY
        except OverflowError:
            return None
        if calendars.day_reason(day) is None:
            return day
    return None


def _day_start(day: date, zone: ZoneInfo) -> datetime:
    return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)
