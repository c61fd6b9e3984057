"""``Attempt``: one occurrence of a schedule, and the tries that run it.

One attempt per occurrence and trigger, and a running attempt always claimed, are database
constraints (invariants 1 and 3 of docs/design.md), whoever writes the row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone as django_timezone

from ..schedule.describe import zone
from ..schedule.timefmt import format_instant
from .choices import TERMINAL_STATUSES, Status, Trigger, in_choices
from .schedule import Schedule
from .transitions import AttemptTransitions


class AttemptQuerySet(AttemptTransitions):
    def pending(self) -> AttemptQuerySet:
        return self.filter(status=Status.PENDING)

    def ready(self, now: datetime) -> AttemptQuerySet:
        """Pending attempts whose start time (first try or retry) has come."""
        return self.filter(status=Status.PENDING, retry_at__lte=now)

    def running(self) -> AttemptQuerySet:
        return self.filter(status=Status.RUNNING)

    def expired(self, now: datetime) -> AttemptQuerySet:
        """Running attempts whose lease ran out: their worker is presumed lost."""
        return self.filter(status=Status.RUNNING, lease_until__lt=now)

    def dead_letters(self) -> AttemptQuerySet:
        return self.filter(status=Status.DEAD_LETTER)

    def finished(self) -> AttemptQuerySet:
        return self.filter(status__in=TERMINAL_STATUSES)


class Attempt(models.Model):
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="attempts")
    occurrence_at = models.DateTimeField()
    trigger = models.CharField(max_length=16, choices=Trigger.choices, default=Trigger.SCHEDULE)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    tries = models.PositiveIntegerField(default=0)
    retry_at = models.DateTimeField(
        null=True, blank=True, help_text="When a pending attempt may next be tried."
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    outcome = models.JSONField(null=True, blank=True)
    # NULL, not "", when unclaimed: a fenced write "WHERE claim_token = %s" never matches it.
    claim_token = models.CharField(max_length=32, null=True, blank=True)  # noqa: DJ001
    lease_until = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    recoveries = models.PositiveIntegerField(
        default=0, help_text="Times this attempt was recovered from a lost worker."
    )
    cancel_requested = models.BooleanField(
        default=False, help_text="Set to ask the running try to stop (replace overlap, cancel)."
    )
    even_if_paused = models.BooleanField(
        default=False,
        help_text="A manual run asked for while its schedule was paused: it runs (with its "
        "retries) though the schedule stays paused.",
    )
    uncertain = models.TextField(
        blank=True,
        default="",
        db_default="",  # the engine's batch inserts name their columns and leave it out
        help_text="Why the running try marked itself uncertain (a step that must not repeat); "
        "a lost worker's attempt so marked is dead-lettered, not re-run.",
    )
    history = models.JSONField(
        default=list, blank=True, help_text="One entry per try: worker, timing, error."
    )
    created_at = models.DateTimeField(default=django_timezone.now)

    objects = AttemptQuerySet.as_manager()
    _identity: dict[str, Any]

    class Meta:
        ordering = ("-occurrence_at", "-id")
        indexes = (
            models.Index(fields=("status", "retry_at"), name="cadence_attempt_ready_idx"),
            models.Index(fields=("status", "lease_until"), name="cadence_attempt_lease_idx"),
            models.Index(
                fields=("schedule", "status", "occurrence_at"),
                name="cadence_attempt_sched_idx",
            ),
            # The attempts changelist's default order (newest first) on millions of rows.
            models.Index(fields=("occurrence_at",), name="cadence_attempt_occurrence_idx"),
            # The same order within one status (dead letters, the status filter), and the
            # first and last occurrence of a status for the admin's date hierarchy.
            models.Index(fields=("status", "occurrence_at"), name="cadence_attempt_status_idx"),
        )
        constraints = (
            models.UniqueConstraint(
                fields=("schedule", "occurrence_at", "trigger"),
                name="cadence_attempt_one_per_occurrence",
            ),
            models.CheckConstraint(
                condition=in_choices("status", Status), name="cadence_attempt_status_valid"
            ),
            models.CheckConstraint(
                condition=in_choices("trigger", Trigger), name="cadence_attempt_trigger_valid"
            ),
            models.CheckConstraint(
                condition=~Q(status=Status.RUNNING)
                | Q(claim_token__isnull=False, lease_until__isnull=False),
                name="cadence_attempt_running_is_claimed",
            ),
            models.CheckConstraint(
                condition=~Q(status=Status.PENDING) | Q(retry_at__isnull=False),
                name="cadence_attempt_pending_has_retry_at",
            ),
        )

    def __str__(self) -> str:
        """``nightly · 2026-12-05 02:30:00 EST · dead letter``: the schedule's wall time."""
        schedule = self.schedule
        when = format_instant(self.occurrence_at, zone(schedule.timezone))
        return f"{schedule.name} · {when} · {self.get_status_display()}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save, refusing a change of identity with a message per field (invariant 7; the
        database refuses the paths this cannot see)."""
        loaded = getattr(self, "_identity", None) or {}
        changed = [
            f for f, value in loaded.items() if value is not None and getattr(self, f) != value
        ]
        if changed:
            raise ValidationError(
                {
                    f.removesuffix("_id"): "An attempt's schedule, occurrence and trigger are "
                    "its identity; they cannot change once it is written."
                    for f in changed
                }
            )
        super().save(*args, **kwargs)
        self._identity = {f: self.__dict__.get(f) for f in IDENTITY}

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any, **kwargs: Any) -> Attempt:
        # **kwargs: Django 6.1 passes fetch_mode; 5.2 passes nothing more.
        instance = super().from_db(db, field_names, values, **kwargs)
        instance._identity = {f: instance.__dict__.get(f) for f in IDENTITY}  # None: deferred
        return instance


# The fields that say which occurrence an attempt is (its unique constraint); fixed once written.
IDENTITY = ("schedule_id", "occurrence_at", "trigger")
