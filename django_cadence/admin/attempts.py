"""Attempts, dead letters and retries: read-only records, changed only through actions.

These tables grow without bound (a one-second schedule makes 86,400 attempts a day), so the
changelists never count a whole table: the full-result count is off and the paginator counts
at most ``COUNT_CAP`` rows ("10000+ attempts" beyond that); a page's schedules come in one
more query rather than a join (see ``AttemptChangeList``); the filters are on indexed columns
(status, schedule) or bounded by the date hierarchy, whose years, months and days come from
the first and last occurrence (``dates.py``), never from a scan of the rows.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dalf.admin import DALFModelAdmin, DALFRelatedFieldAjax
from django import forms
from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.html import format_html

from ..executors.calling import idempotency_key
from ..models import Attempt, Status, Trigger
from . import dates, display
from .attempt_actions import CANCEL, RETRY, AttemptActions
from .object_actions import bulk_actions
from .read_only import ReadOnlyAdmin
from .search import search_attempts

COUNT_CAP = 10_000
# While an attempt waits for its next try or runs it, its error is the try before's.
LAST_TRY_ERROR = frozenset({Status.PENDING, Status.RUNNING})
LAST_TRY = (
    "An earlier try's, not the next one's: this attempt waits for its next try, or runs it. "
    "Every try is under Tries."
)


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
        found = self.object_list.order_by()[: self.cap + 1].count()  # type: ignore[attr-defined]
        return AtLeast(self.cap) if found > self.cap else found


class AttemptChangeList(ChangeList):
    """The attempt pages' list: no join for the page, a date hierarchy without DISTINCT.

    With the schedule joined, MariaDB plans "newest 100 attempts" from the schedules' side,
    joins every attempt and sorts them all; without the join the
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


def _zone(attempt: Attempt) -> str:
    return attempt.schedule.timezone


@admin.register(Attempt)
class AttemptAdmin(ReadOnlyAdmin, AttemptActions, DALFModelAdmin):
    # Columns for finding an attempt beside the sidebar and the filters at 1280 px: the
    # worker, the trigger and the timing are on its page (and the worker is searchable).
    list_display: tuple[str, ...] = (
        "occurrence",
        "schedule_name",
        "status_badge",
        "tries",
        "error_excerpt",
    )
    list_display_links = ("occurrence",)
    list_filter: ClassVar[tuple[Any, ...]] = (
        "status",
        ("schedule", DALFRelatedFieldAjax),
        ("occurrence_at", admin.DateFieldListFilter),
        "trigger",
    )
    date_hierarchy = "occurrence_at"
    search_fields = ("schedule__name", "worker")  # shown; searched by search.py
    search_help_text = "Search by schedule name or worker."
    change_list_template = "django_cadence/admin/attempt_change_list.html"
    show_full_result_count = False
    paginator = CappedCountPaginator
    actions = bulk_actions(RETRY, CANCEL)
    readonly_fields = (
        "schedule_link",
        "occurrence",
        "trigger",
        "status_badge",
        "tries_summary",
        "idempotency_key",
        "retry_when",
        "started",
        "finished",
        "took",
        "worker",
        "lease",
        "recoveries",
        "cancel_requested",
        "payload_block",
        "outcome_block",
        "error_block",
        "uncertain",
        "history_table",
        "last_started",
        "last_finished",
        "last_took",
        "last_worker",
        "last_error_block",
    )

    def get_fieldsets(self, request: HttpRequest, obj: Attempt | None = None) -> Any:
        """Only the fields that mean something in the attempt's state (no "retry at" on a
        dead letter, no lease once it finished)."""
        if obj is None:
            return ((None, {"fields": ("schedule_link", "occurrence", "status_badge")}),)
        status = obj.status
        pending = status == Status.PENDING
        # A pending attempt has not started its next try: the start, worker and error it
        # still holds are an earlier try's (a failed one, or the tries before a Retry).
        timing = [] if pending else self._timing(obj)
        worker = [
            *(["worker"] if obj.worker and not pending else []),
            *(["lease", "cancel_requested"] if status == Status.RUNNING else []),
            *(["recoveries"] if obj.recoveries else []),
        ]
        result = [
            *(["outcome_block"] if obj.outcome is not None else []),
            *(["error_block"] if obj.error and status not in LAST_TRY_ERROR else []),
            *(["uncertain"] if obj.uncertain else []),
        ]
        last = [
            *([f"last_{f}" for f in self._timing(obj)] if pending else []),
            *(["last_worker"] if obj.worker and pending else []),
            *(["last_error_block"] if obj.error and status in LAST_TRY_ERROR else []),
        ]
        if pending:
            timing = ["retry_when"]
        fieldsets: list[tuple[str | None, dict[str, Any]]] = [
            (
                None,
                {
                    "fields": (
                        "schedule_link",
                        "occurrence",
                        "trigger",
                        "status_badge",
                        "tries_summary",
                        "idempotency_key",
                    )
                },
            )
        ]
        for title, fields in (("Timing", timing), ("Worker and lease", worker), ("Result", result)):
            if fields:
                fieldsets.append((title, {"fields": tuple(fields)}))
        if last:
            fieldsets.append(("The last try", {"fields": tuple(last), "description": LAST_TRY}))
        fieldsets.append(("Payload", {"fields": ("payload_block",)}))
        fieldsets.append(("Tries", {"fields": ("history_table",)}))
        return fieldsets

    @staticmethod
    def _timing(obj: Attempt) -> list[str]:
        return [
            *(["started"] if obj.started_at else []),
            *(["finished"] if obj.finished_at else []),
            *(["took"] if obj.started_at and obj.finished_at else []),
        ]

    @property
    def media(self) -> forms.Media:
        """dalf's select2 filter, then the script that names it: after Django's jQuery and
        dalf's script, which draws the filter as the page is ready."""
        after = ("admin/js/jquery.init.js", "admin/js/django_admin_list_filter.js")
        return super().media + forms.Media(
            css={"all": ("django_cadence/admin.css",)},
            js=(*after, "django_cadence/filter_names.js"),
        )

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return AttemptChangeList

    def search(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        """No join and no walk of the whole ordered index (``search.py``); no duplicates."""
        return search_attempts(queryset, search_term, COUNT_CAP), False

    # --- columns and fields ------------------------------------------------------------------

    @admin.display(description="attempt", ordering="id")
    def attempt(self, obj: Attempt) -> str:
        return f"#{obj.pk}"

    @admin.display(description="schedule")
    def schedule_name(self, obj: Attempt) -> str:
        return display.clipped(obj.schedule.name, "name")

    @admin.display(description="occurrence", ordering="occurrence_at")
    def occurrence(self, obj: Attempt) -> str:
        label = "run now while paused" if obj.even_if_paused else "run now"
        manual = format_html(' <span class="cadence-quiet">{}</span>', label)
        return format_html(
            "{}{}",
            display.instant(obj.occurrence_at, obj.schedule.timezone),
            manual if obj.trigger == Trigger.MANUAL else "",
        )

    retry_when = display.instant_column("retry_at", "retry at", _zone, "retry_at")

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: Attempt) -> str:
        return display.status_badge(obj.status)

    @admin.display(description="error")
    def error_excerpt(self, obj: Attempt) -> str:
        return display.excerpt(obj.error)

    started = display.instant_column("started_at", "started", _zone)

    finished = display.instant_column("finished_at", "finished", _zone)

    lease = display.instant_column("lease_until", "lease until", _zone)

    @admin.display(description="payload (the schedule's, secrets hidden)")
    def payload_block(self, obj: Attempt) -> str:
        return display.json_block(obj.schedule.payload)

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
        return display.error_block(obj.error, obj.schedule.executor)

    last_started = display.instant_column("started_at", "last try started", _zone)

    last_finished = display.instant_column("finished_at", "last try finished", _zone)

    @admin.display(description="last try took")
    def last_took(self, obj: Attempt) -> str:
        return self.took(obj)

    @admin.display(description="last try's worker")
    def last_worker(self, obj: Attempt) -> str:
        return obj.worker

    @admin.display(description="last try's error")
    def last_error_block(self, obj: Attempt) -> str:
        return self.error_block(obj)

    @admin.display(description="tries, one by one")
    def history_table(self, obj: Attempt) -> str:
        return display.history_table(obj.history, obj.schedule.timezone)
