"""Receivers wired in ``AppConfig.ready()``.

Changes to schedules wake listening engines; every state-change signal is logged as one line
of stable ``key=value`` pairs on the ``django_cadence`` logger. Job-provided text (errors,
reasons) is escaped for control characters so one event stays one line.
"""

from __future__ import annotations

import logging

from . import signals, store
from .executors.payloads import escape_control

logger = logging.getLogger("django_cadence.events")


def schedule_saved(sender, instance, using, **kwargs) -> None:
    store.of(using).notify_change()


def _iso(value) -> str:
    return value.isoformat() if value is not None else "-"


def log_started(sender, *, attempt_id, schedule, occurrence_at, try_number, worker, **kw):
    logger.info(
        "attempt started id=%s schedule=%s occurrence=%s try=%s worker=%s",
        attempt_id,
        escape_control(schedule),
        _iso(occurrence_at),
        try_number,
        worker,
    )


def log_succeeded(sender, *, attempt_id, schedule, try_number, worker, **kw):
    logger.info(
        "attempt succeeded id=%s schedule=%s try=%s worker=%s",
        attempt_id,
        escape_control(schedule),
        try_number,
        worker,
    )


def log_failed(sender, *, attempt_id, schedule, try_number, error, retry_at, **kw):
    first_line = escape_control((error or "").strip().splitlines()[-1:][0] if error else "")
    logger.warning(
        "attempt failed id=%s schedule=%s try=%s retry_at=%s error=%s",
        attempt_id,
        escape_control(schedule),
        try_number,
        _iso(retry_at),
        first_line[:300],
    )


def log_dead_lettered(sender, *, attempt_id, schedule, try_number, reason, **kw):
    logger.error(
        "attempt dead_letter id=%s schedule=%s try=%s reason=%s",
        attempt_id,
        escape_control(schedule),
        try_number,
        escape_control(reason),
    )


def log_skipped(sender, *, schedule, occurrence_at, reason, **kw):
    logger.info(
        "occurrence skipped schedule=%s occurrence=%s reason=%s",
        escape_control(schedule),
        _iso(occurrence_at),
        escape_control(reason),
    )


def log_missed(sender, *, schedule, first, last, count, **kw):
    logger.warning(
        "occurrence missed schedule=%s first=%s last=%s count=%s",
        escape_control(schedule),
        _iso(first),
        _iso(last),
        count,
    )


def log_paused(sender, *, schedule, reason, **kw):
    logger.warning(
        "schedule paused schedule=%s reason=%s", escape_control(schedule), escape_control(reason)
    )


DEFAULT_RECEIVERS = (
    (signals.attempt_started, log_started),
    (signals.attempt_succeeded, log_succeeded),
    (signals.attempt_failed, log_failed),
    (signals.attempt_dead_lettered, log_dead_lettered),
    (signals.occurrence_skipped, log_skipped),
    (signals.occurrence_missed, log_missed),
    (signals.schedule_paused, log_paused),
)


def connect_default_receivers() -> None:
    for signal, receiver in DEFAULT_RECEIVERS:
        signal.connect(receiver, dispatch_uid=f"cadence-log-{receiver.__name__}")
