"""Overdue schedules in the admin: the badge on each row and the filter of the list.

A schedule is overdue once it has gone longer without a success than it may
(``models/overdue.py``); the rows of a page carry their last success from one subquery each
(``with_last_success``), and the filter reads every enabled schedule once.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..models import Schedule
from ..models.overdue import Silence, overdue_ids, silence_of, silences
from ..schedule.timefmt import format_utc
from .now import page_now, shown_at
from .recent import ScheduleChangeList


def silence(obj: Schedule) -> Silence:
    """``obj``'s silence as of its page: attached to a changelist's rows
    (``SilenceChangeList``), else read for this one (the change form)."""
    attached = getattr(obj, "silence_now", None)
    if isinstance(attached, Silence):
        return attached
    if not hasattr(obj, "last_success_at"):  # not read through the admin's queryset
        return silence_of(obj, None, shown_at(obj))
    (state,) = silences(shown_at(obj), [obj])
    return state


class SilenceChangeList(ScheduleChangeList):
    """Attaches each row's silence as of the page's *now*."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        rows = list(self.result_list)
        for schedule, state in zip(rows, silences(page_now(request), rows), strict=True):
            schedule.silence_now = state


def overdue_badge(state: Silence) -> SafeString | str:
    if not state.overdue:
        return ""
    since = format_utc(state.last_success_at) if state.last_success_at else "never"
    return format_html(
        '<span class="cadence-badge cadence-overdue" title="overdue since {}; last success: {}">'
        "overdue</span>",
        format_utc(state.overdue_at),
        since,
    )


def describe(state: Silence) -> str:
    """For the change form: when it last succeeded, and when it is (or was) overdue."""
    last = format_utc(state.last_success_at) if state.last_success_at else "never"
    if state.overdue_at is None:
        return f"last success: {last}; never overdue (paused, or nothing left to run)"
    verb = "overdue since" if state.overdue else "overdue from"
    return f"last success: {last}; {verb} {format_utc(state.overdue_at)}"


class OverdueFilter(admin.SimpleListFilter):
    title = "silence"
    parameter_name = "silence"
    OVERDUE = "overdue"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(self.OVERDUE, "overdue (no success for too long)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == self.OVERDUE:
            return queryset.filter(pk__in=overdue_ids(page_now(request)))
        return queryset
