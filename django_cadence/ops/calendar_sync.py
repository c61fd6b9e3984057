"""Calendars declared in ``CADENCE_CALENDARS`` made to match their rows, as schedules are.

Code owns a declared calendar's zone, mode, base, rules and description; a row of that name
made in the admin is adopted. A code-owned calendar no longer declared is handed back to the
operator (``code_owned`` off), never deleted: schedules may still name it.
"""

from __future__ import annotations

from typing import Any

from ..conf import cadence_settings
from ..exceptions import CadenceError
from ..models import Calendar
from ..models.calendar_sets import declared_rules, load_rows
from ..schedule import calendars as rules_math

OWNED_FIELDS = ("timezone", "mode", "rules", "description")


def check_declared() -> list[tuple[str, str, str]]:
    """(calendar, field, message) for each bad declaration: its zone or rules, or an
    unknown or circular base."""
    declared = cadence_settings.CALENDARS
    if not declared:
        return []
    problems = []
    for name, fields in sorted(declared.items()):
        try:
            declared_rules(name, fields)
        except CadenceError as exc:
            field = "timezone" if "time zone" in str(exc) else "rules"
            problems.append((name, field, str(exc)))
    if problems:
        return problems
    rows = load_rows()
    for name in sorted(declared):
        try:
            rules_math.resolve(name, rows)
        except CadenceError as exc:
            problems.append((name, "base", str(exc)))
    return problems


def plan(using: str) -> list[tuple[str, str, str]]:
    """(action, calendar name, detail) for each change a sync makes; pure reads."""
    declared = cadence_settings.CALENDARS
    stored = {c.name: c for c in Calendar.objects.using(using).select_related("base")}
    changes: list[tuple[str, str, str]] = []
    for name in sorted(declared):
        row = stored.get(name)
        if row is None:
            changes.append(("create", name, ""))
            continue
        wanted = _wanted(declared[name])
        for field in (*OWNED_FIELDS, "base"):
            have = row.base.name if field == "base" and row.base else getattr(row, field)
            if field == "base":
                have = have or None
            if have != wanted[field]:
                changes.append(("update", name, field))
        if not row.code_owned:
            changes.append(("adopt", name, ""))
    for name, row in sorted(stored.items()):
        if row.code_owned and name not in declared:
            changes.append(("release", name, ""))
    return changes


def apply(using: str) -> list[tuple[str, str, str]]:
    """Write the declared calendars (call inside the reconcile lock's transaction)."""
    changes = plan(using)
    if not changes:
        return changes
    declared = cadence_settings.CALENDARS
    calendars = Calendar.objects.using(using)
    for name in sorted(declared):  # first without bases: a base may be declared after
        wanted = _wanted(declared[name])
        row = calendars.filter(name=name).first() or Calendar(name=name)
        for field in OWNED_FIELDS:
            setattr(row, field, wanted[field])
        row.code_owned = True
        if row.base_id is not None and row.base and row.base.name != wanted["base"]:
            row.base = None
        row.save(using=using)
    for name in sorted(declared):
        base = _wanted(declared[name])["base"]
        row = calendars.get(name=name)
        row.base = calendars.get(name=base) if base else None
        row.save(using=using)
    released = [name for action, name, _ in changes if action == "release"]
    calendars.filter(name__in=released).update(code_owned=False)
    return changes


def _wanted(fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "timezone": fields.get("timezone", "UTC"),
        "mode": fields.get("mode", "exclude"),
        "rules": fields.get("rules", {}),
        "description": fields.get("description", ""),
        "base": fields.get("base") or None,
    }
