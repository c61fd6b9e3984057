"""When a schedule that has gone without a success is *overdue*: pure, ``now`` a parameter.

A schedule may go ``max_silence`` without a success; absent, its rule decides: the second
occurrence after its last success (or after it was enabled, if it never succeeded), plus
its retry ladder, the longest its retries can wait. So a schedule whose one occurrence
failed every try is not yet overdue; one whose next occurrence is failing too is, once its
retries are spent (docs/design.md, "Overdue schedules"). Under calendars, ``max_silence``
counts included days only: a long weekend does not make a weekday job overdue.

An occurrence counts from when an engine planned it: the deadline moves later by as long as
the first occurrence after the last success (or the enabling) waited to be planned, and
while it still waits, past now. A schedule made before the first engine starts, or left
while none ran, is not overdue the moment one does; the absence of engines is the health
checks' ``no_worker`` and ``backlog`` to report.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from . import calendar_filter, specs


def retry_ladder(max_attempts: int, *, base: timedelta, cap: timedelta) -> timedelta:
    """The longest the retries of one occurrence wait in all: the backoffs before tries
    2..``max_attempts`` (jitter only ever shortens them)."""
    return sum((min(cap, base * 2 ** (n - 1)) for n in range(1, max_attempts)), timedelta(0))


def overdue_at(
    spec: specs.Spec,
    since: datetime,
    *,
    max_silence: timedelta | None,
    ladder: timedelta,
) -> datetime | None:
    """When a schedule last successful (or enabled) at ``since`` becomes overdue, or None
    when its rule has no occurrence left after ``since`` (a fired one-shot, an ended rule)."""
    if max_silence is not None:
        if spec.calendars is not None and spec.calendars.calendars:
            return calendar_filter.after_included_time(
                since, max_silence, spec.calendars, specs.validate_timezone(spec.timezone)
            )
        return since + max_silence
    first = specs.next_occurrence(spec, since)
    if first is None:
        return None
    second = specs.next_occurrence(spec, first) or first
    return second + ladder


def planned_late(
    deadline: datetime | None, first: datetime | None, planned_at: datetime
) -> datetime | None:
    """``deadline`` moved later by as long as the occurrence ``first`` waited to be planned
    (it was planned, or still waits, at ``planned_at``); planned ahead moves nothing."""
    if deadline is None or first is None:
        return deadline
    return deadline + max(planned_at - first, timedelta(0))


def is_overdue(deadline: datetime | None, now: datetime) -> bool:
    return deadline is not None and now > deadline
