"""The overview page: how the last 24 h went, what the next 24 h hold, who runs, what is stuck.

One page, linked from the admin index as "Overview" (its row also counts the dead letters of
the last 24 h). Every figure comes from a bounded query: the hourly counts are one grouped
query over the occurrence index for 24 h; start lags are read from at most ``LAG_PER_HOUR``
first tries of each hour; the timeline draws at most ``TIMELINE_ROWS`` schedules and
``TIMELINE_TICKS`` occurrences each; the dead letters listed are the newest ``DEAD_SHOWN``.
Charts are inline SVG drawn here (``charts.py``): nothing is fetched from elsewhere.
"""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q
from django.db.models.functions import TruncHour
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.functional import lazy

from ..models import Attempt, Overview, Schedule, Status
from ..ops.queues import queue_states
from ..ops.status import live_workers, lost_workers, worker_timeout
from ..schedule.describe import zone
from ..schedule.timefmt import format_instant
from . import charts, display
from .guard import GuardedAdmin
from .now import engine_now, page_now
from .read_only import ReadOnlyAdmin

HOURS = 24
LAG_PER_HOUR = 200
TIMELINE_ROWS = 20
TIMELINE_TICKS = 100
DEAD_SHOWN = 10
COUNT_TTL = 10.0  # seconds a dead-letter count is reused by the app list


def hour_starts(now: datetime) -> list[datetime]:
    """The starts of the last ``HOURS`` whole hours (UTC), the current one last."""
    current = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return [current - timedelta(hours=HOURS - 1 - n) for n in range(HOURS)]


def hourly_counts(hours: list[datetime]) -> dict[str, list[int]]:
    """Firings (attempts by occurrence), failures (attempts with an error recorded) and dead
    letters, per hour; one grouped query over the occurrence index."""
    rows = (
        Attempt.objects.filter(
            occurrence_at__gte=hours[0], occurrence_at__lt=hours[-1] + timedelta(hours=1)
        )
        .annotate(hour=TruncHour("occurrence_at", tzinfo=UTC))
        .order_by()
        .values("hour")
        .annotate(
            firings=Count("id"),
            failures=Count("id", filter=~Q(error="")),
            dead=Count("id", filter=Q(status=Status.DEAD_LETTER)),
        )
    )
    index = {hour: n for n, hour in enumerate(hours)}
    counts = {name: [0] * len(hours) for name in ("firings", "failures", "dead")}
    for row in rows:
        n = index.get(row["hour"].astimezone(UTC))
        if n is not None:
            for name in counts:
                counts[name][n] = row[name]
    return counts


# Subtracted by the database: one duration per row to load instead of two datetimes.
LAG = ExpressionWrapper(F("started_at") - F("occurrence_at"), output_field=DurationField())


def start_lags(hours: list[datetime]) -> list[tuple[str, list[float | None]]]:
    """p50, p95 and p99 of the first tries' start lag (start - occurrence), per hour, from
    the newest ``LAG_PER_HOUR`` first tries of each hour (a short index range each)."""
    by_hour: list[list[float]] = []
    for hour in hours:
        rows = (
            Attempt.objects.filter(
                occurrence_at__gte=hour,
                occurrence_at__lt=hour + timedelta(hours=1),
                tries=1,
                started_at__isnull=False,
            )
            .order_by("-occurrence_at")
            .annotate(lag=LAG)
            .values_list("lag", flat=True)[:LAG_PER_HOUR]
        )
        by_hour.append([max(lag.total_seconds(), 0.0) for lag in rows if lag is not None])

    def pick(q: int) -> list[float | None]:
        return [_percentile(lags, q) if lags else None for lags in by_hour]

    return [("p50", pick(50)), ("p95", pick(95)), ("p99", pick(99))]


def _percentile(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def due_timeline(now: datetime) -> tuple[list[tuple[str, list[tuple[datetime, str]]]], int]:
    """The enabled schedules due in the next 24 h, each with its occurrences in that window."""
    end = now + timedelta(hours=HOURS)
    due = Schedule.objects.enabled().filter(next_run_at__lt=end).order_by("next_run_at")
    rows = []
    for schedule in due[:TIMELINE_ROWS]:
        tz = zone(schedule.timezone)
        instants = [
            at
            for at in schedule.upcoming(TIMELINE_TICKS, now - timedelta(microseconds=1))
            if at < end
        ]
        rows.append((schedule.name, [(at, format_instant(at, tz)) for at in instants]))
    return rows, due.count()


def dead_letter_count(now: datetime) -> int:
    return (
        Attempt.objects.dead_letters()
        .filter(occurrence_at__gte=now - timedelta(hours=HOURS))
        .count()
    )


_cached: dict[str, tuple[float, int]] = {}


def _overview_name() -> str:
    """The app list's row: "Overview", with the dead letters of the last 24 h when there are."""
    stamp, count = _cached.get("dead", (0.0, 0))
    if time.monotonic() - stamp > COUNT_TTL:
        count = dead_letter_count(engine_now())
        _cached["dead"] = (time.monotonic(), count)
    if not count:
        return "overview"
    return f"overview · {count} dead letter{'' if count == 1 else 's'} in 24 h"


# The name is read when the app list is drawn, not when models load: Django's migrations read
# the declared Meta (``original_attrs``), so this never reaches them.
Overview._meta.verbose_name_plural = lazy(_overview_name, str)()


def context(now: datetime) -> dict[str, Any]:
    hours = hour_starts(now)
    local = timezone.get_current_timezone()
    labels = [format_instant(h, local)[11:16] for h in hours]
    titles = [format_instant(h, local) for h in hours]
    counts = hourly_counts(hours)
    rows, due = due_timeline(now)
    marks = [
        (now + timedelta(hours=h), format_instant(now + timedelta(hours=h), local)[11:16])
        for h in (0, 6, 12, 18)
    ]
    timeout = worker_timeout()
    dead = Attempt.objects.dead_letters().select_related("schedule").order_by("-occurrence_at")
    return {
        "now": display.instant(now),
        "zone": format_instant(now, local).rsplit(" ", 1)[-1],
        "firings": charts.bars(counts["firings"], labels, titles, "Firings", "cadence-bar"),
        "failures": charts.bars(
            counts["failures"], labels, titles, "Failures", "cadence-bar-failed"
        ),
        "dead_chart": charts.bars(
            counts["dead"], labels, titles, "Dead letters", "cadence-bar-dead"
        ),
        "totals": {name: sum(values) for name, values in counts.items()},
        "lags": charts.lines(start_lags(hours), labels, titles, "Start lag per hour"),
        "timeline": charts.timeline(rows, now, now + timedelta(hours=HOURS), marks) if rows else "",
        "due_shown": len(rows),
        "due_total": due,
        "live": [
            (w, display.instant(w.stuck_since) if w.stuck_threads and w.stuck_since else "")
            for w in live_workers(now, timeout).order_by("worker_id")
        ],
        "lost": [
            (w, display.instant(w.heartbeat_at))
            for w in lost_workers(now, timeout).order_by("-heartbeat_at")
        ],
        "dead_letters": [
            (
                reverse("admin:django_cadence_attempt_change", args=[a.pk]),
                str(a),
                display.excerpt(a.error),
            )
            for a in dead[:DEAD_SHOWN]
        ],
        "dead_recent": dead_letter_count(now),
        "queues": [
            (
                q.name,
                q.ready,
                display.duration(now - q.oldest_wait, now) if q.oldest_wait else "-",
                q.workers,
            )
            for q in queue_states(now)
        ],
    }


@admin.register(Overview)
class OverviewAdmin(ReadOnlyAdmin, GuardedAdmin):
    """The overview page in place of a changelist; nothing to add, change or delete."""

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm("django_cadence.view_attempt")

    def get_urls(self) -> list[URLPattern]:
        """The page itself only: an overview has no objects, so no add, change, delete or
        history page (Django's would show an attempt's raw fields)."""
        name = f"{self.opts.app_label}_{self.opts.model_name}_changelist"
        return [path("", self.admin_site.admin_view(self.changelist_view), name=name)]

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> TemplateResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        self.refuse_unavailable_action(request)
        page = {
            **self.admin_site.each_context(request),
            **context(page_now(request)),
            "title": "Overview",
            "opts": self.opts,
            "workers_url": reverse("admin:django_cadence_worker_changelist"),
            "dead_url": reverse("admin:django_cadence_deadletter_changelist"),
            "media": self.media,
        }
        return TemplateResponse(request, "django_cadence/admin/overview.html", page)

    class Media:
        css = {"all": ("django_cadence/admin.css",)}
