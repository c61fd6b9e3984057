"""The worker registry and the named lock rows of fleet-wide operations."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import models

from ..conf import cadence_settings


def worker_timeout() -> timedelta:
    """A worker silent for this long is lost: three of its longest sleeps or lease renewals."""
    return 3 * max(cadence_settings.LEASE, cadence_settings.MAX_TICK)


class WorkerQuerySet(models.QuerySet["Worker"]):
    def live(self, now: datetime, timeout: timedelta) -> WorkerQuerySet:
        """Workers that renewed their heartbeat within ``timeout`` and did not stop."""
        return self.filter(stopped_at__isnull=True, heartbeat_at__gte=now - timeout)

    def lost(self, now: datetime, timeout: timedelta) -> WorkerQuerySet:
        """Workers that went silent without stopping: killed, frozen or cut off."""
        return self.filter(stopped_at__isnull=True, heartbeat_at__lt=now - timeout)


class Worker(models.Model):
    """One ``run_cadence`` process, registered at start and renewed with its heartbeat."""

    worker_id = models.CharField(max_length=200, unique=True)
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    heartbeat_at = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)
    in_flight = models.PositiveIntegerField(default=0)
    concurrency = models.PositiveIntegerField(default=1)
    stuck_threads = models.PositiveIntegerField(
        default=0,
        help_text="Threads whose try passed its run-time limit and whose job never returned.",
    )
    stuck_since = models.DateTimeField(
        null=True, blank=True, help_text="When the oldest of its stuck threads timed out."
    )
    queues = models.CharField(
        max_length=1000,
        blank=True,
        default="",
        db_default="",  # a process from before this column registers without it
        help_text="The queues it serves, with their thread shares (reports:2,default); "
        "empty: every queue.",
    )
    session_lock = models.BooleanField(
        default=False,
        help_text="Holds a session lock named after it: the server tells when it is gone.",
    )

    objects = WorkerQuerySet.as_manager()

    class Meta:
        ordering = ("-heartbeat_at",)
        indexes = (models.Index(fields=("heartbeat_at",), name="cadence_worker_heartbeat_idx"),)

    def __str__(self) -> str:
        return self.worker_id


class Lock(models.Model):
    """A named row that serialises rare fleet-wide operations, such as reconciling schedules.

    Holding the lock means having updated its row in the current transaction: an ``UPDATE``
    takes a row lock on PostgreSQL and MariaDB (and the write lock on SQLite), so the same
    code serialises every backend, and the database releases it at commit, rollback or when
    the holder's connection dies.
    """

    name = models.CharField(max_length=64, unique=True)
    holder = models.CharField(max_length=200, blank=True)
    acquired_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name
