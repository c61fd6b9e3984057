"""The schedules admin: what each schedule does and when, how it went lately.

The changelist shows every schedule's rule in words, its next run in its own zone and in UTC,
its last outcome and a strip of its last attempts (see ``recent.py``); the form picks the
executor from the allow-list and previews the next occurrences as it is filled in (see
``forms.py`` and ``preview.py``). Its actions are declared in ``schedule_actions.py``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db import models, router
from django.db.models import Count, QuerySet
from django.db.models.deletion import Collector, ProtectedError, RestrictedError
from django.http import HttpRequest, JsonResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import ngettext

from ..executors.redaction import redact_text
from ..models import Attempt, Kind, Schedule
from ..models.kinds import KIND_FIELDS
from ..models.overdue import with_last_success
from ..schedule.describe import describe_schedule
from ..schedule.timefmt import format_utc
from . import code_owned, display, notices, now, preview, silence
from .forms import DurationField, ScheduleForm
from .recent import (
    STRIP_LENGTH,
    LastOutcomeFilter,
    annotate_recent,
    recent_attempts,
)
from .schedule_actions import ScheduleActions
from .search import search_schedules


def _own_zone(schedule: Schedule) -> str:
    return schedule.timezone


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
class ScheduleAdmin(ScheduleActions):
    form = ScheduleForm
    formfield_overrides = {models.DurationField: {"form_class": DurationField}}
    # Five columns fit beside the navigation sidebar and the filters at 1280 px: the zone is
    # in the rule, UTC in the next run's tooltip, "paused" in place of the next run, the last
    # outcome above the strip of the last attempts, and the queue a short name.
    list_display = ("schedule_name", "rule", "queue", "next_run", "lately")
    list_filter = (
        "kind",
        "enabled",
        "queue",
        code_owned.OwnerFilter,
        "overlap",
        LastOutcomeFilter,
        silence.OverdueFilter,
    )
    # metadata as shown: a team, an owner or a runbook link typed in the box finds the
    # schedule, a secret value never does (see ``search.search_schedules``).
    search_fields = ("name", "executor", "metadata")  # shown; searched by search.py
    list_display_links = ("schedule_name",)
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
        "silence_state",
        "notifications",
        "created",
        "enabled_since",
        "updated",
        "payload_shown",
        "metadata_shown",
    )
    fieldsets = (
        (None, {"fields": ("name", "enabled", "queue", "executor", "payload", "metadata")}),
        ("When", {"fields": ("kind", "timezone")}),
        *KIND_FIELDSETS,
        (
            "Bounds",
            {
                "fields": (
                    "start_at",
                    "end_at",
                    "max_occurrences",
                    "calendars",
                    "calendar_shift",
                    "upcoming",
                )
            },
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
                "fields": (
                    "max_attempts",
                    "retry_base",
                    "retry_cap",
                    "max_runtime",
                    "max_silence",
                ),
            },
        ),
        (
            "Notifications",
            {"classes": ("collapse",), "fields": ("notify", "notify_after_failures")},
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
                "silence_state",
                "notifications",
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
        if obj and obj.code_owned:
            return code_owned.fieldsets((*self.fieldsets, self.state_fieldset), obj)
        if obj and not self.has_change_permission(request, obj):
            return _shown(*self.fieldsets, self.state_fieldset)
        if obj:
            return (*self.fieldsets, self.state_fieldset)
        kind = request.GET.get("kind")
        if kind not in Kind.values:
            links = format_html_join(
                " · ",
                '<a class="cadence-text-link" href="?kind={}">{}</a>',
                ((k.value, k.label) for k in Kind),
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

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Schedule | None:
        """The schedule of a page, with its silence and next occurrences as of the page's
        *now* (``now.py``)."""
        obj = super().get_object(request, object_id, from_field)
        if obj is not None:
            now.stamp(obj, request)
        return obj

    def page_context(self, obj: Schedule) -> dict[str, Any]:
        """A code-owned schedule's page has nothing to save: no Save buttons."""
        return dict(code_owned.NOTHING_TO_SAVE) if obj.code_owned else {}

    def get_readonly_fields(self, request: HttpRequest, obj: Schedule | None = None) -> Any:
        fields = super().get_readonly_fields(request, obj)
        return (*fields, *code_owned.READ_ONLY) if obj and obj.code_owned else fields

    def has_delete_permission(self, request: HttpRequest, obj: Schedule | None = None) -> bool:
        """Not while code declares it: the next deploy would create it again, history lost."""
        if obj is not None and obj.code_owned:
            return False
        return super().has_delete_permission(request, obj)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return with_last_success(annotate_recent(super().get_queryset(request)))

    def search(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        return search_schedules(queryset, search_term), False

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
        declared = code_owned.undeletable(schedules)
        return deleted, model_count, perms_needed, [*declared, *_protected(schedules)]

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return silence.SilenceChangeList

    def get_urls(self) -> list:
        name = f"{self.opts.app_label}_{self.opts.model_name}_preview"
        view = self.admin_site.admin_view(self.preview_view)
        return [path("preview/", view, name=name), *super().get_urls()]

    def preview_view(self, request: HttpRequest) -> JsonResponse:
        return preview.preview(self, request)

    # --- columns -----------------------------------------------------------------------------

    @admin.display(description="name", ordering="name")
    def schedule_name(self, obj: Schedule) -> str:
        return format_html("{}{}", display.clipped(obj.name, "name"), code_owned.badge(obj))

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
        overdue = silence.overdue_badge(silence.silence(obj)) if obj.pk else ""
        if overdue:
            badge = format_html("{} {}", badge, overdue)
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

    @admin.display(description="payload (secrets hidden)")
    def payload_shown(self, obj: Schedule) -> str:
        return display.json_block(obj.payload)

    @admin.display(description="metadata (secrets hidden)")
    def metadata_shown(self, obj: Schedule) -> str:
        return display.json_block(obj.metadata)

    @admin.display(description="silence")
    def silence_state(self, obj: Schedule) -> str:
        return silence.describe(silence.silence(obj)) if obj.pk else "-"

    @admin.display(description="notifications")
    def notifications(self, obj: Schedule) -> str:
        """Its open episodes and the last message sent about it (CADENCE_NOTIFY)."""
        return notices.schedule_notifications(obj.pk) if obj.pk else "-"

    @admin.display(description="pause reason")
    def paused_because(self, obj: Schedule) -> str:
        return redact_text(obj.pause_reason) if obj.pause_reason else "-"

    @admin.display(description=f"next {preview.COUNT} occurrences")
    def upcoming(self, obj: Schedule) -> str:
        if obj.code_owned:  # no spec fields to type: the stored spec's occurrences
            instants = obj.upcoming(preview.COUNT, now.shown_at(obj))
            items = format_html_join(
                "", "<li>{}</li>", ((display.instant(at, obj.timezone),) for at in instants)
            )
            return format_html('<ol class="cadence-upcoming">{}</ol>', items) if items else "-"
        return format_html(
            '<div class="cadence-preview" data-preview-url="{}" data-object-id="{}" '
            'aria-live="polite">{}</div>',
            reverse("admin:django_cadence_schedule_preview"),
            obj.pk or "",
            "The next occurrences show here as you fill in the schedule (needs JavaScript).",
        )


def _shown(*fieldsets: Any) -> tuple[Any, ...]:
    """The fieldsets of a view-only page: payload and metadata redacted, not Django's raw JSON
    (a read-only ``JSONField`` is rendered as stored); no live preview, which is for editing."""
    return tuple(
        (
            title,
            {
                **options,
                "fields": tuple(
                    display.SHOWN_AS.get(f, f) for f in options["fields"] if f != "upcoming"
                ),
            },
        )
        for title, options in fieldsets
    )


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
