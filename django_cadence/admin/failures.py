"""Dead letters and retries: the two queues an operator works through after failures.

Both are proxies of ``Attempt`` with their own managers, so each has its own page,
permissions and actions while the rows stay attempts (their history is logged against the
attempt, so it survives a dead letter being retried).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.utils.html import format_html

from ..models import DeadLetter, Retry
from . import display
from .attempt_actions import CANCEL, DISCARD, RETRY, RETRY_NOW
from .attempts import AttemptAdmin
from .object_actions import bulk_actions


@admin.register(DeadLetter)
class DeadLetterAdmin(AttemptAdmin):
    list_display = ("occurrence", "schedule_name", "tries", "error_excerpt")
    list_filter = AttemptAdmin.list_filter[1:]  # all of them are dead letters
    # Newest first by occurrence, as the attempts page: the (status, occurrence_at) index
    # gives this order (the id tie-break is the index's row id on InnoDB, and PostgreSQL
    # sorts only the rows of one occurrence); by finished_at every dead letter was sorted.
    ordering = ("-occurrence_at", "-id")
    actions = bulk_actions(RETRY, DISCARD)

    def selection_rows(self, queryset: QuerySet) -> list[Any]:
        """Each dead letter to discard: its schedule, occurrence and error, redacted."""
        return [
            format_html(
                "{} at {}{}",
                row.schedule.name,
                display.instant(row.occurrence_at, row.schedule.timezone),
                format_html(": {}", display.excerpt(row.error)) if row.error else "",
            )
            for row in queryset
        ]


@admin.register(Retry)
class RetryAdmin(AttemptAdmin):
    list_display = ("occurrence", "schedule_name", "retry_when", "tries", "error_excerpt")
    list_filter = AttemptAdmin.list_filter[1:]  # all of them are pending
    ordering = ("retry_at", "id")
    actions = bulk_actions(RETRY_NOW, CANCEL)
