"""Cron expressions: strict validation and expansion into the sets of each field.

``croniter`` expands the fields, but validation is ours and comes first: croniter accepts
extensions we do not support (seconds, ``W``, ``#``, ``H``, ``L`` outside day-of-month) and
mis-expands degenerate ranges (croniter 7 reads ``28-28`` as every minute), so croniter only
ever sees a canonical, numeric expression. ``L`` in day-of-month (the last day of the month,
alone or in a list) is ours too: it is kept out of croniter's expression and carried as a flag.
Errors name the field and say why, in words an admin user can act on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from croniter import croniter

from django_cadence.exceptions import InvalidSpec

__all__ = ["MACROS", "CronFields", "is_fixed_time", "parse_cron", "validate_cron"]

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# The longest each month can be, in any year: what decides "never fires" statically.
_MONTH_MAX_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MAX_LENGTH = 1000  # a form's worth; keeps croniter from expanding megabyte-long lists

_ELEMENT = re.compile(
    r"(?:(?P<star>\*)|(?P<start>[a-z0-9]+)(?:-(?P<end>[a-z0-9]+))?)(?:/(?P<step>[0-9]+))?",
    re.ASCII | re.IGNORECASE,
)
_FIELD_NAMES = "minute hour day-of-month month day-of-week"


@dataclass(frozen=True, slots=True)
class _Field:
    label: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    name_base: int = 0

    def value(self, token: str) -> int:
        """Read one number, or a name where this field has names."""
        if token.isdigit():
            number = int(token)
        elif token.lower() in self.names:
            number = self.names.index(token.lower()) + self.name_base
        else:
            hint = _extension_hint(token)
            if hint is None:
                named = " or a name" if self.names else ""
                hint = f"'{token}' is not a number{named}"
            raise _field_error(self, token, hint)
        if not self.low <= number <= self.high:
            raise _field_error(self, token, f"{number} is out of range {self.low}-{self.high}")
        return number


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day-of-month", 1, 31),
    _Field("month", 1, 12, tuple(_MONTH_NAMES), 1),
    _Field("day-of-week", 0, 7, tuple(_DAY_NAMES), 0),
)


@dataclass(frozen=True, slots=True)
class CronFields:
    """The expanded sets of one expression, plus the two flags the DST and day rules need."""

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: tuple[int, ...]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    last_day: bool  # 'L' in day-of-month: the month's last day matches, besides ``days``
    days_and: bool  # either day field starts with '*': both must match (else either may)
    fixed_time: bool  # neither minute nor hour starts with '*'


class _Error(InvalidSpec):
    """Carries the reason; validate_cron adds the expression to the message."""


def _field_error(field: _Field, text: str, why: str) -> _Error:
    return _Error(f"{field.label} field '{text}': {why}")


def validate_cron(expr: str) -> str:
    """Return the expression normalised, or raise InvalidSpec saying what is wrong.

    Normalised means whitespace collapsed to single spaces and lower-cased, except ``L``,
    written upper-case as crons write it; macros and month/day names are kept as written
    (they read better in the admin). The result is what a model should store, and
    validating it again returns it unchanged.
    """
    if not isinstance(expr, str):
        raise InvalidSpec(f"A cron expression must be a string, not {type(expr).__name__}.")
    collapsed = " ".join(expr.split())
    _parse_collapsed(collapsed)
    parts = collapsed.lower().split(" ")
    if len(parts) == 5:  # day-of-month has no names: upper-casing it touches only 'L'
        parts[2] = parts[2].upper()
    return " ".join(parts)


def is_fixed_time(expr: str) -> bool:
    """True when neither the minute nor the hour field starts with '*' (after macros)."""
    return parse_cron(expr).fixed_time


def parse_cron(expr: str) -> CronFields:
    """The expanded fields of a valid expression; raises InvalidSpec like validate_cron."""
    if not isinstance(expr, str):
        raise InvalidSpec(f"A cron expression must be a string, not {type(expr).__name__}.")
    return _parse_collapsed(" ".join(expr.split()))


@lru_cache(maxsize=1024)
def _parse_collapsed(text: str) -> CronFields:
    """Validate and expand; cached because every tick asks again for the same expressions.

    Errors quote the expression as the user wrote it (case kept), only whitespace collapsed.
    """
    try:
        return _parse(text)
    except _Error as exc:
        shown = text if len(text) <= 100 else text[:100] + "..."
        raise InvalidSpec(f"Invalid cron expression '{shown}': {exc}.") from None


def _parse(text: str) -> CronFields:
    if not text:
        raise _Error(f"it is empty; expected 5 fields ({_FIELD_NAMES})")
    if len(text) > _MAX_LENGTH:
        raise _Error(f"it is longer than {_MAX_LENGTH} characters")
    if text.startswith("@"):
        text = _expand_macro(text.lower())
    raw = text.split(" ")
    if len(raw) != 5:
        count = f"{len(raw)} field" + ("s" if len(raw) > 1 else "")
        extra = "; seconds and year fields are not supported" if len(raw) > 5 else ""
        raise _Error(f"it has {count}, expected 5 ({_FIELD_NAMES}){extra}")
    last_day, numbered = _last_day(raw[2])
    texts = [*raw[:2], numbered or "*", *raw[3:]]  # '*' stands in for a lone 'L'
    canonical = [_canonical(field, part) for field, part in zip(_FIELDS, texts, strict=True)]
    fields = _expand(canonical, raw, last_day=last_day, only_last=not numbered)
    _check_fires(fields, raw)
    return fields


def _expand_macro(text: str) -> str:
    if text == "@reboot":
        raise _Error("'@reboot' is not supported: schedules fire at instants, not at start-up")
    if text not in MACROS:
        raise _Error(f"unknown macro '{text}'; use one of {', '.join(MACROS)}")
    return MACROS[text]


def _last_day(text: str) -> tuple[bool, str]:
    """Whether day-of-month lists ``L``, and the field without it ('' when ``L`` is alone).

    Only a bare ``L`` element is the last day; ``L-3``, ``LW``, ``1-L`` or ``L/2`` are refused.
    """
    elements = text.split(",")
    for element in elements:
        if "l" in element.lower() and element.lower() != "l":
            hint = _extension_hint(element.lower().replace("l", ""))
            raise _field_error(_FIELDS[2], text, hint or _LAST_ALONE.format(element=element))
    kept = [e for e in elements if e.lower() != "l"]
    return len(kept) < len(elements), ",".join(kept)


_LAST_ALONE = (
    "'{element}' is not supported: 'L' (last) stands alone, as the last day of the month"
    " ('L', or in a list such as '15,L')"
)


def _canonical(field: _Field, text: str) -> str:
    """Check one field against the standard syntax and rewrite it in plain numbers.

    Degenerate ranges (``5-5``, ``5-5/2``) become ``5``: croniter 7 mis-expands them.
    """
    elements = []
    for element in text.split(","):
        match = _ELEMENT.fullmatch(element)
        if match is None:
            raise _field_error(field, text, _syntax_hint(element))
        step = match["step"]
        if step is not None and not 1 <= int(step) <= field.high - field.low + 1:
            raise _field_error(field, text, f"step {int(step)} is out of range")
        if match["star"]:
            elements.append(element)
            continue
        start = field.value(match["start"])
        if match["end"] is None:
            if step is not None:
                example = f"'*/{step}' or '{start}-{field.high}/{step}'"
                raise _field_error(field, text, f"a step needs '*' or a range, e.g. {example}")
            elements.append(str(start))
            continue
        end = field.value(match["end"])
        if field.label == "day-of-week" and match["end"].lower() == "sun" and start > 0:
            end = 7  # 'fri-sun' means Friday to Sunday
        if end < start:
            raise _field_error(field, text, f"range {start}-{end} runs backwards")
        if end == start:
            elements.append(str(start))
        else:
            elements.append(f"{start}-{end}" + (f"/{step}" if step else ""))
    return ",".join(elements)


def _syntax_hint(element: str) -> str:
    if not element:
        return "empty list element"
    return _extension_hint(element) or (
        f"'{element}' is not valid; use numbers, '*', ranges 'a-b', steps '*/n' or 'a-b/n',"
        " and comma-separated lists"
    )


_EXTENSIONS = {
    "#": "'#' (nth weekday)",
    "?": "'?' (no specific value)",
    "l": "'L' (last)",
    "w": "'W' (nearest weekday)",
    "h": "'H' (hashed)",
}
_ANY_NAME = re.compile("|".join(_MONTH_NAMES + _DAY_NAMES), re.IGNORECASE)


def _extension_hint(text: str) -> str | None:
    """Name the unsupported extension if ``text`` uses one; 'jul' and 'wed' are names, not L/W."""
    rest = _ANY_NAME.sub("", text).lower()
    used = [label for char, label in _EXTENSIONS.items() if char in rest]
    if not used:
        return None
    if len(used) == 1:
        return f"{used[0]} is a non-standard extension that is not supported"
    return f"{' and '.join(used)} are non-standard extensions that are not supported"


def _expand(canonical: list[str], raw: list[str], *, last_day: bool, only_last: bool) -> CronFields:
    """The fields' sets; when day-of-month is a lone 'L', ``days`` is empty."""
    try:
        expanded, _ = croniter.expand(" ".join(canonical))
    except Exception as exc:  # croniter's own errors are many; all mean the same to a user
        raise _Error(f"croniter could not read it ({exc})") from exc
    sets = [
        sorted(range(f.low, 7 if f.label == "day-of-week" else f.high + 1))
        if "*" in values
        else sorted({int(v) % 7 if f.label == "day-of-week" else int(v) for v in values})
        for f, values in zip(_FIELDS, expanded, strict=True)
    ]
    return CronFields(
        minutes=tuple(sets[0]),
        hours=tuple(sets[1]),
        days=() if only_last else tuple(sets[2]),
        months=frozenset(sets[3]),
        weekdays=frozenset(sets[4]),
        last_day=last_day,
        days_and=raw[2].startswith("*") or raw[4].startswith("*"),
        fixed_time=not (raw[0].startswith("*") or raw[1].startswith("*")),
    )


def _check_fires(fields: CronFields, raw: list[str]) -> None:
    """Reject expressions that can never fire, from the sets alone (bounded time).

    With either day field a wildcard both must match; every real date falls on every
    weekday within 400 years, so only the day-of-month/month pairing can make it empty.
    With both restricted either may match, and every month has every weekday. Every month
    has a last day, so ``L`` always fires.
    """
    if not fields.days_and or fields.last_day:
        return
    if any(day <= _MONTH_MAX_DAYS[month - 1] for month in fields.months for day in fields.days):
        return
    raise _Error(
        f"it never fires: day-of-month '{raw[2]}' never occurs in month '{raw[3]}'"
        " (February has at most 29 days; April, June, September and November have 30)"
    )
