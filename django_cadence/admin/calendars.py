"""Calendars on the admin: their rules, their next excluded days, and the schedules under them.

A calendar declared in ``CADENCE_CALENDARS`` is read-only here (a deploy would put it back);
a calendar a schedule names cannot be deleted (``Calendar.delete`` refuses and says which).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from ..models import Calendar
from ..models.calendar import schedules_naming
from ..models.calendar_sets import calendar_set
from ..schedule.describe import zone
from .guard import GuardedAdmin
from .now import shown_at

SHOWN_DAYS = 10
SEARCHED_DAYS = 800  # a little over two years ahead


def next_excluded_days(calendar: Calendar, today: date) -> list[tuple[date, str]]:
    """The next excluded days from ``today`` (in the calendar's zone), with the calendar
    that excludes each (this one or a base), within :data:`SEARCHED_DAYS`."""
    rules = calendar_set([calendar.name])
    if rules is None or not rules.calendars:
        return []
    resolved = rules.calendars[0]
    found = []
    for offset in range(SEARCHED_DAYS):
        day = today + timedelta(days=offset)
        if resolved.excludes_day(day):
            found.append((day, _excluded_by(resolved, day)))
            if len(found) == SHOWN_DAYS:
                break
    return found


def _excluded_by(rules: Any, day: date) -> str:
    """The name of the calendar in the chain whose own rules exclude ``day``."""
    link = rules
    while link is not None:
        listed = link._day_listed(day)
        if listed == (link.mode == "exclude"):
            return str(link.name)
        link = link.base
    return str(rules.name)


@admin.register(Calendar)
class CalendarAdmin(GuardedAdmin):
    list_display = ("name", "mode", "timezone", "base", "code_owned", "schedule_count")
    list_filter = ("mode", "code_owned")
    search_fields = ("name", "description")
    readonly_fields = ("next_excluded", "freezes", "schedules", "code_owned", "updated_at")
    fieldsets = (
        (None, {"fields": ("name", "description", "timezone", "mode", "base", "rules")}),
        ("What it excludes", {"fields": ("next_excluded", "freezes")}),
        ("Used by", {"fields": ("schedules",)}),
        ("State", {"fields": ("code_owned", "updated_at")}),
    )

    class Media:
        css = {"all": ("django_cadence/admin.css",)}

    def get_readonly_fields(self, request: HttpRequest, obj: Calendar | None = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        if obj is not None and obj.code_owned:
            return (*fields, "name", "description", "timezone", "mode", "base", "rules")
        return fields

    def delete_model(self, request: HttpRequest, obj: Calendar) -> None:
        try:
            obj.delete()
        except ValidationError as exc:
            self.message_user(request, " ".join(exc.messages), messages.ERROR)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for calendar in queryset:
            self.delete_model(request, calendar)

    @admin.display(description="schedules")
    def schedule_count(self, obj: Calendar) -> int:
        return len(schedules_naming(obj.name))

    @admin.display(description="next excluded days")
    def next_excluded(self, obj: Calendar) -> str:
        if obj._state.adding:
            return "-"
        today = shown_at(obj).astimezone(zone(obj.timezone)).date()
        days = next_excluded_days(obj, today)
        if not days:
            return "None in the next two years."
        return format_html(
            '<ol class="cadence-excluded-days">{}</ol>',
            format_html_join(
                "",
                "<li>{} {} <small>({})</small></li>",
                ((d.strftime("%a"), d, w) for d, w in days),
            ),
        )

    @admin.display(description="freeze windows")
    def freezes(self, obj: Calendar) -> str:
        windows = (obj.rules or {}).get("freezes") or []
        if not windows:
            return "-"
        return format_html_join("", "<div>{} to {}</div>", ((a, b) for a, b in windows))

    @admin.display(description="schedules under it")
    def schedules(self, obj: Calendar) -> str:
        names = [] if obj._state.adding else sorted(schedules_naming(obj.name))
        if not names:
            return "-"
        from ..models import Schedule

        rows = Schedule.objects.filter(name__in=names).values_list("pk", "name")
        return format_html_join(
            ", ",
            '<a href="{}">{}</a>',
            (
                (reverse("admin:django_cadence_schedule_change", args=[pk]), name)
                for pk, name in rows
            ),
        )

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        self._request = request  # the page's "now" for the next excluded days
        return super().get_form(request, obj, change, **kwargs)
