"""``Attempt``: one occurrence of a schedule, and the tries that run it.

One attempt per occurrence and trigger, and a running attempt always claimed, are database
constraints (invariants 1 and 3 of docs/design.md), whoever writes the row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models, router, transaction
from django.db.models import Q
from django.utils import timezone as django_timezone

from ..schedule.describe import zone
from ..schedule.timefmt import format_instant
from . import identity
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

    def update(self, **kwargs: Any) -> int:
        """Update, refusing a change of identity (invariant 7) when ``kwargs`` name an identity
        field; ``bulk_update()`` comes here too. The check and the update share a transaction,
        and nothing is written when it refuses."""
        named = identity.identity_values(self.model, kwargs)
        if not named:
            return super().update(**kwargs)
        self._for_write = True
        with transaction.atomic(using=self.db, savepoint=False):
            changed = identity.changed_by_update(self, named)
            if changed is None:
                return super().update(**kwargs)
        raise identity.refused(self.model, changed)

    def bulk_update(self, objs: Any, fields: Any, batch_size: int | None = None) -> int:
        """Bulk update; each batch's ``update()`` checks the identity fields it names, then in a
        savepoint, so a refusal undoes the earlier batches and leaves the caller's transaction
        usable."""
        fields = list(fields)
        if not identity.identity_values(self.model, dict.fromkeys(fields)):
            return super().bulk_update(objs, fields, batch_size)
        self._for_write = True
        with transaction.atomic(using=self.db):
            return super().bulk_update(objs, fields, batch_size)


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
    _identity: tuple[Any, dict[str, Any]]  # the stored row's pk and identity, when known

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
        """Save, refusing a change of identity, whatever the instance (invariant 7)."""
        using = kwargs.get("using") or router.db_for_write(type(self), instance=self)
        if kwargs.get("update_fields") is not None:  # read twice: not a one-pass iterator
            kwargs["update_fields"] = frozenset(kwargs["update_fields"])
        force_insert = bool(kwargs.get("force_insert"))
        identity.check_save(self, using, kwargs.get("update_fields"), force_insert)
        super().save(*args, **kwargs)
        self._identity = identity.snapshot(self)

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any, **kwargs: Any) -> Attempt:
        # **kwargs: Django 6.1 passes fetch_mode; 5.2 passes nothing more.
        instance = super().from_db(db, field_names, values, **kwargs)
        instance._identity = identity.snapshot(instance)
        return instance
