"""``Notice`` (one episode of something that broke) and ``Delivery`` (one message of it, for
one channel): the durable record behind ``CADENCE_NOTIFY`` (docs/design.md, "Notifications").

An episode opens once and resolves once, whoever sees it: at most one notice per (event,
subject) is open, by a unique constraint on ``(event, subject, is_open)`` where ``is_open`` is
true while open and NULL once resolved (NULLs never collide, on every database, and MariaDB
has no partial index). The writer whose insert (or whose resolving update) changed a row
writes that state's deliveries in the same transaction; every other writer counts. Each
delivery is unique per (notice, state, channel): a message is recorded once and sent until
it is sent or its tries run out.
"""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.db.models import Q

from .choices import in_choices
from .schedule import Schedule


class Event(models.TextChoices):
    DEAD_LETTER = "dead_letter", "dead letter"
    FAILING = "failing", "failing"
    OVERDUE = "overdue", "overdue"
    PAUSED = "paused", "auto-paused"
    NO_WORKER = "no_worker", "no live worker"
    WORKER_UNHEALTHY = "worker_unhealthy", "worker exited unhealthy"
    UNSERVED_QUEUE = "unserved_queue", "queue no worker serves"


class NoticeState(models.TextChoices):
    OPEN = "open", "open"
    RESOLVED = "resolved", "resolved"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "pending"  # waits for its next_try_at
    SENDING = "sending", "sending"  # claimed by a worker until claim_until
    SENT = "sent", "sent"
    FAILED = "failed", "failed"  # its tries ran out


SCHEDULE_EVENTS = (Event.DEAD_LETTER, Event.FAILING, Event.OVERDUE, Event.PAUSED)


class NoticeQuerySet(models.QuerySet["Notice"]):
    def open(self) -> NoticeQuerySet:
        return self.filter(is_open=True)

    def of_schedule(self, schedule_id: int) -> NoticeQuerySet:
        return self.filter(subject=schedule_subject(schedule_id))


class Notice(models.Model):
    """One episode: opened by the first sighting of ``event`` on ``subject``, counted by the
    next ones, resolved once it clears."""

    event = models.CharField(max_length=32, choices=Event.choices)
    subject = models.CharField(
        max_length=255, help_text="What the episode is about: schedule:<id>, host:<name>, fleet."
    )
    schedule = models.ForeignKey(
        Schedule, null=True, blank=True, on_delete=models.SET_NULL, related_name="notices"
    )
    name = models.CharField(max_length=255, help_text="The schedule's name, or the host's.")
    is_open = models.BooleanField(null=True, default=True, help_text="True while open.")
    opened_at = models.DateTimeField()
    last_seen_at = models.DateTimeField(help_text="The latest sighting of the event.")
    resolved_at = models.DateTimeField(null=True, blank=True)
    count = models.PositiveIntegerField(default=1, help_text="Sightings in this episode.")
    detail = models.TextField(blank=True, help_text="The latest redacted error or reason.")
    attempt_id = models.BigIntegerField(null=True, blank=True)
    resolution = models.CharField(max_length=255, blank=True)

    objects = NoticeQuerySet.as_manager()

    class Meta:
        ordering = ("-opened_at",)
        permissions = (("send_test_notification", "Can send a test notification"),)
        constraints = (
            models.UniqueConstraint(
                fields=("event", "subject", "is_open"), name="cadence_notice_one_open"
            ),
            models.CheckConstraint(
                condition=Q(is_open__isnull=True) | Q(is_open=True),
                name="cadence_notice_open_true_or_null",
            ),
            models.CheckConstraint(
                condition=in_choices("event", Event), name="cadence_notice_event_valid"
            ),
        )
        indexes = (models.Index(fields=("is_open", "event"), name="cadence_notice_open_idx"),)

    def __str__(self) -> str:
        state = "open" if self.is_open else "resolved"
        return f"{self.get_event_display()} {self.name} ({state})"

    @property
    def state(self) -> str:
        return NoticeState.OPEN if self.is_open else NoticeState.RESOLVED


def schedule_subject(schedule_id: int) -> str:
    return f"schedule:{schedule_id}"


class DeliveryQuerySet(models.QuerySet["Delivery"]):
    def due(self, now: datetime) -> DeliveryQuerySet:
        """Waiting for a try by ``now``, or claimed by a sender that let its claim lapse."""
        return self.filter(
            Q(status=DeliveryStatus.PENDING, next_try_at__lte=now)
            | Q(status=DeliveryStatus.SENDING, next_try_at__lte=now, claim_until__lt=now)
        )


class Delivery(models.Model):
    """One message (an episode's opening or resolution) for one channel: the outbox row a
    worker's sender claims, sends and records."""

    notice = models.ForeignKey(Notice, on_delete=models.CASCADE, related_name="deliveries")
    state = models.CharField(max_length=16, choices=NoticeState.choices)
    channel = models.CharField(max_length=100)
    body = models.JSONField(help_text="The message as every channel receives it.")
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    created_at = models.DateTimeField()
    next_try_at = models.DateTimeField()
    tries = models.PositiveIntegerField(default=0)
    failures = models.PositiveIntegerField(default=0)
    claim_token = models.CharField(max_length=64, blank=True)
    claim_until = models.DateTimeField(null=True, blank=True)
    sender = models.CharField(max_length=200, blank=True, help_text="The worker that sent it.")
    sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    objects = DeliveryQuerySet.as_manager()

    class Meta:
        ordering = ("-created_at", "-id")
        verbose_name_plural = "deliveries"
        constraints = (
            models.UniqueConstraint(
                fields=("notice", "state", "channel"), name="cadence_delivery_once"
            ),
            models.CheckConstraint(
                condition=in_choices("state", NoticeState), name="cadence_delivery_state_valid"
            ),
            models.CheckConstraint(
                condition=in_choices("status", DeliveryStatus),
                name="cadence_delivery_status_valid",
            ),
        )
        indexes = (models.Index(fields=("status", "next_try_at"), name="cadence_delivery_due_idx"),)

    def __str__(self) -> str:
        return f"{self.channel}: {self.notice} {self.state} ({self.status})"
