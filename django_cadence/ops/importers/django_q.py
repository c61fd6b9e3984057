"""django-q2's ``Schedule`` rows, as cadence schedules.

django-q2 reads cron expressions, and keeps the wall time of daily, weekly and monthly
schedules, in ``Q_CLUSTER["time_zone"]`` (else ``TIME_ZONE``); its ``next_run`` is the next
slot. Daily and longer types become cron expressions at ``next_run``'s wall time in that zone,
minutes and hourly become intervals anchored at ``next_run``. ``catch_up`` (default true) runs
every missed slot: ``fire_all``; without it, one: ``fire_once``.
"""

from __future__ import annotations

import ast
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.apps import apps

from .arguments import CannotName, as_keywords, find_callable
from .plan import Found, Refused, map_queue

APP, MODEL = "django_q", "Schedule"  # an optional peer: looked up, not imported
_INTERVALS = {"I": None, "H": timedelta(hours=1)}
_MONTH_STEPS = {"M": 1, "BM": 2, "Q": 3, "Y": 12}


def collect() -> tuple[list[Found], list[Refused]]:
    """Every django-q2 schedule with runs left, named by its name (else ``django-q-<id>``)."""
    if not apps.is_installed(APP):
        raise ImportError(f"{APP} is not in INSTALLED_APPS: its Schedule rows cannot be read.")
    from django_q.conf import Conf

    found: list[Found] = []
    refused: list[Refused] = []
    model = apps.get_model(APP, MODEL)
    zone = str(Conf.TIME_ZONE or "UTC")
    misfire = "fire_all" if Conf.CATCH_UP else "fire_once"
    for row in model.objects.order_by("pk"):
        name = row.name or f"django-q-{row.pk}"
        origin = f"django_q Schedule #{row.pk}"
        try:
            fields, notes = _row(row, zone)
        except (CannotName, ValueError, SyntaxError) as exc:
            refused.append(Refused(name, origin, str(exc)))
            continue
        fields["misfire"] = misfire
        found.append(Found(name, origin, fields, tuple(notes)))
    return found, refused


def _row(row: Any, zone: str) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    if row.repeats == 0:
        raise ValueError("it has no runs left (repeats = 0).")
    if row.intended_date_kwarg:
        raise ValueError(
            f"it passes its slot as {row.intended_date_kwarg}=...: declare a context parameter "
            "and read context.occurrence_at instead, then declare this schedule by hand."
        )
    path, func = find_callable(row.func)
    args, kwargs = _arguments(row)
    q_options = kwargs.pop("q_options", None)
    if q_options:
        notes.append(f"q_options={q_options!r}: django-q's own task options, no equivalent.")
    fields: dict[str, Any] = {"executor": path, "payload": as_keywords(path, func, args, kwargs)}
    fields.update(_spec(row, zone, notes))
    if row.repeats > 0:
        fields["max_occurrences"] = row.repeats
    if row.hook:
        notes.append(f"hook={row.hook!r}: connect a receiver to attempt_succeeded/attempt_failed.")
    map_queue(getattr(row, "cluster", None), "cluster", fields, notes)
    return fields, notes


def _arguments(row: Any) -> tuple[list[Any], dict[str, Any]]:
    """django-q2's text fields: ``args`` a literal (a tuple, or one value), ``kwargs`` a dict
    literal or ``x=1, y=2``, both read exactly as its scheduler reads them."""
    args: Any = ast.literal_eval(row.args) if row.args else ()
    args = list(args) if isinstance(args, tuple) else [args]
    kwargs: dict[str, Any] = {}
    if row.kwargs:
        try:
            kwargs = ast.literal_eval(row.kwargs)
        except (SyntaxError, ValueError):
            call = ast.parse(f"f({row.kwargs})").body[0]
            keywords = call.value.keywords if isinstance(call, ast.Expr) else []  # type: ignore[attr-defined]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in keywords}
    if not isinstance(kwargs, dict):
        raise ValueError(f"its kwargs {row.kwargs!r} are not keyword arguments.")
    return args, kwargs


def _spec(row: Any, zone: str, notes: list[str]) -> dict[str, Any]:
    kind = row.schedule_type
    if kind == "C":
        return {"cron": row.cron, "timezone": zone}
    if row.next_run is None:
        raise ValueError("it has no next_run to take its time from.")
    next_run: datetime = row.next_run
    if kind == "O":
        return {"run_at": next_run.isoformat()}
    if kind in _INTERVALS:
        every = _INTERVALS[kind] or timedelta(minutes=row.minutes or 1)
        return {"interval": int(every.total_seconds()), "start_at": next_run.isoformat()}
    local = next_run.astimezone(ZoneInfo(zone))
    if local.second or local.microsecond:
        notes.append(f"next_run {local:%H:%M:%S}: cron has no seconds; runs at {local:%H:%M}.")
    at = f"{local.minute} {local.hour}"
    if kind == "D":
        return {"cron": f"{at} * * *", "timezone": zone}
    if kind == "W":
        return {"cron": f"{at} * * {local.isoweekday() % 7}", "timezone": zone}
    if kind in _MONTH_STEPS:
        if local.day > 28:
            raise ValueError(
                f"it runs on day {local.day} of the month, which django-q2 moves to an earlier "
                "day after a shorter month; declare the day you mean by hand."
            )
        step = _MONTH_STEPS[kind]
        months = sorted({(local.month - 1 + k * step) % 12 + 1 for k in range(12 // step)})
        return {"cron": f"{at} {local.day} {','.join(map(str, months))} *", "timezone": zone}
    raise ValueError(
        f"its type {row.get_schedule_type_display()} has no cron form (every other week); "
        "declare it by hand (an interval of 14 days keeps real time, not wall time, across DST)."
    )
