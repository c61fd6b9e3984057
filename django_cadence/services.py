"""Operations for the admin and user code: run now, pause, resume, retry a dead letter, run a
waiting retry now, cancel, send a test notification.

Instants come from the engine clock (the database server's on PostgreSQL and MariaDB), so a
web host with a skewed clock makes a run neither early nor late.

Each that changes rows is one short transaction with those rows locked, so it composes safely
with running engines; the admin's actions are one-liners over these.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction

from . import signals, store
from .admission import overlap_states, planned_row
from .clock import default_clock
from .exceptions import CadenceError
from .executors.log_text import escape_control
from .executors.redaction import clean_text
from .models import Attempt, Schedule, Status, Trigger
from .schedule import policies

MAX_REASON_CHARS = 1_000  # a pause reason is stored and logged: redacted and bounded

logger = logging.getLogger(__name__)


class InvalidTransition(CadenceError, ValueError):
    """The attempt is not in a state that allows this operation."""


def _schedule(schedule: Schedule | int | str) -> Schedule:
    if isinstance(schedule, Schedule):
        return schedule
    if isinstance(schedule, int):
        return Schedule.objects.get(pk=schedule)
    return Schedule.objects.get(name=schedule)


def trigger(
    schedule: Schedule | int | str,
    *,
    force: bool = False,
    even_if_paused: bool = False,
    now: datetime | None = None,
) -> Attempt:
    """Run a schedule now, as a ``manual`` attempt.

    It goes through the schedule's overlap policy (so it may be recorded ``skipped``) unless
    ``force``; a forced run still waits for a serial schedule's running attempt to end.
    Several calls make several attempts: manual runs are never collapsed into one.

    A paused schedule is refused unless ``even_if_paused``: then this one attempt runs (with
    its retries), marked ``even_if_paused``, and the schedule stays paused (invariant 6).
    """
    now = now or default_clock().now()
    with transaction.atomic(using=store.alias()):
        target = Schedule.objects.select_for_update().get(pk=_schedule(schedule).pk)
        if not target.enabled and not even_if_paused:
            raise InvalidTransition(
                f"Schedule {target.name!r} is paused; resume it, or run it once while it stays "
                "paused with trigger(..., even_if_paused=True) (the admin's Run now on its page)."
            )
        while_paused = not target.enabled
        state = overlap_states([target.pk])[target.pk]
        admission = policies.admit("allow" if force else target.overlap, state, 1)
        occurrence_at = now
        # Manual runs are keyed by their instant; never let two share one.
        while Attempt.objects.filter(
            schedule=target, trigger=Trigger.MANUAL, occurrence_at=occurrence_at
        ).exists():
            occurrence_at += timedelta(microseconds=1)
        row = planned_row(target, occurrence_at, admission.statuses[0], admission.reasons[0], now)
        attempt = Attempt.objects.create(
            schedule=target,
            occurrence_at=row.occurrence_at,
            trigger=Trigger.MANUAL,
            status=row.status,
            retry_at=now if row.retry_at else None,  # ready now, whatever its key's instant
            finished_at=row.finished_at,
            error=row.error,
            even_if_paused=while_paused,
        )
        if row.status == Status.PENDING:
            if admission.cancel_running:
                Attempt.objects.filter(schedule=target).ask_to_stop()
            if admission.cancel_waiting:
                Attempt.objects.pending().filter(
                    schedule=target, trigger=Trigger.SCHEDULE
                ).to_cancelled(now=now, reason=policies.REPLACED)
            store.of().notify_change()
    logger.info(
        "attempt triggered id=%s schedule=%s status=%s force=%s even_if_paused=%s%s",
        attempt.pk,
        escape_control(target.name),
        attempt.status,
        force,
        while_paused,
        ": one manual run; the schedule stays paused" if while_paused else "",
    )
    return attempt


def retry_now(ids: Iterable[int], *, now: datetime | None = None) -> list[Attempt]:
    """Bring pending retries forward to now; returns those that were still waiting.

    The rows are locked while they move, so a retry an engine claims meanwhile (no longer
    pending) is left alone.
    """
    now = now or default_clock().now()
    with transaction.atomic(using=store.alias()):
        waiting = list(
            Attempt.objects.select_for_update().filter(
                pk__in=list(ids), status=Status.PENDING, tries__gte=1, retry_at__gt=now
            )
        )
        Attempt.objects.filter(pk__in=[row.pk for row in waiting]).brought_forward(now=now)
        if waiting:
            store.of().notify_change()
    return waiting


def pause(schedule: Schedule | int | str, reason: str = "") -> Schedule:
    """Disable a schedule: nothing fires while it is paused.

    ``schedule_paused`` is sent once the pause is committed: a caller's transaction (the
    admin's action, say) that rolls back leaves the schedule running and sends nothing.
    """
    target = _schedule(schedule)
    target.enabled = False
    target.pause_reason = clean_text(reason, MAX_REASON_CHARS) or "paused"
    target.save(update_fields=["enabled", "pause_reason", "updated_at"])
    name, why = target.name, target.pause_reason
    transaction.on_commit(
        lambda: signals.send(signals.schedule_paused, Schedule, schedule=name, reason=why),
        using=store.alias(),
    )
    return target


def resume(schedule: Schedule | int | str) -> Schedule:
    """Enable a schedule; nothing from the paused time is caught up."""
    target = Schedule.objects.get(pk=_schedule(schedule).pk)
    target.enabled = True
    target.pause_reason = ""
    target.save(update_fields=["enabled", "pause_reason", "updated_at"])
    logger.info(
        "schedule resumed name=%s next_run_at=%s", escape_control(target.name), target.next_run_at
    )
    return target


def retry(attempt: Attempt | int, *, now: datetime | None = None) -> Attempt:
    """Send a dead letter back to ``pending`` with a fresh set of tries."""
    now = now or default_clock().now()
    pk = attempt.pk if isinstance(attempt, Attempt) else attempt
    updated = Attempt.objects.filter(pk=pk).to_pending_again(now=now)
    if not updated:
        raise InvalidTransition(f"Attempt {pk} is not a dead letter; only dead letters retry.")
    store.of().notify_change()
    logger.info("attempt retried id=%s", pk)
    return Attempt.objects.get(pk=pk)


def cancel(attempt: Attempt | int, *, now: datetime | None = None) -> Attempt:
    """Cancel a pending attempt, or ask a running one to stop (it ends ``cancelled``)."""
    now = now or default_clock().now()
    pk = attempt.pk if isinstance(attempt, Attempt) else attempt
    if Attempt.objects.filter(pk=pk, status=Status.PENDING).to_cancelled(
        now=now, reason="cancelled by an operator"
    ):
        logger.info("attempt cancelled id=%s", pk)
    elif Attempt.objects.filter(pk=pk).ask_to_stop():
        logger.info("attempt cancelling id=%s", pk)
    else:
        raise InvalidTransition(f"Attempt {pk} is neither pending nor running.")
    return Attempt.objects.get(pk=pk)


def send_test_notification(channel: str, *, now: datetime | None = None) -> str:
    """Send a test message through the ``CADENCE_NOTIFY`` channel called ``channel`` now, from
    this process; returns what the channel answered, or raises ``ChannelError`` saying why it
    did not take it (``LookupError`` for a name that is not configured)."""
    from .conf import cadence_settings
    from .notify import channels, messages

    configured = cadence_settings.NOTIFY.channel(channel)
    if configured is None:
        raise LookupError(f"CADENCE_NOTIFY has no channel called {channel!r}")
    body = messages.test_body(channel, now or default_clock().now())
    answer = channels.send(configured, body)
    logger.info("test notification sent channel=%s answer=%s", escape_control(channel), answer)
    return answer
