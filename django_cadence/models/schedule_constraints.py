"""The rules a schedule row keeps whoever writes it (the engine, the admin, a migration, raw
SQL): the fields each kind needs, positive durations, valid choices; ``Schedule.Meta``'s
constraints. Python validation (:mod:`.validation`) gives the friendly message; the database
is the last word.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import models
from django.db.models import F, Q

from .choices import Kind, Misfire, Overlap, Shift, in_choices

ZERO = timedelta(0)

SCHEDULE_CONSTRAINTS = (
    models.CheckConstraint(condition=in_choices("kind", Kind), name="cadence_schedule_kind_valid"),
    models.CheckConstraint(
        condition=in_choices("overlap", Overlap), name="cadence_schedule_overlap_valid"
    ),
    models.CheckConstraint(
        condition=in_choices("misfire", Misfire), name="cadence_schedule_misfire_valid"
    ),
    models.CheckConstraint(
        condition=in_choices("calendar_shift", Shift),
        name="cadence_schedule_calendar_shift_valid",
    ),
    models.CheckConstraint(
        condition=~Q(kind=Kind.CRON)
        | (~Q(cron="") & Q(interval__isnull=True, run_at__isnull=True)),
        name="cadence_schedule_cron_fields",
    ),
    models.CheckConstraint(
        condition=~Q(kind=Kind.INTERVAL)
        | Q(interval__isnull=False, interval__gt=ZERO, cron="", run_at__isnull=True),
        name="cadence_schedule_interval_fields",
    ),
    models.CheckConstraint(
        condition=~Q(kind=Kind.ONCE) | Q(run_at__isnull=False, cron="", interval__isnull=True),
        name="cadence_schedule_once_fields",
    ),
    models.CheckConstraint(condition=~Q(executor=""), name="cadence_schedule_executor_set"),
    models.CheckConstraint(
        condition=Q(misfire_grace__isnull=True) | Q(misfire_grace__gte=ZERO),
        name="cadence_schedule_misfire_grace_nonnegative",
    ),
    models.CheckConstraint(
        condition=Q(retry_base__isnull=True) | Q(retry_base__gt=ZERO),
        name="cadence_schedule_retry_base_positive",
    ),
    models.CheckConstraint(
        condition=Q(retry_cap__isnull=True) | Q(retry_cap__gt=ZERO),
        name="cadence_schedule_retry_cap_positive",
    ),
    models.CheckConstraint(
        condition=Q(max_runtime__isnull=True) | Q(max_runtime__gt=ZERO),
        name="cadence_schedule_max_runtime_positive",
    ),
    models.CheckConstraint(
        condition=Q(jitter__gte=ZERO), name="cadence_schedule_jitter_nonnegative"
    ),
    models.CheckConstraint(
        condition=Q(max_silence__isnull=True) | Q(max_silence__gt=ZERO),
        name="cadence_schedule_max_silence_positive",
    ),
    models.CheckConstraint(
        condition=Q(max_attempts__isnull=True) | Q(max_attempts__gte=1),
        name="cadence_schedule_max_attempts_min_1",
    ),
    models.CheckConstraint(
        condition=Q(max_occurrences__isnull=True) | Q(max_occurrences__gte=1),
        name="cadence_schedule_max_occurrences_min_1",
    ),
    models.CheckConstraint(
        condition=Q(pause_after_failures__isnull=True) | Q(pause_after_failures__gte=1),
        name="cadence_schedule_pause_after_min_1",
    ),
    models.CheckConstraint(
        condition=Q(notify_after_failures__isnull=True) | Q(notify_after_failures__gte=1),
        name="cadence_schedule_notify_after_min_1",
    ),
    models.CheckConstraint(
        condition=Q(start_at__isnull=True) | Q(end_at__isnull=True) | Q(end_at__gt=F("start_at")),
        name="cadence_schedule_end_after_start",
    ),
)
