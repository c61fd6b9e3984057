"""A schedule's kind (cron, interval, once): the fields each kind uses, the kind the spec
fields imply when none is given, and the check that a schedule fills its kind's fields and
leaves the others empty.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import Schedule

AddError = Callable[[str, str], None]  # add(field, message): one more error for a field

# The fields each kind uses; the others must be empty.
KIND_FIELDS = {
    "cron": ("cron",),
    "interval": ("interval",),
    "once": ("run_at",),
}
SPEC_FIELDS = ("cron", "interval", "run_at")
KIND_OF_FIELD = {"cron": "cron", "interval": "interval", "run_at": "once"}


def is_empty(value: object) -> bool:
    return value is None or value == ""


KIND_NAMES = {
    "cron": "A cron schedule",
    "interval": "An interval schedule",
    "once": "A once schedule",
}


def spec_fields_given(values: Mapping[str, Any]) -> list[str]:
    """Which of cron, interval and run_at have a value in ``values``."""
    return [field for field in SPEC_FIELDS if not is_empty(values.get(field))]


def inferred_kind(values: Mapping[str, Any]) -> str | None:
    """The kind the spec fields imply when exactly one of cron, interval, run_at is given.

    ``Schedule(interval=...)`` and ``CADENCE_SCHEDULES`` both infer the kind with it.
    """
    given = spec_fields_given(values)
    return KIND_OF_FIELD[given[0]] if len(given) == 1 else None


def imply_kind(schedule: Schedule, add: AddError, already_wrong: set[str]) -> bool:
    """For ``Schedule(**fields)`` without a kind: the kind the spec fields set by now imply
    (one given later counts too). False, with the error on ``kind``, when none or several
    are set: no kind is assumed."""
    implied = getattr(schedule, "_implied_kind", None)
    if implied is None or schedule.kind != implied:
        return True  # the kind was given
    given = [
        field
        for field in SPEC_FIELDS
        if field in already_wrong or not is_empty(getattr(schedule, field))
    ]
    if len(given) == 1:
        schedule.kind = schedule._implied_kind = KIND_OF_FIELD[given[0]]
        return True
    if given:
        listed = f"{', '.join(given[:-1])} and {given[-1]}"
        add(
            "kind",
            f"Give only one of cron, interval or run_at (which sets the kind), not {listed}.",
        )
    else:
        add("kind", "A schedule needs one of cron, interval or run_at, which also sets its kind.")
    return False


def check_kind_fields(schedule: Schedule, add: AddError, already_wrong: set[str]) -> None:
    """The fields of the schedule's kind filled and the others empty; a hint names the kind
    that the values given would make."""
    if not imply_kind(schedule, add, already_wrong):
        return
    used = KIND_FIELDS.get(schedule.kind)
    if used is None:
        return  # the field's own choices validation reports an unknown kind
    subject = KIND_NAMES[schedule.kind]
    values = {field: getattr(schedule, field) for field in SPEC_FIELDS}
    other = inferred_kind({f: v for f, v in values.items() if f not in used})
    for field in SPEC_FIELDS:
        value = values[field]
        if field in already_wrong:
            continue
        if field in used and is_empty(value):
            hint = f" For {KIND_NAMES[other].lower()}, set kind={other!r}." if other else ""
            add(field, f"{subject} needs a value for {field}.{hint}")
        elif field not in used and not is_empty(value):
            add(field, f"{subject} must leave {field} empty.")
