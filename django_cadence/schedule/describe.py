"""Schedules in words, for the admin: "At 02:30, only on Monday", "every 5 minutes", "once at ...".

Cron expressions are described by ``cron-descriptor``, which knows no macros, so ``@daily`` and
friends are expanded with the same table the parser uses. Both of its lines work (1.x, which
django-celery-beat pins, and 2.x, whose ``Options`` takes keywords); without it, an expression
describes itself. Descriptions are display text only: nothing here decides when a schedule fires.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Any, Protocol
from zoneinfo import ZoneInfo

try:
    import cron_descriptor
except ImportError:  # optional at run time: the expression is its own description
    cron_descriptor = None

from ..exceptions import InvalidSpec
from .cron_syntax import MACROS
from .specs import validate_timezone

__all__ = ["describe_cron", "describe_interval", "describe_schedule", "format_in_zone", "zone"]

_UNITS = (
    ("day", timedelta(days=1)),
    ("hour", timedelta(hours=1)),
    ("minute", timedelta(minutes=1)),
    ("second", timedelta(seconds=1)),
)
_UTC = ZoneInfo("UTC")


@lru_cache(maxsize=1024)
def describe_cron(expr: str) -> str:
    """``"At 02:30"`` for ``30 2 * * *``; macros included; the expression itself if undescribable.

    24-hour clock and English, whatever the server's locale: the admin shows times that way.
    """
    text = " ".join(str(expr).split())
    fields = MACROS.get(text.lower(), text)
    if cron_descriptor is None:
        return text
    undescribable = (
        cron_descriptor.FormatException,
        cron_descriptor.MissingFieldException,
        cron_descriptor.WrongArgumentException,
        ValueError,
    )
    fields, listed_last = _last_day_at_the_end(fields)
    try:
        words = str(cron_descriptor.get_description(fields, _options()))
    except undescribable:
        return text  # a description is never vital; the expression says it all
    return _LISTED_L.sub("the last day", words) if listed_last else words


_LISTED_L = re.compile(r"\bL\b")


def _last_day_at_the_end(fields: str) -> tuple[str, bool]:
    """Move ``L`` to the end of a day-of-month list, so its words read "... and L of the month".

    cron-descriptor words ``L`` alone ("on the last day of the month") but in a list it
    writes the letter; the caller then replaces it. True when ``L`` is in a list.
    """
    parts = fields.split(" ")
    if len(parts) != 5:
        return fields, False
    days = parts[2].split(",")
    if len(days) < 2 or not any(d.upper() == "L" for d in days):
        return fields, False
    parts[2] = ",".join([*(d for d in days if d.upper() != "L"), "L"])
    return " ".join(parts), True


def _options() -> Any:
    """English on a 24-hour clock, on cron-descriptor 2.x (keywords) and 1.x (attributes)."""
    assert cron_descriptor is not None
    try:
        return cron_descriptor.Options(locale_code="en_US", use_24hour_time_format=True)
    except TypeError:  # 1.x: Options() takes no arguments; its attributes are set after
        options = cron_descriptor.Options()
        options.locale_code = "en_US"
        options.use_24hour_time_format = True
        return options


def describe_interval(interval: timedelta) -> str:
    """``every 5 minutes``, ``every hour``, ``every 1 hour 30 minutes``, ``every 1.5 seconds``."""
    if interval <= timedelta(0):
        return f"every {interval}"
    if interval % timedelta(seconds=1):
        return f"every {interval.total_seconds():g} seconds"
    parts, left = [], interval
    for unit, size in _UNITS:
        count, left = divmod(left, size)
        if count:
            parts.append((count, unit))
    if len(parts) == 1 and parts[0][0] == 1:
        return f"every {parts[0][1]}"
    return "every " + " ".join(f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in parts)


def zone(name: str | None) -> tzinfo:
    """The schedule's zone, or UTC when the stored name is unusable (display must not fail)."""
    try:
        return validate_timezone(name or "UTC")
    except InvalidSpec:
        return _UTC


def format_in_zone(instant: datetime | None, tz: tzinfo, *, seconds: bool = False) -> str:
    """``2026-03-08 03:00 EDT``: an instant as wall time in ``tz``, with the zone's abbreviation."""
    if instant is None:
        return ""
    local = instant.astimezone(tz)
    pattern = "%Y-%m-%d %H:%M:%S %Z" if seconds else "%Y-%m-%d %H:%M %Z"
    return local.strftime(pattern)


class Rule(Protocol):
    """The fields of a schedule that say when it fires (a ``Schedule`` has them)."""

    @property
    def kind(self) -> str: ...
    @property
    def cron(self) -> str: ...
    @property
    def interval(self) -> timedelta | None: ...
    @property
    def run_at(self) -> datetime | None: ...
    @property
    def timezone(self) -> str: ...


def describe_schedule(schedule: Rule) -> str:
    """The rule of any kind of schedule, in words."""
    if schedule.kind == "cron":
        return describe_cron(schedule.cron or "")
    if schedule.kind == "interval":
        return describe_interval(schedule.interval) if schedule.interval else "interval not set"
    if schedule.kind == "once":
        if schedule.run_at is None:
            return "once, time not set"
        return f"once at {format_in_zone(schedule.run_at, zone(schedule.timezone))}"
    return str(schedule.kind)
