"""One way to show an instant everywhere: to the second, labelled with its zone.

The admin, ``cadence_status`` and the logs call these so that an operator reads the same
shape on every screen: ``2026-12-05 02:30:00 EST``, with UTC at hand as ``2026-12-05
07:30:00 UTC``.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo

from django.utils import timezone

PATTERN = "%Y-%m-%d %H:%M:%S"
EMPTY = "-"


def zone_of(zone: tzinfo | str | None) -> tzinfo:
    """The zone named by ``zone``: an IANA name, a ``tzinfo``, or None for Django's current zone."""
    if zone is None:
        return timezone.get_current_timezone()
    if isinstance(zone, str):
        return ZoneInfo(zone)
    return zone


def format_instant(value: datetime | None, zone: tzinfo | str | None = None) -> str:
    """``value`` in ``zone`` to the second with the zone's abbreviation; ``-`` for None."""
    if value is None:
        return EMPTY
    local = value.astimezone(zone_of(zone))
    return f"{local.strftime(PATTERN)} {local.tzname() or local.strftime('%z')}"


def format_utc(value: datetime | None) -> str:
    """``value`` in UTC to the second, labelled ``UTC``; ``-`` for None."""
    if value is None:
        return EMPTY
    return f"{value.astimezone(UTC).strftime(PATTERN)} UTC"
