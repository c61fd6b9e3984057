"""The attempt pages' date hierarchy, from the first and last occurrence: no DISTINCT scan.

Django's ``date_hierarchy`` tag lists the years (months, days) that hold rows with a
``SELECT DISTINCT`` over every row of the period: with a million attempts that reads the
whole table on every view of the attempts page. Here one ``MIN``/``MAX`` of the filtered
queryset gives the span, answered from the ends of an index (``occurrence_at``, ``(status,
occurrence_at)`` or ``(schedule, occurrence_at, trigger)``), and every year (month, day) of
the span is offered, so a period in between without attempts opens an empty page. The rest
is Django's: the levels, the links (``occurrence_at__year=...&occurrence_at__month=...``),
the titles and the template, ``admin/date_hierarchy.html`` (overridable per model and app).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from django.contrib.admin.utils import get_fields_from_path
from django.contrib.admin.views.main import ChangeList
from django.db.models import Max, Min, QuerySet
from django.utils import formats, timezone
from django.utils.text import capfirst
from django.utils.translation import gettext as _

PARTS = ("year", "month", "day")


def span(queryset: QuerySet, field: str) -> tuple[date, date] | None:
    """The first and last day of ``field`` in ``queryset`` (in the current time zone)."""
    bounds = queryset.aggregate(first=Min(field), last=Max(field))
    if bounds["first"] is None or bounds["last"] is None:
        return None
    return _day(bounds["first"]), _day(bounds["last"])


def _day(value: date | datetime) -> date:
    if isinstance(value, datetime):
        return (timezone.localtime(value) if timezone.is_aware(value) else value).date()
    return value


def date_hierarchy(cl: ChangeList) -> dict[str, Any]:
    """What Django's ``date_hierarchy`` tag gives its template, from at most one query.

    ``field_name`` (the field's verbose name) is what Django 6's template labels the
    hierarchy with; Django 5's template does not read it.
    """
    verbose = get_fields_from_path(cl.model, cl.date_hierarchy)[-1].verbose_name
    return {**_hierarchy(cl), "field_name": verbose}


def _hierarchy(cl: ChangeList) -> dict[str, Any]:
    field = cl.date_hierarchy
    names = {part: f"{field}__{part}" for part in PARTS}
    year, month, day = (cl.params.get(names[part]) for part in PARTS)

    def link(**parts: Any) -> str:
        return cl.get_query_string({names[p]: v for p, v in parts.items()}, [f"{field}__"])

    if year and month and day:
        chosen = date(int(year), int(month), int(day))
        return _level(link(year=year, month=month), _year_month(chosen), [(_month_day(chosen), "")])
    # A text search matches no index: its first and last occurrence would scan every row, so
    # a searched list offers the periods of all attempts instead.
    bounds = span(cl.root_queryset if cl.query else cl.queryset, field)
    if bounds and not (year or month or day):  # start as deep as the rows allow, as Django does
        first, last = bounds
        if first.year == last.year:
            year = first.year
            month = first.month if first.month == last.month else None
    if year and month:
        days = _days(*bounds) if bounds else []
        choices = [(_month_day(d), link(year=year, month=month, day=d.day)) for d in days]
        return _level(link(year=year), str(year), choices)
    if year:
        months = _months(*bounds) if bounds else []
        choices = [(_year_month(m), link(year=year, month=m.month)) for m in months]
        return _level(link(), _("All dates"), choices)
    years = range(bounds[0].year, bounds[1].year + 1) if bounds else range(0)
    choices = [(str(y), link(year=str(y))) for y in years]
    return {**_level("", "", choices), "back": None}


def _level(back_link: str, back_title: str, choices: list[tuple[str, str]]) -> dict[str, Any]:
    """The template's context: a back link and ``(title, link)`` choices (a day has no link)."""
    return {
        "show": True,
        "back": {"link": back_link, "title": back_title},
        "choices": [
            {"link": href, "title": title} if href else {"title": title} for title, href in choices
        ],
    }


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def _months(first: date, last: date) -> list[date]:
    count = (last.year - first.year) * 12 + last.month - first.month + 1
    index = first.year * 12 + first.month - 1
    return [date((index + n) // 12, (index + n) % 12 + 1, 1) for n in range(count)]


def _year_month(day: date) -> str:
    return capfirst(formats.date_format(day, "YEAR_MONTH_FORMAT"))


def _month_day(day: date) -> str:
    return capfirst(formats.date_format(day, "MONTH_DAY_FORMAT"))
