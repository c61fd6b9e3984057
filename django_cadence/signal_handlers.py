"""Receivers wired in ``AppConfig.ready()``.

Changes to schedules wake listening engines; every state-change signal is logged as one line
of stable ``key=value`` pairs on the ``django_cadence`` logger. Every value from outside
(names, worker ids, errors, reasons) goes through ``log_value``: redacted, bounded, control
characters escaped, so one event stays one line and no secret reaches the log.
"""

from __future__ import annotations

import logging
from typing import Any

from . import signals, store
from .executors.log_text import headline, log_value
from .notify import sentry

logger = logging.getLogger("django_cadence.events")


def schedule_saved(sender: Any, instance: Any, using: Any, **kwargs: Any) -> None:
    store.of(using).notify_change()


def _iso(value: Any) -> str:
    return value.isoformat() if value is not None else "-"


def log_started(
    sender: Any,
    *,
    attempt_id: Any,
    schedule: Any,
    occurrence_at: Any,
    try_number: Any,
    worker: Any,
    started_at: Any = None,
    **kw: Any,
) -> None:
    logger.info(
        "attempt started id=%s schedule=%s occurrence=%s try=%s worker=%s at=%s",
        attempt_id,
        log_value(schedule),
        _iso(occurrence_at),
        try_number,
        log_value(worker),
        _iso(started_at),
    )


def log_succeeded(
    sender: Any, *, attempt_id: Any, schedule: Any, try_number: Any, worker: Any, **kw: Any
) -> None:
    logger.info(
        "attempt succeeded id=%s schedule=%s try=%s worker=%s",
        attempt_id,
        log_value(schedule),
        try_number,
        log_value(worker),
    )


def log_failed(
    sender: Any,
    *,
    attempt_id: Any,
    schedule: Any,
    try_number: Any,
    error: Any,
    retry_at: Any,
    **kw: Any,
) -> None:
    logger.warning(
        "attempt failed id=%s schedule=%s try=%s retry_at=%s error=%s",
        attempt_id,
        log_value(schedule),
        try_number,
        _iso(retry_at),
        log_value(headline(str(error or ""))),
    )


def log_dead_lettered(
    sender: Any, *, attempt_id: Any, schedule: Any, try_number: Any, reason: Any, **kw: Any
) -> None:
    logger.error(
        "attempt dead_letter id=%s schedule=%s try=%s reason=%s",
        attempt_id,
        log_value(schedule),
        try_number,
        log_value(reason),
    )


def log_skipped(sender: Any, *, schedule: Any, occurrence_at: Any, reason: Any, **kw: Any) -> None:
    logger.info(
        "occurrence skipped schedule=%s occurrence=%s reason=%s",
        log_value(schedule),
        _iso(occurrence_at),
        log_value(reason),
    )


def log_missed(sender: Any, *, schedule: Any, first: Any, last: Any, count: Any, **kw: Any) -> None:
    logger.warning(
        "occurrence missed schedule=%s first=%s last=%s count=%s",
        log_value(schedule),
        _iso(first),
        _iso(last),
        count,
    )


def log_paused(sender: Any, *, schedule: Any, reason: Any, **kw: Any) -> None:
    logger.warning("schedule paused schedule=%s reason=%s", log_value(schedule), log_value(reason))


def log_overdue(
    sender: Any, *, schedule: Any, last_success_at: Any, overdue_since: Any, **kw: Any
) -> None:
    logger.warning(
        "schedule overdue schedule=%s last_success=%s overdue_since=%s",
        log_value(schedule),
        _iso(last_success_at),
        _iso(overdue_since),
    )


DEFAULT_RECEIVERS = (
    (signals.attempt_started, log_started),
    (signals.attempt_succeeded, log_succeeded),
    (signals.attempt_failed, log_failed),
    (signals.attempt_dead_lettered, log_dead_lettered),
    (signals.occurrence_skipped, log_skipped),
    (signals.occurrence_missed, log_missed),
    (signals.schedule_paused, log_paused),
    (signals.schedule_overdue, log_overdue),
)


def connect_default_receivers() -> None:
    for signal, receiver in DEFAULT_RECEIVERS:
        signal.connect(receiver, dispatch_uid=f"cadence-log-{receiver.__name__}")
    # Sentry Crons check-ins: each receiver returns at once unless CADENCE_NOTIFY has a
    # sentry channel (notify/sentry.py).
    signals.attempt_started.connect(sentry.started, dispatch_uid="cadence-sentry-started")
    signals.attempt_succeeded.connect(sentry.succeeded, dispatch_uid="cadence-sentry-succeeded")
    signals.attempt_failed.connect(sentry.failed, dispatch_uid="cadence-sentry-failed")
