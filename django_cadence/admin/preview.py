"""The live preview behind the schedule form: the next occurrences of the spec being typed.

``GET admin/django_cadence/schedule/preview/?kind=cron&cron=...&timezone=...`` answers
``{"occurrences": [{"utc", "local", "label", "utc_label", "dst_change"}], "errors": {field:
[messages]}, "description": ...}``, or a ``hint`` instead of errors while the chosen kind's
own field is empty (a new form is not wrong yet). Run at, start at and end at are wall times
in the schedule's zone, as in the form. The spec fields are parsed by the admin's own form fields
and validated by the same ``clean_schedule`` as a save, so the preview's errors are the form's
errors. Only the spec is validated: the executor is blanked on the in-memory candidate, so
nothing is imported and nothing runs; nothing is saved either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from itertools import islice, takewhile
from typing import TYPE_CHECKING, Any

from django import forms
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Field
from django.http import Http404, HttpRequest, JsonResponse
from django.utils.dateparse import parse_datetime

from ..models import Schedule
from ..models.kinds import KIND_FIELDS
from ..models.validation import clean_schedule
from ..schedule import specs
from ..schedule.describe import describe_schedule, zone
from ..schedule.timefmt import format_instant, format_utc
from .forms import OUT_OF_RANGE, zoned_fields
from .now import page_now

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

PREVIEW_FIELDS = (
    "kind",
    "cron",
    "interval",
    "run_at",
    "timezone",
    "start_at",
    "end_at",
    "max_occurrences",
    "calendars",
    "calendar_shift",
)
COUNT = 10
OPTIONAL_FIELDS: dict[str, Callable[[], Any]] = {
    "calendars": list,
    "calendar_shift": lambda: "skip",
}


def _field(name: str) -> Field[Any, Any]:
    field = Schedule._meta.get_field(name)
    assert isinstance(field, Field)  # the form's fields are the schedule's own columns
    return field


def preview_form(model_admin: ModelAdmin, request: HttpRequest, data: Any) -> forms.Form:
    """A form of the spec fields, with exactly the admin's form fields and widgets."""
    fields = {
        name: model_admin.formfield_for_dbfield(_field(name), request) for name in PREVIEW_FIELDS
    }
    for name in OPTIONAL_FIELDS:  # a page from before calendars sends neither
        optional = fields[name]
        assert optional is not None  # both are editable columns of the schedule
        optional.required = False
    return type("SchedulePreviewForm", (forms.Form,), fields)(data)


def _check_permission(model_admin: ModelAdmin, request: HttpRequest) -> Schedule | None:
    """The schedule being edited, if any; 403 unless the user may add or change schedules."""
    object_id = request.GET.get("object_id")
    if not object_id:
        if model_admin.has_add_permission(request) or model_admin.has_change_permission(request):
            return None
        raise PermissionDenied
    obj = model_admin.get_object(request, object_id)
    if obj is None:
        raise Http404("No such schedule.")
    if not model_admin.has_change_permission(request, obj):
        raise PermissionDenied
    return obj


def _after(request: HttpRequest) -> datetime:
    """``?after=<ISO instant>`` previews from another instant (aware only); default now."""
    raw = request.GET.get("after")
    if not raw:
        return page_now(request)
    parsed = parse_datetime(raw)
    if parsed is None or parsed.utcoffset() is None:
        raise ValidationError({"after": ["Give an ISO 8601 instant with a UTC offset."]})
    return parsed


def occurrences(schedule: Schedule, after: datetime) -> list[dict[str, Any]]:
    """The next occurrences, each in UTC and in the schedule's zone.

    ``dst_change`` marks an occurrence whose UTC offset differs from the previous one's (for
    the first: from the offset at ``after``), i.e. a DST transition happened in between.
    """
    tz = zone(schedule.timezone)
    previous = after.astimezone(tz).utcoffset()
    rows = []
    upcoming = schedule.upcoming(COUNT, after)
    fates = calendar_fates(schedule, after, upcoming)
    for instant in sorted({*upcoming, *fates}):
        local = instant.astimezone(tz)
        row = {
            "utc": instant.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            "local": local.isoformat(),
            "label": format_instant(instant, tz),
            "utc_label": format_utc(instant),
            "dst_change": local.utcoffset() != previous,
        }
        if instant in fates:
            row["calendar"] = fates[instant]
        rows.append(row)
        previous = local.utcoffset()
    return rows


def calendar_fates(
    schedule: Schedule, after: datetime, upcoming: list[datetime]
) -> dict[datetime, str]:
    """What the calendars do to the rule's instants up to the last occurrence shown: an
    excluded instant maps to ``skipped: calendar X``, a shifted one to ``shifted``."""
    if not schedule.calendars or not upcoming:
        return {}
    spec = schedule.spec(anchor=after if schedule._state.adding else None)
    plain = replace(spec, calendars=None, max_occurrences=None)
    raw = list(islice(takewhile(lambda i: i <= upcoming[-1], specs.occurrences(plain, after)), 500))
    fates: dict[datetime, str] = {}
    assert spec.calendars is not None
    tz = specs.validate_timezone(schedule.timezone)
    for instant in raw:
        reason = spec.calendars.reason(instant, tz)
        if reason is not None and len(fates) < COUNT:
            moved = "" if spec.shift == "skip" else f", moved to the {spec.shift} included day"
            fates[instant] = f"skipped: calendar {reason}{moved}"
    raw_set = set(raw)
    for instant in upcoming:
        if instant not in raw_set:
            fates[instant] = "shifted: runs here in place of an excluded day"
    return fates


def _not_filled_in(candidate: Schedule) -> str:
    """A hint, not an error, while the chosen kind's own field is still empty (a new form)."""
    for name in KIND_FIELDS.get(candidate.kind, ()):
        if getattr(candidate, name) in (None, ""):
            return f"Fill in {name} to see the next occurrences."
    return ""


def preview(model_admin: ModelAdmin, request: HttpRequest) -> JsonResponse:
    """The JSON answer; validation problems are a normal answer (200) with ``errors`` set."""
    candidate = _check_permission(model_admin, request) or Schedule()
    form = preview_form(model_admin, request, request.GET)
    try:
        after = _after(request)
        if not form.is_valid():
            raise ValidationError(form.errors.as_data())
        zoned_fields(form.cleaned_data)
        for name in PREVIEW_FIELDS:
            setattr(candidate, name, form.cleaned_data[name])
        for name, default in OPTIONAL_FIELDS.items():
            if form.cleaned_data[name] in (None, ""):
                setattr(candidate, name, default())
        candidate.executor, candidate.payload = "", {}  # the spec only: import and run nothing
        if hint := _not_filled_in(candidate):
            return JsonResponse({"occurrences": [], "errors": {}, "description": "", "hint": hint})
        clean_schedule(candidate, check_name=False)
        found = occurrences(candidate, after)
    except ValidationError as exc:
        errors = {field: [str(m) for m in messages] for field, messages in exc.message_dict.items()}
        return JsonResponse({"occurrences": [], "errors": errors, "description": ""})
    except OverflowError:  # an occurrence past year 9999 (or its wall time in the zone)
        errors = {"__all__": [OUT_OF_RANGE]}
        return JsonResponse({"occurrences": [], "errors": errors, "description": ""})
    return JsonResponse(
        {
            "occurrences": found,
            "errors": {},
            "description": describe_schedule(candidate),
            "timezone": candidate.timezone,
        }
    )
