"""django-celery-beat's ``PeriodicTask`` rows and ``CELERY_BEAT_SCHEDULE``, as cadence schedules.

The time zone rule is beat's own. A ``PeriodicTask``'s crontab is read in its
``CrontabSchedule.timezone`` (which django-celery-beat fills from ``CELERY_TIMEZONE`` when the
row is made). A crontab in ``CELERY_BEAT_SCHEDULE`` is read in the Celery app's zone:
``CELERY_TIMEZONE`` if set, else UTC while ``CELERY_ENABLE_UTC`` is true (its default), else the
server's local time, which cannot be known for the hosts that will run the jobs: refused.

The ``queue`` (a ``PeriodicTask`` field, or an entry's ``options``) becomes the schedule's
queue: only the workers serving it run it. Options that only steer a broker (exchange,
routing key, priority, headers) have no meaning without one and are named in notes. A
message ``expires`` of N seconds (or ``expire_seconds``) means "run no later than N seconds
after the slot, else drop it": the ``skip`` misfire policy with an N-second grace. A
``PeriodicTask.expires`` instant ends the schedule: ``end_at``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.apps import apps
from django.conf import settings

from .arguments import CannotName, as_keywords, find_callable
from .plan import Found, Refused, map_queue

APP, MODEL = "django_celery_beat", "PeriodicTask"  # an optional peer: looked up, not imported
CELERY_HOUSEKEEPING = "celery.backend_cleanup"  # added by beat itself; cadence_prune's job
BROKER_OPTIONS = {
    "exchange": "no broker here, so no AMQP routing",
    "routing_key": "no broker here, so no AMQP routing",
    "priority": "no priorities here: due occurrences run oldest first",
    "headers": "no messages here, so no message headers; the job gets its payload (and context)",
}


class Unresolvable(ValueError):
    """The schedule's time zone cannot be known here."""


def collect() -> tuple[list[Found], list[Refused]]:
    """Every beat schedule: the setting's entries first, then the rows of other names."""
    found: list[Found] = []
    refused: list[Refused] = []
    entries = getattr(settings, "CELERY_BEAT_SCHEDULE", None) or {}
    if not entries and not apps.is_installed(APP):
        raise ImportError(f"there is no CELERY_BEAT_SCHEDULE, and {APP} is not in INSTALLED_APPS.")
    for name, entry in entries.items():
        _add(found, refused, name, f"CELERY_BEAT_SCHEDULE[{name!r}]", lambda e=entry: _entry(e))
    if apps.is_installed(APP):
        model = apps.get_model(APP, MODEL)
        rows = model.objects.select_related("crontab", "interval", "clocked", "solar")
        for row in rows.order_by("name"):
            if row.name in entries:
                continue  # the DatabaseScheduler's copy of a setting's entry
            _add(found, refused, row.name, f"PeriodicTask {row.name!r}", lambda r=row: _row(r))
    return found, refused


def _add(found: list[Found], refused: list[Refused], name: str, origin: str, read: Any) -> None:
    if name == CELERY_HOUSEKEEPING:
        reason = "Celery's own result cleanup; cadence_prune keeps cadence's history instead."
        refused.append(Refused(name, origin, reason))
        return
    try:
        fields, notes, paused, crontab = read()
    except (Unresolvable, CannotName, ValueError) as exc:
        refused.append(Refused(name, origin, str(exc)))
        return
    firings = _firings(crontab, fields["timezone"]) if crontab is not None else None
    found.append(Found(name, origin, fields, tuple(notes), paused, firings))


def _firings(crontab: Any, zone: str) -> Any:
    """Beat's own next firings of ``crontab``, each its next slot after the one before."""

    def firings(after: datetime, count: int) -> list[datetime]:
        found, last = [], after
        for _ in range(count):
            start, delta, _now = crontab.remaining_delta(last, tz=ZoneInfo(zone))
            last = (start + delta).astimezone(UTC)
            found.append(last)
        return found

    return firings


Read = tuple[dict[str, Any], list[str], str, Any]  # fields, notes, paused reason, crontab


def _row(row: Any) -> Read:
    """A ``PeriodicTask`` row."""
    notes: list[str] = []
    spec: dict[str, Any]
    if row.solar_id:
        raise ValueError(
            f"a solar schedule ({row.solar}) has no equivalent: compute the instants and make "
            "once schedules, or pick a cron near them."
        )
    if row.crontab_id:
        spec = {"cron": _crontab_fields(row.crontab), "timezone": _zone(str(row.crontab.timezone))}
    elif row.interval_id:
        spec = {"interval": _seconds(row.interval.schedule.run_every)}
        notes.append(_INTERVAL_PHASE)
    elif row.clocked_id:
        spec = {"run_at": _instant(row.clocked.clocked_time, "clocked_time")}
    else:
        raise ValueError("it has no schedule (no crontab, interval, clocked or solar).")
    fields = _call(row.task, json.loads(row.args or "[]"), json.loads(row.kwargs or "{}"))
    fields.update(spec)
    if row.one_off and not row.clocked_id:
        fields["max_occurrences"] = 1
    if row.start_time:
        fields["start_at"] = _instant(row.start_time, "start_time")
    if row.expires:
        fields["end_at"] = _instant(row.expires, "expires")
    if row.expire_seconds:
        fields.update(misfire="skip", misfire_grace=row.expire_seconds)
    if row.description:
        fields["metadata"] = {"description": row.description}
    map_queue(row.queue, "queue", fields, notes)
    for option, why in BROKER_OPTIONS.items():
        value = getattr(row, option)
        if value not in (None, "", "{}", {}):
            notes.append(f"{option}={value!r}: {why}.")
    paused = "" if row.enabled else "disabled in django-celery-beat"
    return fields, notes, paused, row.crontab.schedule if row.crontab_id else None


def _entry(entry: dict[str, Any]) -> Read:
    """An entry of ``CELERY_BEAT_SCHEDULE``."""
    from celery import schedules

    notes: list[str] = []
    spec: dict[str, Any]
    schedule = entry.get("schedule")
    if isinstance(schedule, schedules.solar):
        raise ValueError(
            "a solar schedule has no equivalent: compute the instants and make once schedules, "
            "or pick a cron near them."
        )
    if isinstance(schedule, schedules.crontab):
        zone = getattr(schedule, "tz", None) if type(schedule) is not schedules.crontab else None
        spec = {"cron": _crontab_fields(schedule), "timezone": _zone(str(zone or _app_zone()))}
    elif isinstance(schedule, int | float | timedelta | schedules.schedule) and not isinstance(
        schedule, bool
    ):
        run_every = schedule.run_every if isinstance(schedule, schedules.schedule) else schedule
        spec = {"interval": _seconds(run_every)}
        notes.append(_INTERVAL_PHASE)
        if entry.get("relative") or getattr(schedule, "relative", False):
            notes.append("relative=True: occurrences are every interval from the anchor here.")
    else:
        raise ValueError(f"its schedule {schedule!r} is of a kind the import does not know.")
    fields = _call(entry.get("task", ""), list(entry.get("args") or ()), entry.get("kwargs") or {})
    fields.update(spec)
    for option, value in (entry.get("options") or {}).items():
        if option == "expires" and isinstance(value, int | float) and not isinstance(value, bool):
            fields.update(misfire="skip", misfire_grace=value)
        elif option == "expires" and isinstance(value, datetime):
            fields["end_at"] = _instant(value, "options['expires']")
        elif option == "queue":
            map_queue(value, "options['queue']", fields, notes)
        else:
            why = BROKER_OPTIONS.get(option, "a Celery message option with no equivalent here")
            notes.append(f"options[{option!r}]={value!r}: {why}.")
    return fields, notes, "", schedule if isinstance(schedule, schedules.crontab) else None


_INTERVAL_PHASE = "beat counts each interval from its last run; here, from start_at or the import."


def _call(task: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    if not task:
        raise ValueError("it names no task.")
    if not isinstance(kwargs, dict) or not isinstance(args, list):
        raise ValueError(f"its args {args!r} and kwargs {kwargs!r} are not a list and a dict.")
    path, func = find_callable(task)
    return {"executor": path, "payload": as_keywords(path, func, args, kwargs)}


def _crontab_fields(crontab: Any) -> str:
    """``minute hour day-of-month month day-of-week`` of a Celery or django-celery-beat crontab.

    Beat fires only on days that match both day fields; cron here, as Vixie cron, fires on
    days that match either when neither is a wildcard. That one has no cron form: refused.
    """
    names = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
    values = [getattr(crontab, f"_orig_{n}", None) or getattr(crontab, n, "*") for n in names]
    fields = [_cron_field(v) for v in values]
    if not fields[2].startswith("*") and not fields[4].startswith("*"):
        raise ValueError(
            f"beat fires on days matching both day_of_month {fields[2]!r} and day_of_week "
            f"{fields[4]!r}; a cron expression here fires on days matching either. Declare it "
            "by hand (for example the day of week, with a job that checks the day of month)."
        )
    return " ".join(fields)


def _cron_field(value: Any) -> str:
    if isinstance(value, str):
        return value.replace(" ", "") or "*"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Iterable):
        return ",".join(str(v) for v in sorted(value))
    raise ValueError(f"a crontab field {value!r} the import cannot read.")


def _app_zone() -> str:
    name = getattr(settings, "CELERY_TIMEZONE", None)
    if name:
        return str(name)
    if getattr(settings, "CELERY_ENABLE_UTC", True):
        return "UTC"
    raise Unresolvable(
        "beat reads this crontab in the local time of the host it runs on (CELERY_ENABLE_UTC "
        "= False and no CELERY_TIMEZONE), which cannot be known here: set CELERY_TIMEZONE to "
        "that zone and import again."
    )


def _zone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise Unresolvable(f"its time zone {name!r} is not a known IANA zone.") from None
    return name


def _seconds(delta: Any) -> int | float:
    seconds = delta.total_seconds() if isinstance(delta, timedelta) else float(delta)
    return int(seconds) if seconds == int(seconds) else seconds


def _instant(value: datetime, field: str) -> str:
    if value.utcoffset() is None:
        raise Unresolvable(f"its {field} {value} has no time zone (USE_TZ = False?).")
    return value.isoformat()
