"""The fenced writes that end a try: success, failure (retry or dead letter), cancel.

Invariant 3 (docs/design.md): every write is ``UPDATE ... WHERE id = %s AND claim_token = %s
AND status = 'running'``. A worker whose lease was taken over matches no row, changes nothing,
and logs that it lost the attempt.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from .. import notify, signals
from ..executors.log_text import escape_control
from ..executors.redaction import MAX_TEXT_CHARS, clean_text
from ..models import Attempt, Event, Schedule, Status
from ..models.transitions import history_entry
from ..notify import episodes, failures
from ..schedule import policies
from ..store import batch_writes
from .claims import Claim
from .leases import fenced

logger = logging.getLogger("django_cadence.runner")

MAX_ERROR_CHARS = MAX_TEXT_CHARS


def _history(c: Claim, now: datetime, result: str, error: str = "") -> list[dict[str, Any]]:
    """The attempt's per-try log with this try appended (the claim read it; no re-read)."""
    entry = history_entry(
        try_number=c.tries,
        worker=c.worker,
        started_at=c.started_at,
        finished_at=now,
        result=result,
        error=error,
    )
    return [*c.history, entry]


def clean_error(text: object) -> str:
    """Job-provided error text as it is stored and sent: redacted, storable, bounded."""
    return clean_text(text, MAX_ERROR_CHARS)


def record_success(c: Claim, outcome: Any, now: datetime, *, announce: bool = True) -> bool:
    """Fenced: mark the try succeeded; False if this worker no longer owns the attempt.

    ``announce=False`` inside an atomic job's transaction: the signal waits for the commit
    (:func:`announce_success`)."""
    return bool(record_successes([(c, outcome)], now, announce=announce))


def announce_success(c: Claim) -> None:
    """Send ``attempt_succeeded`` for a success that is committed."""
    signals.send(signals.attempt_succeeded, Attempt, **c.event())


def record_successes(
    results: list[tuple[Claim, Any]], now: datetime, *, announce: bool = True
) -> list[Claim]:
    """Fenced, in one statement: mark these tries succeeded; returns the claims written.

    A busy worker finishes many tries per tick; one UPDATE for all of them (each row's own
    outcome and history picked by ``CASE`` on its id) replaces one round trip per try. The
    fence is the row's token: a token names one try of one attempt (its id is the token's
    suffix), so ``claim_token IN (...)`` matches exactly the rows still held by these tries.
    """
    if not results:
        return []
    claims = [c for c, _ in results]
    written = batch_writes.end_in_success(
        Attempt.objects.db,
        {c.attempt_id: c.token for c in claims},
        now=now,
        outcomes={c.attempt_id: outcome for c, outcome in results},
        histories={c.attempt_id: _history(c, now, "succeeded") for c in claims},
    )
    landed = claims
    if written < len(claims):  # some leases were taken over: find which writes landed
        ours = set(
            Attempt.objects.filter(
                pk__in=[c.attempt_id for c in claims],
                claim_token__in=[c.token for c in claims],
                status=Status.SUCCEEDED,
            ).values_list("id", flat=True)
        )
        landed = [c for c in claims if c.attempt_id in ours]
        for c in claims:
            if c.attempt_id not in ours:
                _fenced_out(c, 0, "succeeded")
    if announce:
        for c in landed:
            announce_success(c)
    return landed


def record_failure(
    c: Claim,
    error: str,
    now: datetime,
    *,
    permanent: bool = False,
    reason: str = "",
    outcome_known: bool = True,
) -> str | None:
    """Fenced: schedule a retry or dead-letter the attempt; returns the new status or None.

    ``reason`` names a permanent failure's cause in the dead letter's note.
    ``outcome_known=False``: the try ended without saying how (timed out, its process died);
    if it marked itself uncertain, the attempt is dead-lettered rather than retried.
    """
    uncertain = "" if outcome_known else _uncertain_mark(c)
    plan = policies.plan_failure(
        tries=c.tries,
        max_attempts=c.max_attempts,
        now=now,
        base=c.retry_base,
        cap=c.retry_cap,
        key=c.idempotency_key,
        permanent=permanent,
        uncertain=uncertain,
    )
    error = clean_error(error)
    history = _history(c, now, "failed", error)
    if plan.retry_at is not None:
        with notify.atomic():  # the failure and the episode it opens commit together
            written = fenced(c).to_retry(retry_at=plan.retry_at, error=error, history=history)
            if written:
                failures.try_failed(
                    c.schedule_id, c.attempt_id, history, error, now, dead_lettered=False
                )
        if not _fenced_out(c, written, "retry"):
            return None
        signals.send(
            signals.attempt_failed, Attempt, error=error, retry_at=plan.retry_at, **c.event()
        )
        return Status.PENDING
    note = f"[dead letter: {reason or plan.reason}]"
    with notify.atomic():
        written = fenced(c).to_dead_letter(
            now=now,
            error=f"{error}\n{note}" if error else note,
            history=history,
            uncertain=uncertain,
        )
        if written:
            failures.try_failed(
                c.schedule_id, c.attempt_id, history, error or note, now, dead_lettered=True
            )
    if not _fenced_out(c, written, "dead_letter"):
        return None
    signals.send(signals.attempt_failed, Attempt, error=error, retry_at=None, **c.event())
    signals.send(
        signals.attempt_dead_lettered,
        Attempt,
        attempt_id=c.attempt_id,
        schedule=c.schedule_name,
        occurrence_at=c.occurrence_at,
        try_number=c.tries,
        reason=reason or plan.reason,
    )
    maybe_pause(c.schedule_id, c.pause_after_failures, now)
    return Status.DEAD_LETTER


def _uncertain_mark(c: Claim) -> str:
    """The reason the try gave when it marked its attempt uncertain; "" if it did not."""
    return fenced(c).values_list("uncertain", flat=True).first() or ""


def record_cancelled(c: Claim, now: datetime, reason: str) -> bool:
    """Fenced: the running try was asked to stop and did; False if no longer ours."""
    written = fenced(c).to_cancelled(
        now=now, reason=reason, history=_history(c, now, "cancelled", reason)
    )
    if not _fenced_out(c, written, "cancelled"):
        return False
    logger.info(
        "attempt cancelled id=%s schedule=%s", c.attempt_id, escape_control(c.schedule_name)
    )
    return True


def _fenced_out(c: Claim, written: int, outcome: str) -> bool:
    """True if the fenced write landed; else log that this worker lost the attempt."""
    if written:
        return True
    logger.warning(
        "attempt lost id=%s schedule=%s try=%s: lease taken over, %s not recorded",
        c.attempt_id,
        escape_control(c.schedule_name),
        c.tries,
        outcome,
    )
    return False


def maybe_pause(schedule_id: int, pause_after_failures: int | None, now: datetime) -> bool:
    """Auto-pause: disable a schedule whose last N occurrences all ended dead-lettered (and
    open its ``paused`` episode in the same transaction)."""
    if not pause_after_failures:
        return False
    recent = list(
        Attempt.objects.filter(schedule_id=schedule_id, trigger="schedule")
        .exclude(status__in=(Status.PENDING, Status.RUNNING, Status.MISSED))
        .order_by("-occurrence_at")
        .values_list("status", flat=True)[:pause_after_failures]
    )
    if not policies.should_pause(recent, pause_after_failures):
        return False
    reason = f"auto-paused: the last {pause_after_failures} occurrence(s) ended dead-lettered"
    with notify.atomic():
        paused = Schedule.objects.filter(pk=schedule_id, enabled=True).update(
            enabled=False, pause_reason=reason
        )
        if paused:
            episodes.schedule_event(Event.PAUSED, schedule_id, now, detail=reason)
    if paused:
        name = Schedule.objects.filter(pk=schedule_id).values_list("name", flat=True).first()
        signals.send(signals.schedule_paused, Schedule, schedule=name, reason=reason)
    return bool(paused)
