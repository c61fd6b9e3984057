"""Signals sent on every state change; the default receivers (``signal_handlers``) log them.

Every signal is sent with ``sender=Attempt`` (``schedule_*``: ``sender=Schedule``) after
the change is committed, with keyword arguments only:

- ``attempt_started``: ``attempt_id, schedule, occurrence_at, try_number, worker``
- ``attempt_succeeded``: ``attempt_id, schedule, occurrence_at, try_number, worker``
- ``attempt_failed``: the same plus ``error`` and ``retry_at`` (``None`` when dead-lettered)
- ``attempt_dead_lettered``: ``attempt_id, schedule, occurrence_at, try_number, reason``
- ``occurrence_skipped``: ``schedule, occurrence_at, reason``
- ``occurrence_missed``: ``schedule, first, last, count``
- ``schedule_paused``: ``schedule, reason``
- ``schedule_overdue`` (``sender=Schedule``): ``schedule, last_success_at, overdue_since``;
  once per overdue spell, by the engine within two ``engine.tuning.OVERDUE_PROBE`` of its
  start (the probe waits for a tick when no try is about to start)

``schedule`` is the schedule's name. Receivers run in the engine's threads: keep them quick.
The app sends through :func:`send`: a receiver that raises is logged with its traceback, the
other receivers still hear the signal, and what was recorded stays as it was.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from django.dispatch import Signal

attempt_started = Signal()
attempt_succeeded = Signal()
attempt_failed = Signal()
attempt_dead_lettered = Signal()
occurrence_skipped = Signal()
occurrence_missed = Signal()
schedule_paused = Signal()
schedule_overdue = Signal()

logger = logging.getLogger("django_cadence.events")


def send(signal: Signal, sender: Any, **kwargs: Any) -> None:
    """Send ``signal`` to every receiver, as ``send_robust`` does, and log each one that
    raised (its traceback on the same line, escaped): a notifier that times out never stops
    the engine."""
    for receiver, result in signal.send_robust(sender, **kwargs):
        if isinstance(result, Exception):
            _log_failed_receiver(signal, receiver, result)


def _log_failed_receiver(signal: Signal, receiver: Any, error: Exception) -> None:
    from .executors.log_text import escape_control
    from .executors.redaction import clean_text

    name = next((n for n, s in globals().items() if s is signal), "signal")
    where = f"{getattr(receiver, '__module__', '?')}.{getattr(receiver, '__qualname__', '?')}"
    try:
        text = "".join(traceback.format_exception(error))
    except Exception:  # noqa: BLE001 - the log line is written whatever the error does
        text = f"{type(error).__qualname__} (its traceback could not be formatted)"
    logger.error(
        "signal receiver failed signal=%s receiver=%s error=%s",
        name,
        escape_control(clean_text(where, 300)),
        escape_control(clean_text(text)),
    )
