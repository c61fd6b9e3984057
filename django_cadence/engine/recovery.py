"""Running attempts whose worker was lost: any worker hands them back or dead-letters them.

A lease that expired more than ``CADENCE_RECOVERY_GRACE`` ago means its worker stopped
renewing (killed, frozen, cut off). Clearing the claim token in the same write fences the old
worker out, should it come back. ``at_most_once`` jobs are never re-run automatically; a job
that keeps killing its worker is dead-lettered after ``CADENCE_MAX_RECOVERIES``.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from .. import signals
from ..conf import cadence_settings
from ..executors.payloads import escape_control
from ..models import Attempt, Status
from ..schedule import policies
from ..store.prepared import PreparedRead
from .leases import resolved_options
from .outcomes import maybe_pause

logger = logging.getLogger("django_cadence.recovery")


def _any_expired(_shape: None, cutoff: datetime) -> QuerySet[Attempt, Any]:
    return Attempt.objects.expired(cutoff).values_list("id")[:1]


# Every engine asks every second, and almost always nothing has expired: a plain read,
# compiled once, answers that without a transaction or a lock.
_ANY_EXPIRED = PreparedRead(_any_expired, ("id",), Attempt._meta.get_field("lease_until"))


def recover_expired(now: datetime, *, batch_size: int = 200) -> int:
    """Recover up to ``batch_size`` attempts whose lease expired; return how many."""
    cutoff = now - cadence_settings.RECOVERY_GRACE
    if not _ANY_EXPIRED.rows(Attempt.objects.db, None, cutoff):
        return 0  # one that expires meanwhile is found by the next call
    dead: list[tuple[int, int | None]] = []
    with transaction.atomic():
        expired = list(
            Attempt.objects.expired(cutoff)
            .select_for_update(skip_locked=True)
            .select_related("schedule")[:batch_size]
        )
        for attempt in expired:
            options = resolved_options(attempt.schedule)
            reason = policies.plan_recovery(
                tries=attempt.tries,
                max_attempts=options["max_attempts"],
                recoveries=attempt.recoveries,
                max_recoveries=cadence_settings.MAX_RECOVERIES,
                delivery=options["delivery"],
            )
            lost = f"worker {attempt.worker or '?'} lost its lease on try {attempt.tries}"
            attempt.recoveries += 1
            attempt.claim_token = None
            attempt.lease_until = None
            attempt.history = [
                *(attempt.history or []),
                {
                    "try": attempt.tries,
                    "worker": attempt.worker,
                    "started_at": attempt.started_at.isoformat() if attempt.started_at else None,
                    "finished_at": now.isoformat(),
                    "result": "lost",
                    "error": lost,
                },
            ]
            if reason is None:
                attempt.status = Status.PENDING
                attempt.retry_at = now
                attempt.error = f"recovered: {lost}"
            else:
                attempt.status = Status.DEAD_LETTER
                attempt.finished_at = now
                attempt.error = f"{lost}\n[dead letter: {reason}]"
                dead.append((attempt.schedule_id, attempt.schedule.pause_after_failures))
        if expired:
            Attempt.objects.bulk_update(
                expired,
                (
                    "status",
                    "retry_at",
                    "finished_at",
                    "error",
                    "claim_token",
                    "lease_until",
                    "recoveries",
                    "history",
                ),
            )
    for attempt in expired:
        logger.warning(
            "attempt recovered id=%s schedule=%s status=%s recoveries=%s",
            attempt.pk,
            escape_control(attempt.schedule.name),
            attempt.status,
            attempt.recoveries,
        )
        if attempt.status == Status.DEAD_LETTER:
            signals.attempt_dead_lettered.send(
                Attempt,
                attempt_id=attempt.pk,
                schedule=attempt.schedule.name,
                occurrence_at=attempt.occurrence_at,
                try_number=attempt.tries,
                reason=attempt.error.rsplit("[dead letter: ", 1)[-1].rstrip("]"),
            )
    for schedule_id, pause_after in dead:
        maybe_pause(schedule_id, pause_after)
    return len(expired)
