"""The schedule form: the executor is picked from the allow-list, secrets stay hidden.

The executor is a choice, never free text: the registered jobs, the exact entries of
``CADENCE_EXECUTORS``, the callables each pattern allows in the module it names
(``executors/discovery.py``), and the schedule's current executor while it is still allowed. The
model's own validation (``clean_schedule``) runs on save and puts each problem on its field.
Stored payloads and metadata are shown redacted; saving the form without retyping a secret
keeps it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.html import format_html

from ..conf import cadence_settings
from ..executors import discovery
from ..executors.allow_list import is_allowed
from ..executors.redaction import REDACTED, redact
from ..executors.registry import registered_jobs
from ..models import Schedule
from ..models.schedule import default_timezone
from ..schedule import durations, instants
from ..schedule.describe import zone
from . import json_errors
from .display import visible

EDITABLE_FIELDS = (
    "name",
    "enabled",
    "executor",
    "payload",
    "metadata",
    "kind",
    "cron",
    "interval",
    "run_at",
    "timezone",
    "start_at",
    "end_at",
    "max_occurrences",
    "overlap",
    "misfire",
    "misfire_grace",
    "jitter",
    "pause_after_failures",
    "max_attempts",
    "retry_base",
    "retry_cap",
    "max_runtime",
    "max_silence",
    "notify",
    "notify_after_failures",
    "queue",
)


# JSON fields shown redacted; a secret left as ``********`` keeps its stored value on save.
SECRET_FIELDS = ("payload", "metadata")


def executor_choices(current: str = "") -> list[tuple[str, Any]]:
    """The executors an operator may pick: registered jobs, exact CADENCE_EXECUTORS entries
    that name a callable, what each pattern offers in the module it names, and the
    schedule's current executor if it is still allowed. Never a free-text path."""
    entries = cadence_settings.EXECUTORS
    registered = sorted(p for p in registered_jobs() if is_allowed(p))
    listed = sorted(
        p
        for p in entries
        if p not in registered and is_allowed(p) and discovery.exact_entry_runs(p)
    )
    groups = [("Registered with @job", registered), ("Listed in CADENCE_EXECUTORS", listed)]
    shown = {*registered, *listed}
    for pattern in filter(discovery.pattern_module, entries):
        offered = [p for p in discovery.offered_by(pattern) if p not in shown]
        groups.append((f"Allowed by CADENCE_EXECUTORS {pattern!r}", offered))
        shown.update(offered)
    if current and is_allowed(current) and current not in shown:
        groups.append(("Allowed by a CADENCE_EXECUTORS pattern", [current]))
    choices: list[tuple[str, Any]] = [("", "---------")]
    choices.extend((label, [(p, p) for p in paths]) for label, paths in groups if paths)
    return choices


def restore_secrets(new: Any, old: Any) -> Any:
    """``new`` with every still-redacted secret replaced by its stored value from ``old``.

    The form shows stored payloads redacted; an operator who saves without retyping a secret
    must not overwrite it with the redaction mark.
    """
    return _restore(new, old, redact(old))


def _restore(new: Any, old: Any, hidden: Any) -> Any:
    """Walk ``new`` beside the stored value ``old`` and its redacted form ``hidden``."""
    if isinstance(new, dict) and isinstance(old, dict) and isinstance(hidden, dict):
        restored = {}
        for key, value in new.items():
            if key not in old:
                restored[key] = value
            elif value == REDACTED and hidden[key] == REDACTED:
                restored[key] = old[key]
            else:
                restored[key] = _restore(value, old[key], hidden[key])
        return restored
    if isinstance(new, list) and isinstance(old, list | tuple) and isinstance(hidden, list | tuple):
        restored_items = [_restore(n, o, h) for n, o, h in zip(new, old, hidden, strict=False)]
        return restored_items + new[len(restored_items) :]
    return new


class PayloadField(forms.JSONField):
    """Django's JSON form field, saying where the JSON is wrong and what was expected there
    (``json_errors``) instead of "Enter a valid JSON."; and refusing what ``json.loads``
    fails on other than by a syntax error: nesting deeper than the recursion limit
    (``RecursionError``) or an integer of more than 4,300 digits (``ValueError``), which
    Django does not catch.
    """

    def to_python(self, value: Any) -> Any:
        typed = isinstance(value, str) and not isinstance(value, forms.fields.JSONString)
        if self.disabled or value in self.empty_values or not typed:
            return super().to_python(value)
        try:
            converted = json.loads(value, cls=self.decoder)
        except json.JSONDecodeError as exc:
            raise ValidationError(json_errors.describe(exc), code="invalid") from None
        except RecursionError:
            raise ValidationError(json_errors.NESTED_TOO_DEEPLY, code="invalid") from None
        except ValueError:  # an integer of more digits than int() reads
            raise ValidationError(json_errors.NUMBER_TOO_LONG, code="invalid") from None
        return forms.fields.JSONString(converted) if isinstance(converted, str) else converted

    def prepare_value(self, value: Any) -> Any:
        """The JSON text, a lone surrogate written as its ``\\u`` escape (same value, and a
        page that can be encoded)."""
        text = super().prepare_value(value)
        return text if isinstance(text, forms.fields.InvalidJSONInput) else visible(text)

    def bound_data(self, data: Any, initial: Any) -> Any:
        try:
            return super().bound_data(data, initial)
        except (RecursionError, ValueError):
            return forms.fields.InvalidJSONInput(data)


class DurationField(forms.DurationField):
    """A duration as people type it (``5 minutes``, ``1h 30m``, ``0:05:00``): one error, saying
    what is accepted, for anything else (:mod:`django_cadence.schedule.durations`)."""

    def to_python(self, value: Any) -> timedelta | None:
        if value in self.empty_values:
            return None
        try:
            return durations.parse(value)
        except durations.DurationError as exc:
            text = str(exc)
            text = f"This field {text}" if text.startswith("must") else text
            raise ValidationError(text, code="invalid") from None


# Instants typed as wall time in the schedule's own zone (the "timezone" field), not TIME_ZONE.
ZONED_FIELDS = ("run_at", "start_at", "end_at")
ZONED_HELP = "Wall time in the schedule's time zone (the time zone field), to the second."


OUT_OF_RANGE = f"This wall time is outside {instants.RANGE} once converted to UTC."


def in_zone(value: datetime | None, tz_name: str | None) -> datetime | None:
    """The wall time a form field read in Django's current zone, taken in ``tz_name`` instead.

    Raises ``OverflowError`` for a wall time whose UTC instant is not a ``datetime`` (the last
    hours of year 9999 west of Greenwich, the first of year 1 east of it).
    """
    if value is None:
        return None
    wall = timezone.make_naive(value) if timezone.is_aware(value) else value
    zoned = wall.replace(tzinfo=zone(tz_name))
    zoned.astimezone(UTC)
    return zoned


def zoned_fields(cleaned: dict[str, Any]) -> None:
    """Re-read ``run_at``, ``start_at`` and ``end_at`` in the cleaned ``timezone``, in place;
    a ``ValidationError`` on each field whose instant is out of range."""
    errors = {}
    for name in ZONED_FIELDS:
        if cleaned.get(name) is not None:
            try:
                cleaned[name] = in_zone(cleaned[name], cleaned.get("timezone"))
            except OverflowError:
                errors[name] = ValidationError(OUT_OF_RANGE, code="out_of_range")
    if errors:
        raise ValidationError(errors)


class ScheduleForm(forms.ModelForm):
    executor = forms.ChoiceField(
        choices=(),
        help_text=(
            "A job registered with @job, listed in CADENCE_EXECUTORS, or defined in a module a "
            "CADENCE_EXECUTORS pattern names; nothing else runs."
        ),
    )

    class Meta:
        model = Schedule
        fields = EDITABLE_FIELDS
        field_classes = {"payload": PayloadField, "metadata": PayloadField}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        stored = self.instance.executor if self.instance.pk else ""
        if "executor" in self.fields:
            self.fields["executor"].choices = executor_choices(stored)  # type: ignore[attr-defined]
            if stored and not is_allowed(stored):
                # Admin templates render help_text unescaped: format_html escapes the path.
                self.fields["executor"].help_text = format_html(
                    "The stored executor <code>{}</code> is not allowed any more; choose another.",
                    stored,
                )
        for name in SECRET_FIELDS:
            if self.instance.pk and name in self.fields:
                self.initial[name] = redact(getattr(self.instance, name))
        tz = zone(self.instance.timezone or default_timezone())
        for name in ZONED_FIELDS:
            if name not in self.fields:
                continue
            self.fields[name].help_text = ZONED_HELP
            value = getattr(self.instance, name) if self.instance.pk else None
            if value is not None:
                self.initial[name] = value.astimezone(tz).replace(tzinfo=None)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        zoned_fields(cleaned)
        return cleaned

    def _update_errors(self, errors: ValidationError) -> None:
        """The model's checks, less those on a field whose input was already refused: a
        duration typed wrong shows one error (what is accepted), not also "needs a value"."""
        refused = self._errors or {}  # type: ignore[attr-defined]
        if hasattr(errors, "error_dict"):
            errors.error_dict = {
                field: messages
                for field, messages in errors.error_dict.items()
                if field not in refused
            }
        super()._update_errors(errors)  # type: ignore[misc]

    def clean_payload(self) -> Any:
        return self._restored("payload")

    def clean_metadata(self) -> Any:
        return self._restored("metadata")

    def _restored(self, name: str) -> Any:
        value = self.cleaned_data.get(name)
        if self.instance.pk:
            return restore_secrets(value, getattr(self.instance, name))
        return value
