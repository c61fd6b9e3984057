"""When a schedule that has gone without a success is *overdue*: pure, ``now`` a parameter.

A schedule may go ``max_silence`` without a success; absent, its rule decides: the second
occurrence after its last success (or after it was enabled, if it never succeeded), plus
its retry ladder, the longest its retries can wait. So a schedule whose one occurrence
failed every try is not yet overdue; one whose next occurrence is failing too is, once its
retries are spent (docs/design.md, "Overdue schedules").
"""

from __future__ import annotations

from datetime import datetime, timedelta

from . import specs


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
        return since + max_silence
    first = specs.next_occurrence(spec, since)
    if first is None:
        return None
    second = specs.next_occurrence(spec, first) or first
    return second + ladder


def is_overdue(deadline: datetime | None, now: datetime) -> bool:
    return deadline is not None and now > deadline
