"""Attempts, dead letters and retries: read-only records, changed only through actions.

These tables grow without bound (a one-second schedule makes 86,400 attempts a day), so the
changelists never count a whole table: the full-result count is off and the paginator counts
at most ``COUNT_CAP`` rows ("10000+ attempts" beyond that); a page's schedules come in one
more query rather than a join (see ``AttemptChangeList``); the filters are on indexed columns
(status, schedule) or bounded by the date hierarchy, whose years, months and days come from
the first and last occurrence (``dates.py``), never from a scan of the rows.
"""

from __future__ import annotations

from typing import Any

from dalf.admin import DALFModelAdmin, DALFRelatedFieldAjax
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.translation import ngettext

from .. import services
from ..executors.calling import idempotency_key
from ..models import Attempt, Status
from . import dates, display, operations

COUNT_CAP = 10_000


class AtLeast(int):
    """A count known only to be at least this much; shows as ``10000+`` wherever it is printed."""

    def __str__(self) -> str:
        return f"{int(self)}+"


class CappedCountPaginator(Paginator):
    """Counts at most ``COUNT_CAP + 1`` rows: ``COUNT(*)`` over a million rows is a full scan.

    Past the cap the count is an :class:`AtLeast`, the page links stop at the cap, and the
    filters or the date hierarchy narrow the list down.
    """

    cap = COUNT_CAP

    @cached_property
    def count(self) -> int:
        found = self.object_list.order_by()[: self.cap + 1].count()
        return AtLeast(self.cap) if found > self.cap else found


class AttemptChangeList(ChangeList):
    """The attempt pages' list: no join for the page, a date hierarchy without DISTINCT.

    With the schedule joined, MariaDB plans "newest 100 attempts" from the schedules' side,
    joins every attempt and sorts them all (100 s with 10^6 attempts); without the join the
    page is a short backward scan of an index on every backend, and ``prefetch_related``
    fetches the page's schedules in one more query.
    """

    def apply_select_related(self, qs: QuerySet) -> QuerySet:
        return qs

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        self.result_list = self.result_list.prefetch_related("schedule")

    def bounded_date_hierarchy(self) -> dict[str, Any]:
        return dates.date_hierarchy(self)

    def date_hierarchy_templates(self) -> list[str]:
        """Where Django's own tag looks for its template: per model, per app, then the admin's."""
        app, model = self.opts.app_label, self.opts.model_name
        name = "date_hierarchy.html"
        return [f"admin/{app}/{model}/{name}", f"admin/{app}/{name}", f"admin/{name}"]


@admin.register(Attempt)
class AttemptAdmin(DALFModelAdmin):
    list_display = (
        "attempt",
        "schedule",
        "occurrence_at",
        "trigger",
        "status_badge",
        "tries",
        "worker",
        "finished_at",
        "error_excerpt",
    )
    list_filter = (
        "status",
        ("schedule", DALFRelatedFieldAjax),
        ("occurrence_at", admin.DateFieldListFilter),
        "trigger",
    )
    date_hierarchy = "occurrence_at"
    change_list_template = "django_cadence/admin/attempt_change_list.html"
    show_full_result_count = False
    paginator = CappedCountPaginator
    actions = ("retry_dead_letters", "cancel")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "schedule_link",
                    "occurrence_at",
                    "trigger",
                    "status_badge",
                    "tries_summary",
                    "idempotency_key",
                )
            },
        ),
        (
            "Timing",
            {"fields": ("retry_at", "started_at", "finished_at", "took")},
        ),
        (
            "Worker and lease",
            {"fields": ("worker", "lease_until", "recoveries", "cancel_requested")},
        ),
        ("Result", {"fields": ("outcome_block", "error_block")}),
        ("Tries", {"fields": ("history_table",)}),
    )
    readonly_fields = (
        "schedule_link",
        "occurrence_at",
        "trigger",
        "status_badge",
        "tries_summary",
        "idempotency_key",
        "retry_at",
        "started_at",
        "finished_at",
        "took",
        "worker",
        "lease_until",
        "recoveries",
        "cancel_requested",
        "outcome_block",
        "error_block",
        "history_table",
    )

    @property
    def media(self) -> forms.Media:
        return super().media + forms.Media(css={"all": ("django_cadence/admin.css",)})

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return AttemptChangeList

    # Attempts are written by the engine and by actions, never edited in a form.

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    # --- columns and fields ------------------------------------------------------------------

    @admin.display(description="attempt", ordering="id")
    def attempt(self, obj: Attempt) -> str:
        return f"#{obj.pk}"

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: Attempt) -> str:
        return display.status_badge(obj.status)

    @admin.display(description="error")
    def error_excerpt(self, obj: Attempt) -> str:
        return display.excerpt(obj.error)

    @admin.display(description="schedule")
    def schedule_link(self, obj: Attempt) -> str:
        url = reverse("admin:django_cadence_schedule_change", args=[obj.schedule_id])
        return format_html('<a href="{}">{}</a>', url, obj.schedule.name)

    @admin.display(description="tries")
    def tries_summary(self, obj: Attempt) -> str:
        recovered = f", recovered from a lost worker {obj.recoveries}x" if obj.recoveries else ""
        return f"{obj.tries}{recovered}"

    @admin.display(description="idempotency key")
    def idempotency_key(self, obj: Attempt) -> str:
        return idempotency_key(obj.schedule_id, obj.occurrence_at, obj.trigger)

    @admin.display(description="took")
    def took(self, obj: Attempt) -> str:
        return display.duration(obj.started_at, obj.finished_at) or "-"

    @admin.display(description="outcome")
    def outcome_block(self, obj: Attempt) -> str:
        return display.json_block(obj.outcome)

    @admin.display(description="error")
    def error_block(self, obj: Attempt) -> str:
        return display.text_block(obj.error)

    @admin.display(description="tries, one by one")
    def history_table(self, obj: Attempt) -> str:
        return display.history_table(obj.history)

    # --- actions: one call into services.py per attempt --------------------------------------

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.RETRY_DEAD_LETTER)

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.CANCEL_ATTEMPT)

    @admin.action(description="Retry (dead letters only)", permissions=("retry",))
    def retry_dead_letters(self, request: HttpRequest, queryset: Any) -> None:
        selected, done = queryset.count(), 0
        for pk in queryset.filter(status=Status.DEAD_LETTER).values_list("pk", flat=True):
            try:
                attempt = services.retry(pk)
            except services.InvalidTransition:
                continue  # retried or discarded meanwhile
            self.log_change(request, attempt, "Retried the dead letter.")
            done += 1
        left = selected - done
        self._report(
            request,
            ngettext(
                "%(count)d dead letter sent back to pending.",
                "%(count)d dead letters sent back to pending.",
                done,
            )
            % {"count": done},
            ngettext(
                "%(count)d was not a dead letter and was left alone.",
                "%(count)d were not dead letters and were left alone.",
                left,
            )
            % {"count": left},
            left,
        )

    @admin.action(description="Cancel (pending or running)", permissions=("cancel",))
    def cancel(self, request: HttpRequest, queryset: Any) -> None:
        selected, done = queryset.count(), 0
        active = queryset.filter(status__in=(Status.PENDING, Status.RUNNING))
        for pk in active.values_list("pk", flat=True):
            try:
                attempt = services.cancel(pk)
            except services.InvalidTransition:
                continue  # finished meanwhile
            how = "Cancelled." if attempt.status == Status.CANCELLED else "Asked to stop."
            self.log_change(request, attempt, how)
            done += 1
        left = selected - done
        self._report(
            request,
            ngettext(
                "%(count)d attempt cancelled (or asked to stop).",
                "%(count)d attempts cancelled (or asked to stop).",
                done,
            )
            % {"count": done},
            ngettext(
                "%(count)d had already finished and was left alone.",
                "%(count)d had already finished and were left alone.",
                left,
            )
            % {"count": left},
            left,
        )

    def _report(self, request: HttpRequest, done: str, left: str, left_count: int) -> None:
        """One message: what was done, then (as a warning) how many rows were left alone."""
        if left_count:
            self.message_user(request, f"{done} {left}", messages.WARNING)
        else:
            self.message_user(request, done, messages.SUCCESS)
