"""The schedules admin: what each schedule does and when, how it went lately, and its actions.

The changelist shows every schedule's rule in words, its next run in its own zone and in UTC,
its last outcome and a strip of its last attempts (see ``recent.py``); the form picks the
executor from the allow-list and previews the next occurrences as it is filled in (see
``forms.py`` and ``preview.py``). Actions are one call into ``services.py`` per schedule.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import ValidationError
from django.db import router
from django.db.models import Count, QuerySet
from django.db.models.deletion import Collector, ProtectedError, RestrictedError
from django.http import HttpRequest, JsonResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import ngettext

from .. import services
from ..exceptions import CadenceError
from ..executors.payloads import redact_text
from ..models import Attempt, Kind, Schedule, Status
from ..models.validation import KIND_FIELDS
from ..schedule.describe import describe_schedule, zone
from ..schedule.timefmt import format_instant, format_utc
from . import display, operations, preview
from .forms import ScheduleForm
from .object_actions import ObjectAction, ObjectActionsAdmin
from .recent import (
    STRIP_LENGTH,
    LastOutcomeFilter,
    ScheduleChangeList,
    annotate_recent,
    recent_attempts,
)


def _run_now(force: bool) -> Any:
    def run(model_admin: Any, request: HttpRequest, schedule: Schedule) -> tuple[str, int, str]:
        attempt = services.trigger(schedule, force=force)
        how = "Ran now, bypassing the overlap policy" if force else "Ran now"
        model_admin.log_change(
            request, schedule, f"{how}: attempt {attempt.pk} is {attempt.status}."
        )
        url = reverse("admin:django_cadence_attempt_change", args=[attempt.pk])
        if attempt.status == Status.SKIPPED:
            policy = schedule.get_overlap_display()
            text = f"“{schedule.name}” was not run: its overlap policy ({policy}) skipped it."
            return text, messages.WARNING, ""
        return f"“{schedule.name}” runs now: {attempt}.", messages.SUCCESS, url

    return run


def _pause(model_admin: Any, request: HttpRequest, schedule: Schedule) -> tuple[str, int, str]:
    reason = f"paused in the admin by {request.user.get_username()}"
    services.pause(schedule, reason=reason)
    model_admin.log_change(request, schedule, "Paused.")
    return f"“{schedule.name}” is paused: nothing runs until it is resumed.", messages.SUCCESS, ""


def _resume(model_admin: Any, request: HttpRequest, schedule: Schedule) -> tuple[str, int, str]:
    resumed = services.resume(schedule)
    model_admin.log_change(request, schedule, "Resumed.")
    when = format_instant(resumed.next_run_at, zone(resumed.timezone))
    return f"“{schedule.name}” is resumed; its next run is {when}.", messages.SUCCESS, ""


def _own_zone(schedule: Schedule) -> str:
    return schedule.timezone


SCHEDULE_ACTIONS = (
    ObjectAction(
        "run", "Run now", operations.RUN_SCHEDULE, lambda s: s.enabled, _run_now(force=False)
    ),
    ObjectAction(
        "force-run",
        "Run now, bypassing overlap",
        operations.FORCE_RUN_SCHEDULE,
        lambda s: s.enabled,
        _run_now(force=True),
    ),
    ObjectAction("pause", "Pause", operations.PAUSE_SCHEDULE, lambda s: s.enabled, _pause),
    ObjectAction("resume", "Resume", operations.RESUME_SCHEDULE, lambda s: not s.enabled, _resume),
)


KIND_TITLES = {"cron": "Cron", "interval": "Interval", "once": "Once"}

# One fieldset per kind, labelled and classed for ``schedule_kind.js``.
KIND_FIELDSETS: tuple[Any, ...] = tuple(
    (
        f"{KIND_TITLES[kind]} (kind: {kind})",
        {"classes": ("cadence-kind", f"cadence-kind-{kind}"), "fields": fields},
    )
    for kind, fields in KIND_FIELDS.items()
)


@admin.register(Schedule)
class ScheduleAdmin(ObjectActionsAdmin):
    object_actions = SCHEDULE_ACTIONS
    form = ScheduleForm
    # Four columns fit beside the navigation sidebar and the filters at 1280 px: the zone is
    # in the rule, UTC in the next run's tooltip, "paused" in place of the next run, and the
    # last outcome above the strip of the last attempts.
    list_display = ("schedule_name", "rule", "next_run", "lately")
    list_filter = ("kind", "enabled", "overlap", LastOutcomeFilter)
    # metadata as text: a team, an owner or a runbook link typed in the box finds the schedule.
    search_fields = ("name", "executor", "metadata")
    list_display_links = ("schedule_name",)
    actions = ("run_now", "run_now_forced", "pause", "resume")
    readonly_fields = (
        "upcoming",
        "next_run",
        "next_run_utc",
        "last_run",
        "occurrence_count",
        "missed_count",
        "last_outcome_badge",
        "recent",
        "paused_because",
        "created",
        "enabled_since",
        "updated",
    )
    fieldsets = (
        (None, {"fields": ("name", "enabled", "executor", "payload", "metadata")}),
        ("When", {"fields": ("kind", "timezone")}),
        *KIND_FIELDSETS,
        (
            "Bounds",
            {"fields": ("start_at", "end_at", "max_occurrences", "upcoming")},
        ),
        (
            "Overlap and misfires",
            {
                "classes": ("collapse",),
                "fields": ("overlap", "misfire", "misfire_grace", "jitter", "pause_after_failures"),
            },
        ),
        (
            "Retries and time limit",
            {
                "classes": ("collapse",),
                "fields": ("max_attempts", "retry_base", "retry_cap", "max_runtime"),
            },
        ),
    )
    state_fieldset = (
        "State",
        {
            "fields": (
                ("next_run", "next_run_utc"),
                "last_run",
                ("occurrence_count", "missed_count"),
                ("last_outcome_badge", "recent"),
                "paused_because",
                ("created", "enabled_since", "updated"),
            )
        },
    )

    class Media:
        css = {"all": ("django_cadence/admin.css",)}
        js = ("django_cadence/schedule_kind.js", "django_cadence/schedule_preview.js")

    def get_fieldsets(self, request: HttpRequest, obj: Schedule | None = None) -> Any:
        """The add page's ``?kind=`` keeps only that kind's fields; otherwise every kind's
        fieldset is there, labelled, and ``schedule_kind.js`` shows the chosen one."""
        if obj:
            return (*self.fieldsets, self.state_fieldset)
        kind = request.GET.get("kind")
        if kind not in Kind.values:
            links = format_html_join(
                " · ", '<a href="?kind={}">{}</a>', ((k.value, k.label) for k in Kind)
            )
            when = self.fieldsets[1][1]
            description = format_html("Only the fields of one kind: {}.", links)
            return (
                self.fieldsets[0],
                ("When", {**when, "description": description}),
                *self.fieldsets[2:],
            )
        other = {f"cadence-kind-{k}" for k in Kind.values if k != kind}
        return tuple(
            fieldset
            for fieldset in self.fieldsets
            if not other & set(fieldset[1].get("classes", ()))
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return annotate_recent(super().get_queryset(request))

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple:
        """What deleting schedules takes with it: their attempts, counted rather than listed.

        Django's default lists every related row (and fetches them all): a schedule may have a
        million attempts. Attempts are the schedule's own record, so deleting it needs only the
        schedule delete permission, not the attempt one the read-only attempts admin denies.
        """
        schedules = list(objs)
        counts = dict(
            Attempt.objects.filter(schedule__in=schedules)
            .order_by()
            .values_list("schedule")
            .annotate(Count("pk"))
        )
        deleted: list[Any] = []
        for schedule in schedules:
            url = reverse("admin:django_cadence_schedule_change", args=[schedule.pk])
            deleted.append(format_html('Schedule: <a href="{}">{}</a>', url, schedule.name))
            if count := counts.get(schedule.pk, 0):
                text = ngettext("%(count)d attempt", "%(count)d attempts", count)
                deleted.append([text % {"count": count}])
        model_count = {Schedule._meta.verbose_name_plural: len(schedules)}
        if total := sum(counts.values()):
            model_count[Attempt._meta.verbose_name_plural] = total
        perms_needed = set() if self.has_delete_permission(request) else {"schedule"}
        return deleted, model_count, perms_needed, _protected(schedules)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return ScheduleChangeList

    def get_urls(self) -> list:
        name = f"{self.opts.app_label}_{self.opts.model_name}_preview"
        view = self.admin_site.admin_view(self.preview_view)
        return [path("preview/", view, name=name), *super().get_urls()]

    def preview_view(self, request: HttpRequest) -> JsonResponse:
        return preview.preview(self, request)

    # --- columns -----------------------------------------------------------------------------

    @admin.display(description="name", ordering="name")
    def schedule_name(self, obj: Schedule) -> str:
        return display.clipped(obj.name, "name")

    @admin.display(description="rule", ordering="kind")
    def rule(self, obj: Schedule) -> str:
        rule = describe_schedule(obj)
        if obj.kind == Kind.INTERVAL or obj.timezone in ("", "UTC"):
            return rule
        return format_html('{}<br><span class="cadence-zone">{}</span>', rule, obj.timezone)

    @admin.display(description="next run", ordering="next_run_at")
    def next_run(self, obj: Schedule) -> str:
        if not obj.pk:
            return "-"
        if not obj.enabled:
            return format_html('<span class="cadence-badge cadence-paused">{}</span>', "paused")
        if obj.next_run_at is None:
            return "finished"
        return display.instant(obj.next_run_at, obj.timezone)

    @admin.display(description="next run (UTC)", ordering="next_run_at")
    def next_run_utc(self, obj: Schedule) -> str:
        return format_utc(obj.next_run_at)

    last_run = display.instant_column("last_run_at", "last run", _own_zone)
    created = display.instant_column("created_at", "created", _own_zone)
    enabled_since = display.instant_column("enabled_at", "enabled since", _own_zone)
    updated = display.instant_column("updated_at", "updated", _own_zone)

    @admin.display(description="last outcome", ordering="last_outcome")
    def lately(self, obj: Schedule) -> str:
        badge, strip = self.last_outcome_badge(obj), self.recent(obj)
        if strip == "-":
            return badge
        return format_html("{}<br>{}", badge, strip)

    @admin.display(description="last outcome", ordering="last_outcome")
    def last_outcome_badge(self, obj: Schedule) -> str:
        return display.status_badge(getattr(obj, "last_outcome", None))

    @admin.display(description=f"last {STRIP_LENGTH} attempts")
    def recent(self, obj: Schedule) -> str:
        if not obj.pk:
            return "-"
        cells = getattr(obj, "recent_attempts", None)
        if cells is None:  # the change form: one schedule, fetched here
            cells = recent_attempts([obj]).get(obj.pk, [])
        link = reverse("admin:django_cadence_attempt_changelist")
        return display.strip(cells, f"{link}?schedule__id__exact={obj.pk}", obj.timezone)

    @admin.display(description="pause reason")
    def paused_because(self, obj: Schedule) -> str:
        return redact_text(obj.pause_reason) if obj.pause_reason else "-"

    @admin.display(description=f"next {preview.COUNT} occurrences")
    def upcoming(self, obj: Schedule) -> str:
        return format_html(
            '<div class="cadence-preview" data-preview-url="{}" data-object-id="{}" '
            'aria-live="polite">{}</div>',
            reverse("admin:django_cadence_schedule_preview"),
            obj.pk or "",
            "The next occurrences show here as you fill in the schedule (needs JavaScript).",
        )

    # --- actions: one call into services.py per schedule -------------------------------------

    def has_run_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.RUN_SCHEDULE)

    def has_force_run_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.FORCE_RUN_SCHEDULE)

    def has_pause_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.PAUSE_SCHEDULE)

    def has_resume_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.RESUME_SCHEDULE)

    @admin.action(description="Run now (through the overlap policy)", permissions=("run",))
    def run_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._run(request, queryset, force=False)

    @admin.action(description="Run now, bypassing the overlap policy", permissions=("force_run",))
    def run_now_forced(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._run(request, queryset, force=True)

    def _run(self, request: HttpRequest, queryset: QuerySet, *, force: bool) -> None:
        outcomes: Counter[str] = Counter()
        for schedule in queryset:
            attempt = services.trigger(schedule, force=force)
            outcomes[attempt.status] += 1
            how = "Ran now, bypassing the overlap policy" if force else "Ran now"
            self.log_change(request, schedule, f"{how}: attempt {attempt.pk} is {attempt.status}.")
        skipped = outcomes[Status.SKIPPED]
        queued = sum(outcomes.values()) - skipped
        text = ngettext("%(count)d run queued.", "%(count)d runs queued.", queued)
        message = text % {"count": queued}
        if skipped:
            text = ngettext(
                "%(count)d was skipped by its overlap policy.",
                "%(count)d were skipped by their overlap policy.",
                skipped,
            )
            message += " " + text % {"count": skipped}
        self.message_user(request, message, messages.WARNING if skipped else messages.SUCCESS)

    @admin.action(description="Pause", permissions=("pause",))
    def pause(self, request: HttpRequest, queryset: QuerySet) -> None:
        reason = f"paused in the admin by {request.user.get_username()}"
        done = self._each(
            request,
            queryset.filter(enabled=True),
            lambda schedule: services.pause(schedule, reason=reason),
            "Paused.",
        )
        message = ngettext("%(count)d schedule paused.", "%(count)d schedules paused.", done)
        self.message_user(request, message % {"count": done}, messages.SUCCESS)

    @admin.action(description="Resume", permissions=("resume",))
    def resume(self, request: HttpRequest, queryset: QuerySet) -> None:
        done = self._each(request, queryset.filter(enabled=False), services.resume, "Resumed.")
        message = ngettext("%(count)d schedule resumed.", "%(count)d schedules resumed.", done)
        self.message_user(request, message % {"count": done}, messages.SUCCESS)

    def _each(
        self,
        request: HttpRequest,
        queryset: QuerySet,
        operation: Callable[[Schedule], Any],
        log_message: str,
    ) -> int:
        """Apply ``operation`` to each schedule and log it; report the ones it refuses."""
        done = 0
        for schedule in queryset:
            try:
                operation(schedule)
            except (CadenceError, ValidationError) as exc:
                why = "; ".join(getattr(exc, "messages", None) or [str(exc)])
                self.message_user(request, f"{schedule.name}: {why}", messages.ERROR)
                continue
            self.log_change(request, schedule, log_message)
            done += 1
        return done


def _protected(schedules: list[Schedule]) -> list[str]:
    """Rows of other apps that forbid deleting these schedules (``PROTECT``, ``RESTRICT``).

    A plain collector deletes attempts in bulk without fetching them, so this stays cheap.
    """
    if not schedules:
        return []
    collector = Collector(using=router.db_for_write(Schedule), origin=schedules)  # type: ignore[arg-type]
    try:
        collector.collect(schedules)
    except ProtectedError as exc:
        return [str(obj) for obj in exc.protected_objects]
    except RestrictedError as exc:
        return [str(obj) for obj in exc.restricted_objects]
    return []
