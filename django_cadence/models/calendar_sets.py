"""Calendars as the schedule math reads them: loaded once, resolved with their bases.

A planner batch loads every calendar in one query (``snapshot``) and resolves each schedule's
list against it; outside a batch, ``calendar_set`` loads on demand. Declarations in
``CADENCE_CALENDARS`` count before their first sync, so a schedule can name them at once.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..conf import cadence_settings
from ..exceptions import InvalidSpec
from ..schedule import calendars as rules_math
from ..schedule.specs import validate_timezone

logger = logging.getLogger("django_cadence.calendars")

Rows = dict[str, tuple[str | None, rules_math.CalendarRules]]
Sets = dict[tuple[str, ...], rules_math.CalendarSet]
_current: contextvars.ContextVar[tuple[Rows, Sets] | None] = contextvars.ContextVar(
    "calendars", default=None
)


def load_rows() -> Rows:
    """Every calendar's base and own rules: stored rows, then declarations in code over them."""
    from .calendar import Calendar

    rows: Rows = {}
    for calendar in Calendar.objects.select_related("base"):
        rows[calendar.name] = (calendar.base.name if calendar.base else None, calendar.own_rules())
    for name, fields in cadence_settings.CALENDARS.items():
        try:
            rows[name] = (fields.get("base"), declared_rules(name, fields))
        except InvalidSpec:  # cadence_sync refuses it, naming the rule; here it is unknown
            rows.pop(name, None)
    return rows


def declared_rules(name: str, fields: dict[str, Any]) -> rules_math.CalendarRules:
    """A ``CADENCE_CALENDARS`` entry's own rules; ``InvalidSpec`` names the bad one."""
    zone = validate_timezone(fields.get("timezone", "UTC"))
    return rules_math.parse_rules(
        name, fields.get("mode", "exclude"), fields.get("rules", {}), zone
    )


@contextmanager
def snapshot() -> Iterator[None]:
    """Read the calendars once for everything inside (a planner batch)."""
    token = _current.set((load_rows(), {}))
    try:
        yield
    finally:
        _current.reset(token)


def calendar_set(names: Sequence[str], *, strict: bool = False) -> rules_math.CalendarSet | None:
    """The resolved calendars ``names`` lists; None for an empty list.

    ``strict`` raises ``InvalidSpec`` for an unknown name or a cycle (validation); otherwise
    such a calendar is left out and logged, so one deleted row never stops the engine.
    """
    if not names:
        return None
    current = _current.get()
    rows, sets = current if current is not None else (load_rows(), {})
    key = tuple(names)
    if key in sets:  # one set per list in a batch: its cached searches are shared
        return sets[key]
    resolved = []
    for name in names:
        try:
            resolved.append(rules_math.resolve(name, rows))
        except InvalidSpec:
            if strict:
                raise
            logger.warning("calendar %r cannot be read; it excludes nothing", name)
    sets[key] = rules_math.CalendarSet(tuple(resolved))
    return sets[key]
