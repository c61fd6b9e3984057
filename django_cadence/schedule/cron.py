"""Cron instants under Vixie cron's DST rules.

Occurrences are a fixed set of UTC instants: matching wall times are generated day by day
from the expanded sets (:mod:`.cron_syntax`), then resolved on naive wall time with
``zoneinfo`` (docs/design.md, "DST rules for cron"); croniter is not used here because it
fires fixed-time schedules twice in a fold and mis-handles some gaps:

* wildcard expressions follow real time: gap slots never happen, fold slots fire twice;
* fixed-time expressions fire a gap slot once, at the transition instant, and a fold slot
  only at its first pass.
"""

from __future__ import annotations

import calendar
import heapq
from bisect import bisect_left
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from .cron_syntax import CronFields, parse_cron
from .instants import as_utc

__all__ = ["cron_instants"]

# A valid expression fires at least every 40 years (29 February on a given weekday, across
# a skipped century leap year); scanning longer than this without a match is a bug.
_MAX_IDLE_YEARS = 100
_LAST_YEAR = 9998  # leave room for UTC offsets before datetime.max
_MINUTES = tuple(timedelta(minutes=m) for m in range(60))
_SECOND = timedelta(seconds=1)


def cron_instants(expr: str, tz: tzinfo, after: datetime) -> Iterator[datetime]:
    """Every instant of ``expr`` read in ``tz`` strictly after ``after``, in UTC, increasing.

    Infinite for practical purposes (it stops at the end of year 9998). Validates eagerly,
    so a bad expression or a naive ``after`` raises here, not at the first ``next()``.
    """
    fields = parse_cron(expr)
    return _instants(fields, tz, as_utc(after, "after"))


def _instants(fields: CronFields, tz: tzinfo, after: datetime) -> Iterator[datetime]:
    """Merge the wall-order stream with the fold repeats it defers, strictly increasing.

    Wall order equals UTC order except for second passes through a fold, which come after
    later first-pass slots; those wait in a heap until the stream passes them.
    """
    last = after
    repeats: list[datetime] = []
    for instant, repeat in _candidates(fields, tz, _scan_start(tz, after)):
        while repeats and repeats[0] < instant:
            early = heapq.heappop(repeats)
            if early > last:
                last = early
                yield early
        if repeat is not None:
            heapq.heappush(repeats, repeat)
        if instant > last:  # also drops a gap substitution equal to the next real slot
            last = instant
            yield instant
    yield from (early for early in sorted(repeats) if early > last)


def _scan_start(tz: tzinfo, after: datetime) -> datetime:
    """The earliest wall time that can still have an instant after ``after``.

    Usually the local wall time of ``after``; in the first pass of a fold, wall times up to
    one fold earlier still have their second pass ahead.
    """
    local = after.astimezone(tz)
    wall = local.replace(tzinfo=None)
    if local.fold == 0:
        first, second = _offset(wall, tz, 0), _offset(wall, tz, 1)
        if second < first:  # inside the first pass of a fold
            wall -= first - second
    return wall


_Candidate = tuple[datetime, datetime | None]


def _candidates(fields: CronFields, tz: tzinfo, start: datetime) -> Iterator[_Candidate]:
    """(instant, second-pass instant or None) for each matching wall time from ``start``."""
    start_hour = start.replace(minute=0, second=0, microsecond=0)
    for day in _matching_days(fields, start.date()):
        hours = fields.hours
        if day == start.date():
            hours = hours[bisect_left(hours, start.hour) :]
        for hour in hours:
            wall = datetime.combine(day, time(hour))
            minutes = fields.minutes
            if wall == start_hour:
                minutes = minutes[bisect_left(minutes, start.minute) :]
            if minutes:
                yield from _hour_candidates(fields, tz, wall, minutes)


def _matching_days(fields: CronFields, start: date) -> Iterator[date]:
    """Matching local dates from ``start``; skips whole months, so rare expressions are cheap."""
    year, month, first = start.year, start.month, start.day
    idle_years = 0
    while year <= _LAST_YEAR:
        if month in fields.months:
            for day in _month_days(fields, year, month, first):
                idle_years = 0
                yield date(year, month, day)
        first, month = 1, month + 1
        if month == 13:
            year, month, idle_years = year + 1, 1, idle_years + 1
            if idle_years > _MAX_IDLE_YEARS:
                raise RuntimeError(f"cron scan found no day in {_MAX_IDLE_YEARS} years: {fields}")


def _month_days(fields: CronFields, year: int, month: int, first: int) -> Iterator[int]:
    """The month's matching days from ``first``; ``L`` adds the month's length to the days."""
    weekday_of_1st, length = calendar.monthrange(year, month)
    sunday_based = (weekday_of_1st + 1) % 7
    listed = fields.days
    if fields.last_day and length not in listed:
        listed = (*(d for d in listed if d < length), length)
    if fields.days_and:
        candidates = (d for d in listed if first <= d <= length)
        yield from (d for d in candidates if (sunday_based + d - 1) % 7 in fields.weekdays)
        return
    days = set(listed)
    for day in range(first, length + 1):
        if day in days or (sunday_based + day - 1) % 7 in fields.weekdays:
            yield day


def _hour_candidates(
    fields: CronFields, tz: tzinfo, wall: datetime, minutes: tuple[int, ...]
) -> Iterator[_Candidate]:
    """Resolve one hour's matching minutes; an hour without a transition needs 4 look-ups."""
    offset = _steady_offset(tz, wall + _MINUTES[minutes[0]], wall + _MINUTES[minutes[-1]])
    if offset is not None:
        base = (wall - offset).replace(tzinfo=UTC)
        for minute in minutes:
            yield base + _MINUTES[minute], None
        return
    transition: datetime | None = None
    for minute in minutes:
        slot = wall + _MINUTES[minute]
        first = _offset(slot, tz, 0)
        second = _offset(slot, tz, 1)
        if first == second:
            yield (slot - first).replace(tzinfo=UTC), None
        elif first > second:  # fold: the slot happens at slot - first, then at slot - second
            repeat = None if fields.fixed_time else (slot - second).replace(tzinfo=UTC)
            yield (slot - first).replace(tzinfo=UTC), repeat
        elif fields.fixed_time:  # gap: fire once, when the clock jumps over the slot
            before = (slot - second).replace(tzinfo=UTC)
            after = (slot - first).replace(tzinfo=UTC)
            if transition is None or not before < transition <= after:
                transition = _transition(tz, before, after)
            yield transition, None


def _offset(wall: datetime, tz: tzinfo, fold: int) -> timedelta:
    offset = wall.replace(tzinfo=tz, fold=fold).utcoffset()
    if offset is None:
        raise ValueError(f"time zone {tz!r} gives no UTC offset for {wall}")
    return offset


def _steady_offset(tz: tzinfo, first: datetime, last: datetime) -> timedelta | None:
    """The offset if wall times first..last all exist once with it, else None."""
    offset = _offset(first, tz, 0)
    if offset == _offset(first, tz, 1) == _offset(last, tz, 0) == _offset(last, tz, 1):
        return offset
    return None


def _transition(tz: tzinfo, before: datetime, after: datetime) -> datetime:
    """The first instant in (before, after] whose offset differs from ``before``'s.

    Binary search on whole seconds (zone transitions are whole seconds): a gap of a few
    hours takes about 14 look-ups, and it only runs on the day of a spring-forward.
    """
    offset = before.astimezone(tz).utcoffset()
    low, high = 0, int((after - before) / _SECOND)
    while high - low > 1:
        middle = (low + high) // 2
        if (before + middle * _SECOND).astimezone(tz).utcoffset() == offset:
            low = middle
        else:
            high = middle
    return before + high * _SECOND
