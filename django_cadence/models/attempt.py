"""``Attempt``: one occurrence of a schedule, and the tries that run it.

One attempt per occurrence and trigger, and a running attempt always claimed, are database
constraints (invariants 1 and 3 of docs/design.md), whoever writes the row.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from django.db import models
from django.db.models import Q
from django.utils import timezone as django_timezone

from .choices import TERMINAL_STATUSES, Status, Trigger, in_choices
from .schedule import Schedule


class AttemptQuerySet(models.QuerySet["Attempt"]):
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
    history = models.JSONField(
        default=list, blank=True, help_text="One entry per try: worker, timing, error."
    )
    created_at = models.DateTimeField(default=django_timezone.now)

    objects = AttemptQuerySet.as_manager()

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
        return f"{self.schedule_id}@{self.occurrence_at.isoformat()} ({self.status})"


# --- Proxies for the admin -----------------------------------------------------------------
#
# Dead letters and retries get their own admin pages, and every admin action its own
# permission. The permissions live on proxies so that they are declared in ``Meta`` (created by
# Django's ``post_migrate`` like any other, tracked by ``makemigrations``) without touching the
# concrete models; ``user.has_perm("django_cadence.<codename>")`` does not care which model
# of the app declares a codename.


class DeadLetterManager(models.Manager.from_queryset(AttemptQuerySet)):  # type: ignore[misc]
    def get_queryset(self) -> AttemptQuerySet:
        return super().get_queryset().filter(status=Status.DEAD_LETTER)


class DeadLetter(Attempt):
    """Attempts that ran out of tries or failed for good: an operator retries or discards them."""

    objects: ClassVar[DeadLetterManager] = DeadLetterManager()

    class Meta:
        proxy = True
        verbose_name = "dead letter"
        default_permissions = ("view",)
        permissions = (
            ("retry_deadletter", "Can retry a dead letter"),
            ("discard_deadletter", "Can discard (delete) a dead letter"),
        )


class RetryManager(models.Manager.from_queryset(AttemptQuerySet)):  # type: ignore[misc]
    def get_queryset(self) -> AttemptQuerySet:
        return super().get_queryset().filter(status=Status.PENDING, tries__gte=1)


class Retry(Attempt):
    """Pending attempts that already failed at least once and wait for their next try."""

    objects: ClassVar[RetryManager] = RetryManager()

    class Meta:
        proxy = True
        verbose_name = "retry"
        verbose_name_plural = "retries"
        default_permissions = ("view",)
        permissions = (
            ("run_retry_now", "Can run a pending retry now"),
            ("cancel_attempt", "Can cancel a pending or running attempt"),
        )
