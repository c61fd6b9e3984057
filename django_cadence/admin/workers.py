"""Workers: the ``run_cadence`` processes that registered, read-only, with their state.

A worker is *live* while it renews its heartbeat and holds its session lock (where it took
one), *lost* once it has been silent for longer than 3 x max(CADENCE_LEASE, CADENCE_MAX_TICK)
without saying it stopped, or once the server sees its session lock gone (killed, frozen, cut
off), and *stopped* when it shut down cleanly. Purely informational: no decision of the engine
depends on this table.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Case, CharField, QuerySet, Value, When
from django.http import HttpRequest
from django.utils.html import format_html

from ..models import Worker, WorkerQuerySet
from ..ops.retention import STOPPED_WORKERS_KEPT
from ..ops.status import gone_but_beating, live_workers, lost_workers, worker_timeout
from ..schedule.timefmt import format_utc
from . import display
from .guard import GuardedAdmin
from .now import page_now
from .read_only import ReadOnlyAdmin

STATES = ("live", "lost", "stopped")


class StateFilter(admin.SimpleListFilter):
    """By default, workers that stopped more than a day ago are left out (``cadence_prune``
    deletes them); "all" shows them too."""

    title = "state"
    parameter_name = "state"
    ALL = "all"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [*((state, state) for state in STATES), (self.ALL, "all, with long stopped")]

    def choices(self, changelist: Any) -> Any:
        for choice in super().choices(changelist):
            if choice["display"] == "All":
                choice["display"] = "current (stopped in the last day)"
            yield choice

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        assert isinstance(queryset, WorkerQuerySet)
        now = page_now(request)
        if self.value() == "stopped":
            return queryset.filter(stopped_at__isnull=False)
        if self.value() == "live":
            return queryset.filter(pk__in=live_workers(now).values("pk"))
        if self.value() == "lost":
            return queryset.filter(pk__in=lost_workers(now).values("pk"))
        if self.value() == self.ALL:
            return queryset
        return queryset.exclude(stopped_at__lt=now - STOPPED_WORKERS_KEPT)


@admin.register(Worker)
# Stuck threads under the load: a column of their own would not fit at 1280 px.
class WorkerAdmin(ReadOnlyAdmin, GuardedAdmin):
    list_display = ("worker", "state", "host_name", "served", "heartbeat", "load")
    list_display_links = ("worker",)
    list_filter = (StateFilter, "host")
    search_fields = ("worker_id", "host")
    ordering = ("-heartbeat_at",)

    class Media:
        css = {"all": ("django_cadence/admin.css",)}

    readonly_fields = (
        "worker_id",
        "state",
        "host",
        "pid",
        "started",
        "heartbeat",
        "stopped",
        "in_flight",
        "concurrency",
        "served",
        "stuck",
    )
    fields = readonly_fields

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        """Each row's state as of the page's *now*, computed in the query (and the session
        locks the server no longer sees, read before it)."""
        now = page_now(request)
        since = now - worker_timeout()
        return (
            super()
            .get_queryset(request)
            .annotate(
                state_value=Case(
                    When(stopped_at__isnull=False, then=Value("stopped")),
                    When(worker_id__in=gone_but_beating(now), then=Value("lost")),
                    When(heartbeat_at__gte=since, then=Value("live")),
                    default=Value("lost"),
                    output_field=CharField(),
                )
            )
        )

    @admin.display(description="state", ordering="state_value")
    def state(self, obj: Worker) -> str:
        state = obj.state_value  # type: ignore[attr-defined]  # every row comes from get_queryset
        return format_html('<span class="cadence-worker-{}">{}</span>', state, state)

    @admin.display(description="worker", ordering="worker_id")
    def worker(self, obj: Worker) -> str:
        return display.clipped(obj.worker_id, "name")

    @admin.display(description="host", ordering="host")
    def host_name(self, obj: Worker) -> str:
        return display.clipped(obj.host, "short")

    @admin.display(description="queues", ordering="queues")
    def served(self, obj: Worker) -> str:
        """The queues it serves, with their thread shares: "every queue" when not chosen."""
        return display.clipped(obj.queues) if obj.queues else "every queue"

    started = display.instant_column("started_at", "started", ordering="started_at")
    heartbeat = display.instant_column("heartbeat_at", "last heartbeat", ordering="heartbeat_at")
    stopped = display.instant_column("stopped_at", "stopped", ordering="stopped_at")

    @admin.display(description="stuck threads", ordering="stuck_threads")
    def stuck(self, obj: Worker) -> str:
        """Tries past their run-time limit whose jobs never returned, and since when."""
        if not obj.stuck_threads:
            return "-"
        return format_html(
            '<span class="cadence-badge cadence-stuck">{} stuck since {}</span>',
            obj.stuck_threads,
            format_utc(obj.stuck_since),
        )

    @admin.display(description="load")
    def load(self, obj: Worker) -> str:
        """Tries held / threads; and the stuck threads, if any, with how long they are."""
        load = f"{obj.in_flight}/{obj.concurrency}"
        if not obj.stuck_threads:
            return load
        return format_html(
            '{}<br><span class="cadence-badge cadence-stuck" title="since {}">{} stuck</span>',
            load,
            format_utc(obj.stuck_since),
            obj.stuck_threads,
        )
