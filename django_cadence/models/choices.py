"""The words of the state machine and of the policies, as Django choices (docs/design.md)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class Kind(models.TextChoices):
    CRON = "cron", "cron"
    INTERVAL = "interval", "interval"
    ONCE = "once", "once"


class Overlap(models.TextChoices):
    ALLOW = "allow", "allow"
    SKIP_IF_RUNNING = "skip_if_running", "skip if running"
    QUEUE = "queue", "queue"
    BUFFER_ONE = "buffer_one", "buffer one"
    REPLACE = "replace", "replace"


class Misfire(models.TextChoices):
    SKIP = "skip", "skip"
    FIRE_ONCE = "fire_once", "fire once"
    FIRE_ALL = "fire_all", "fire all"


class Shift(models.TextChoices):
    SKIP = "skip", "skip"
    PREVIOUS = "previous", "previous included day"
    NEXT = "next", "next included day"


class Trigger(models.TextChoices):
    SCHEDULE = "schedule", "schedule"
    MANUAL = "manual", "manual"


class Status(models.TextChoices):
    PENDING = "pending", "pending"
    RUNNING = "running", "running"
    SUCCEEDED = "succeeded", "succeeded"
    SKIPPED = "skipped", "skipped"
    MISSED = "missed", "missed"
    DEAD_LETTER = "dead_letter", "dead letter"
    CANCELLED = "cancelled", "cancelled"


TERMINAL_STATUSES = (
    Status.SUCCEEDED,
    Status.SKIPPED,
    Status.MISSED,
    Status.DEAD_LETTER,
    Status.CANCELLED,
)


def in_choices(field: str, choices: type[models.TextChoices]) -> Q:
    """A check constraint: ``field`` holds one of ``choices`` whoever writes the row."""
    return Q(**{f"{field}__in": choices.values})
