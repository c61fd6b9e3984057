"""``Calendar``: a named set of excluded (or, in ``only`` mode, included) days and spans.

Schedules name calendars in their ``calendars`` list. Rules are stored as JSON and read by
:mod:`django_cadence.schedule.calendars`; ``CADENCE_CALENDARS`` declares calendars in code
(docs/design.md, "Calendars").
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models

from ..exceptions import InvalidSpec
from ..schedule import calendars as rules_math
from ..schedule.specs import validate_timezone
from .choices import in_choices


class CalendarMode(models.TextChoices):
    EXCLUDE = "exclude", "exclude the listed days"
    ONLY = "only", "only on the listed days"


class Calendar(models.Model):
    name = models.CharField(max_length=200, unique=True)
    timezone = models.CharField(
        max_length=64,
        default="UTC",
        help_text="IANA zone in which freeze bounds without an offset are read. Days are "
        "matched in each schedule's own zone.",
    )
    mode = models.CharField(max_length=16, choices=CalendarMode.choices, default="exclude")
    base = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="extended_by",
        help_text="A calendar this one builds on: a day either excludes is excluded.",
    )
    rules = models.JSONField(
        default=dict,
        blank=True,
        help_text='{"dates": ["2026-12-25"], "yearly": ["12-25"], "weekdays": ["sat", "sun"], '
        '"date_ranges": [["2026-08-01", "2026-08-15"]], "freezes": [["2026-12-20T18:00", '
        '"2027-01-04T08:00"]]}',
    )
    description = models.TextField(blank=True)
    code_owned = models.BooleanField(
        default=False,
        editable=False,
        help_text="Declared in CADENCE_CALENDARS: cadence_sync owns its rules.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name",)
        constraints = (
            models.CheckConstraint(
                condition=in_choices("mode", CalendarMode), name="cadence_calendar_mode_valid"
            ),
        )

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Validate first: an invalid calendar (or a taken name) never reaches the table."""
        self.full_clean(validate_constraints=False)
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        """Refuse while a schedule names this calendar: it would silently stop excluding."""
        users = schedules_naming(self.name)
        if users:
            raise ValidationError(
                f"Calendar {self.name!r} is used by {', '.join(sorted(users))}: remove it "
                "from their calendars first."
            )
        return super().delete(*args, **kwargs)

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}
        try:
            validate_timezone(self.timezone)
        except InvalidSpec as exc:
            errors.setdefault("timezone", []).append(str(exc))
        else:
            try:
                self.own_rules()
            except InvalidSpec as exc:
                field, _, message = str(exc).partition(": ")
                key = "mode" if field == "mode" else "rules"
                errors.setdefault(key, []).append(message if key == "mode" else str(exc))
        chain = [self.name]
        base = self.base
        while base is not None:
            if base.pk == self.pk or base.name in chain:
                errors.setdefault("base", []).append(
                    f"circular bases {' -> '.join([*chain, base.name])}."
                )
                break
            chain.append(base.name)
            base = base.base
        if errors:
            raise ValidationError(errors)

    def own_rules(self) -> rules_math.CalendarRules:
        """This calendar's rules alone, without its base."""
        return rules_math.parse_rules(
            self.name, self.mode, self.rules, validate_timezone(self.timezone)
        )


def schedules_naming(name: str) -> list[str]:
    """The names of the schedules whose ``calendars`` list names ``name``."""
    from .schedule import Schedule

    rows = Schedule.objects.exclude(calendars=[]).values_list("name", "calendars")
    return [schedule for schedule, names in rows if name in (names or [])]
