"""Durations as people type them: ``"5 minutes"``, ``"1h 30m"``, ``"0:05:00"``, ``"PT5M"``, 300.

The one home of the duration grammars, with one table of units. :func:`parse` is the reader
for the model, ``CADENCE_SCHEDULES`` and the admin, so a duration means the same wherever it
is typed. ``"00:05"`` is refused rather than guessed: Django's ``parse_duration`` reads it as
five seconds (minutes:seconds) where most people mean five minutes (hours:minutes); the
message suggests both unambiguous forms.

:func:`short` is the commands' narrower form, a whole number and one unit letter (``30d``),
as ``cadence_prune --older-than`` takes it. It stays narrower on purpose: an age decides what
is deleted, and under :func:`parse` a bare ``30`` would be thirty seconds, not the thirty
days someone typing it most likely means.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.utils.dateparse import parse_duration

ACCEPTED = (
    "a number of seconds, words such as '5 minutes' or '1h 30m', "
    "'H:MM:SS' such as '0:05:00', or ISO 8601 such as 'PT5M'"
)

UNITS = {
    "w": 7 * 86400,
    "week": 7 * 86400,
    "d": 86400,
    "day": 86400,
    "h": 3600,
    "hr": 3600,
    "hour": 3600,
    "m": 60,
    "min": 60,
    "minute": 60,
    "s": 1,
    "sec": 1,
    "second": 1,
}
_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*(?:,|and\s)?", re.IGNORECASE)
_MINUTES_SECONDS = re.compile(r"^\s*-?\d+:\d+(?:[.,]\d+)?\s*$")
_SHORT = re.compile(r"(\d+)([smhdw])")
SHORT_EXAMPLES = "30d, 12h, 90m, 45s or 2w"


class DurationError(ValueError):
    """A value that is not a duration, or an ambiguous one; the message lists what is accepted."""


def parse(value: Any) -> timedelta | None:
    """``value`` as a ``timedelta`` (``None`` stays ``None``); ``DurationError`` otherwise."""
    if value is None or isinstance(value, timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=value)
    if not isinstance(value, str):
        raise DurationError(f"must be a duration: {ACCEPTED}; not {value!r}.")
    if _MINUTES_SECONDS.match(value):
        as_hours, as_minutes = _readings(value)
        raise DurationError(
            f"{value!r} is ambiguous: write {as_hours} for hours and minutes, or "
            f"{as_minutes} for minutes and seconds ({ACCEPTED})."
        )
    parsed = _words(value)
    if parsed is None:
        parsed = parse_duration(value.strip())
    if parsed is None:
        raise DurationError(f"must be a duration: {ACCEPTED}; not {value!r}.")
    return parsed


def short(value: str) -> timedelta | None:
    """A whole number and one unit letter (``30d``, ``12h``, ``90m``, ``45s``, ``2w``), in any
    case, around blanks; ``None`` if ``value`` is not that."""
    match = _SHORT.fullmatch(value.strip().lower())
    if match is None:
        return None
    return timedelta(seconds=int(match.group(1)) * UNITS[match.group(2)])


def _words(value: str) -> timedelta | None:
    """``"5 minutes"``, ``"1h30m"``, ``"2 hours, 15 minutes"``; ``None`` if it is not that."""
    text = value.strip()
    if not text[:1].isdigit():
        return None
    seconds, position = 0.0, 0
    while position < len(text):
        match = _PART.match(text, position)
        if match is None or match.end() == position:
            return None
        name = match.group(2).lower()
        unit = UNITS.get(name) or UNITS.get(name.removesuffix("s"))
        if unit is None:
            return None
        seconds += float(match.group(1)) * unit
        position = match.end()
    return timedelta(seconds=seconds)


def _readings(value: str) -> tuple[str, str]:
    """``"00:05"`` -> ``("'5 minutes' or '0:05:00'", "'5 s'")``: both ways to read it, spelt out."""
    first, second = value.strip().lstrip("-").replace(",", ".").split(":", 1)
    hours, minutes = int(first), float(second)
    as_hours = _spelt(hours * 3600 + minutes * 60)
    return f"'{as_hours}' or '{hours}:{second.zfill(2)}:00'", f"'{_spelt(hours * 60 + minutes)}'"


def _spelt(seconds: float) -> str:
    """Seconds in the largest units that fit: 300 -> "5 minutes", 330 -> "5m 30s"."""
    parts = []
    for name, size in (("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count:g}{name}")
    if len(parts) == 1 and parts[0].endswith("m"):
        minutes = parts[0][:-1]
        return f"{minutes} minute" if minutes == "1" else f"{minutes} minutes"
    return " ".join(parts) or "0s"
