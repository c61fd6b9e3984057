"""How each schedule went lately: its last outcome and a strip of its last attempts.

The strips of a whole changelist page come from one query, whatever the number of attempts:
each row is annotated with the occurrence of its 20th most recent attempt (a short backward
scan of the unique index on ``(schedule, occurrence_at, trigger)``), and one query then
fetches, for all rows, the attempts at or after those cutoffs. The last outcome is another
per-row subquery on the same index, so it can be filtered and sorted on.

Both subqueries order by the whole unique key, ``occurrence_at`` then ``trigger``: the index
then gives the order itself and the scan stops at the first finished attempt. Ordered by
``occurrence_at`` alone, MariaDB answered the last outcome from ``(schedule, status,
occurrence_at)`` instead, reading and sorting all of a schedule's finished attempts;
PostgreSQL walks the unique index either way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.http import HttpRequest

from ..models import TERMINAL_STATUSES, Attempt, Schedule
from . import display

STRIP_LENGTH = 20
STRIP_BATCH = 100  # schedules per strip query: keeps the OR list short on every backend


def annotate_recent(queryset: QuerySet) -> QuerySet:
    """``last_outcome`` (newest finished attempt's status) and ``strip_cutoff`` on each row."""
    latest = Attempt.objects.filter(schedule=OuterRef("pk")).order_by("-occurrence_at", "-trigger")
    return queryset.annotate(
        last_outcome=Subquery(latest.filter(status__in=TERMINAL_STATUSES).values("status")[:1]),
        strip_cutoff=Subquery(latest.values("occurrence_at")[STRIP_LENGTH - 1 : STRIP_LENGTH]),
    )


class LastOutcomeFilter(admin.SimpleListFilter):
    title = "last outcome"
    parameter_name = "last_outcome"
    NONE = "none"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        statuses = [(s.value, display.STATUS_LABELS[s]) for s in TERMINAL_STATUSES]
        return [*statuses, (self.NONE, "no outcome yet")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if value == self.NONE:
            return queryset.filter(last_outcome__isnull=True)
        if value in TERMINAL_STATUSES:
            return queryset.filter(last_outcome=value)
        return queryset


def recent_attempts(schedules: Iterable[Schedule]) -> dict[int, list[tuple]]:
    """The last ``STRIP_LENGTH`` attempts of each schedule, oldest first, in one query per batch.

    Expects each schedule annotated with ``strip_cutoff`` (see ``ScheduleAdmin.get_queryset``);
    a schedule without the annotation is fetched on its own, sliced.
    """
    rows: dict[int, list[tuple]] = defaultdict(list)
    columns = ("schedule_id", "occurrence_at", "id", "status", "trigger")
    schedules = list(schedules)
    unannotated = [s for s in schedules if not hasattr(s, "strip_cutoff")]
    annotated = [s for s in schedules if hasattr(s, "strip_cutoff")]
    for start in range(0, len(annotated), STRIP_BATCH):
        batch = annotated[start : start + STRIP_BATCH]
        condition = Q(schedule_id__in=[s.pk for s in batch if s.strip_cutoff is None])
        for s in batch:
            if s.strip_cutoff is not None:
                condition |= Q(schedule_id=s.pk, occurrence_at__gte=s.strip_cutoff)
        for schedule_id, *row in Attempt.objects.filter(condition).order_by().values_list(*columns):
            rows[schedule_id].append(tuple(row))
    for s in unannotated:
        latest = Attempt.objects.filter(schedule_id=s.pk).order_by("-occurrence_at", "-id")
        rows[s.pk] = [tuple(r) for r in latest.values_list(*columns[1:])[:STRIP_LENGTH]]
    return {
        schedule_id: [
            (at, status, trigger) for at, _id, status, trigger in sorted(r)[-STRIP_LENGTH:]
        ]
        for schedule_id, r in rows.items()
    }


class ScheduleChangeList(ChangeList):
    """Attaches each row's recent attempts once the page is known: one query for the page."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        page = list(self.result_list)  # evaluates (and caches) the page's queryset
        recent = recent_attempts(page)
        for schedule in page:
            schedule.recent_attempts = recent.get(schedule.pk, [])
