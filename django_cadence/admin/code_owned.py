"""Schedules declared in code, on the admin: code owns the declared fields, people the rest.

A code-owned schedule's page says where it is declared and what a deploy does; its declared
fields are read-only (a deploy would put them back, so an edit must not look saved), and so
are its name and enabled flag (Pause and Resume record a reason). Run now, Pause, Resume and
the retries of its attempts stay available. It cannot be deleted while code declares it: the
next deploy would create it again, without its history. See "Schedules declared in code" in
docs/design.md.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..models import Kind, Schedule
from ..ops.declarations import CODE_OWNED_FIELDS, origin_of
from . import display

READ_ONLY = ("name", "enabled", *CODE_OWNED_FIELDS)
NOTHING_TO_SAVE = {
    "show_save": False,
    "show_save_and_continue": False,
    "show_save_and_add_another": False,
}
SETTING = "CADENCE_SCHEDULES or @job(schedule=...)"


def notice(schedule: Schedule) -> SafeString:
    """What the page tells about a code-owned schedule: where, what a deploy does, what stays."""
    origin = origin_of(schedule.name) or SETTING
    return format_html(
        '<p class="cadence-code-notice"><strong>Declared in code: <code>{}</code>.</strong> '
        "Its rule, executor, payload and policies are read-only here: change them there. Each "
        "deploy (<code>cadence_sync</code>, or <code>run_cadence</code> as it starts) sets them "
        "as declared. Pause, Resume, Run now and retrying its attempts stay yours, and a deploy "
        "keeps a pause and its reason. Removed from code, it is paused and handed to the "
        "admin.</p>",
        origin,
    )


def badge(schedule: Schedule) -> SafeString | str:
    if not schedule.code_owned:
        return ""
    return format_html(
        ' <span class="cadence-badge cadence-code" title="Declared in {}">code</span>', SETTING
    )


class OwnerFilter(admin.SimpleListFilter):
    title = "declared in"
    parameter_name = "declared_in"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("code", "code (CADENCE_SCHEDULES, @job)"), ("admin", "the admin")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "code":
            return queryset.filter(code_owned=True)
        if self.value() == "admin":
            return queryset.filter(code_owned=False)
        return queryset


def undeletable(schedules: list[Schedule]) -> list[str]:
    """Why each code-owned schedule of a deletion cannot go (the changelist's bulk delete)."""
    return [
        f"Schedule: {s.name} (declared in code: remove its declaration and deploy first)"
        for s in schedules
        if s.code_owned
    ]


def fieldsets(fieldsets: tuple[Any, ...], schedule: Schedule) -> tuple[Any, ...]:
    """The page's fieldsets with the notice on top, payload and metadata shown redacted, and
    only the schedule's own kind's fields (nothing can be typed, so no other kind can be chosen).
    """
    first, *rest = fieldsets
    fields = tuple(display.SHOWN_AS.get(f, f) for f in first[1]["fields"])
    other = {f"cadence-kind-{k}" for k in Kind.values if k != schedule.kind}
    kept = [fs for fs in rest if not other & set(fs[1].get("classes", ()))]
    return ((None, {**first[1], "fields": fields, "description": notice(schedule)}), *kept)
