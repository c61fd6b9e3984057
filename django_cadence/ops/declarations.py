"""Schedules declared in code, as unsaved and validated ``Schedule`` instances.

Two places declare them: ``CADENCE_SCHEDULES`` (schedule name -> dict of fields) and
``@job(schedule=...)`` (a schedule named after the job's path that runs the job). Nothing here
touches the database: each declaration becomes an unsaved ``Schedule`` checked exactly as a
form would check it (``full_clean``), so :mod:`django_cadence.ops.reconcile` compares it field by
field with the row. A bad declaration raises :class:`DeclarationError` naming the schedule,
where it was declared, and each bad field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.utils.dateparse import parse_datetime

from ..conf import cadence_settings
from ..exceptions import CadenceError
from ..executors import registry as executors
from ..executors.redaction import clean_text
from ..models.validation import TASK_EXECUTOR, to_duration

if TYPE_CHECKING:
    from ..models import Schedule


# What code owns: the spec, the executor and payload, the policies. The operator keeps
# ``enabled`` (a pause survives redeploys); the engine keeps its own fields.
SPEC_FIELDS = (
    "kind",
    "cron",
    "interval",
    "run_at",
    "timezone",
    "start_at",
    "end_at",
    "calendars",
    "calendar_shift",
)
CODE_OWNED_FIELDS = (
    *SPEC_FIELDS,
    "max_occurrences",
    "jitter",
    "executor",
    "payload",
    "overlap",
    "misfire",
    "misfire_grace",
    "max_attempts",
    "retry_base",
    "retry_cap",
    "max_runtime",
    "pause_after_failures",
    "max_silence",
    "notify",
    "notify_after_failures",
    "metadata",
    "queue",
)
DURATION_FIELDS = frozenset(
    {"interval", "misfire_grace", "retry_base", "retry_cap", "max_runtime", "jitter", "max_silence"}
)
DATETIME_FIELDS = frozenset({"run_at", "start_at", "end_at"})
TASK_KEYS = ("task", "args", "kwargs")
# Read only when cadence_sync creates the schedule (or takes back one it disabled for leaving
# code): it starts paused. Never compared afterwards: pause and resume stay the operator's.
START_PAUSED = "start_paused"
MAX_PAUSE_REASON_CHARS = 1_000
ACCEPTED_KEYS = frozenset(CODE_OWNED_FIELDS) | frozenset(TASK_KEYS) | {START_PAUSED}


AddError = Callable[[str, str], None]  # add(field, message): one more error for a field


class DeclarationError(CadenceError, ValueError):
    """A schedule declared in code is invalid."""

    def __init__(self, name: str, origin: str, errors: dict[str, list[str]]) -> None:
        self.name = name
        self.origin = origin
        self.errors = errors
        super().__init__(f"schedule {name!r} ({origin}): {self.details}")

    @property
    def details(self) -> str:
        """``field: message.`` for each bad field, in field order, one sentence each."""
        return " ".join(
            f"{field}: {_sentence(' '.join(messages))}"
            for field, messages in sorted(self.errors.items())
        )


def _sentence(text: str) -> str:
    return text if text.endswith((".", "?", "!")) else f"{text}."


@dataclass(frozen=True)
class Declaration:
    name: str
    origin: str  # where it is declared, for error messages
    fields: dict[str, Any]
    executor: str = ""  # set for @job(schedule=...): the job itself


def collect() -> tuple[list[Declaration], list[DeclarationError]]:
    """Every declaration, settings first; a name declared twice is an error for the second."""
    found: dict[str, Declaration] = {}
    errors: list[DeclarationError] = []
    for name, fields in cadence_settings.SCHEDULES.items():
        found[name] = Declaration(name, f"CADENCE_SCHEDULES[{name!r}]", dict(fields))
    for path, options in sorted(executors.registered_jobs().items()):
        if options.schedule is None:
            continue
        fields = dict(options.schedule)
        name = fields.pop("name", path)
        origin = f"@job(schedule=...) on {path}"
        if not isinstance(name, str) or not name.strip():
            errors.append(DeclarationError(str(name), origin, {"name": ["must be a string."]}))
        elif name in found:
            message = f"the name is also declared by {found[name].origin}."
            errors.append(DeclarationError(name, origin, {"name": [message]}))
        else:
            found[name] = Declaration(name, origin, fields, executor=path)
    return list(found.values()), errors


def origin_of(name: str) -> str:
    """Where the schedule ``name`` is declared (``CADENCE_SCHEDULES['name']``, ``@job(...) on
    path``), or "" when code no longer declares it."""
    found, _ = collect()
    return next((d.origin for d in found if d.name == name), "")


def build(declaration: Declaration) -> Schedule:
    """The declared schedule, unsaved and validated; ``DeclarationError`` lists what is wrong."""
    from ..models import Schedule

    errors: dict[str, list[str]] = {}

    def add(field: str, message: str) -> None:
        errors.setdefault(field, []).append(message)

    fields = _expand_task(declaration, add)
    paused_reason = _start_paused(declaration, fields.pop(START_PAUSED, False), add)
    if declaration.executor:
        fields["executor"] = declaration.executor
    for key in sorted(set(fields) - ACCEPTED_KEYS - {"executor"}):
        add(key, f"unknown field; use one of {', '.join(sorted(ACCEPTED_KEYS))}.")
        fields.pop(key)
    for key in DURATION_FIELDS & fields.keys():
        fields[key] = _duration(key, fields[key], add)
    for key in DATETIME_FIELDS & fields.keys():
        fields[key] = _instant(key, fields[key], add)
    candidate = Schedule(name=declaration.name, code_owned=True, **fields)
    if paused_reason:
        candidate.enabled, candidate.pause_reason = False, paused_reason
    try:
        candidate.full_clean(validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        for field, messages in exc.message_dict.items():
            for message in messages:
                # The task's payload is checked by the model; it was declared as ``task``.
                add(
                    "task" if field == "payload" and "task" in declaration.fields else field,
                    message,
                )
    if errors:
        raise DeclarationError(declaration.name, declaration.origin, errors)
    return candidate


def _start_paused(declaration: Declaration, value: Any, add: AddError) -> str:
    """The pause reason a new schedule starts with ("" to start enabled)."""
    if value is False:
        return ""
    if value is True:
        return f"start_paused in {declaration.origin}: resume it when it should run"
    if isinstance(value, str) and value.strip():
        return clean_text(value.strip(), MAX_PAUSE_REASON_CHARS)  # as a pause: redacted, bounded
    add(START_PAUSED, f"must be True, False or the pause reason to show (a string), not {value!r}.")
    return ""


def _expand_task(declaration: Declaration, add: AddError) -> dict[str, Any]:
    """``{"task": "myapp.tasks.send", "args": [...], "kwargs": {...}}`` -> the tasks executor."""
    fields = dict(declaration.fields)
    if "task" not in fields:
        for key in ("args", "kwargs"):
            if key in fields:
                add(key, "is only accepted together with task.")
                fields.pop(key)
        return fields
    for key in ("executor", "payload"):
        if key in fields:
            add(key, "give either task (with args and kwargs) or executor and payload.")
            fields.pop(key)
    task = fields.pop("task")
    payload: dict[str, Any] = {"task": task}
    for key in ("args", "kwargs"):
        if key in fields:
            payload[key] = fields.pop(key)
    fields["executor"] = TASK_EXECUTOR
    fields["payload"] = payload
    return fields


def _duration(field: str, value: Any, add: AddError) -> timedelta | None:
    try:
        return to_duration(value)
    except ValueError as exc:
        add(field, str(exc))
        return None


def _instant(field: str, value: Any, add: AddError) -> datetime | None:
    parsed = value
    if isinstance(value, str):
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
    if value is None:
        return None
    if not isinstance(parsed, datetime):
        add(field, f"must be a datetime or an ISO 8601 string, not {value!r}.")
        return None
    if parsed.utcoffset() is None:
        add(field, f"must include a time zone (such as 2026-01-01T00:00:00Z), not {value!r}.")
        return None
    return parsed
