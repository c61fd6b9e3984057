"""``Schedule``: a rule producing instants, with its policies.

The rules that must hold whoever writes a row live in ``Meta.constraints``
(:mod:`.schedule_constraints`), not only in Python; Python validation (:mod:`.validation`)
gives the friendly message.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone as django_timezone

from ..schedule import specs
from ..schedule.queues import DEFAULT_QUEUE, MAX_QUEUE_NAME
from . import calendar_sets
from .choices import Kind, Misfire, Overlap, Shift
from .kinds import inferred_kind
from .schedule_constraints import SCHEDULE_CONSTRAINTS, ZERO
from .validation import clean_schedule, read_values


def default_timezone() -> str:
    """The project's ``TIME_ZONE``: cron fields are read there unless a schedule says otherwise."""
    return settings.TIME_ZONE or "UTC"


class ScheduleQuerySet(models.QuerySet["Schedule"]):
    def enabled(self) -> ScheduleQuerySet:
        """Schedules that may fire.

        ``enabled__in``, not ``enabled=True``: Django writes the latter as a bare boolean
        column (``WHERE "enabled" AND ...``), for which SQLite does not use the due index
        (enabled, next_run_at) and scans every schedule on every tick that plans.
        """
        return self.filter(enabled__in=(True,))

    def due(self, now: datetime) -> ScheduleQuerySet:
        """Enabled schedules whose next occurrence is at or before ``now``."""
        return self.enabled().filter(next_run_at__lte=now)


class Schedule(models.Model):
    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.CRON)
    cron = models.CharField(
        max_length=200, blank=True, help_text="Five cron fields or a macro such as @daily."
    )
    interval = models.DurationField(
        null=True, blank=True, help_text="Fixed rate, e.g. 00:05:00 for every five minutes."
    )
    run_at = models.DateTimeField(null=True, blank=True, help_text="The instant a one-shot runs.")
    timezone = models.CharField(
        max_length=64,
        default=default_timezone,
        help_text="IANA time zone in which cron fields are read.",
    )
    executor = models.CharField(max_length=255, help_text="Dotted path of an allowed callable.")
    payload = models.JSONField(
        default=dict, blank=True, help_text="JSON object passed as keyword arguments."
    )
    metadata = models.JSONField(
        default=dict,
        blank=True,
        help_text=(
            'Free labels for people, never read by the engine: a JSON object such as {"team": '
            '"billing", "owner": "ana", "runbook": "https://..."}.'
        ),
    )
    enabled = models.BooleanField(default=True)
    queue = models.CharField(
        max_length=MAX_QUEUE_NAME,
        default=DEFAULT_QUEUE,
        db_default=DEFAULT_QUEUE,  # a process from before this column inserts schedules without it
        help_text="The queue its attempts wait in: only workers serving it run them "
        "(run_cadence --queues). Changing it moves its waiting attempts too.",
    )
    overlap = models.CharField(
        max_length=16, choices=Overlap.choices, default=Overlap.SKIP_IF_RUNNING
    )
    misfire = models.CharField(max_length=16, choices=Misfire.choices, default=Misfire.FIRE_ONCE)
    misfire_grace = models.DurationField(
        null=True, blank=True, help_text="Empty: CADENCE_MISFIRE_GRACE."
    )
    max_attempts = models.PositiveIntegerField(
        null=True, blank=True, help_text="Empty: the job's or CADENCE_MAX_ATTEMPTS."
    )
    retry_base = models.DurationField(
        null=True, blank=True, help_text="Empty: the job's or CADENCE_RETRY_BASE."
    )
    retry_cap = models.DurationField(
        null=True, blank=True, help_text="Empty: the job's or CADENCE_RETRY_CAP."
    )
    max_runtime = models.DurationField(
        null=True, blank=True, help_text="Empty: the job's or CADENCE_MAX_RUNTIME."
    )
    jitter = models.DurationField(
        default=ZERO, blank=True, help_text="Each occurrence starts up to this much later."
    )
    max_silence = models.DurationField(
        null=True,
        blank=True,
        help_text="How long it may go without a success before it is overdue. Empty: two "
        "periods of its rule plus its retries.",
    )
    calendars = models.JSONField(
        default=list,
        # A process from before this column inserts schedules without it.
        db_default=models.Value([], output_field=models.JSONField()),
        blank=True,
        help_text='Names of calendars whose excluded days it does not run on: ["uk-holidays"].',
    )
    calendar_shift = models.CharField(
        max_length=16,
        choices=Shift.choices,
        default=Shift.SKIP,
        db_default=Shift.SKIP,
        blank=True,  # left empty (a form from before calendars): skip
        help_text="An occurrence on an excluded day is skipped, or moved to the previous or "
        "next included day at the same local time.",
    )
    start_at = models.DateTimeField(null=True, blank=True)
    end_at = models.DateTimeField(null=True, blank=True)
    max_occurrences = models.PositiveIntegerField(null=True, blank=True)
    pause_after_failures = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Disable the schedule after this many occurrences in a row end dead-lettered.",
    )
    notify = models.CharField(
        max_length=200,
        blank=True,
        default="",
        db_default="",  # a process from before this column inserts schedules without it
        help_text="Who is told when it breaks (CADENCE_NOTIFY): empty for every channel that "
        "takes it, off for none, or channel names separated by commas.",
    )
    notify_after_failures = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Tell after this many failed tries in a row. Empty: CADENCE_NOTIFY's "
        '"failures" (3).',
    )

    # Kept by the engine.
    next_run_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_run_at = models.DateTimeField(null=True, blank=True, editable=False)
    occurrence_count = models.PositiveIntegerField(default=0, editable=False)
    missed_count = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(default=django_timezone.now, editable=False)
    enabled_at = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        help_text="When the schedule was last enabled; nothing before it is caught up.",
    )
    pause_reason = models.TextField(blank=True, editable=False)
    overdue_signalled_at = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        help_text="When the overdue spell last signalled (schedule_overdue) began.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    # Schedules as code (reconcile.py).
    code_owned = models.BooleanField(
        default=False,
        editable=False,
        help_text="Declared in code (CADENCE_SCHEDULES or @job(schedule=...)): cadence_sync owns "
        "its spec, executor, payload and policies; pausing it stays the operator's choice.",
    )
    removed_from_code_at = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        help_text="When cadence_sync disabled it for no longer being declared in code.",
    )

    objects = ScheduleQuerySet.as_manager()
    # enabled as loaded from the database (None: deferred), to see a schedule being enabled
    _loaded_enabled: bool | None
    # The kind as inferred by __init__; None once given (a row, a form, kind=...).
    _implied_kind: str | None
    # True when __init__ was given no queue: the job's queue may still apply.
    _implied_queue: bool

    class Meta:
        ordering = ("name",)
        indexes = (
            # The planner's query: enabled schedules by next_run_at. A plain composite index
            # (no partial index) so MariaDB serves it the same way.
            models.Index(fields=("enabled", "next_run_at"), name="cadence_schedule_due_idx"),
        )
        constraints = SCHEDULE_CONSTRAINTS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """``Schedule(interval=...)`` without a kind is an interval schedule (and so on for
        ``cron`` and ``run_at``), as in ``CADENCE_SCHEDULES``; a kind given is kept. Without
        a kind, validation infers it again from the spec fields set by then, and says so when
        none or several are (``kinds.imply_kind``)."""
        implied = not args and bool(kwargs) and "kind" not in kwargs
        if implied:
            kind = inferred_kind(kwargs)
            if kind is not None:
                kwargs["kind"] = kind
        super().__init__(*args, **kwargs)
        self._implied_kind = self.kind if implied else None
        # No queue given: the job's (``@job(queue=...)``), else "default" (``validation``).
        self._implied_queue = not args and "queue" not in kwargs

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Validate, and keep ``next_run_at`` true to the spec, however the schedule is saved.

        ``objects.create()`` and ``save()`` refuse an invalid spec with the same per-field
        ``ValidationError`` as ``full_clean()``, so nothing invalid reaches the table.
        """
        clean_schedule(self)
        if kwargs.get("update_fields") is None or "name" in kwargs["update_fields"]:
            # A taken name: the admin form's message, not an IntegrityError.
            self.validate_unique(exclude=[f.name for f in self._meta.fields if f.name != "name"])
        if self.created_at is None:  # created with created_at=None
            self.created_at = django_timezone.now()  # type: ignore[unreachable]
        if self.enabled and (
            self.enabled_at is None or getattr(self, "_loaded_enabled", True) is False
        ):
            self.enabled_at = django_timezone.now() if self.pk else self.created_at
        self.next_run_at = self.compute_next_run_at()
        update_fields = kwargs.get("update_fields")
        if update_fields is not None:
            kwargs["update_fields"] = {*update_fields, "next_run_at", "enabled_at"}
        super().save(*args, **kwargs)
        self._loaded_enabled = self.enabled

    def clean_fields(self, exclude: Any = None) -> None:
        """Django's checks of each field, once the values the model takes beyond Django's
        own (durations as seconds or words, ``validation.read_values``) are read; a value
        that cannot be read is left to :meth:`clean`, which names what is accepted."""
        unread = read_values(self)
        super().clean_fields(exclude={*(exclude or ()), *unread})

    def clean(self) -> None:
        clean_schedule(self)

    # --- schedule math -------------------------------------------------------------------

    def spec(self, *, anchor: datetime | None = None, strict: bool = False) -> specs.Spec:
        """The pure description of this schedule's instants, for the schedule math;
        ``strict``: an unknown or circular calendar raises ``InvalidSpec``."""
        names = self.calendars if isinstance(self.calendars, list) else []
        return specs.Spec(
            kind=self.kind,
            cron=self.cron or "",
            interval=self.interval,
            run_at=self.run_at,
            timezone=self.timezone or default_timezone(),
            start_at=self.start_at,
            end_at=self.end_at,
            max_occurrences=self.max_occurrences,
            occurrence_count=self.occurrence_count,
            anchor=anchor or self.created_at,
            calendars=calendar_sets.calendar_set(names, strict=strict),
            shift=self.calendar_shift or Shift.SKIP,
        )

    def upcoming(self, count: int, after: datetime | None = None) -> list[datetime]:
        """The next ``count`` occurrence instants (aware, UTC) strictly after ``after``.

        Works on unsaved schedules too, which is what a form preview needs: an unsaved
        interval schedule without ``start_at`` is anchored at ``after``.
        """
        after = after or django_timezone.now()
        anchor = after if self._state.adding else None
        return specs.upcoming(self.spec(anchor=anchor), count, after)

    def compute_next_run_at(self) -> datetime | None:
        """The first occurrence not yet planned, or ``None`` when the schedule is finished.

        It continues from the last planned occurrence, so editing an unrelated field never
        skips or repeats a slot; but never from before the schedule was created or last
        enabled, so nothing from those times is caught up. A one-shot is the exception: its
        ``run_at`` is an explicit request, honoured (through the misfire policy) even when it
        is already past at creation.
        """
        if self.kind == Kind.ONCE and self.last_run_at is None and self.run_at is not None:
            after = self.run_at - timedelta(microseconds=1)
        else:
            since = self.enabled_at or self.created_at
            after = max(self.last_run_at, since) if self.last_run_at else since
        return specs.next_occurrence(self.spec(), after)

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any, **kwargs: Any) -> Schedule:
        # **kwargs: Django 6.1 passes fetch_mode; 5.2 passes nothing more.
        instance = super().from_db(db, field_names, values, **kwargs)
        instance._loaded_enabled = instance.__dict__.get("enabled")  # None: deferred
        return instance

    @property
    def is_finished(self) -> bool:
        """True once the schedule can produce no more occurrences (a fired one-shot, bounds)."""
        return self.next_run_at is None
