"""Proxies for the admin: dead letters and retries get pages of their own, the overview a
row in the app list, and every admin action its own permission.

The permissions live on proxies so that they are declared in ``Meta`` (created by Django's
``post_migrate`` like any other, tracked by ``makemigrations``) without touching the concrete
models; ``user.has_perm("django_cadence.<codename>")`` does not care which model of the app
declares a codename.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from .attempt import Attempt, AttemptQuerySet
from .choices import Status
from .schedule import Schedule


class ScheduleOperation(Schedule):
    """Holds the permissions of the schedule actions; it has no admin page of its own."""

    class Meta:
        proxy = True
        verbose_name = "schedule operation"
        default_permissions = ()
        permissions = (
            ("run_schedule", "Can run a schedule now (through its overlap policy)"),
            ("force_run_schedule", "Can run a schedule now, bypassing its overlap policy"),
            ("pause_schedule", "Can pause a schedule"),
            ("resume_schedule", "Can resume a schedule"),
        )


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


class Overview(Attempt):
    """The admin's overview page (charts of the last 24 h, the next 24 h, workers, dead
    letters): a row of the app list with no records of its own, seen by whoever may view
    attempts."""

    class Meta:
        proxy = True
        verbose_name = "overview"
        verbose_name_plural = "overview"
        default_permissions = ()
