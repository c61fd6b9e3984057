"""Retention of finished attempts: by age, and by count per schedule (``cadence_prune``);
of workers that stopped cleanly more than ``STOPPED_WORKERS_KEPT`` ago; and of notification
episodes resolved longer ago than the age rule, with their messages, once none waits to be sent.

Only finished attempts go (succeeded, skipped, missed, cancelled, and dead letters when asked
for); pending and running ones never do. Each rule is independent: an attempt is deleted when
it is older than ``older_than`` *or* beyond the newest ``keep`` of its schedule. Rows go in
batches of primary keys, each batch its own short statement, so a large prune never holds
long locks and works the same on every backend (MariaDB cannot ``DELETE ... LIMIT`` through
a subquery on the same table).

Pruning forgets history: a later ``cadence_backfill`` over a pruned range plans those
occurrences again, since no attempt row is left to say they ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet

from ..models import TERMINAL_STATUSES, Attempt, DeliveryStatus, Notice, Status, Worker

# A stopped worker says how it ended for a day (the admin lists it that long), then goes.
STOPPED_WORKERS_KEPT = timedelta(days=1)


@dataclass(frozen=True)
class Retention:
    older_than: timedelta | None = None
    keep: int | None = None
    include_dead_letters: bool = False

    def statuses(self) -> tuple[str, ...]:
        if self.include_dead_letters:
            return tuple(TERMINAL_STATUSES)
        return tuple(s for s in TERMINAL_STATUSES if s != Status.DEAD_LETTER)


@dataclass(frozen=True)
class PruneCounts:
    by_age: int = 0
    by_count: int = 0

    @property
    def total(self) -> int:
        return self.by_age + self.by_count


def prune(
    retention: Retention, now: datetime, *, dry_run: bool = False, batch_size: int = 1000
) -> PruneCounts:
    """Delete (or, with ``dry_run``, count) what ``retention`` lets go."""
    finished = Attempt.objects.filter(status__in=retention.statuses())
    # Boundaries first, so a dry run and a real run count the same rows.
    boundaries = _boundaries(finished, retention.keep) if retention.keep is not None else []
    aged = _aged(retention, now)
    by_age = by_count = 0
    if aged is not None:
        by_age = _count_or_delete(finished.filter(aged), dry_run, batch_size)
    for schedule_id, (at, pk) in boundaries:
        beyond = finished.filter(schedule_id=schedule_id).filter(
            Q(occurrence_at__lt=at) | Q(occurrence_at=at, id__lte=pk)
        )
        if aged is not None:
            beyond = beyond.exclude(aged)  # counted once, under the age rule
        by_count += _count_or_delete(beyond, dry_run, batch_size)
    return PruneCounts(by_age=by_age, by_count=by_count)


def _aged(retention: Retention, now: datetime) -> Q | None:
    if retention.older_than is None:
        return None
    cutoff = now - retention.older_than
    return Q(finished_at__lt=cutoff) | Q(finished_at__isnull=True, occurrence_at__lt=cutoff)


def _boundaries(
    finished: QuerySet[Attempt, Any], keep: int
) -> list[tuple[int, tuple[datetime, int]]]:
    """Per schedule with more than ``keep``: its newest row not kept (by occurrence, then id)."""
    crowded = (
        finished.values_list("schedule_id")
        .annotate(n=Count("id"))
        .filter(n__gt=keep)
        .values_list("schedule_id", flat=True)
        .order_by()
    )
    found = []
    for schedule_id in crowded:
        rows = list(
            finished.filter(schedule_id=schedule_id)
            .order_by("-occurrence_at", "-id")
            .values_list("occurrence_at", "id")[keep : keep + 1]
        )
        if rows:
            found.append((schedule_id, rows[0]))
    return found


def _count_or_delete(queryset: QuerySet[Attempt, Any], dry_run: bool, batch_size: int) -> int:
    if dry_run:
        return queryset.count()
    deleted, after = 0, 0
    while True:
        # In primary-key order from where the last batch ended: each batch reads on from
        # there instead of scanning the rows it already passed.
        ids = list(
            queryset.filter(id__gt=after).order_by("id").values_list("id", flat=True)[:batch_size]
        )
        if not ids:
            return deleted
        deleted += Attempt.objects.filter(pk__in=ids).delete()[0]
        after = ids[-1]


def stopped_workers(now: datetime) -> QuerySet[Worker]:
    """Workers that shut down cleanly more than ``STOPPED_WORKERS_KEPT`` ago; live and lost
    ones are always kept (a lost worker is news, however old)."""
    return Worker.objects.filter(stopped_at__lt=now - STOPPED_WORKERS_KEPT)


def prune_stopped_workers(now: datetime, *, dry_run: bool = False) -> int:
    """Delete (or count) the stopped workers past ``STOPPED_WORKERS_KEPT``; one statement."""
    rows = stopped_workers(now)
    return rows.count() if dry_run else rows.delete()[0]


def resolved_notices(now: datetime, older_than: timedelta) -> QuerySet[Notice]:
    """Episodes resolved more than ``older_than`` ago whose messages are all sent or failed."""
    waiting = (DeliveryStatus.PENDING, DeliveryStatus.SENDING)
    return Notice.objects.filter(is_open__isnull=True, resolved_at__lt=now - older_than).exclude(
        deliveries__status__in=waiting
    )


def prune_resolved_notices(now: datetime, older_than: timedelta, *, dry_run: bool = False) -> int:
    """Delete (or count) those episodes, their messages with them."""
    rows = resolved_notices(now, older_than)
    if dry_run:
        return rows.count()
    ids = list(rows.values_list("pk", flat=True))
    Notice.objects.filter(pk__in=ids).delete()
    return len(ids)
