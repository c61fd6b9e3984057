"""Backfill: plan a schedule's occurrences over a past range, as if they had come due.

Each occurrence in ``[start, end]`` (the schedule's spec and bounds, not its misfire policy:
a backfill is an explicit request) becomes an attempt with trigger ``schedule``, admitted
through the schedule's overlap policy exactly as the planner would (``buffer_one`` lets one
wait and skips the rest, ``replace`` asks the running attempt to stop, ...). Occurrences that
already have an attempt are left alone, so running the same backfill twice plans nothing new;
the unique (schedule, occurrence, trigger) constraint makes that hold against a racing engine
or a second backfill too. A ``missed`` record (what a misfire policy left unrun) is reopened:
re-running what an outage missed is what a backfill is for.

Backfilled attempts do not count toward ``max_occurrences`` and do not move ``next_run_at``.
Work goes in batches, each one short transaction holding the schedule's row lock, as the
planner does, so engines keep running meanwhile.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice, takewhile

from django.db import transaction

from .. import store
from ..admission import overlap_states, planned_row
from ..models import Attempt, Schedule, Status, Trigger
from ..models.transitions import history_entry
from ..schedule import instants, policies, specs
from ..store import batch_writes
from ..store.batch_writes import PlannedRow

MICROSECOND = timedelta(microseconds=1)


@dataclass
class BackfillResult:
    occurrences: int = 0  # in the range
    existing: int = 0  # already had an attempt: left alone
    reopened: int = 0  # ``missed`` records planned again (included in pending/skipped)
    pending: int = 0
    skipped: int = 0
    dry_run: bool = False


def _batches(items: Iterable[datetime], size: int) -> Iterator[list[datetime]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _spec(schedule: Schedule) -> specs.Spec:
    # Every instant of the spec in its bounds, whatever occurrence_count already used up.
    return dataclasses.replace(schedule.spec(), occurrence_count=0)


def occurrences(schedule: Schedule, start: datetime, end: datetime) -> Iterator[datetime]:
    """The schedule's occurrences in ``[start, end]``, oldest first."""
    found = specs.occurrences(_spec(schedule), start - MICROSECOND)
    return takewhile(lambda at: at <= end, found)


def count(schedule: Schedule, start: datetime, end: datetime) -> int:
    return specs.count_between(_spec(schedule), start - MICROSECOND, end)


def backfill(
    schedule: Schedule,
    start: datetime,
    end: datetime,
    *,
    now: datetime,
    dry_run: bool = False,
    batch_size: int = 500,
    progress: Callable[[int, int], None] | None = None,
) -> BackfillResult:
    """Plan the occurrences of ``[start, end]`` (``end`` no later than ``now``)."""
    for edge, value in (("starts", start), ("ends", end)):
        if not instants.in_range(value):
            raise ValueError(
                f"A backfill range must fall within {instants.RANGE} (UTC); this one {edge} at "
                f"{value.isoformat()}."
            )
    if end < start:
        raise ValueError("The backfill range ends before it starts.")
    if end > now:
        raise ValueError(
            f"A backfill covers the past: the range ends at {end.isoformat()}, after now "
            f"({now.isoformat()}); the engine plans what is still to come."
        )
    result = BackfillResult(dry_run=dry_run)
    total = count(schedule, start, end)
    added = 0  # pending attempts a dry run would have added (a real run reads them back)
    for chunk in _batches(occurrences(schedule, start, end), batch_size):
        with transaction.atomic(using=store.alias()):
            locked = Schedule.objects.select_for_update().get(pk=schedule.pk)
            state = _state(locked)
            if dry_run:
                state = policies.OverlapState(state.running, state.waiting + added)
            pending = _plan_batch(locked, chunk, state, now, result, dry_run)
            added += pending
        result.occurrences += len(chunk)
        if progress:
            progress(result.occurrences, total)
    return result


def _plan_batch(
    schedule: Schedule,
    chunk: list[datetime],
    state: policies.OverlapState,
    now: datetime,
    result: BackfillResult,
    dry_run: bool,
) -> int:
    """Admit one batch; returns how many attempts it made pending."""
    existing = dict(
        Attempt.objects.filter(
            schedule=schedule, trigger=Trigger.SCHEDULE, occurrence_at__in=chunk
        ).values_list("occurrence_at", "status")
    )
    missed = {at for at, status in existing.items() if status == Status.MISSED}
    new = [at for at in chunk if at not in existing or at in missed]
    result.existing += len(existing) - len(missed)
    result.reopened += len(missed)
    admission = policies.admit(schedule.overlap, state, len(new))
    rows = [
        planned_row(schedule, at, status, reason, now)
        for at, status, reason in zip(new, admission.statuses, admission.reasons, strict=True)
    ]
    pending = sum(1 for row in rows if row.status == Status.PENDING)
    result.pending += pending
    result.skipped += len(rows) - pending
    if dry_run or not rows:
        return pending
    # An occurrence an engine or another backfill planned meanwhile is a quiet no-op
    # (invariant 1), not an error.
    batch_writes.insert_planned(
        Attempt.objects.db, [row for row in rows if row.occurrence_at not in missed], now=now
    )
    for row in rows:
        if row.occurrence_at in missed:
            _reopen(schedule, row)
    if admission.cancel_running:
        Attempt.objects.filter(schedule=schedule).ask_to_stop()
    return pending


def _reopen(schedule: Schedule, row: PlannedRow) -> None:
    """A ``missed`` record becomes the occurrence's attempt; its note stays in the history."""
    attempt = Attempt.objects.get(
        schedule=schedule, trigger=Trigger.SCHEDULE, occurrence_at=row.occurrence_at
    )
    note = history_entry(
        try_number=0,
        worker="",
        started_at=None,
        finished_at=attempt.finished_at,
        result="missed",
        error=attempt.error,
    )
    Attempt.objects.filter(pk=attempt.pk).reopened(
        status=row.status,
        retry_at=row.retry_at,
        finished_at=row.finished_at,
        error=row.error,
        history=[*(attempt.history or []), note],
    )


def _state(schedule: Schedule) -> policies.OverlapState:
    return overlap_states([schedule.pk])[schedule.pk]
