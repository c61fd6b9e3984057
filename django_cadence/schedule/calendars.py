"""Business calendars: which local days (and instants) a calendar excludes; pure, no database.

A calendar's rules are explicit dates, yearly dates, weekdays, date ranges and instant ranges
(freeze windows). In ``exclude`` mode the rules name the excluded days; in ``only`` mode they
name the only days included. A calendar may build on a base calendar: a day is excluded when
the calendar or its base excludes it. Days are matched against an occurrence's local date in
the schedule's time zone (docs/design.md, "Calendars").
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from django_cadence.exceptions import InvalidSpec

__all__ = ["MODES", "RULE_KEYS", "CalendarRules", "CalendarSet", "parse_rules", "resolve"]

MODES = ("exclude", "only")
RULE_KEYS = ("dates", "yearly", "weekdays", "date_ranges", "freezes", "holidays")
HOLIDAYS_EXTRA = "pip install 'django-cadence[holidays]'"
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class CalendarRules:
    """One calendar, its base resolved; ``excludes`` is O(log n) in its ranges, O(1) else."""

    name: str
    mode: str = "exclude"
    dates: frozenset[date] = frozenset()
    yearly: frozenset[tuple[int, int]] = frozenset()
    weekdays: frozenset[int] = frozenset()  # 0 is Monday
    date_ranges: tuple[tuple[date, date], ...] = ()  # inclusive, sorted by start
    freezes: tuple[tuple[datetime, datetime], ...] = ()  # [start, end) in UTC, sorted
    base: CalendarRules | None = None
    # A country's public holidays (the ``holidays`` package), expanded a year at a time.
    public_holidays: Any = field(default=None, compare=False, hash=False, repr=False)
    # Precomputed: the starts, and the latest end among the ranges starting up to each one.
    _range_starts: tuple[date, ...] = field(default=(), compare=False, repr=False)
    _range_ends: tuple[date, ...] = field(default=(), compare=False, repr=False)
    _freeze_starts: tuple[datetime, ...] = field(default=(), compare=False, repr=False)
    _freeze_ends: tuple[datetime, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_range_starts", tuple(s for s, _ in self.date_ranges))
        object.__setattr__(self, "_range_ends", tuple(_running_max(e for _, e in self.date_ranges)))
        object.__setattr__(self, "_freeze_starts", tuple(s for s, _ in self.freezes))
        object.__setattr__(self, "_freeze_ends", tuple(_running_max(e for _, e in self.freezes)))

    def _day_listed(self, day: date) -> bool:
        if day in self.dates or day.weekday() in self.weekdays:
            return True
        if (day.month, day.day) in self.yearly:
            return True
        if self.public_holidays is not None and day in self.public_holidays:
            return True
        i = bisect.bisect_right(self._range_starts, day)
        return i > 0 and self._range_ends[i - 1] >= day

    def excludes_day(self, day: date) -> bool:
        """Whether the calendar (or its base) excludes the whole local day ``day``."""
        listed = self._day_listed(day)
        own = listed if self.mode == "exclude" else not listed
        return own or (self.base is not None and self.base.excludes_day(day))

    def frozen_until(self, instant: datetime) -> datetime | None:
        """The end of the freeze window holding ``instant`` (UTC), or None when none does."""
        i = bisect.bisect_right(self._freeze_starts, instant)
        own = self._freeze_ends[i - 1] if i > 0 and self._freeze_ends[i - 1] > instant else None
        base = self.base.frozen_until(instant) if self.base is not None else None
        return max((e for e in (own, base) if e is not None), default=None)


@dataclass(frozen=True, eq=False)
class CalendarSet:
    """The calendars one schedule names: an instant is excluded when any of them excludes it.

    Compared and hashed by identity: its searches are cached per loaded set.
    """

    calendars: tuple[CalendarRules, ...]

    def day_reason(self, day: date) -> str | None:
        """The name of the first calendar that excludes the local day, or None."""
        return next((c.name for c in self.calendars if c.excludes_day(day)), None)

    def frozen(self, instant: datetime) -> tuple[str, datetime] | None:
        """(calendar name, end of its freeze) when ``instant`` is in a freeze window."""
        for c in self.calendars:
            end = c.frozen_until(instant)
            if end is not None:
                return c.name, end
        return None

    def reason(self, instant: datetime, zone: ZoneInfo) -> str | None:
        """Why ``instant`` is excluded (the calendar's name), or None when it is included."""
        day = instant.astimezone(zone).date()
        found = self.day_reason(day)
        if found is not None:
            return found
        frozen = self.frozen(instant)
        return frozen[0] if frozen else None


def parse_rules(name: str, mode: str, rules: Any, zone: ZoneInfo) -> CalendarRules:
    """A calendar's rules from their JSON form; ``InvalidSpec`` names the rule and the value.

    ``{"dates": ["2026-12-25"], "yearly": ["12-25"], "weekdays": ["sat", "sun"],
    "date_ranges": [["2026-08-01", "2026-08-15"]], "freezes": [["2026-12-20T18:00",
    "2027-01-04T08:00"]]}``; a freeze bound without an offset is read in the calendar's zone.
    """
    if mode not in MODES:
        raise InvalidSpec(f"mode: must be one of {', '.join(MODES)}, not {mode!r}.")
    if not isinstance(rules, Mapping):
        raise InvalidSpec(f"rules: must be a JSON object with keys {', '.join(RULE_KEYS)}.")
    unknown = sorted(set(rules) - set(RULE_KEYS))
    if unknown:
        raise InvalidSpec(f"rules: unknown key {unknown[0]!r}; use {', '.join(RULE_KEYS)}.")
    return CalendarRules(
        name=name,
        mode=mode,
        dates=frozenset(_date("dates", v) for v in _items(rules, "dates")),
        yearly=frozenset(_yearly(v) for v in _items(rules, "yearly")),
        weekdays=frozenset(_weekday(v) for v in _items(rules, "weekdays")),
        date_ranges=tuple(sorted(_date_range(v) for v in _items(rules, "date_ranges"))),
        freezes=tuple(sorted(_freeze(v, zone) for v in _items(rules, "freezes"))),
        public_holidays=_public_holidays(rules.get("holidays")),
    )


def resolve(name: str, rows: Mapping[str, tuple[str | None, CalendarRules]]) -> CalendarRules:
    """``name``'s rules with its chain of bases attached; ``rows``: name -> (base, own rules).

    Raises ``InvalidSpec`` for an unknown name or a circular chain of bases.
    """
    chain: list[str] = []
    current: str | None = name
    while current is not None:
        if current in chain:
            raise InvalidSpec(f"base: circular bases {' -> '.join([*chain, current])}.")
        if current not in rows:
            raise InvalidSpec(f"Unknown calendar {current!r}.")
        chain.append(current)
        current = rows[current][0]
    resolved: CalendarRules | None = None
    for link in reversed(chain):
        own = rows[link][1]
        resolved = CalendarRules(
            own.name,
            own.mode,
            own.dates,
            own.yearly,
            own.weekdays,
            own.date_ranges,
            own.freezes,
            resolved,
            own.public_holidays,
        )
    assert resolved is not None
    return resolved


def _public_holidays(value: Any) -> Any:
    """``{"country": "GB", "subdiv": "ENG"}`` -> the ``holidays`` package's calendar of them,
    or None; ``InvalidSpec`` names the rule, an unknown country, or the extra to install."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not isinstance(value.get("country"), str):
        raise InvalidSpec(
            f'rules.holidays: must be {{"country": "GB", "subdiv": "ENG"}}, not {value!r}.'
        )
    unknown = sorted(set(value) - {"country", "subdiv"})
    if unknown:
        raise InvalidSpec(f"rules.holidays: unknown key {unknown[0]!r}; use country, subdiv.")
    try:
        import holidays
    except ImportError:
        raise InvalidSpec(
            f"rules.holidays: needs the holidays package, which is not installed: {HOLIDAYS_EXTRA}."
        ) from None
    try:
        return holidays.country_holidays(value["country"], subdiv=value.get("subdiv"))
    except NotImplementedError as exc:
        raise InvalidSpec(f"rules.holidays: {exc}") from None


def _running_max(values: Any) -> list[Any]:
    out: list[Any] = []
    for value in values:
        out.append(value if not out or value > out[-1] else out[-1])
    return out


def _items(rules: Mapping[str, Any], key: str) -> Sequence[Any]:
    value = rules.get(key, [])
    if not isinstance(value, list | tuple):
        raise InvalidSpec(f"rules.{key}: must be a list, not {value!r}.")
    return value


def _date(key: str, value: Any) -> date:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError):
        raise InvalidSpec(f"rules.{key}: {value!r} is not a date (YYYY-MM-DD).") from None


def _yearly(value: Any) -> tuple[int, int]:
    try:
        month, day = (int(part) for part in str(value).split("-"))
        date(2000, month, day)  # a leap year: 02-29 is a valid yearly date
    except ValueError:
        raise InvalidSpec(f"rules.yearly: {value!r} is not a month and day (MM-DD).") from None
    return month, day


def _weekday(value: Any) -> int:
    text = str(value).lower()[:3]
    if text not in WEEKDAYS:
        raise InvalidSpec(f"rules.weekdays: {value!r} is not a weekday ({', '.join(WEEKDAYS)}).")
    return WEEKDAYS.index(text)


def _date_range(value: Any) -> tuple[date, date]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise InvalidSpec(f"rules.date_ranges: {value!r} is not a pair [first, last].")
    first, last = _date("date_ranges", value[0]), _date("date_ranges", value[1])
    if last < first:
        raise InvalidSpec(f"rules.date_ranges: {value!r} ends before it starts.")
    return first, last


def _freeze(value: Any, zone: ZoneInfo) -> tuple[datetime, datetime]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise InvalidSpec(f"rules.freezes: {value!r} is not a pair [start, end].")
    start, end = (_instant(v, zone) for v in value)
    if end <= start:
        raise InvalidSpec(f"rules.freezes: {value!r} ends before it starts.")
    return start, end


def _instant(value: Any, zone: ZoneInfo) -> datetime:
    try:
        parsed = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise InvalidSpec(f"rules.freezes: {value!r} is not an ISO 8601 instant.") from None
    if parsed.utcoffset() is None:
        parsed = parsed.replace(tzinfo=zone)
    return parsed.astimezone(UTC)
