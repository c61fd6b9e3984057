"""The outline of ``CADENCE_SCHEDULES`` and ``CADENCE_CALENDARS``: names to dicts of fields.

Only the outline: ``ops/declarations.py`` checks each schedule's fields and ``cadence_sync``
each calendar's rules, naming the bad one.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured


def schedules_outline(name: str, value: Any) -> dict[str, dict[str, Any]]:
    """The outline only (names to dicts of fields); ``declarations`` checks each field."""
    if not isinstance(value, dict):
        raise ImproperlyConfigured(
            f"{name} must be a dict of schedule name to a dict of fields, "
            f"not {type(value).__name__}."
        )
    for key, entry in value.items():
        if not isinstance(key, str) or not key.strip():
            raise ImproperlyConfigured(
                f"{name} keys must be non-empty schedule names, not {key!r}."
            )
        if not isinstance(entry, dict):
            raise ImproperlyConfigured(
                f"{name}[{key!r}] must be a dict of fields, not {type(entry).__name__}."
            )
    return value


def calendars_outline(name: str, value: Any) -> dict[str, dict[str, Any]]:
    """Calendar name -> {"timezone", "mode", "base", "rules", "description"}: the outline;
    ``cadence_sync`` checks the rules and names the bad one (ops/calendar_sync.py)."""
    outline = schedules_outline(name, value)
    keys = {"timezone", "mode", "base", "rules", "description"}
    for key, entry in outline.items():
        unknown = sorted(set(entry) - keys)
        if unknown:
            raise ImproperlyConfigured(
                f"{name}[{key!r}]: unknown field {unknown[0]!r}; use {', '.join(sorted(keys))}."
            )
        base = entry.get("base")
        if base is not None and not isinstance(base, str):
            raise ImproperlyConfigured(f"{name}[{key!r}]['base'] must be a calendar name.")
    return outline
