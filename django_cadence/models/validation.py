"""``Schedule.full_clean()``: one clear message per bad field, before anything is written.

Every check runs, so a form shows all of its problems at once. The executor is checked
against the allow-list before anything is imported; only an allowed path is imported, to
check that the payload fits its signature.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError

from ..conf import cadence_settings
from ..exceptions import CadenceError, InvalidPayload
from ..executors import allow_list, calling, payloads, registry
from ..schedule import durations, instants, queues, specs
from ..schedule.calendar_filter import LOOKAHEAD
from .kinds import AddError, check_kind_fields, is_empty

if TYPE_CHECKING:
    from . import Schedule

TASK_EXECUTOR = "django_cadence.tasks.enqueue"  # its payload names a task, checked on save

INSTANT_FIELDS = ("run_at", "start_at", "end_at")
# SQLite and MariaDB store a duration as a 64-bit count of microseconds (some 292,000 years);
# a longer one would crash the save (or the constraint checks of full_clean) with an
# OverflowError instead of a message. A thousand years is past any sensible schedule.
MAX_DURATION = timedelta(days=365_250)


def clean_schedule(schedule: Schedule, *, check_name: bool = True) -> None:
    """Raise one ``ValidationError`` carrying a message for every invalid field.

    The admin's preview checks the spec of a schedule that may have no name yet.
    """
    errors: dict[str, list[str]] = {}

    def add(field: str, message: str) -> None:
        errors.setdefault(field, []).append(message)

    _coerce_durations(schedule, add)
    _coerce_field_types(schedule, add)
    if schedule.calendar_shift in (None, ""):
        schedule.calendar_shift = "skip"  # the default, for a form that leaves it empty
    if check_name:
        _check_name(schedule, add)
    _check_choices(schedule, add)
    _check_instants(schedule, add)
    check_kind_fields(schedule, add, already_wrong=set(errors))
    _check_cron(schedule, add)
    _check_timezone(schedule, add)
    _check_interval(schedule, add)
    _check_bounds(schedule, add)
    _check_executor_and_payload(schedule, add)
    _check_metadata(schedule, add)
    _check_notify(schedule, add)
    _check_queue(schedule, add)
    if not errors:
        _check_calendars(schedule, add)
    if errors:
        raise ValidationError(errors)


NOTIFY_OFF = "off"


def notify_channels(value: str) -> list[str]:
    """The channel names a schedule's ``notify`` lists ("" and "off": none)."""
    if value.strip().lower() == NOTIFY_OFF:
        return []
    return [name.strip() for name in value.split(",") if name.strip()]


def _check_notify(schedule: Schedule, add: AddError) -> None:
    """``notify``: empty, ``off``, or names of channels ``CADENCE_NOTIFY`` configures."""
    notify: Any = schedule.notify
    if not isinstance(notify, str):
        return  # _coerce_field_types said so
    schedule.notify = notify = notify.strip()
    configured = [c.name for c in cadence_settings.NOTIFY.channels]
    unknown = [name for name in notify_channels(notify) if name not in configured]
    if unknown:
        choices = ", ".join(configured) if configured else "none are"
        add(
            "notify",
            f"notify names {', '.join(unknown)}, which CADENCE_NOTIFY does not configure "
            f"(configured: {choices}); leave it empty for every channel, or write off.",
        )


def _check_queue(schedule: Schedule, add: AddError) -> None:
    """``queue``: a short name; left out, the job's ``@job(queue=...)``, else "default"."""
    if getattr(schedule, "_implied_queue", False) and schedule.queue == queues.DEFAULT_QUEUE:
        job_queue = _job_queue(schedule.executor)
        if job_queue:
            schedule.queue = job_queue
    error = queues.queue_name_error(schedule.queue)
    if error:
        add("queue", error)


def _job_queue(executor: object) -> str | None:
    """The queue ``@job(queue=...)`` gives the job at ``executor``, if it is registered."""
    if not isinstance(executor, str):
        return None
    options = registry.registered_options(executor)
    return options.queue if options is not None else None


def _check_metadata(schedule: Schedule, add: AddError) -> None:
    """Labels for people: a JSON object (``{}`` when unset) under the payload's rules (JSON
    types, finite numbers, no NUL or lone surrogate, depth and size limits)."""
    if schedule.metadata is None:
        schedule.metadata = {}
    elif not isinstance(schedule.metadata, dict):
        kind = type(schedule.metadata).__name__
        add(
            "metadata", f'metadata must be a JSON object such as {{"team": "billing"}}, not {kind}.'
        )
    else:
        try:
            payloads.validate_json_object(schedule.metadata, "metadata")
        except InvalidPayload as exc:
            add("metadata", str(exc))


def to_duration(value: Any) -> timedelta | None:
    """A ``timedelta``, a number of seconds or a string (``"5 minutes"``, ``"0:05:00"``).

    Raises ``ValueError`` for anything else; the settings, the model and the admin share it
    (:mod:`django_cadence.schedule.durations`).
    """
    return durations.parse(value)


def _is_duration(field: Any) -> bool:
    return field.get_internal_type() == "DurationField"


def read_values(schedule: Schedule) -> set[str]:
    """Give each field its Python type where its value can be read (seconds or words for a
    duration, an ISO string for an instant), in place; the names of the fields whose value
    cannot be, or is not one of its choices, left as they are for :func:`clean_schedule` to
    name what is accepted."""
    unread: set[str] = set()

    def note(field: str, message: str) -> None:
        unread.add(field)

    _coerce_durations(schedule, note, reset=False)
    _coerce_field_types(schedule, note, reset=False)
    _check_choices(schedule, note)  # one message, ours, that names the choices
    return unread


def _coerce_durations(schedule: Schedule, add: AddError, *, reset: bool = True) -> None:
    for field in filter(_is_duration, schedule._meta.concrete_fields):
        value = getattr(schedule, field.name)
        try:
            setattr(schedule, field.name, to_duration(value))
        except (ValueError, OverflowError) as exc:
            if reset:
                setattr(schedule, field.name, None)
            add(field.name, f"{field.name} {exc}")


def _coerce_field_types(schedule: Schedule, add: AddError, *, reset: bool = True) -> None:
    """Give every other editable field its Python type (``"5"`` -> 5, an ISO string -> a
    datetime), turning a value of the wrong type into a message on that field."""
    for field in schedule._meta.concrete_fields:
        name = field.attname
        value = getattr(schedule, name)
        if _is_duration(field) or not field.editable or field.primary_key:
            continue
        if value is None:
            if not field.null and field.get_internal_type() == "CharField":
                add(name, f"{name} is required.")
            continue
        if field.get_internal_type() == "JSONField":
            continue  # the payload's own check names what is wrong with it
        try:
            setattr(schedule, name, field.to_python(value))
        except (ValidationError, TypeError, ValueError):
            if reset:
                setattr(schedule, name, None if field.null else field.get_default())
            add(name, f"{name} cannot be {value!r}: {_expected(field)}.")


def _expected(field: Any) -> str:
    kind = field.get_internal_type()
    if kind in ("IntegerField", "PositiveIntegerField", "BigIntegerField", "SmallIntegerField"):
        return "it takes a whole number"
    if kind == "DateTimeField":
        return "it takes an aware datetime or an ISO 8601 string with a time zone"
    if kind == "BooleanField":
        return "it takes True or False"
    return "it takes text"


def _check_calendars(schedule: Schedule, add: AddError) -> None:
    """Known calendar names, and a schedule its calendars still let run (within the
    lookahead): one that could never fire again is refused, not left silent."""
    names: Any = schedule.calendars
    if names is None or names == "":
        schedule.calendars = names = []
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        add("calendars", f"must be a list of calendar names, not {names!r}.")
        return
    if not names:
        return
    try:
        spec = schedule.spec(strict=True)
    except CadenceError as exc:
        add("calendars", str(exc))
        return
    after: datetime | None = schedule.last_run_at or schedule.enabled_at or schedule.created_at
    if schedule.kind == "once" and schedule.run_at is not None:
        after = schedule.run_at - timedelta(microseconds=1)
    if after is None:
        return
    plain = replace(spec, calendars=None)
    if (
        specs.next_occurrence(plain, after) is not None
        and specs.next_occurrence(spec, after) is None
    ):
        add(
            "calendars",
            f"{', '.join(names)} exclude every occurrence left within "
            f"{LOOKAHEAD.days // 366} years: the schedule would never run again.",
        )


def _check_name(schedule: Schedule, add: AddError) -> None:
    """A blank name; a missing one (None) is reported as required by ``_coerce_field_types``."""
    if schedule.name is not None and not schedule.name.strip():
        add("name", "A schedule needs a name that is not blank.")


def _check_choices(schedule: Schedule, add: AddError) -> None:
    for field in schedule._meta.concrete_fields:
        if not field.choices:
            continue
        value = getattr(schedule, field.name)
        valid = [choice for choice, _ in field.choices]
        if value not in valid:
            add(field.name, f"Unknown {field.name} {value!r}: choose one of {', '.join(valid)}.")


def _check_instants(schedule: Schedule, add: AddError) -> None:
    """``run_at``, ``start_at`` and ``end_at`` within the years 2 to 9998 (UTC): nearer the
    ends of the calendar, computing the next occurrence or showing one in a zone overflows."""
    for field in INSTANT_FIELDS:
        value = getattr(schedule, field)
        if isinstance(value, datetime) and not instants.in_range(value):
            add(field, f"{field} must fall within {instants.RANGE} (UTC), not {value.isoformat()}.")


def _check_cron(schedule: Schedule, add: AddError) -> None:
    if schedule.kind != "cron" or is_empty(schedule.cron):
        return
    try:
        schedule.cron = specs.validate_cron(schedule.cron)
    except CadenceError as exc:
        add("cron", str(exc))


def _check_timezone(schedule: Schedule, add: AddError) -> None:
    try:
        specs.validate_timezone(schedule.timezone)
    except CadenceError as exc:
        add("timezone", str(exc))


def _check_interval(schedule: Schedule, add: AddError) -> None:
    if schedule.kind != "interval" or schedule.interval is None:
        return
    minimum = cadence_settings.MIN_INTERVAL
    if schedule.interval < minimum:
        add(
            "interval",
            f"The interval must be at least {minimum.total_seconds():g} s (CADENCE_MIN_INTERVAL).",
        )
    elif schedule.interval > MAX_DURATION:
        add("interval", f"The interval must be at most {MAX_DURATION.days} days.")


def _check_bounds(schedule: Schedule, add: AddError) -> None:
    if schedule.start_at and schedule.end_at and schedule.end_at <= schedule.start_at:
        add("end_at", "The end must be after the start.")
    for field in ("retry_base", "retry_cap", "max_runtime", "max_silence"):
        value = getattr(schedule, field)
        if value is not None and value.total_seconds() <= 0:
            add(field, f"{field} must be a positive duration.")
    for field in ("misfire_grace", "jitter"):
        value = getattr(schedule, field)
        if value is not None and value.total_seconds() < 0:
            add(field, f"{field} must not be negative.")
    durations = ("misfire_grace", "jitter", "retry_base", "retry_cap", "max_runtime", "max_silence")
    for field in durations:
        value = getattr(schedule, field)
        if value is not None and value > MAX_DURATION:
            add(field, f"{field} must be at most {MAX_DURATION.days} days.")
    for field in (
        "max_attempts",
        "max_occurrences",
        "pause_after_failures",
        "notify_after_failures",
    ):
        value = getattr(schedule, field)
        if value is not None and value < 1:
            add(field, f"{field} must be at least 1.")


def _check_executor_and_payload(schedule: Schedule, add: AddError) -> None:
    payload_ok = True
    try:
        schedule.payload = payloads.validate_payload(schedule.payload)
    except CadenceError as exc:
        add("payload", str(exc))
        payload_ok = False
    if is_empty(schedule.executor):
        return  # the field's own blank validation reports it
    try:
        allow_list.check_allowed(schedule.executor)
        func = allow_list.resolve(schedule.executor)
    except CadenceError as exc:
        add("executor", str(exc))
        return
    if payload_ok:
        try:
            if schedule.executor == TASK_EXECUTOR:
                from ..tasks import check_payload

                check_payload(schedule.payload)  # the task's own arguments, too
            else:
                calling.check_call(func, schedule.payload)
        except CadenceError as exc:
            add("payload", str(exc))
