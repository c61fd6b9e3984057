"""Running attempts whose worker was lost: any worker hands them back or dead-letters them.

A worker is lost when the server no longer sees its session lock (killed, host gone,
connection cut: :mod:`.liveness`), or when its lease expired more than
``CADENCE_RECOVERY_GRACE`` ago (stopped renewing: frozen, or a database without session
locks). Both go through one fenced path: clearing the claim token in the same write fences
the old worker out, should it come back (invariant 3). ``at_most_once`` jobs, and attempts
whose try marked itself uncertain, are never re-run automatically. The first recovery of
an attempt retries it at once; a job that keeps taking its worker down is retried through
the backoff ladder and dead-lettered after ``CADENCE_MAX_RECOVERIES``, its last error kept
(or, without one, the seed's "orphaned: worker crashed or stalled").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from datetime import datetime

from django.db import transaction
from django.db.models import Min, Q

from .. import signals, store
from ..conf import cadence_settings
from ..executors.calling import idempotency_key
from ..executors.log_text import log_value
from ..models import Attempt
from ..models.options import resolved_options
from ..models.transitions import LostTry
from ..notify import failures
from ..schedule import policies
from .outcomes import maybe_pause

logger = logging.getLogger("django_cadence.recovery")

LEASE_EXPIRED = "its lease expired"
SESSION_ENDED = "its database session ended"
ENGINE_RESTARTED = "its engine stopped without handing it back"
GAVE_UP = "its worker could not renew its lease in time and stopped it"


def running_by_worker() -> dict[str, datetime]:
    """Each worker with running attempts, and the earliest end of their leases (one read)."""
    rows = Attempt.objects.running().order_by().values_list("worker").annotate(Min("lease_until"))
    return dict(rows)


def recover_expired(now: datetime, *, batch_size: int = 200) -> int:
    """Recover up to ``batch_size`` attempts whose lease expired; return how many."""
    if not Attempt.objects.expired(now - cadence_settings.RECOVERY_GRACE).exists():
        return 0  # one that expires meanwhile is found by the next call
    return recover(now, batch_size=batch_size)


def recover(
    now: datetime,
    *,
    lost_workers: Collection[str] = (),
    everything: bool = False,
    batch_size: int = 200,
    confirm: Callable[[set[str]], set[str]] | None = None,
) -> int:
    """Recover the running attempts of ``lost_workers``, those whose lease expired, or with
    ``everything`` all running attempts (an engine that alone may run them is starting).

    ``confirm`` asks again, once the rows are locked, which of the lost workers are still
    lost: one that took its lock again meanwhile re-asserts its tries by these rows, and
    either its re-assertion came first (it is seen holding its lock, its rows are left
    alone) or it waits for this write and finds its tries gone.
    """
    lost = set(lost_workers)
    match = Q(lease_until__lt=now - cadence_settings.RECOVERY_GRACE)
    if lost:
        match |= Q(worker__in=lost)
    if everything:
        match = Q()
    with transaction.atomic(using=store.alias()):
        found = list(
            Attempt.objects.running()
            .filter(match)
            .select_for_update(skip_locked=True)
            .select_related("schedule")[:batch_size]
        )
        if lost and confirm is not None and found:
            still = confirm({a.worker for a in found if a.worker in lost})
            expired = now - cadence_settings.RECOVERY_GRACE
            found = [a for a in found if a.worker in still or _expired(a, expired)]
            lost &= still
        recovered = _write([_decide(a, now, _cause(a, lost, everything)) for a in found], now)
    _after(recovered, now)
    return len(found)


def give_up(claims: Collection[tuple[int, str]], now: datetime) -> int:
    """Record as lost the tries of ``(attempt id, claim token)`` that their own worker stopped
    when it could no longer prove its claims (``engine.watchdog``), fenced by the tokens: the
    same move as another worker's recovery, written sooner. One recovered meanwhile matches
    nothing."""
    with transaction.atomic(using=store.alias()):
        found = list(
            Attempt.objects.all_held(list(claims)).select_for_update().select_related("schedule")
        )
        recovered = _write([_decide(a, now, GAVE_UP) for a in found], now)
    _after(recovered, now)
    return len(found)


def _write(recovered: list[LostTry], now: datetime) -> list[LostTry]:
    """The recovery write, and the episodes of its dead letters, in the caller's transaction."""
    if recovered:
        Attempt.objects.recovered(recovered, now=now)
    for r in recovered:
        if r.dead_letter is not None:
            _dead_lettered(r, now)
    return recovered


def _after(recovered: list[LostTry], now: datetime) -> None:
    """Once committed: log each, send ``attempt_dead_lettered`` and pause where due."""
    for r in recovered:
        _announce(r)
    for r in recovered:
        if r.dead_letter is not None:
            maybe_pause(r.attempt.schedule_id, r.attempt.schedule.pause_after_failures, now)


def _dead_lettered(recovered: LostTry, now: datetime) -> None:
    attempt = recovered.attempt
    failures.try_failed(
        attempt.schedule_id,
        attempt.pk,
        attempt.history,
        f"lost its worker: {recovered.dead_letter}",
        now,
        dead_lettered=True,
    )


def _expired(attempt: Attempt, cutoff: datetime) -> bool:
    return attempt.lease_until is not None and attempt.lease_until < cutoff


def _cause(attempt: Attempt, lost: set[str], everything: bool) -> str:
    if everything:
        return ENGINE_RESTARTED
    return SESSION_ENDED if attempt.worker in lost else LEASE_EXPIRED


def _decide(attempt: Attempt, now: datetime, cause: str) -> LostTry:
    """Pending again after the recovery delay, or a dead letter (``policies.plan_recovery``)."""
    options = resolved_options(attempt.schedule)
    reason = policies.plan_recovery(
        tries=attempt.tries,
        max_attempts=options["max_attempts"],
        recoveries=attempt.recoveries,
        max_recoveries=cadence_settings.MAX_RECOVERIES,
        delivery=options["delivery"],
        uncertain=attempt.uncertain,
    )
    if reason is not None:
        return LostTry(attempt, cause, dead_letter=reason)
    key = idempotency_key(attempt.schedule_id, attempt.occurrence_at, attempt.trigger)
    delay = policies.recovery_delay(
        attempt.recoveries, base=options["retry_base"], cap=options["retry_cap"], key=key
    )
    retry_at = now + delay
    if attempt.retry_at is not None and attempt.retry_at > retry_at:
        # Claimed ahead of its instant by the lost worker: never ready before it (invariant 6).
        retry_at = attempt.retry_at
    return LostTry(attempt, cause, retry_at=retry_at)


def _announce(recovered: LostTry) -> None:
    """Log a recovered attempt; send ``attempt_dead_lettered`` for one that ended so."""
    attempt = recovered.attempt
    retried = recovered.dead_letter is None
    logger.warning(
        "attempt recovered id=%s schedule=%s status=%s recoveries=%s retry_at=%s",
        attempt.pk,
        log_value(attempt.schedule.name),
        attempt.status,
        attempt.recoveries,
        attempt.retry_at.isoformat() if retried and attempt.retry_at else "-",
    )
    if recovered.dead_letter is not None:
        signals.send(
            signals.attempt_dead_lettered,
            Attempt,
            attempt_id=attempt.pk,
            schedule=attempt.schedule.name,
            occurrence_at=attempt.occurrence_at,
            try_number=attempt.tries,
            reason=recovered.dead_letter,
        )
