"""Which schedules are overdue: gone longer without a success than they may.

One query reads every enabled, unfinished schedule with its last success (a short backward
scan of the ``(schedule, status, occurrence_at)`` index per schedule); the decision is the
pure :mod:`..schedule.silence`. For the schedules past their deadline, one more read (by the
unique key, in batches) finds when their first occurrence after the last success was planned:
a late plan moves the deadline (``silence.planned_late``). The admin's badge and filter, the
metrics, the health checks and the engine's ``schedule_overdue`` signal all read it from
here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import F, OuterRef, Q, QuerySet, Subquery

from ..exceptions import InvalidSpec
from ..schedule import silence, specs
from . import calendar_sets
from .attempt import Attempt
from .choices import Status, Trigger
from .options import resolved_options
from .schedule import Schedule


@dataclass(frozen=True)
class Silence:
    schedule_id: int
    name: str
    last_success_at: datetime | None  # when its newest succeeded occurrence finished
    overdue_at: datetime | None  # None: its rule has nothing left to run
    overdue: bool
    signalled: bool  # schedule_overdue already sent for this spell


def with_last_success(queryset: QuerySet[Schedule]) -> QuerySet[Schedule]:
    """Annotate ``last_success_at`` on each schedule."""
    newest = Attempt.objects.filter(schedule=OuterRef("pk"), status=Status.SUCCEEDED).order_by(
        "-occurrence_at"
    )
    return queryset.annotate(last_success_at=Subquery(newest.values("finished_at")[:1]))


PLANNED_BATCH = 500  # schedules whose first occurrence's planning one read looks up
Planned = Mapping[tuple[int, datetime], datetime]  # (schedule, occurrence) -> planned at


def silence_of(
    schedule: Schedule,
    last_success_at: datetime | None,
    now: datetime,
    planned: Planned | None = None,
) -> Silence:
    """``schedule``'s silence as of ``now``; a paused or finished schedule is never overdue.

    ``planned``: when occurrences were planned (:func:`silences` reads it for the schedules
    past their deadline); without it, a planned occurrence counts as planned on time.
    """
    deadline = None
    if schedule.enabled and schedule.next_run_at is not None:
        options = resolved_options(schedule)
        ladder = silence.retry_ladder(
            options["max_attempts"], base=options["retry_base"], cap=options["retry_cap"]
        )
        since = _since(schedule, last_success_at)
        try:
            spec = schedule.spec()
            first = specs.next_occurrence(spec, since)
            deadline = silence.overdue_at(
                spec, since, max_silence=schedule.max_silence, ladder=ladder
            )
        except InvalidSpec:
            first = None  # a row written past validation: the admin shows what is wrong
        deadline = silence.planned_late(deadline, first, _planned_at(schedule, first, now, planned))
    return Silence(
        schedule_id=schedule.pk,
        name=schedule.name,
        last_success_at=last_success_at,
        overdue_at=deadline,
        overdue=silence.is_overdue(deadline, now),
        signalled=deadline is not None and schedule.overdue_signalled_at == deadline,
    )


def _since(schedule: Schedule, last_success_at: datetime | None) -> datetime:
    return max(t for t in (last_success_at, schedule.enabled_at, schedule.created_at) if t)


def _planned_at(
    schedule: Schedule, first: datetime | None, now: datetime, planned: Planned | None
) -> datetime:
    """When the occurrence ``first`` was planned; ``now`` while it waits to be."""
    if first is None:
        return now
    if schedule.last_run_at is None or first > schedule.last_run_at:
        return max(now, first)  # not planned yet: it has waited until now
    return (planned or {}).get((schedule.pk, first), first)


def silences(now: datetime, schedules: Iterable[Any] | None = None) -> list[Silence]:
    """The silence of every schedule (or of ``schedules``, annotated by
    :func:`with_last_success`), ordered by name."""
    rows: list[Any] = list(
        with_last_success(Schedule.objects.order_by("name")) if schedules is None else schedules
    )
    # Calendars read once for all, and only when a schedule names one.
    with calendar_sets.snapshot() if any(r.calendars for r in rows) else nullcontext():
        states = [silence_of(s, s.last_success_at, now) for s in rows]
        late = [row for row, state in zip(rows, states, strict=True) if state.overdue]
        if not late:
            return states
        planned = _read_planned(late)
        again = {s.pk: silence_of(s, s.last_success_at, now, planned) for s in late}
    return [again.get(state.schedule_id, state) for state in states]


def _read_planned(rows: Sequence[Any]) -> dict[tuple[int, datetime], datetime]:
    """When each schedule's first occurrence after its last success was planned: its
    attempt's (or missed record's) ``created_at``, read by the unique key."""
    keys = []
    for row in rows:
        try:
            first = specs.next_occurrence(row.spec(), _since(row, row.last_success_at))
        except InvalidSpec:
            continue
        if first is not None:
            keys.append((row.pk, first))
    found: dict[tuple[int, datetime], datetime] = {}
    for start in range(0, len(keys), PLANNED_BATCH):
        batch = keys[start : start + PLANNED_BATCH]
        match = reduce(or_, (Q(schedule_id=pk, occurrence_at=at) for pk, at in batch))
        found.update(
            ((pk, at), created)
            for pk, at, created in Attempt.objects.filter(match, trigger=Trigger.SCHEDULE)
            .values_list("schedule_id", "occurrence_at", "created_at")
            .order_by()
        )
    return found


def may_be_overdue(now: datetime) -> Q:
    """The annotated schedules whose silence may have run out by ``now``.

    Only a filter: :func:`silence_of` still decides. Without ``max_silence``, a schedule whose
    next run is still ahead and that planned no occurrence since its last success (or its
    enabling) cannot be overdue: its deadline is at least the second occurrence after that,
    and the first is its next run. So the engine's probe reads an idle schedule by index and
    computes nothing of its rule.

    A schedule that never ran fails the first test outright, not as SQL's unknown, so the
    server never looks up its last success: ``NULL AND x`` must still evaluate ``x``.
    """
    planned_since = (
        Q(last_run_at__isnull=False)
        & Q(last_run_at__gt=F("created_at"))
        & (Q(enabled_at__isnull=True) | Q(last_run_at__gt=F("enabled_at")))
        & (Q(last_success_at__isnull=True) | Q(last_run_at__gt=F("last_success_at")))
    )
    return Q(next_run_at__isnull=False) & (
        Q(max_silence__isnull=False) | Q(next_run_at__lte=now) | planned_since
    )


def overdue(now: datetime) -> list[Silence]:
    """The schedules overdue as of ``now`` (enabled ones only: paused are never overdue)."""
    enabled = with_last_success(Schedule.objects.enabled()).filter(may_be_overdue(now))
    return [s for s in silences(now, enabled.order_by("name")) if s.overdue]


def overdue_ids(now: datetime) -> list[int]:
    return [s.schedule_id for s in overdue(now)]
